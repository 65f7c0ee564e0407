//! The report over stored results as one typed value, and its view: the
//! comparisons of every source against the first, latency CDFs and
//! histograms merged over repetitions, throughput per interval, and the
//! environment each source ran in. The engine reads the store into a
//! [`RunReport`]; everything here is pure.

use crate::comparison::Comparison;
use crate::doc::Document;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Which row and figure a merged histogram belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct HistKey {
    /// The test.
    pub test: crate::TestKind,
    /// Plan step ("" outside suites).
    pub step: String,
    /// Row label ("1 B:1 KiB").
    pub row: String,
    /// Figure key ("rtt_us").
    pub metric: String,
}

/// One point of a stored per-interval series.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct SeriesPoint {
    /// "total", "sent", "received".
    pub series: String,
    /// End of the interval, seconds from the start.
    pub end_s: f64,
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
}

/// One stored test of a source.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ReportTest {
    /// Its id in the store.
    pub id: i64,
    /// Its plan step ("" outside suites).
    pub step: String,
    /// The document.
    pub doc: Document,
    /// Its per-interval series, if it has one.
    pub intervals: Vec<SeriesPoint>,
}

/// One source of the report (a label, a run, or a run's label).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ReportSource {
    /// How the source is named.
    pub name: String,
    /// Its tests in stored order.
    pub tests: Vec<ReportTest>,
    /// Its histograms merged over repetitions, per row and figure.
    #[serde(skip)]
    pub merged: Vec<(HistKey, Histogram<u64>)>,
}

/// The report of stored runs side by side (`stackmeter report`); the
/// wire record named Report is the responder's counters (proto::control).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct RunReport {
    /// Always `stackmeter/1`.
    pub schema: String,
    /// When it was made, UTC RFC 3339.
    pub generated: String,
    /// stackmeter's version.
    pub version: String,
    /// Every source against the first.
    pub comparisons: Vec<Comparison>,
    /// Sources that are the two targets of one run made until decided:
    /// that run's decision, not a fresh comparison.
    pub decisions: Vec<crate::decision::Decision>,
    /// The sources, baseline first.
    pub sources: Vec<ReportSource>,
}
