//! The bodies of stackmeter's fuzz targets, written once: every parser that
//! reads bytes from the network or from a file (session header, status
//! record, UDP datagram and stamp block, control records, object requests
//! and catalogues, UDP stream counters, TOML plans, stored documents) and
//! the pure session machine (`proto::machine::Session`, driven by arbitrary
//! bytes, calls and time steps). Each body panics only when an invariant the
//! crate's documentation promises is broken.
//!
//! Two harnesses call them: the cargo-fuzz campaigns in `fuzz/` (nightly,
//! libFuzzer) and the stable short run in `tests/short_run.rs`, which
//! replays every file of `fuzz/corpus/<target>/` and a few thousand seeded
//! mutations of them ([`mutate`]) as an ordinary `cargo test`.

mod files;
mod mutate;
mod parsers;
mod session;

pub use files::{document, plan};
pub use mutate::{mutate, Rng};
pub use parsers::{control, objects, session_header, status, udp, udp_stream};
pub use session::session;

/// A target's body: one input, a panic when an invariant breaks.
pub type Body = fn(&[u8]);

/// Every target by name: the name is its `fuzz/fuzz_targets/NAME.rs` and
/// its corpus folder `fuzz/corpus/NAME/`.
pub const TARGETS: [(&str, Body); 9] = [
    ("session_header", session_header),
    ("status", status),
    ("udp", udp),
    ("control", control),
    ("objects", objects),
    ("udp_stream", udp_stream),
    ("plan", plan),
    ("document", document),
    ("session", session),
];
