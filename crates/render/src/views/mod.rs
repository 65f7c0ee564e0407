//! One file per value: the function that builds its view.

pub mod comparison;
pub mod crr;
pub mod decision;
pub mod document;
pub mod fleet;
pub mod history;
pub mod latency;
pub mod live;
pub mod load;
pub mod ping;
pub mod plan;
pub mod report;
pub mod rr;
pub mod rrul;
pub mod runs;
pub mod spectrum;
pub mod split;
pub mod stream;
pub mod suite;
pub mod udp_burst;
pub mod udp_max;

use crate::format::Style;
use crate::view::View;
use stackmeter_results::{ReportSource, TestBody, Units};

/// A test's own part of the renderer, implemented once per test in its
/// view file: the blocks of its document, and a section of its own in a
/// run report where it has one. `views/document.rs` and `views/report.rs`
/// reach it through `with_body!` and `with_kind!`, so a new test that has
/// no view does not compile.
pub(crate) trait TestView: TestBody {
    /// The test's own blocks of its document; returns the sample counts
    /// behind its percentiles (for the note on thin tails).
    fn view(&self, v: &mut View, units: Units) -> Vec<u64>;

    /// A section of its own in a run report, with its heading, from every
    /// source's runs of the test (most tests have none: their figures are
    /// in the report's latency and interval charts and its comparisons).
    fn report_section(sources: &[ReportSource], style: &Style) -> Option<(&'static str, View)> {
        let _ = (sources, style);
        None
    }
}
