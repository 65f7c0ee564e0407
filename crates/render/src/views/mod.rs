//! One file per value: the function that builds its view.

pub mod comparison;
pub mod crr;
pub mod decision;
pub mod document;
pub mod fleet;
pub mod history;
pub mod latency;
pub mod layers;
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
use crate::units::Units;
use crate::view::View;
use stackmeter_results::{Body, ReportSource, TestBody, TestKind};

/// A test's own part of the renderer, implemented once per test in its
/// view file: the blocks of its document, and a section of its own in a
/// run report where it has one. [`view_of`] and [`report_section`] reach
/// it with one `match` each, so a new test that has no view does not
/// compile.
pub(crate) trait TestView: TestBody {
    /// The test's own blocks of its document; returns the sample counts
    /// behind its percentiles (for the note on thin tails).
    fn view(&self, v: &mut View, units: Units) -> Vec<u64>;

    /// A section of its own in a run report, with its heading, from every
    /// source's runs of the test (most tests have none: their figures are
    /// in the report's latency and interval charts and its comparisons).
    fn report_section(sources: &[ReportSource], style: &Style) -> Option<(&'static str, View)>
    where
        Self: Sized,
    {
        let _ = (sources, style);
        None
    }
}

/// The blocks of `body`'s own view ([`TestView::view`]).
pub(crate) fn view_of(body: &Body, v: &mut View, units: Units) -> Vec<u64> {
    match body {
        Body::Rr(b) => b.view(v, units),
        Body::Crr(b) => b.view(v, units),
        Body::Ping(b) => b.view(v, units),
        Body::Stream(b) => b.view(v, units),
        Body::UdpMax(b) => b.view(v, units),
        Body::Load(b) => b.view(v, units),
        Body::Rrul(b) => b.view(v, units),
        Body::UdpBurst(b) => b.view(v, units),
    }
}

/// The report section of test `kind` ([`TestView::report_section`]).
pub(crate) fn report_section(kind: TestKind, sources: &[ReportSource], style: &Style) -> Option<(&'static str, View)> {
    use stackmeter_results::{CrrBody, LoadBody, PingBody, RrBody, RrulBody, StreamBody, UdpBurstBody, UdpMaxBody};
    match kind {
        TestKind::Rr => RrBody::report_section(sources, style),
        TestKind::Crr => CrrBody::report_section(sources, style),
        TestKind::Ping => PingBody::report_section(sources, style),
        TestKind::Stream => StreamBody::report_section(sources, style),
        TestKind::UdpMax => UdpMaxBody::report_section(sources, style),
        TestKind::Load => LoadBody::report_section(sources, style),
        TestKind::Rrul => RrulBody::report_section(sources, style),
        TestKind::UdpBurst => UdpBurstBody::report_section(sources, style),
    }
}
