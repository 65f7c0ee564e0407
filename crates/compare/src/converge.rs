//! netperf-style convergence (`-I 99,5`): is the confidence interval of
//! the mean narrow enough yet?

use crate::dist::t_quantile;
use serde::{Deserialize, Serialize};

/// Where a series of repetitions stands.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Convergence {
    /// Repetitions so far.
    pub n: usize,
    /// Their mean.
    pub mean: f64,
    /// Half the interval's width as a fraction of the mean (0.025 = +/-2.5%);
    /// infinite with fewer than two repetitions.
    pub half_width: f64,
    /// True when `half_width` is within the goal.
    pub reached: bool,
}

/// Checks `xs` against a `confidence` (0.99) interval of the mean whose
/// whole width is at most `width` of the mean (0.05 means +/-2.5%, as
/// netperf's `-I 99,5`), using Student's t.
pub fn converged(xs: &[f64], confidence: f64, width: f64) -> Convergence {
    let n = xs.len();
    let mean = if n == 0 { 0.0 } else { xs.iter().sum::<f64>() / n as f64 };
    // netperf's -i 30,3: at least three; two equal values would otherwise
    // "converge" with a zero spread.
    if n < 3 || mean == 0.0 {
        return Convergence {
            n,
            mean,
            half_width: f64::INFINITY,
            reached: false,
        };
    }
    let nf = n as f64;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (nf - 1.0)).sqrt();
    let half = t_quantile(1.0 - (1.0 - confidence) / 2.0, nf - 1.0) * sd / nf.sqrt();
    let half_width = (half / mean).abs();
    Convergence {
        n,
        mean,
        half_width,
        reached: half_width <= width / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tight_series_converge_and_loose_ones_do_not() {
        let tight = [100.0, 100.5, 99.5, 100.2, 99.8];
        let c = converged(&tight, 0.99, 0.05);
        assert!(c.reached, "{c:?}");
        let loose = [100.0, 130.0, 80.0, 110.0, 95.0];
        assert!(!converged(&loose, 0.99, 0.05).reached);
        assert!(!converged(&[100.0], 0.99, 0.05).reached);
    }

    #[test]
    fn half_width_matches_a_hand_computation() {
        // mean 10, sd 1, n 4: t(0.995, 3) = 5.841 -> 5.841 * 1 / 2 = 2.92 -> 29.2%.
        let xs = [10.0 - 1.0 * 1.5f64.sqrt() / 1.0, 10.0, 10.0, 10.0 + 1.5f64.sqrt()];
        let c = converged(&xs, 0.99, 0.05);
        assert!((c.half_width - 0.292).abs() < 0.002, "{c:?}");
    }
}
