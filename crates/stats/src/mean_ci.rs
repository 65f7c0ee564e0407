//! Mean and 95% confidence interval of a few repeated figures (runs of a
//! load test), from Student's t distribution.

use serde::{Deserialize, Serialize};

/// A mean with its 95% confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MeanCi {
    /// How many values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Lower end of the 95% interval of the mean (the mean itself for one value).
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

/// Two-sided 97.5% quantiles of Student's t for 1..=30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
    2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/// Student's t 97.5% quantile for `df` degrees of freedom: the table to
/// 30, then the Cornish-Fisher expansion around the normal 1.96 (within
/// 0.001 of the true value from 31 up; 2.021 at 40, 2.000 at 60).
fn t975(df: usize) -> f64 {
    if let Some(&t) = T975.get(df.wrapping_sub(1)) {
        return t;
    }
    let (z, d): (f64, f64) = (1.959_964, df as f64);
    z + (z.powi(3) + z) / (4.0 * d) + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
}

/// The mean of `xs` and its 95% interval (mean +- t * s / sqrt(n)); `None`
/// for no values. With one value the interval is the value: say so, do not
/// read it as certainty.
pub fn mean_ci95(xs: &[f64]) -> Option<MeanCi> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return Some(MeanCi {
            n,
            mean,
            low: mean,
            high: mean,
        });
    }
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
    let t = t975(n - 1);
    let half = t * (var / n as f64).sqrt();
    Some(MeanCi {
        n,
        mean,
        low: mean - half,
        high: mean + half,
    })
}

#[cfg(test)]
mod t_tests {
    #[test]
    fn t_quantiles_past_the_table() {
        assert_eq!(super::t975(30), 2.042);
        assert!((super::t975(40) - 2.021).abs() < 0.001);
        assert!((super::t975(60) - 2.000).abs() < 0.001);
        assert!((super::t975(120) - 1.980).abs() < 0.001);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn three_runs() {
        // The proxy-load write-up's boost::asio proxy runs: 74.262, 74.757,
        // 73.770 s.
        let i = super::mean_ci95(&[74.262, 74.757, 73.770]).unwrap();
        assert!((i.mean - 74.263).abs() < 1e-3);
        // s = 0.4935, t(2) = 4.303: half width 1.226
        assert!((i.high - i.mean - 1.226).abs() < 2e-3, "{i:?}");
        assert_eq!(super::mean_ci95(&[5.0]).unwrap().low, 5.0);
        assert!(super::mean_ci95(&[]).is_none());
    }
}
