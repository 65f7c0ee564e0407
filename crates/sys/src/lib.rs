//! Platform facts and knobs, behind small safe functions: the only crate
//! of stackmeter with `unsafe` code (every other crate forbids it), each
//! block wrapping one C library call.
//!
//! One module per concern: `cpu.rs` (pinning a thread, the CPU it runs
//! on), `clock.rs` (monotonic and realtime clocks as integers, timer
//! slack), `wallclock.rs` (UTC times for documents), `buf.rs` (page-aligned
//! buffers), `socket.rs` (a wait with a nanosecond timeout, receives that
//! never wait, TCP_INFO), `zerocopy.rs` (MSG_ZEROCOPY), `cputime.rs`
//! (getrusage), `process.rs` (the open-files limit, a child's
//! parent-death signal, the user id), `host.rs` (host name, kernel, CPU),
//! `interrupt.rs` (Ctrl-C as a flag), `knobs.rs` (scheduling priority,
//! locked memory, busy polling, each read back from the kernel),
//! `tstamp.rs` (kernel timestamps), `batch.rs` (many datagrams per call)
//! and `epoll.rs` (readiness of many sockets from one thread). The crate
//! root only declares and re-exports.

mod buf;
mod clock;
mod cpu;
mod cputime;
mod host;
mod process;
mod socket;
mod zerocopy;

pub mod batch;
pub mod epoll;
pub mod interrupt;
pub mod knobs;
pub mod listener;
pub mod tstamp;
mod wallclock;

pub use buf::AlignedBuf;
pub use clock::{monotonic_ns, realtime_ns, tight_timers};
pub use cpu::{check_cpu, current_cpu, pin_current_thread};
pub use cputime::{process_cpu, thread_cpu, CpuTime};
pub use host::{host, Host};
pub use process::{die_with_parent, raise_nofile, uid};
pub use socket::{recv_nowait, socket_cookie, tcp_info, wait_hangup, wait_readable, TcpInfo, Waited};
pub use wallclock::{unix_now, unix_now_ms, utc_rfc3339, utc_rfc3339_ms, wall_ns};
pub use zerocopy::{drain_zerocopy, enable_zerocopy, send_zerocopy, ZerocopyDone};
