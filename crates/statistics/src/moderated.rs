//! Many small comparisons judged at once with the variance they share:
//! the moderated t test of limma (Smyth, "Linear models and empirical
//! Bayes methods for assessing differential expression in microarray
//! experiments", 2004), for a fleet's pairs, each measured a few times in
//! two runs.
//!
//! A rank test cannot see that one pair got 26x slower and another 1.3x:
//! with 5 repetitions a side its smallest p-value is 0.008, and corrected
//! over 100 pairs nothing can pass. A t test on the log values uses the
//! size of the change, but its variance from 5 + 5 values is unsure, and
//! an unsure variance that happens to be small makes false alarms. The
//! moderated t pulls each pair's variance toward a prior fitted to all the
//! pairs' variances (a scaled inverse chi-square with d0 degrees of
//! freedom and scale s0^2, by the method of moments on log variances), and
//! counts the prior's degrees of freedom into the test's. Pure.

use crate::dist::{digamma, t_two_sided_p, trigamma, trigamma_inverse};

/// The variance prior fitted to many groups' variances.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prior {
    /// Its degrees of freedom (infinite: every group shares one variance).
    pub d0: f64,
    /// Its scale: the typical variance.
    pub s0sq: f64,
}

/// One group's test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moderated {
    /// mean(ln b) - mean(ln a) (less the median of all groups' when
    /// centred).
    pub shift: f64,
    /// The moderated t statistic.
    pub t: f64,
    /// Its degrees of freedom: the group's plus the prior's.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Mean and sum of squared deviations of the logs of `v`.
fn log_moments(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().map(|x| x.ln()).sum::<f64>() / n;
    (mean, v.iter().map(|x| (x.ln() - mean).powi(2)).sum())
}

/// Fits the prior to variances `s2` with `df` degrees of freedom each
/// (limma's fitFDist without covariates). Needs three groups with a
/// positive variance; `None` otherwise.
pub fn fit_prior(s2: &[f64], df: &[f64]) -> Option<Prior> {
    let pts: Vec<(f64, f64)> = s2
        .iter()
        .zip(df)
        .filter(|(s, d)| **s > 0.0 && s.is_finite() && **d > 0.0)
        .map(|(s, d)| (*s, *d))
        .collect();
    let g = pts.len() as f64;
    if g < 3.0 {
        return None;
    }
    let e: Vec<f64> = pts
        .iter()
        .map(|(s, d)| s.ln() - digamma(d / 2.0) + (d / 2.0).ln())
        .collect();
    let emean = e.iter().sum::<f64>() / g;
    let evar = e.iter().map(|x| (x - emean).powi(2)).sum::<f64>() / (g - 1.0)
        - pts.iter().map(|(_, d)| trigamma(d / 2.0)).sum::<f64>() / g;
    if evar <= 0.0 {
        return Some(Prior {
            d0: f64::INFINITY,
            s0sq: emean.exp(),
        });
    }
    let d0 = 2.0 * trigamma_inverse(evar);
    Some(Prior {
        d0,
        s0sq: (emean + digamma(d0 / 2.0) - (d0 / 2.0).ln()).exp(),
    })
}

/// The moderated t test of every group (A's values, B's values, all
/// positive: they are compared as logs). A group with fewer than two
/// values a side has none. Without a prior (fewer than three groups with a
/// spread), each group's own t test. With `centred`, each group's shift is
/// taken from the median shift of all groups (at least three): what moved
/// every group alike (a busier machine in the second run) is nobody's
/// change, and a group that moved apart from the rest still stands out.
pub fn moderated_t(groups: &[(&[f64], &[f64])], centred: bool) -> Vec<Option<Moderated>> {
    let usable =
        |a: &[f64], b: &[f64]| a.len() >= 2 && b.len() >= 2 && a.iter().chain(b).all(|x| *x > 0.0 && x.is_finite());
    let own: Vec<Option<(f64, f64, f64, f64)>> = groups
        .iter()
        .map(|(a, b)| {
            usable(a, b).then(|| {
                let ((ma, sa), (mb, sb)) = (log_moments(a), log_moments(b));
                let df = (a.len() + b.len() - 2) as f64;
                let scale = 1.0 / a.len() as f64 + 1.0 / b.len() as f64;
                (mb - ma, (sa + sb) / df, df, scale)
            })
        })
        .collect();
    let (s2, df): (Vec<f64>, Vec<f64>) = own.iter().flatten().map(|o| (o.1, o.2)).unzip();
    let prior = fit_prior(&s2, &df);
    let shifts: Vec<f64> = own.iter().flatten().map(|o| o.0).collect();
    let centre = match (centred, shifts.len() >= 3) {
        (true, true) => crate::median(&shifts).unwrap_or(0.0),
        _ => 0.0,
    };
    own.iter()
        .map(|o| {
            let (shift, s2, df, scale) = (*o)?;
            let shift = shift - centre;
            let (post, dft) = match prior {
                Some(Prior { d0, s0sq }) if d0.is_infinite() => (s0sq, f64::INFINITY),
                Some(Prior { d0, s0sq }) => ((d0 * s0sq + df * s2) / (d0 + df), d0 + df),
                None => (s2, df),
            };
            let t = shift / (post * scale).sqrt();
            Some(Moderated {
                shift,
                t,
                df: dft,
                p: t_two_sided_p(t, dft),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn lognormal(rng: &mut Rng, centre: f64, sd: f64) -> f64 {
        let u1 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let u2 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let z = (-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        centre * (sd * z).exp()
    }

    /// `n` groups of 5 + 5 lognormal values (sd 0.2 of the logs) around
    /// 100: the first group's second half moved by `first`, every other
    /// group's by `others`.
    fn groups_moved(rng: &mut Rng, n: usize, first: f64, others: f64) -> Vec<(Vec<f64>, Vec<f64>)> {
        (0..n)
            .map(|i| {
                let factor = if i == 0 { first } else { others };
                let a = (0..5).map(|_| lognormal(rng, 100.0, 0.2)).collect();
                let b = (0..5).map(|_| lognormal(rng, 100.0 * factor, 0.2)).collect();
                (a, b)
            })
            .collect()
    }

    #[test]
    fn the_prior_is_recovered_from_many_groups() {
        // 2,000 groups of 5 + 5 values with one true variance of the logs:
        // d0 large (every group shares it), s0^2 near it.
        let mut rng = Rng::new(1);
        let data: Vec<(Vec<f64>, Vec<f64>)> = (0..2000)
            .map(|_| {
                let a = (0..5).map(|_| lognormal(&mut rng, 100.0, 0.1)).collect();
                let b = (0..5).map(|_| lognormal(&mut rng, 100.0, 0.1)).collect();
                (a, b)
            })
            .collect();
        let groups: Vec<(&[f64], &[f64])> = data.iter().map(|(a, b)| (&a[..], &b[..])).collect();
        let own: Vec<(f64, f64)> = groups
            .iter()
            .map(|(a, b)| ((log_moments(a).1 + log_moments(b).1) / 8.0, 8.0))
            .collect();
        let (s2, df): (Vec<f64>, Vec<f64>) = own.into_iter().unzip();
        let p = fit_prior(&s2, &df).unwrap();
        assert!((p.s0sq / 0.01 - 1.0).abs() < 0.05, "{p:?}");
        assert!(p.d0 > 50.0, "{p:?}");
    }

    #[test]
    fn a_large_change_passes_with_five_repetitions_and_no_change_rarely_does() {
        // 30 pairs measured 5 times in each of two runs; pair 0 got 26x
        // slower, the rest did not change. With Benjamini-Hochberg over 30
        // tests the changed pair needs p below 0.05/30 alone: it gets far
        // below; the unchanged pairs' p-values are uniform.
        let mut rng = Rng::new(2);
        let mut false_hits = 0;
        for trial in 0..200 {
            let data = groups_moved(&mut rng, 30, 26.0, 1.0);
            let groups: Vec<(&[f64], &[f64])> = data.iter().map(|(a, b)| (&a[..], &b[..])).collect();
            let m = moderated_t(&groups, false);
            let p: Vec<f64> = m.iter().map(|x| x.unwrap().p).collect();
            let q = crate::fdr::adjust(&p);
            assert!(q[0] < 1e-4, "trial {trial}: the 26x pair's q {}", q[0]);
            false_hits += q[1..].iter().filter(|q| **q < 0.05).count();
        }
        // 29 unchanged pairs in 200 trials: at a 5% false discovery rate
        // with one true change, false hits stay rare.
        assert!(false_hits < 60, "{false_hits} false hits in 5,800 unchanged pairs");
        assert!(moderated_t(&[(&[1.0][..], &[1.0, 2.0][..])], false)[0].is_none());
    }

    #[test]
    fn centred_a_shift_every_group_shares_is_nobodys_and_one_apart_still_stands_out() {
        // Every group 2x slower in the second run (a busier machine), one
        // of them 26x: centred, only that one is significant.
        let mut rng = Rng::new(3);
        let data = groups_moved(&mut rng, 20, 26.0, 2.0);
        let groups: Vec<(&[f64], &[f64])> = data.iter().map(|(a, b)| (&a[..], &b[..])).collect();
        let plain: Vec<f64> = moderated_t(&groups, false).iter().map(|m| m.unwrap().p).collect();
        assert!(plain.iter().all(|p| *p < 0.05), "uncentred, every group moved");
        let centred: Vec<f64> = moderated_t(&groups, true).iter().map(|m| m.unwrap().p).collect();
        let q = crate::fdr::adjust(&centred);
        assert!(q[0] < 1e-3, "{}", q[0]);
        assert!(q[1..].iter().all(|q| *q >= 0.05), "{q:?}");
    }
}
