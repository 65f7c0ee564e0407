//! What the smoltcp driver needs from the place it runs: the clock, the
//! CPU time it may charge to a test, where event lines go, and the objects
//! (a catalogue the session machine looks names up in, and the bytes of a
//! body). A Linux process (`serve.rs`) and the LM3S6965 firmware
//! (firmware/mcu-smoltcp) each implement it once; everything else in this
//! crate is the same code on both.

use core::fmt;
use stackmeter_proto::machine::{Catalogue, CpuTime, Outgoing};

/// The driver's view of its host.
pub trait Platform {
    /// One session's view of the objects (a fresh one per slot).
    type Files: Catalogue;

    /// A new per-session view of the objects.
    fn files(&self) -> Self::Files;

    /// The next bytes of body `b` (any non-empty prefix of what it names),
    /// or `None` when they cannot be had (the session then fails its send).
    fn body(files: &mut Self::Files, b: Outgoing) -> Option<&[u8]>;

    /// Whether [`Platform::files`] serves anything (object mode offered).
    fn has_objects(&self) -> bool;

    /// Nanoseconds on a monotonic clock (the same one the loop passes in).
    fn now_ns(&self) -> u64;

    /// CPU time the loop has used so far, where the platform can tell.
    fn cpu(&self) -> Option<CpuTime>;

    /// One event line (a refusal, an abort), as the platform logs them.
    fn event(&self, line: fmt::Arguments<'_>);
}
