//! A comparison that runs until it knows, on the typical pair: a
//! confidence sequence for the median of paired log-ratios, valid however
//! often it is looked at, whatever their distribution.
//!
//! The mean of ln(B/A) over pairs ([`crate::sequential`]) is what a few
//! wild blocks move most: on a loaded machine a burst that catches one
//! block of a pair makes its log-ratio several times the others', and at
//! a hundred pairs a handful of them decide both the mean and the
//! variance its interval is built from. The median is the typical pair,
//! and it has a confidence sequence that needs no variance at all
//! (Howard and Ramdas, "Sequential estimation of quantiles with
//! applications to A/B-testing and best-arm identification", Bernoulli
//! 28(3), 2022, section 2): at the true median m, each pair's indicator
//! 1{x <= m} is 1 with chance 1/2, so S_t = sum (1{x_i <= m} - 1/2) is a
//! martingale whose steps lie in an interval of width 1, sub-Gaussian
//! with variance 1/4 a step (Hoeffding). The normal mixture boundary of
//! [`crate::sequential`] at intrinsic time V = t/4 then holds at every t
//! with probability 1 - alpha, and the values m can take are those whose
//! count of pairs below them lies within it: an interval between two
//! order statistics of the pairs, at ranks t/2 -/+ u(t/4).
//!
//! Each side is held at alpha/2 on its own: with ties (block figures are
//! quantised), P(x <= m) and P(x < m) differ, the two sides are two
//! martingales, and a boundary at alpha/2 for each keeps the total at
//! alpha. Pairs that are not independent (a load that lasts several
//! pairs) make the indicators autocorrelated: V is inflated by (1 + r) /
//! (1 - r) for r their lag-1 autocorrelation, as the mean's variance is,
//! and the rules of [`crate::decide`] ask for more pairs besides. Pure:
//! no I/O, no clock.

use crate::sequential::{normal_mixture_bound, Call, MIN_PAIRS, T_OPT};

/// The pairs' log-ratios, in the order seen and sorted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MedianSeq {
    order: Vec<f64>,
    sorted: Vec<f64>,
}

impl MedianSeq {
    /// An empty sequence.
    pub fn new() -> MedianSeq {
        MedianSeq::default()
    }

    /// Adds one pair's log-ratio; a value that is not finite is left out
    /// (it has no place among the others).
    pub fn push(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        let at = self.sorted.partition_point(|&v| v <= x);
        self.sorted.insert(at, x);
        self.order.push(x);
    }

    /// Pairs so far.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether no pair is in.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The median log-ratio (NaN with no pair).
    pub fn median(&self) -> f64 {
        match self.sorted.is_empty() {
            true => f64::NAN,
            false => crate::median::median_sorted(&self.sorted),
        }
    }

    /// The mean log-ratio, a secondary figure.
    pub fn mean(&self) -> f64 {
        self.order.iter().sum::<f64>() / self.order.len().max(1) as f64
    }

    /// The lag-1 autocorrelation of the pairs' sides of their median
    /// (+1 above, -1 below, 0 on it), with a short series' bias taken out
    /// and clipped to [0, 0.9]: what the intrinsic time is inflated by.
    fn sides_serial(&self) -> f64 {
        let n = self.order.len();
        if n < 3 {
            return 0.0;
        }
        let m = self.median();
        let s: Vec<f64> = self
            .order
            .iter()
            .map(|&x| (x - m).signum() * f64::from(x != m))
            .collect();
        let mean = s.iter().sum::<f64>() / n as f64;
        let var = s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
        if var <= 0.0 {
            return 0.0;
        }
        let cov = s.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum::<f64>() / n as f64;
        let r1 = cov / var;
        (r1 + (1.0 + 3.0 * r1) / n as f64).clamp(0.0, 0.9)
    }

    /// The ranks (from 1) of the order statistics that bound the median
    /// at level `1 - alpha`, now: none for a side still unbounded.
    fn ranks(&self, alpha: f64) -> (Option<usize>, Option<usize>) {
        let n = self.order.len() as f64;
        let r = self.sides_serial();
        let v = n / 4.0 * (1.0 + r) / (1.0 - r);
        let u = normal_mixture_bound(v, alpha / 2.0, T_OPT / 4.0);
        let lo = (n / 2.0 - u).floor() + 1.0;
        let hi = (n / 2.0 + u).ceil();
        ((lo >= 1.0).then_some(lo as usize), (hi <= n).then_some(hi as usize))
    }

    /// The confidence sequence's interval for the median log-ratio at
    /// level `1 - alpha`, now; `None` before [`MIN_PAIRS`] pairs and while
    /// either side is unbounded.
    pub fn interval(&self, alpha: f64) -> Option<(f64, f64)> {
        if self.order.len() < MIN_PAIRS {
            return None;
        }
        match self.ranks(alpha) {
            (Some(lo), Some(hi)) => Some((self.sorted[lo - 1], self.sorted[hi - 1])),
            _ => None,
        }
    }

    /// Where the interval stands against +/-`band` (log scale, above 0).
    pub fn call(&self, alpha: f64, band: f64) -> Call {
        Call::of(self.interval(alpha), band)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn normal(rng: &mut Rng) -> f64 {
        // Box-Muller.
        let u1 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let u2 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// The share of `runs` sequences of `looks` pairs whose interval ever
    /// leaves out the true median 0, with the noise `draw` gives.
    fn misses(seed: u64, runs: usize, looks: usize, mut draw: impl FnMut(&mut Rng) -> f64) -> f64 {
        let mut rng = Rng::new(seed);
        let mut missed = 0;
        for _ in 0..runs {
            let mut cs = MedianSeq::new();
            let mut out = false;
            for _ in 0..looks {
                cs.push(draw(&mut rng));
                if let Some((lo, hi)) = cs.interval(0.05) {
                    out |= lo > 0.0 || hi < 0.0;
                }
            }
            missed += usize::from(out);
        }
        missed as f64 / runs as f64
    }

    /// The guarantee holds whatever the distribution: normal noise, a
    /// Cauchy (no mean at all), a lopsided mixture whose mean is far from
    /// its median (a tenth of the pairs caught by a burst, ln 3 off), and
    /// values that tie on a grid with the median on one of them.
    #[test]
    fn coverage_holds_for_any_distribution() {
        let looks = 300;
        let m = misses(21, 1000, looks, |r| 0.05 * normal(r));
        assert!(m <= 0.05, "normal: {m}");
        let m = misses(22, 1000, looks, |r| {
            let u = (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            0.05 * (std::f64::consts::PI * (u - 0.5)).tan()
        });
        assert!(m <= 0.05, "Cauchy: {m}");
        // A burst catches A's block (x < 0) in a tenth of the pairs; the
        // median of this mixture is near 0.0063, not 0: the test is
        // shifted by its true median, found from a million draws.
        let burst = |r: &mut Rng| {
            if r.next_u64().is_multiple_of(10) {
                -3f64.ln() + 0.05 * normal(r)
            } else {
                0.05 * normal(r)
            }
        };
        let mut rng = Rng::new(99);
        let mut all: Vec<f64> = (0..1_000_000).map(|_| burst(&mut rng)).collect();
        let truth = crate::median_in_place(&mut all);
        let m = misses(23, 1000, looks, |r| burst(r) - truth);
        assert!(m <= 0.05, "bursts: {m}");
        // Ties: values on a grid of 0.01, the median on a grid point.
        let m = misses(24, 1000, looks, |r| (3.0 * normal(r)).round() * 0.01);
        assert!(m <= 0.05, "ties: {m}");
    }

    /// A tenth of the pairs wild, all one way: the mean moves by ln 3 / 10
    /// (about 11%), the median hardly; no difference is called beyond a
    /// band of 5% where the typical pair has none, and a real one is.
    #[test]
    fn a_few_wild_pairs_do_not_make_a_call() {
        let mut rng = Rng::new(31);
        let band = 1.05f64.ln();
        let mut same = MedianSeq::new();
        let mut slower = MedianSeq::new();
        for t in 0..400 {
            let wild = if t % 10 == 3 { -3f64.ln() } else { 0.0 };
            same.push(wild + 0.02 * normal(&mut rng));
            slower.push(1.10f64.ln() + 0.02 * normal(&mut rng));
            assert_ne!(same.call(0.05 / 8.0, band), Call::Lower, "pair {t}");
        }
        assert!(same.mean() < -0.08 && same.median().abs() < 0.01);
        assert_eq!(same.call(0.05 / 8.0, band), Call::Within);
        assert_eq!(slower.call(0.05 / 8.0, band), Call::Higher);
    }

    /// Nothing before [`MIN_PAIRS`] pairs, and the interval narrows to the
    /// median as pairs come in.
    #[test]
    fn the_interval_narrows_around_the_median() {
        let mut cs = MedianSeq::new();
        for i in 0..MIN_PAIRS - 1 {
            cs.push(i as f64);
        }
        assert_eq!(cs.interval(0.05), None);
        let mut rng = Rng::new(5);
        let mut widths = Vec::new();
        for n in 1..=2000 {
            cs.push(1.0 + 0.1 * normal(&mut rng));
            if n % 500 == 0 {
                let (lo, hi) = cs.interval(0.05).unwrap();
                assert!(lo < cs.median() && cs.median() < hi);
                widths.push(hi - lo);
            }
        }
        assert!(widths.windows(2).all(|w| w[1] < w[0]), "{widths:?}");
        assert!(widths[3] < 0.05, "{widths:?}");
    }
}
