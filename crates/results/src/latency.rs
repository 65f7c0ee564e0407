//! What every latency table shares: the figures in microseconds, the two
//! levels of a bimodal distribution, and the columns they print in.

use crate::view::Col;
use serde::{Deserialize, Serialize};
use stackmeter_stats::Summary;

/// Latency figures in microseconds (a [`Summary`] of nanoseconds / 1000).
pub type LatencyUs = Summary;

/// Two levels in one distribution (see `stackmeter_stats::modality`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Levels {
    /// Centre of the lower level, microseconds.
    pub low_us: f64,
    /// Centre of the higher level, microseconds.
    pub high_us: f64,
    /// Share of samples in the lower level, 0..1.
    pub low_share: f64,
}

/// The latency columns every latency table shares.
pub fn latency_cols() -> Vec<Col> {
    ["min", "mean", "p50", "p90", "p99", "p99.9", "max", "stddev"]
        .iter()
        .map(|h| Col::num(h, 7))
        .collect()
}

/// A summary's cells under [`latency_cols`], with precision to match.
pub fn latency_cells(s: &LatencyUs) -> Vec<String> {
    [s.min, s.mean, s.p50, s.p90, s.p99, s.p999, s.max, s.stddev]
        .iter()
        .map(|&v| num(v))
        .collect()
}

/// A figure with a precision that suits its size.
pub fn num(v: f64) -> String {
    if v.abs() < 1_000.0 {
        format!("{v:.2}")
    } else if v.abs() < 100_000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}
