//! How surprising the largest standardised mean difference of a segment
//! is, when it was searched for over every split position: the tail of
//! the maximum of a standardised CUSUM (a Brownian bridge divided by its
//! standard deviation), by the approximation of James, James and Siegmund
//! (Biometrika 1987) with Siegmund's correction for a discrete walk.
//! Plus the conversion of a statistic whose scale was estimated from few
//! runs into the normal statistic it is worth.

use stackmeter_statistics::dist::normal_cdf;

/// Two-sided p-value of `b`, the largest |z| over the split positions of
/// a segment of `n` runs where each side keeps at least `m` runs: the
/// probability that pure noise gives a maximum this large somewhere.
/// The smaller of the James-James-Siegmund approximation and the
/// Bonferroni bound (positions x single-position p), at most 1.
pub fn scan_p(b: f64, n: usize, m: usize) -> f64 {
    let m = m.max(1);
    if n < 2 * m || b.is_nan() {
        return 1.0;
    }
    if b.is_infinite() {
        return 0.0;
    }
    let positions = (n - 2 * m + 1) as f64;
    let single = 2.0 * normal_cdf(-b);
    let bonferroni = positions * single;
    if positions <= 1.0 {
        return single.min(1.0);
    }
    // P(max Z > b) ~ b phi(b) * integral over t in [m/n, 1 - m/n] of
    // nu(b / sqrt(n t (1 - t))) / (2 t (1 - t)) dt. With u = logit(t),
    // dt / (t (1 - t)) = du and 1 / sqrt(t (1 - t)) = 2 cosh(u / 2); the
    // integrand is even in u, so it is twice the integral over [0, U].
    let nf = n as f64;
    let upper = ((nf - m as f64) / m as f64).ln();
    let sqrt_n = nf.sqrt();
    let f = |u: f64| nu(2.0 * b * (0.5 * u).cosh() / sqrt_n);
    const STEPS: usize = 16; // Simpson's rule, even
    let h = upper / STEPS as f64;
    let mut sum = f(0.0) + f(upper);
    for i in 1..STEPS {
        sum += if i % 2 == 1 { 4.0 } else { 2.0 } * f(i as f64 * h);
    }
    let integral = sum * h / 3.0;
    let one_sided = b * phi(b) * integral;
    (2.0 * one_sided).min(bonferroni).min(1.0)
}

/// Standard normal density.
fn phi(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Siegmund's overshoot correction of a continuous-time crossing
/// probability for a discrete walk, nu(x) ~ (2/x)(Phi(x/2) - 1/2) /
/// ((x/2) Phi(x/2) + phi(x/2)); 1 at x = 0.
fn nu(x: f64) -> f64 {
    if x < 1e-9 {
        return 1.0;
    }
    let h = 0.5 * x;
    let big = normal_cdf(h);
    (2.0 / x) * (big - 0.5) / (h * big + phi(h))
}

/// The standard normal value a Student t statistic `t` with `df` degrees
/// of freedom is worth (Wallace 1959: z = (8 df + 1) / (8 df + 3) *
/// sqrt(df ln(1 + t^2 / df)), within 0.01 of the exact value for the
/// tails used here from df = 3 on): a scale estimated from few runs must
/// not be trusted like a known one.
pub fn normal_equivalent(t: f64, df: f64) -> f64 {
    if !df.is_finite() || df > 1e7 {
        return t;
    }
    let df = df.max(1.0);
    let z = (8.0 * df + 1.0) / (8.0 * df + 3.0) * (df * (t * t / df).ln_1p()).sqrt();
    z.copysign(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackmeter_statistics::rng::Rng;

    #[test]
    fn one_position_is_the_two_sided_normal_tail() {
        // n = 2m: one split only.
        assert!((scan_p(1.959_964, 10, 5) - 0.05).abs() < 1e-4);
        assert_eq!(scan_p(3.0, 9, 5), 1.0);
        assert_eq!(scan_p(f64::INFINITY, 100, 3), 0.0);
    }

    #[test]
    fn more_positions_mean_a_larger_p_but_below_bonferroni() {
        let b = 3.5;
        let (a, c) = (scan_p(b, 50, 3), scan_p(b, 1000, 3));
        assert!(a < c, "{a} {c}");
        assert!(c < 995.0 * 2.0 * normal_cdf(-b), "{c}");
        assert!(scan_p(4.0, 1000, 3) < c);
    }

    /// The approximation against simulation: the largest |z| of pure
    /// Gaussian noise, split anywhere with at least 3 runs a side.
    #[test]
    fn matches_simulated_maxima() {
        let mut rng = Rng::new(31);
        let (n, m, sims) = (200usize, 3usize, 2000usize);
        let b = 3.3;
        let mut over = 0;
        let mut xs = vec![0.0; n];
        for _ in 0..sims {
            xs.iter_mut().for_each(|x| *x = rng.normal());
            let total: f64 = xs.iter().sum();
            let mut left = 0.0;
            let mut max = 0.0f64;
            for k in 1..n {
                left += xs[k - 1];
                if k < m || n - k < m {
                    continue;
                }
                let (kf, nf) = (k as f64, n as f64);
                let d = (total - left) / (nf - kf) - left / kf;
                let z = d / (1.0 / kf + 1.0 / (nf - kf)).sqrt();
                max = max.max(z.abs());
            }
            if max > b {
                over += 1;
            }
        }
        let simulated = over as f64 / sims as f64;
        let p = scan_p(b, n, m);
        assert!(
            (p - simulated).abs() < 0.25 * simulated,
            "approximation {p}, simulated {simulated}"
        );
    }

    #[test]
    fn few_degrees_of_freedom_shrink_the_statistic() {
        assert!((normal_equivalent(2.0, 1e9) - 2.0).abs() < 1e-12);
        // t(0.975, 5) = 2.571 is worth about z = 1.96.
        assert!((normal_equivalent(2.571, 5.0) - 1.96).abs() < 0.05);
        // t(0.995, 10) = 3.169 is worth about z = 2.576.
        assert!((normal_equivalent(3.169, 10.0) - 2.576).abs() < 0.05);
    }
}
