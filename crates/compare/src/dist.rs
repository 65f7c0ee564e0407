//! The distributions the tests need, in one place for every crate: the
//! standard normal (CDF and quantile), Student's t (two-sided p-value and
//! quantile), and the digamma and trigamma functions a pooled variance
//! prior is fitted with. Closed forms and series only.

/// Complementary error function, relative error below 1.2e-7 everywhere
/// (the Chebyshev fit from Numerical Recipes, section 6.2).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// P(Z <= z) for a standard normal Z.
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// The z with P(Z <= z) = p, for 0 < p < 1 (bisection on the CDF, to
/// the CDF's own precision).
pub fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if normal_cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// P(|T| < t) for Student's t with `df` (a whole number, at least 1)
/// degrees of freedom: the exact finite series of Abramowitz & Stegun
/// 26.7.3 (odd df) and 26.7.4 (even df).
fn t_central(t: f64, df: u32) -> f64 {
    let theta = (t.abs() / f64::from(df).sqrt()).atan();
    let (s, c) = theta.sin_cos();
    let c2 = c * c;
    if df % 2 == 1 {
        // 2/pi (theta + sin cos (1 + 2/3 c^2 + 2*4/(3*5) c^4 + ... up to c^(df-3)))
        let (mut term, mut sum) = (1.0, 0.0);
        if df > 1 {
            sum = 1.0;
            let mut k = 2;
            while k + 1 < df {
                term *= f64::from(k) / f64::from(k + 1) * c2;
                sum += term;
                k += 2;
            }
        }
        2.0 / std::f64::consts::PI * (theta + s * c * sum)
    } else {
        // sin (1 + 1/2 c^2 + 1*3/(2*4) c^4 + ... up to c^(df-2))
        let (mut term, mut sum) = (1.0, 1.0);
        let mut k = 1;
        while k + 1 < df {
            term *= f64::from(k) / f64::from(k + 1) * c2;
            sum += term;
            k += 2;
        }
        s * sum
    }
}

/// Two-sided p-value of a t statistic with `df` degrees of freedom: the
/// whole part of `df` (at least 1; rounding down is the cautious side),
/// the normal beyond 1,000 or for infinite `df`.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t.is_nan() { f64::NAN } else { 0.0 };
    }
    if df > 1000.0 {
        return 2.0 * (1.0 - normal_cdf(t.abs()));
    }
    (1.0 - t_central(t, df.floor().max(1.0) as u32)).max(0.0)
}

/// The digamma function, d/dx ln Gamma(x), for x > 0: the recurrence up
/// to 10, then its asymptotic series.
pub fn digamma(x: f64) -> f64 {
    let (mut x, mut acc) = (x, 0.0);
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    acc + x.ln() - 0.5 / x - f * (1.0 / 12.0 - f * (1.0 / 120.0 - f * (1.0 / 252.0 - f * (1.0 / 240.0 - f / 132.0))))
}

/// The trigamma function, the derivative of digamma, for x > 0.
pub fn trigamma(x: f64) -> f64 {
    let (mut x, mut acc) = (x, 0.0);
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    acc + 1.0 / x + f / 2.0 + f / x * (1.0 / 6.0 - f * (1.0 / 30.0 - f * (1.0 / 42.0 - f / 30.0)))
}

/// The derivative of trigamma, for x > 0.
fn tetragamma(x: f64) -> f64 {
    let (mut x, mut acc) = (x, 0.0);
    while x < 10.0 {
        acc -= 2.0 / (x * x * x);
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    acc - f - f / x - f * f * (0.5 - f * (1.0 / 6.0 - f * (1.0 / 6.0 - f * 0.3)))
}

/// The y > 0 with trigamma(y) = v (Newton's method from y = 0.5 + 1/v,
/// as limma's trigammaInverse).
pub fn trigamma_inverse(v: f64) -> f64 {
    if v > 1e7 {
        return 1.0 / v.sqrt();
    }
    if v < 1e-6 {
        return 1.0 / v;
    }
    let mut y = 0.5 + 1.0 / v;
    for _ in 0..50 {
        let tri = trigamma(y);
        let step = tri * (1.0 - tri / v) / tetragamma(y);
        y += step;
        if -step / y < 1e-8 {
            break;
        }
    }
    y
}

/// The t with P(T <= t) = p (0.5 <= p < 1) for Student's t with `df`
/// degrees of freedom (rounded to a whole number, at least 1), by bisection
/// on the exact distribution function.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    let df = df.round().max(1.0) as u32;
    let central = 2.0 * p - 1.0;
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while t_central(hi, df) < central && hi < 1e12 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_central(mid, df) < central {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    #[test]
    fn normal_values() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!(close(normal_cdf(1.959_964), 0.975, 1e-6));
        assert!(close(normal_quantile(0.975), 1.959_964, 1e-5));
        assert!(close(normal_quantile(0.995), 2.575_829, 1e-5));
    }

    #[test]
    fn polygamma_values() {
        // digamma(1) = -Euler's gamma; trigamma(1) = pi^2/6; trigamma(0.5) = pi^2/2.
        assert!(close(digamma(1.0), -0.577_215_664_901_532_9, 1e-11));
        assert!(close(digamma(10.5), 2.303_001_034_297_686, 1e-11));
        assert!(close(trigamma(1.0), std::f64::consts::PI.powi(2) / 6.0, 1e-11));
        assert!(close(trigamma(0.5), std::f64::consts::PI.powi(2) / 2.0, 1e-11));
        for y in [0.3, 1.0, 2.5, 40.0] {
            assert!(close(trigamma_inverse(trigamma(y)), y, 1e-7), "{y}");
        }
        // t p-values from a table: t = 2.776 with 4 df is p = 0.05.
        assert!(close(t_two_sided_p(2.776, 4.0), 0.05, 1e-3));
        assert!(close(t_two_sided_p(-2.045, 29.0), 0.05, 1e-3));
        assert!(close(t_two_sided_p(1.96, f64::INFINITY), 0.05, 1e-3));
    }

    #[test]
    fn t_table_values() {
        // Two-sided 95% and 99% critical values from any t table.
        for (df, q975, q995) in [
            (1.0, 12.706, 63.657),
            (2.0, 4.303, 9.925),
            (4.0, 2.776, 4.604),
            (9.0, 2.262, 3.250),
            (3.0, 3.182, 5.841),
            (29.0, 2.045, 2.756),
        ] {
            assert!(
                close(t_quantile(0.975, df), q975, 1e-3),
                "df {df}: {}",
                t_quantile(0.975, df)
            );
            assert!(
                close(t_quantile(0.995, df), q995, 1e-3),
                "df {df}: {}",
                t_quantile(0.995, df)
            );
        }
    }
}
