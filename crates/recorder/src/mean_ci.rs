//! Mean and 95% confidence interval of a few repeated figures (runs of a
//! load test), from Student's t distribution (its quantile is
//! `stackmeter_statistics::dist`'s, the one every crate uses).

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
    let t = stackmeter_statistics::dist::t_quantile(0.975, (n - 1) as f64);
    let half = t * (var / n as f64).sqrt();
    Some(MeanCi {
        n,
        mean,
        low: mean - half,
        high: mean + half,
    })
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
