//! The measuring client: opens sockets to a responder and times exchanges.
//!
//! Each test is a function from parameters to typed rows
//! (`stackmeter-results`), built on plain blocking socket calls (`connect`,
//! `send`, `recv` through the C library), so an `LD_PRELOAD` user-space
//! stack intercepts the whole data path. The timed loops read the monotonic
//! clock right before the first byte is handed to the kernel and right after
//! the last byte is received; nothing allocates, formats or locks between
//! the two reads, and the sample goes into a histogram after the second.
//!
//! Plain targets (an echo, discard or iperf 2 server, or one with its own
//! reply rule) get the same timed loops without the protocol's header:
//! `plain/`.
//!
//! A test that fails part-way returns the rows it finished together with the
//! error ([`Outcome`]), so nothing measured is dropped.

mod control;
mod crr;
mod endpoint;
mod error;
mod handshake;
mod load;
mod open_rr;
mod outcome;
mod ping;
mod plain;
mod rr;
mod rrul;
mod sockets;
mod stamps;
mod stream;
mod target;
mod throughput;
pub mod tune;
mod udp_max;

pub use crr::crr;
pub use endpoint::Endpoint;
pub use error::ClientError;
pub use load::{load, LoadOutcome};
pub use open_rr::{rr_open, schedule};
pub use outcome::{Outcome, RowHistogram, StreamOutcome};
pub use ping::ping;
pub use plain::{crr_plain, rr_plain, stream_plain, ECHO_HEADER_LEN};
pub use rr::rr;
pub use rrul::{rrul, RrulOutcome};
pub use stream::stream;
pub use target::resolve;
pub use udp_max::{udp_max, UdpMaxOutcome};
