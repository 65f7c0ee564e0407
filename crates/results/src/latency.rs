//! What every latency table shares: the figures in microseconds, the two
//! levels of a bimodal distribution, and the columns they print in.

use serde::{Deserialize, Serialize};
use stackmeter_recorder::Summary;

/// Latency figures in microseconds (a [`Summary`] of nanoseconds / 1000).
pub type LatencyUs = Summary;

/// Two levels in one distribution (see `stackmeter_recorder::modality`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Levels {
    /// Centre of the lower level, microseconds.
    pub low_us: f64,
    /// Centre of the higher level, microseconds.
    pub high_us: f64,
    /// Share of samples in the lower level, 0..1.
    pub low_share: f64,
}

/// A latency figure in microseconds, with a precision that suits its
/// size (two decimals under 1,000 us, one under 100,000, none above).
pub fn latency_text(v: f64) -> String {
    if v.abs() < 1_000.0 {
        format!("{v:.2}")
    } else if v.abs() < 100_000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}
