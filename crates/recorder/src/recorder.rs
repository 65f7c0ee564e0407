//! The sample store: an HdrHistogram plus exact extremes and moments.
//!
//! Recording is an index computation and a few additions; it allocates
//! nothing, so a timed loop may call it right after its second clock read.

use hdrhistogram::Histogram;

/// Largest value the histogram holds exactly: one hour in nanoseconds.
/// Larger samples are clamped to it and counted in [`Recorder::saturated`].
pub const MAX_VALUE: u64 = 3_600_000_000_000;
/// Significant decimal digits kept by the histogram (0.1% bucket error).
pub const SIGFIG: u8 = 3;

/// Every sample of one measurement.
#[derive(Clone, Debug)]
pub struct Recorder {
    hist: Histogram<u64>,
    min: u64,
    max: u64,
    sum: u128,
    sum_sq: u128,
    saturated: u64,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// An empty recorder for values from 1 to [`MAX_VALUE`].
    pub fn new() -> Recorder {
        // Cannot fail: the bounds and digit count are constants within the
        // ranges the hdrhistogram crate accepts (low >= 1, high >= 2*low,
        // sigfig <= 5).
        let hist = Histogram::new_with_bounds(1, MAX_VALUE, SIGFIG).expect("constant histogram bounds are valid");
        Recorder {
            hist,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
            saturated: 0,
        }
    }

    /// An empty recorder whose histogram grows with the largest sample
    /// instead of covering 1 to [`MAX_VALUE`] from the start: a few KiB for
    /// round trips of microseconds to milliseconds, where [`Recorder::new`]
    /// takes about half a MiB. For processes that keep many at once (an
    /// agent's pairs); a timed loop keeps `new`, which never allocates
    /// while it records.
    pub fn growing() -> Recorder {
        // Cannot fail: 3 significant digits are within the crate's range.
        let mut hist = Histogram::new(SIGFIG).expect("constant histogram digits are valid");
        hist.auto(true);
        Recorder {
            hist,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
            saturated: 0,
        }
    }

    /// Records one sample. Zero is kept as 1 in the histogram (its lowest
    /// bucket) but exactly in the minimum and the moments.
    pub fn record(&mut self, value: u64) {
        let clamped = if value > MAX_VALUE {
            self.saturated += 1;
            MAX_VALUE
        } else {
            value.max(1)
        };
        // In range for a full recorder; a growing one grows to take it.
        if self.hist.record(clamped).is_err() {
            self.hist.saturating_record(clamped);
        }
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.sum += value as u128;
        self.sum_sq += (value as u128) * (value as u128);
    }

    /// Adds every sample of `other` (per thread, per connection, per run).
    pub fn merge(&mut self, other: &Recorder) {
        // Cannot fail: every histogram covers 1 to MAX_VALUE from the start
        // or grows to what it holds (values are clamped to MAX_VALUE), and
        // a growing one grows to take another's.
        self.hist.add(&other.hist).expect("histograms of recorders merge");
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.saturated += other.saturated;
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Samples above [`MAX_VALUE`], clamped in the histogram.
    pub fn saturated(&self) -> u64 {
        self.saturated
    }

    /// The underlying histogram (for percentiles, CDFs and serialization).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// Exact smallest sample, if any.
    pub fn min(&self) -> Option<u64> {
        (self.count() > 0).then_some(self.min)
    }

    /// Exact largest sample, if any.
    pub fn max(&self) -> Option<u64> {
        (self.count() > 0).then_some(self.max)
    }

    /// Exact mean, if any sample.
    pub fn mean(&self) -> Option<f64> {
        let n = self.count();
        (n > 0).then(|| self.sum as f64 / n as f64)
    }

    /// Exact sample standard deviation (n - 1), 0 for a single sample.
    pub fn stddev(&self) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        if n == 1 {
            return Some(0.0);
        }
        let n_f = n as f64;
        let mean = self.sum as f64 / n_f;
        let var = (self.sum_sq as f64 - n_f * mean * mean) / (n_f - 1.0);
        Some(var.max(0.0).sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_moments() {
        let mut r = Recorder::new();
        for v in [2u64, 4, 4, 4, 5, 5, 7, 9] {
            r.record(v);
        }
        assert_eq!(r.count(), 8);
        assert_eq!(r.mean(), Some(5.0));
        // sample stddev of the classic example: sqrt(32/7)
        assert!((r.stddev().unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!((r.min(), r.max()), (Some(2), Some(9)));
    }

    #[test]
    fn merge_equals_recording_together() {
        let (mut a, mut b, mut all) = (Recorder::new(), Recorder::new(), Recorder::new());
        for v in 1..1000u64 {
            if v % 3 == 0 {
                a.record(v * 17);
            } else {
                b.record(v * 17);
            }
            all.record(v * 17);
        }
        a.merge(&b);
        assert_eq!(a.count(), all.count());
        assert_eq!(a.mean(), all.mean());
        assert_eq!(
            a.histogram().value_at_quantile(0.99),
            all.histogram().value_at_quantile(0.99)
        );
    }

    #[test]
    fn huge_values_saturate_not_vanish() {
        let mut r = Recorder::new();
        r.record(u64::MAX / 2);
        r.record(0);
        assert_eq!(r.count(), 2);
        assert_eq!(r.saturated(), 1);
        assert_eq!(r.min(), Some(0));
    }

    #[test]
    fn empty_has_no_figures() {
        let r = Recorder::new();
        assert_eq!((r.min(), r.mean(), r.stddev()), (None, None, None));
    }

    #[test]
    fn a_growing_recorder_is_small_and_agrees_with_a_full_one() {
        let (mut full, mut grow) = (Recorder::new(), Recorder::growing());
        for v in [20_000u64, 35_000, 1_000_000, 7, 0] {
            full.record(v);
            grow.record(v);
        }
        for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
            assert_eq!(
                full.histogram().value_at_quantile(q),
                grow.histogram().value_at_quantile(q),
                "{q}"
            );
        }
        assert_eq!(
            (full.min(), full.max(), full.mean()),
            (grow.min(), grow.max(), grow.mean())
        );
        let bytes = |r: &Recorder| r.histogram().distinct_values() * 8;
        assert!(
            bytes(&grow) * 2 < bytes(&full),
            "{} against {}",
            bytes(&grow),
            bytes(&full)
        );
        let mut merged = Recorder::new();
        merged.merge(&grow);
        assert_eq!(merged.count(), 5);
        grow.merge(&full);
        assert_eq!(grow.count(), 10);
    }
}
