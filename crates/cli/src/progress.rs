//! A progress display on stderr, on a terminal only (not a dumb one: TERM
//! unset or "dumb" turns it off, as indicatif does), and only once a run
//! has lasted two seconds: a bar with elapsed time and ETA when the length
//! is known (a stream's window, a suite's tests), else a spinner with the
//! elapsed time. Output printed while it shows goes through [`Progress::print`],
//! so rows and bar do not tear each other.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// After this long a run shows its progress.
const SHOW_AFTER: Duration = Duration::from_secs(2);

/// The display (inactive when stderr is not a terminal).
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// For one measuring test: a bar over `seconds` when it is known, else
    /// a spinner. `on` false (JSON output, not a terminal) shows nothing.
    pub fn test(on: bool, what: String, seconds: Option<f64>) -> Progress {
        if !on || !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = match seconds {
            Some(s) => {
                let b = ProgressBar::with_draw_target(Some((s * 1000.0) as u64), ProgressDrawTarget::hidden());
                b.set_style(style(
                    "{spinner} {elapsed_precise} [{bar:30}] {percent}% ETA {eta} {msg}",
                ));
                b
            }
            None => {
                let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
                b.set_style(style("{spinner} {elapsed_precise} {msg}"));
                b
            }
        };
        bar.set_message(what);
        let ticker = bar.clone();
        let timed = seconds.is_some();
        std::thread::spawn(move || {
            let start = Instant::now();
            while !ticker.is_finished() {
                if start.elapsed() >= SHOW_AFTER && ticker.is_hidden() {
                    ticker.set_draw_target(ProgressDrawTarget::stderr());
                }
                if timed {
                    ticker.set_position(start.elapsed().as_millis() as u64);
                }
                ticker.tick();
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Progress { bar: Some(bar) }
    }

    /// For a suite of `total` tests.
    pub fn suite(on: bool, total: usize) -> Progress {
        if !on || !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::new(total as u64);
        // No bar until there is a total to fill it towards: a bar of 0 of 0
        // would show full.
        bar.set_style(style(if total == 0 { SUITE_WAITING } else { SUITE_BAR }));
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar: Some(bar) }
    }

    /// Moves a suite's bar: `done` of `total` finished, `what` running.
    pub fn set(&self, done: usize, total: usize, what: String) {
        if let Some(b) = &self.bar {
            if total > 0 && b.length() == Some(0) {
                b.set_style(style(SUITE_BAR));
            }
            b.set_length(total as u64);
            b.set_position(done as u64);
            b.set_message(what);
        }
    }

    /// Shows `what` alone, with the time (a run until decided has no
    /// total to count towards).
    pub fn message(&self, what: String) {
        if let Some(b) = &self.bar {
            b.set_style(style("{elapsed_precise} {msg}"));
            b.set_message(what);
        }
    }

    /// Prints `text` on stdout without tearing the bar.
    pub fn print(&self, text: &str) {
        let out = || {
            let _ = crate::out::print(text);
        };
        match &self.bar {
            Some(b) => b.suspend(out),
            None => out(),
        }
    }

    /// Prints a line on stderr without tearing the bar.
    pub fn print_err(&self, line: &str) {
        match &self.bar {
            Some(b) => b.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    /// Whether a bar shows (on a terminal, text output).
    pub fn shown(&self) -> bool {
        self.bar.is_some()
    }

    /// Removes the display.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Plain progress lines where no bar shows (stderr not a terminal): the
/// first at once, then a line when nothing was said for
/// [`Heartbeat::QUIET`], so a log never falls silent for long, and
/// nothing more.
pub struct Heartbeat {
    on: bool,
    /// When something was last said; none: nothing yet.
    last: std::cell::Cell<Option<Instant>>,
}

impl Heartbeat {
    /// Longest silence before a plain line.
    pub const QUIET: Duration = Duration::from_secs(3);

    /// Lines only when `bar` is false (no bar shows).
    pub fn new(bar: bool) -> Heartbeat {
        Heartbeat {
            on: !bar,
            last: std::cell::Cell::new(None),
        }
    }

    /// Prints `line` when it is the first, or nothing was said for a while.
    pub fn say(&self, line: &str) {
        if self.on && self.last.get().is_none_or(|t| t.elapsed() >= Self::QUIET) {
            eprintln!("{line}");
            self.last.set(Some(Instant::now()));
        }
    }

    /// Prints `line` now (through the bar, if one shows), and counts it as
    /// said.
    pub fn print(&self, progress: &Progress, line: &str) {
        progress.print_err(line);
        self.last.set(Some(Instant::now()));
    }
}

/// A suite's bar, and its line before the total is known.
const SUITE_BAR: &str = "{elapsed_precise} [{bar:30}] {pos}/{len} tests, ETA {eta}: {msg}";
const SUITE_WAITING: &str = "{elapsed_precise} {msg}";

fn style(template: &str) -> ProgressStyle {
    // Cannot fail: the templates above are fixed and valid.
    ProgressStyle::with_template(template)
        .expect("a valid progress template")
        .progress_chars("#>-")
}
