//! The figures reported for every latency: count, extremes, mean,
//! percentiles and standard deviation, in the recorder's unit.

use crate::recorder::Recorder;
use serde::{Deserialize, Serialize};

/// One distribution, summarised. Percentiles come from the histogram
/// (the deep tails only when there are enough samples to have one)
/// (within 0.1%); min, max, mean and stddev are exact.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// 99.99th percentile, when there are 10,000 samples or more (with
    /// fewer it would be the maximum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p9999: Option<f64>,
    /// 99.999th percentile, when there are 100,000 samples or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99999: Option<f64>,
    /// Largest sample.
    pub max: f64,
    /// Sample standard deviation.
    pub stddev: f64,
}

impl Summary {
    /// Summarises `r`, or `None` when it holds no sample.
    pub fn of(r: &Recorder) -> Option<Summary> {
        let h = r.histogram();
        // Percentiles are reported as the bucket's highest equivalent value
        // (HdrHistogram's convention), clamped to the exact extremes so a
        // percentile never lies outside [min, max].
        let (min, max) = (r.min()? as f64, r.max()? as f64);
        let q = |quantile: f64| (h.value_at_quantile(quantile) as f64).clamp(min, max);
        Some(Summary {
            count: r.count(),
            min,
            mean: r.mean()?,
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            p9999: (r.count() >= 10_000).then(|| q(0.9999)),
            p99999: (r.count() >= 100_000).then(|| q(0.99999)),
            max,
            stddev: r.stddev()?,
        })
    }

    /// The same summary with every figure divided by `div` (for example
    /// nanoseconds to microseconds with 1000.0). The count is kept.
    pub fn scaled(&self, div: f64) -> Summary {
        Summary {
            count: self.count,
            min: self.min / div,
            mean: self.mean / div,
            p50: self.p50 / div,
            p90: self.p90 / div,
            p99: self.p99 / div,
            p999: self.p999 / div,
            p9999: self.p9999.map(|v| v / div),
            p99999: self.p99999.map(|v| v / div),
            max: self.max / div,
            stddev: self.stddev / div,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_1_to_1000() {
        let mut r = Recorder::new();
        for v in 1..=1000u64 {
            r.record(v * 1000);
        }
        let s = Summary::of(&r).unwrap();
        assert_eq!(s.count, 1000);
        assert_eq!((s.min, s.max), (1000.0, 1_000_000.0));
        for (got, want) in [
            (s.p50, 500_000.0),
            (s.p90, 900_000.0),
            (s.p99, 990_000.0),
            (s.p999, 999_000.0),
        ] {
            assert!((got - want).abs() / want <= 0.001, "{got} vs {want}");
        }
        assert!((s.mean - 500_500.0).abs() < 1e-6);
        let us = s.scaled(1000.0);
        assert!((us.mean - 500.5).abs() < 1e-9);
        assert_eq!(us.count, 1000);
    }

    #[test]
    fn deep_tails_only_with_samples_for_them() {
        let mut r = Recorder::new();
        for v in 1..=9_999u64 {
            r.record(v);
        }
        assert_eq!(
            Summary::of(&r).unwrap().p9999,
            None,
            "9,999 samples: p99.99 would be the max"
        );
        r.record(10_000);
        let s = Summary::of(&r).unwrap();
        assert!(s.p9999.is_some_and(|p| s.p999 <= p && p <= s.max));
        assert_eq!(s.p99999, None);
        for v in 0..90_000u64 {
            r.record(v % 10_000 + 1);
        }
        let s = Summary::of(&r).unwrap();
        let (a, b) = (s.p9999.unwrap(), s.p99999.unwrap());
        assert!(s.p999 <= a && a <= b && b <= s.max, "{s:?}");
        assert_eq!(s.scaled(10.0).p99999, Some(b / 10.0));
    }

    #[test]
    fn single_sample() {
        let mut r = Recorder::new();
        r.record(6_500);
        let s = Summary::of(&r).unwrap();
        assert_eq!(
            (s.min, s.p50, s.p999, s.max, s.stddev),
            (6500.0, 6500.0, 6500.0, 6500.0, 0.0)
        );
    }
}
