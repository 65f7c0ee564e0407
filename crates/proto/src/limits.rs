//! The limits every stackmeter responder enforces, written once.
//!
//! docs/protocol.md section 5 is the normative table; `protocol/vectors.json`
//! carries the same numbers under `limits`, and both the Rust tests
//! (`tests/vectors.rs`) and the C engine's tests check their constants
//! against it, so the Rust host responder and the C99 responder cannot
//! drift apart. A responder may be configured lower (an embedded build with
//! less RAM); these are the defaults a stock build ships with, except the
//! session count, which is what every responder holds at least (`serve`
//! holds as many as its open-files limit allows).

/// Concurrent TCP sessions every responder holds at least (the C
/// responder's default; `serve` defaults to its open-files limit); one more
/// than a responder's limit is refused with `Busy`.
pub const MAX_SESSIONS: usize = 1024;
/// Most bytes of synthetic objects a responder materialises (its object
/// catalogue in all).
pub const MAX_SYNTHETIC_BYTES: u64 = 1 << 30;
/// The header a client puts in each datagram it sends a plain UDP echo
/// server (magic, run tag, sequence, send time: `stackmeter_client`'s
/// plain ping), so the smallest such datagram.
pub const PLAIN_ECHO_HEADER_LEN: usize = 24;
/// Largest request, response or source write size; larger is `TooLarge`.
pub const MAX_MSG: u32 = 64 << 20;
/// The whole session header must arrive within this, else `HeaderTimeout`.
pub const HEADER_TIMEOUT_MS: u64 = 5_000;
/// A session with no progress for this long is aborted.
pub const IDLE_TIMEOUT_MS: u64 = 60_000;
/// Throughput tests (control sessions) open at once; one more is `Busy`.
pub const MAX_TESTS: usize = 16;
/// UDP streams counted per throughput test; datagrams of higher stream
/// indexes are ignored (the client refuses to open more).
pub const MAX_UDP_STREAMS: usize = 32;
/// Duplicate detection window of a UDP stream, in sequence numbers.
pub const DUP_WINDOW: u64 = 1024;
/// How long a final Report waits for the test's data sessions to end.
pub const DRAIN_MS: u64 = 2_000;
/// After Stop, UDP counts are final once they stood still this long.
pub const UDP_QUIET_MS: u64 = 20;
/// After a refusal the responder drains the client's bytes for at most
/// this long and this many bytes before closing (so no reset destroys the
/// status record).
pub const LINGER_MS: u64 = 500;
/// See [`LINGER_MS`].
pub const LINGER_BYTES: usize = 64 << 10;
/// Objects in a catalogue (object mode).
pub const MAX_OBJECTS: usize = 4096;
/// Bytes of an object name.
pub const MAX_NAME_LEN: usize = 255;

/// Every limit by the name `protocol/vectors.json` gives it, for the tests
/// that compare an implementation with the table.
pub const TABLE: [(&str, u64); 13] = [
    ("max_sessions", MAX_SESSIONS as u64),
    ("max_msg", MAX_MSG as u64),
    ("header_timeout_ms", HEADER_TIMEOUT_MS),
    ("idle_timeout_ms", IDLE_TIMEOUT_MS),
    ("max_tests", MAX_TESTS as u64),
    ("max_udp_streams", MAX_UDP_STREAMS as u64),
    ("dup_window", DUP_WINDOW),
    ("drain_ms", DRAIN_MS),
    ("udp_quiet_ms", UDP_QUIET_MS),
    ("linger_ms", LINGER_MS),
    ("linger_bytes", LINGER_BYTES as u64),
    ("max_objects", MAX_OBJECTS as u64),
    ("max_name_len", MAX_NAME_LEN as u64),
];

/// Writes of this size and up go out with TCP_NODELAY, smaller ones with
/// Nagle's algorithm on (docs/protocol.md, mode 5): a write that fills
/// whole segments gains nothing from Nagle, while small writes are
/// coalesced as a bulk sender's are. Clients' sinks follow it with
/// `--nodelay auto`, responders' sources always. Not a limit; a rule both
/// sides share.
pub const NODELAY_FROM: u32 = 16 << 10;
