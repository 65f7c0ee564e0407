//! The responder's event log: one line per event, never per message.

use std::fmt::Arguments;
use std::io::Write;

/// Where log lines go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Log {
    /// Standard error: "stackmeter serve: TIME LEVEL: event", TIME in UTC
    /// with milliseconds, LEVEL `info` or `warn` (a line the caller starts
    /// with "warning: ").
    Stderr,
    /// Nowhere (a responder embedded in a measuring client).
    Quiet,
}

impl Log {
    /// Writes one line. Errors writing the log are ignored: the responder
    /// must keep serving when its stderr is closed.
    pub fn line(&self, args: Arguments<'_>) {
        if *self == Log::Stderr {
            let text = args.to_string();
            let (level, text) = match text.strip_prefix("warning: ") {
                Some(rest) => ("warn", rest),
                None => ("info", text.as_str()),
            };
            let time = stackmeter_sys::utc_rfc3339_ms(stackmeter_sys::unix_now_ms());
            let mut e = std::io::stderr().lock();
            let _ = writeln!(e, "stackmeter serve: {time} {level}: {text}");
        }
    }
}
