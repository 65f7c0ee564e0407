//! `stackmeter history`: the engine lines the runs up and judges them
//! (`crate::flags::history`); this prints the history,
//! saves its change points when asked, and turns a regression in the
//! window into exit code 9 when `--fail-on-regression` asks.

use crate::flags::history::{history, HistoryArgs};
use crate::out::{fail, finish};
use stackmeter_render::render;

/// Exit code of `history --fail-on-regression` when a regression lies in
/// the window.
pub const REGRESSION_IN_HISTORY: i32 = 9;

pub fn run(a: HistoryArgs) -> i32 {
    let format = crate::out::usage_or!(a.output.format());
    let (h, store) = match history(&a) {
        Ok(x) => x,
        Err(e) => return crate::out::error(e),
    };
    if let (true, Some(mut s)) = (a.save, store) {
        let now = stackmeter_sys::utc_rfc3339(stackmeter_sys::unix_now());
        match stackmeter_query::history::save(&mut s, &h, &now) {
            Ok(n) => eprintln!("stackmeter: saved {n} change point(s) to the change_points table"),
            Err(e) => return crate::out::error(e),
        }
    }
    let code = finish(&render(&h, format, &a.output.style()));
    let regressions = h.regressions();
    match (code, a.fail_on_regression && !regressions.is_empty()) {
        (0, true) => {
            for r in &regressions {
                eprintln!("stackmeter: regression: {r}");
            }
            fail(
                REGRESSION_IN_HISTORY,
                format!(
                    "{} regression(s) in the window (exit code {REGRESSION_IN_HISTORY})",
                    regressions.len()
                ),
            )
        }
        (code, _) => code,
    }
}
