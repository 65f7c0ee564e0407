//! Plain targets: servers that speak no stackmeter protocol (an RFC 862
//! echo server, an RFC 863 discard server, an iperf 2 server, or one with
//! its own reply rule). The same timed loops as against a responder,
//! without the session header and the status record; the figures only a
//! responder gives are listed as not measured.
//!
//! `tcp.rs`: rr and crr (`--echo`, `--raw`); `ping.rs`: ping's framing
//! for a UDP echo server (`--echo`); `stream.rs`: stream against a
//! discard or iperf 2 server; `iperf2.rs`: iperf 2's settings and
//! datagram headers, and its report.

pub(crate) mod iperf2;
mod ping;
mod stream;
mod tcp;

pub(crate) use ping::EchoFrames;
pub use ping::ECHO_HEADER_LEN;
pub use stream::stream_plain;
pub(crate) use tcp::rr_plain_tapped;
pub use tcp::{crr_plain, rr_plain};
