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
//! The driver is `no_std` with `alloc`, so the same code runs on Linux and
//! on a microcontroller: [`Responder`] (`responder.rs`) is the sockets
//! and one round over them, every TCP connection's session machine driven
//! as far as its socket allows (`tcp.rs`), UDP echoes and stream datagrams
//! answered and counted (`udp.rs`); what differs between a host and a
//! board (clock, CPU time, log, objects) is the [`Platform`] trait
//! (`platform.rs`).
//!
//! With the `std` feature (the default), `serve.rs` is the Linux loop: one
//! pinned thread, the TAP device's frames into smoltcp's interface, a
//! round, then a wait on the TAP's descriptor until a frame comes or
//! smoltcp or a session has something due. Object mode serves the host
//! responder's synthetic catalogue (`stackmeter_responder::Objects`,
//! 4 KiB to 8,800 KiB). Kernel timestamps and a shared secret are not
//! offered: a TAP stack has no kernel stamps of its own, and the lab's
//! stacks take no secret. `stackmeter lab up` starts it (`stackmeter lab
//! serve-smoltcp TAP ADDR`), on a TAP device the lab made; it runs until
//! it is killed. Without `std`, firmware/mcu-smoltcp runs the same
//! responder on the LM3S6965's Ethernet MAC.
#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

mod platform;
mod responder;
#[cfg(feature = "std")]
mod serve;
mod tcp;
mod udp;

pub use platform::Platform;
pub use responder::{Responder, Round, Sizes};
#[cfg(feature = "std")]
pub use serve::{serve, Options, ServeError};
