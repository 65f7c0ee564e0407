//! The stackmeter wire protocol, version 1, as pure code.
//!
//! This crate turns bytes into typed values and back. It does no I/O, reads
//! no clock and allocates nothing, so the same rules can run in the Rust
//! responder, the host client, an embedded Rust target, and (transcribed) the
//! C99 responder. It is `no_std`: besides `core` it uses only RustCrypto's
//! `hmac` and `sha2`, without their default features (no std, no alloc),
//! for the shared secret. The normative description is `docs/protocol.md`;
//! the byte fixtures shared with other implementations are in
//! `protocol/vectors.json`.
//!
//! Layers, as on the wire:
//! - [`header`]: the header a client sends at the start of every TCP
//!   connection, fixing the mode and the message sizes;
//! - [`status`]: the responder's answer to that header (accepted, or refused
//!   with a code and a reason);
//! - [`udp`]: the header every UDP datagram carries, the pure echo rule,
//!   and a datagram's MAC trailer: sealing, opening, the replay window;
//! - [`pattern`]: the deterministic payload bytes a client can verify;
//! - [`stamps`]: the stamp block a responder writes into replies that ask
//!   for it (its receive and send times, kernel and application);
//! - [`objects`]: object mode (16), LIST and FETCH of a catalogue, the object
//!   pattern and CRC-32;
//! - [`control`]: the records of a throughput test's control session;
//! - [`stream`]: receive-side loss, duplicate, reordering and jitter
//!   counters of a UDP stream;
//! - [`limits`]: the limits every responder enforces (one table);
//! - [`auth`]: the shared secret as a key and its crypto (HMAC-SHA256):
//!   the TCP challenge and proof, the MAC a UDP trailer carries;
//! - [`admit`]: who may connect: client networks (CIDR), connections per
//!   second per address, the limits a Welcome advertises;
//! - [`machine`]: a responder's protocol logic as a pure state machine (one
//!   [`machine::Session`] per TCP connection, one [`machine::Registry`] of
//!   throughput tests), driven by the responder's own I/O and clock. Its
//!   registry counts in 64-bit atomics: on a target without them (a
//!   Cortex-M3, `thumbv7m-none-eabi`) it exists with the `single-core`
//!   feature, atomics made by masking interrupts (firmware/mcu-smoltcp). The wire formats build everywhere; scripts/test
//!   builds both for the Cortex-M3.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

pub mod admit;
pub mod auth;
pub mod control;
pub mod header;
pub mod limits;
#[cfg(any(target_has_atomic = "64", feature = "single-core"))]
pub mod machine;
pub mod objects;
pub mod pattern;
pub mod stamps;
pub mod status;
pub mod stream;
pub mod udp;

/// The protocol version this crate speaks.
pub const VERSION: u8 = 1;

/// The four bytes every TCP session header and every status record start
/// with ("SMTR"); [`header::MAGIC`] names it for the header.
pub const TCP_MAGIC: [u8; 4] = *b"SMTR";

/// The port a responder listens on (TCP and UDP) when none is given.
///
/// Chosen away from the ports of the peers (iperf3 5201, iperf2 5001,
/// sockperf 11111, qperf 19765, netperf 12865, irtt 2112) and below Linux's
/// ephemeral range (32768..60999) so a client's own sockets never hold it.
pub const DEFAULT_PORT: u16 = 24680;

/// Largest message size a version 1 header can express (the field is 32 bits).
pub const MAX_SIZE_FIELD: u32 = u32::MAX;

/// Reads a big-endian u16 at `at`; the caller has checked the length.
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Reads a big-endian u32 at `at`; the caller has checked the length.
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads a big-endian u64 at `at`; the caller has checked the length.
fn be64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}
