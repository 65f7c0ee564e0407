//! The responder's event log: one line per event, never per message.

use std::fmt::Arguments;
use std::io::Write;

/// Where log lines go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Log {
    /// Standard error, prefixed "stackmeter serve: ".
    Stderr,
    /// Nowhere (a responder embedded in a measuring client).
    Quiet,
}

impl Log {
    /// Writes one line. Errors writing the log are ignored: the responder
    /// must keep serving when its stderr is closed.
    pub fn line(&self, args: Arguments<'_>) {
        if *self == Log::Stderr {
            let mut e = std::io::stderr().lock();
            let _ = writeln!(e, "stackmeter serve: {args}");
        }
    }
}
