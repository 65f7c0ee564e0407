//! The percentile spectrum of a stored run (`show RUN --percentiles`):
//! every histogram behind its figures read out at 0%, 50%, 75%, 87.5% ...
//! up to the maximum, as HdrHistogram prints it, and drawn against
//! 1/(1-q) so the tail is as wide as the body.

use serde::Serialize;

/// One point of a spectrum.
#[derive(Clone, Copy, Debug, Serialize, schemars::JsonSchema)]
pub struct SpectrumPoint {
    /// Percentile, 0 to 100.
    pub percentile: f64,
    /// The value there, microseconds.
    pub value_us: f64,
    /// Samples at or below it.
    pub count: u64,
}

/// The spectrum of one histogram: one figure of one row of one test.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct SpectrumRow {
    /// Target label.
    pub label: String,
    /// The test.
    pub test: crate::TestKind,
    /// Plan step ("" outside suites).
    pub step: String,
    /// Repetition (0 outside suites).
    pub repetition: usize,
    /// The row ("1 B:1 KiB").
    pub row: String,
    /// The figure ("rtt_us").
    pub metric: String,
    /// Samples.
    pub count: u64,
    /// The points, ascending.
    pub points: Vec<SpectrumPoint>,
}

/// Every spectrum of a run.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Spectrum {
    /// Always `stackmeter/1`.
    pub schema: String,
    /// The run id.
    pub run: i64,
    /// One per stored histogram, in stored order.
    pub rows: Vec<SpectrumRow>,
}
