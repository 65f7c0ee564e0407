//! What every command prints at its end: the result on stdout (a closed
//! pipe is not an error: the reader has all it wanted) and, on failure,
//! one error line on stderr with the exit code it maps to.

use std::io::Write;

/// Prints the one-line error every failure ends with, and returns `code`.
pub fn fail(code: i32, msg: impl std::fmt::Display) -> i32 {
    eprintln!("stackmeter: error: {msg}");
    code
}

/// Reports a command's error with its exit code.
pub fn error(e: impl Into<crate::error::Error>) -> i32 {
    let e = e.into();
    fail(e.exit_code(), e)
}

/// Writes `s` to stdout and flushes; a failure other than a closed pipe is
/// reported as exit code 1.
pub fn print(s: &str) -> Result<(), i32> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(s.as_bytes()).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(fail(1, format!("cannot write the output: {e}"))),
        _ => Ok(()),
    }
}

/// Prints `s` and returns the exit code: 0, or 1 if stdout failed.
pub fn finish(s: &str) -> i32 {
    print(s).err().unwrap_or(0)
}

/// Exit code when a regression gate (`--fail-on`) finds a row that fails it.
pub const REGRESSION: i32 = 6;

/// Reports the rows that failed the gate on stderr; the exit code: 0, or
/// [`REGRESSION`] when there are any.
pub fn gate(failures: &[String]) -> i32 {
    for f in failures {
        eprintln!("stackmeter: regression: {f}");
    }
    if failures.is_empty() {
        0
    } else {
        eprintln!(
            "stackmeter: error: {} row(s) failed the --fail-on gate (exit code {REGRESSION})",
            failures.len()
        );
        REGRESSION
    }
}

/// The value of a `Result<T, String>` of the command line, or a return of
/// exit code 2 with the error on one line.
macro_rules! usage_or {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return crate::out::fail(2, e),
        }
    };
}
pub(crate) use usage_or;
