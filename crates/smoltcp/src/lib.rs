//! stackmeter's responder on smoltcp: the same protocol core the host
//! responder runs (`stackmeter_proto::machine`), fed by smoltcp, a
//! user-space TCP/IP stack written in Rust (the stack under embassy-net,
//! RTIC's and Hubris's networking), instead of the kernel's sockets.
//!
//! It exists so that the lab can put smoltcp beside lwIP and the kernel
//! with the same responder logic on each: every difference a comparison
//! finds is then the stack's (and its path: a TAP device here), not the
//! responder's. It is the worked example of putting the core on a new
//! stack in Rust, as `c-responder/src/smr_lwip_raw.c` is in C
//! (docs/porting.md).
//!
//! One thread, pinned, runs one poll loop (`serve.rs`): the TAP device's
//! frames into smoltcp's interface, every TCP connection's session machine
//! driven as far as its socket allows (`tcp.rs`), UDP echoes and stream
//! datagrams answered and counted (`udp.rs`), then a wait on the TAP's
//! descriptor until a frame comes or smoltcp or a session has something
//! due. Object mode serves the host responder's synthetic catalogue
//! (`stackmeter_responder::Objects`, 4 KiB to 8,800 KiB). Kernel
//! timestamps and a shared secret are not offered: a TAP stack has no
//! kernel stamps of its own, and the lab's stacks take no secret.
//!
//! `stackmeter lab up` starts it (`stackmeter lab serve-smoltcp TAP ADDR`),
//! on a TAP device the lab made; it runs until it is killed.

mod serve;
mod tcp;
mod udp;

pub use serve::{serve, Options, ServeError};
