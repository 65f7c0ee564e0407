//! The measuring client: opens sockets to a target and times exchanges.
//!
//! Each test is a function from parameters to typed rows
//! (`stackmeter-results`). Every byte goes through plain standard socket
//! calls of the C library (`connect`, `send`, `recv`, `sendmmsg`, and
//! `poll`/`epoll` to wait), so an `LD_PRELOAD` user-space stack intercepts
//! the whole data path. How a test waits follows from what it times:
//!
//! - Blocking calls, one socket per thread, in the closed-loop timed loops:
//!   rr, crr and back-to-back ping (`rr.rs`, `crr.rs`, `ping.rs`, and
//!   against plain targets `plain/`), and load's clients (`load.rs`, one
//!   thread each). One request is outstanding, so a blocking `recv` is the
//!   shortest path from the data to the clock read; a readiness call per
//!   message would add a system call to the timed span. Socket timeouts
//!   bound every wait.
//! - `ppoll` where sends follow a schedule and a wait must end at the next
//!   send to the nanosecond (socket timeouts are kept in scheduler ticks):
//!   ping with an interval, rrul's UDP probes (`rrul.rs`).
//! - `epoll`, one thread driving many non-blocking sockets, where a thread
//!   per socket cost more than the readiness calls: open-loop rr
//!   (`open_rr.rs`: one thread keeps the schedule of every connection) and
//!   stream's TCP flows (`throughput/flows.rs`: `-P 1000` flows on a few
//!   threads).
//! - Worker threads with blocking sends move a throughput test's bytes
//!   (UDP senders, `--zerocopy`, the plain targets' stream) while the
//!   measuring thread wakes only at interval ends (`throughput/`).
//!
//! The timed loops read the monotonic clock right before the first byte is
//! handed to the kernel and right after the last byte is received; nothing
//! allocates, formats or locks between the two reads, and the sample goes
//! into a histogram after the second.
//!
//! Below the tests: `sockets.rs` (byte I/O, nothing of the protocol),
//! `handshake.rs` (the session's start over it: header, challenge and
//! proof, status record), `endpoint.rs` (a responder's address and shared
//! secret, which every test against a responder receives as a value),
//! `control.rs` (a throughput test's control session), `stamps.rs`
//! (`--timestamps`). Plain targets (an echo, discard or iperf 2 server, or
//! one with its own reply rule) get the same timed loops without the
//! protocol's header: `plain/`.
//!
//! A test that fails part-way returns the rows it finished together with the
//! error ([`Outcome`]), so nothing measured is dropped.

mod control;
mod crr;
mod endpoint;
mod error;
mod handshake;
pub mod layers;
mod load;
mod open_rr;
mod outcome;
mod ping;
mod plain;
pub mod rr;
mod rrul;
mod sockets;
mod stamps;
mod stream;
mod target;
mod throughput;
pub mod tune;
mod udp_burst;
mod udp_max;

pub use control::welcome;
pub use crr::crr;
pub use endpoint::Endpoint;
pub use error::{ClientError, Plain};
pub use handshake::open_session;
pub use load::{load, LoadOutcome};
pub use open_rr::{rr_open, schedule};
pub use outcome::{Outcome, RowHistogram, StreamOutcome};
pub use plain::{crr_plain, stream_plain, ECHO_HEADER_LEN};

/// ping's echo test; with `--layers`, twice: untraced, then traced layer
/// by layer ([`layers`]).
pub fn ping(endpoint: &Endpoint, spec: &stackmeter_results::PingParams) -> Outcome<stackmeter_results::PingResult> {
    match spec.layers {
        true => layers::ping(endpoint, spec),
        false => ping::ping(endpoint, spec),
    }
}

/// rr against a responder; with `--layers`, untraced, then traced.
pub fn rr(endpoint: &Endpoint, spec: &stackmeter_results::RrParams) -> Outcome<stackmeter_results::RrResult> {
    match spec.layers {
        true => layers::rr(endpoint, spec, false),
        false => rr::rr(endpoint, spec),
    }
}

/// rr against a plain target (`--echo`, `--raw`); with `--layers`,
/// untraced, then traced.
pub fn rr_plain(
    addr: std::net::SocketAddr,
    spec: &stackmeter_results::RrParams,
) -> Outcome<stackmeter_results::RrResult> {
    match spec.layers {
        true => layers::rr(&Endpoint::new(addr, None), spec, true),
        false => plain::rr_plain(addr, spec),
    }
}
pub use rrul::{rrul, RrulOutcome};
pub use stream::stream;
pub use target::resolve;
pub use udp_burst::udp_burst;
pub use udp_max::{udp_max, UdpMaxOutcome};

/// The protocol's shared secret and its port, as the measuring side takes
/// them (a crate above the client needs no other part of the protocol).
pub use stackmeter_proto::{auth, DEFAULT_PORT};
