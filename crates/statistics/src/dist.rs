//! The distributions the tests need, in one place for every crate: the
//! standard normal (CDF and quantile) and Student's t (two-sided p-value
//! and quantile, any real degrees of freedom) from statrs, a maintained
//! crate, and the digamma, trigamma and inverse trigamma functions a
//! pooled variance prior is fitted with (digamma from statrs; trigamma,
//! which statrs lacks, here: a recurrence and its asymptotic series).
//!
//! statrs replaced hand-written code that had an erfc good to 1.2e-7,
//! quantiles by 200-step bisection, and t distributions of whole degrees
//! of freedom only (Welch's and the moderated t's are not whole numbers:
//! they were rounded down); the tests below hold both to references
//! computed to 40 digits (mpmath), to 1e-10 where statrs reaches it.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// The standard normal.
fn standard() -> Normal {
    // Cannot fail: mean 0, standard deviation 1.
    Normal::new(0.0, 1.0).expect("the standard normal")
}

/// Student's t with `df` degrees of freedom (a positive real), or None
/// for a `df` it does not take (0, negative, NaN, infinite).
fn students(df: f64) -> Option<StudentsT> {
    (df.is_finite() && df > 0.0)
        .then(|| StudentsT::new(0.0, 1.0, df).ok())
        .flatten()
}

/// P(Z <= z) for a standard normal Z.
pub fn normal_cdf(z: f64) -> f64 {
    standard().cdf(z)
}

/// The z with P(Z <= z) = p, for 0 < p < 1.
pub fn normal_quantile(p: f64) -> f64 {
    standard().inverse_cdf(p)
}

/// Two-sided p-value of a t statistic with `df` degrees of freedom (any
/// real above 0; the normal for an infinite `df`).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t.is_nan() { f64::NAN } else { 0.0 };
    }
    let upper = match students(df) {
        Some(d) => d.sf(t.abs()),
        None if df == f64::INFINITY => standard().sf(t.abs()),
        None => return f64::NAN,
    };
    (2.0 * upper).min(1.0)
}

/// The t with P(T <= t) = p (0 < p < 1) for Student's t with `df`
/// degrees of freedom (any real above 0; the normal for an infinite one).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    match students(df) {
        Some(d) => d.inverse_cdf(p),
        None if df == f64::INFINITY => normal_quantile(p),
        None => f64::NAN,
    }
}

/// The digamma function, d/dx ln Gamma(x), for x > 0.
pub fn digamma(x: f64) -> f64 {
    statrs::function::gamma::digamma(x)
}

/// The trigamma function, the derivative of digamma, for x > 0: the
/// recurrence trigamma(x) = trigamma(x + 1) + 1/x^2 up to 10, then the
/// asymptotic series (statrs has no trigamma).
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

#[cfg(test)]
// The references are written as computed (20 significant digits), more
// than an f64 holds: what the compiler rounds them to is what is checked.
#[allow(clippy::excessive_precision)]
mod tests {
    use super::*;

    /// Relative closeness.
    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    // References: mpmath at 40 digits (ncdf, erfinv, the regularized
    // incomplete beta for Student's t, psi).

    #[test]
    fn normal_values() {
        assert_eq!(normal_cdf(0.0), 0.5);
        for (z, p) in [
            (1.959_963_984_540_054, 0.974_999_999_999_999_986_23),
            (-3.5, 0.000_232_629_079_035_525_036_35),
            (6.0, 0.999_999_999_013_412_354_96),
        ] {
            assert!(close(normal_cdf(z), p, 1e-10), "cdf {z}: {}", normal_cdf(z));
        }
        for (p, z) in [
            (0.975, 1.959_963_984_540_054_235_5),
            (0.995, 2.575_829_303_548_900_761),
            (0.6, 0.253_347_103_135_799_798_8),
            (0.9999, 3.719_016_485_455_680_564_4),
        ] {
            assert!(
                close(normal_quantile(p), z, 1e-10),
                "quantile {p}: {}",
                normal_quantile(p)
            );
        }
    }

    #[test]
    fn t_values_at_whole_and_real_degrees_of_freedom() {
        for (t, df, p) in [
            (2.776, 4.0, 0.050_022_778_319_976_402_046),
            (2.045, 29.0, 0.050_024_075_922_411_666_556),
            (2.2, 7.3, 0.062_169_165_400_023_641_786),
            (-1.5, 2.5, 0.247_836_453_086_296_261_11),
            (3.1, 11.7, 0.009_443_952_478_509_558_197_3),
        ] {
            assert!(
                close(t_two_sided_p(t, df), p, 1e-10),
                "p of t {t}, df {df}: {}",
                t_two_sided_p(t, df)
            );
        }
        for (p, df, t) in [
            (0.975, 1.0, 12.706_204_736_174_704_646),
            (0.975, 4.0, 2.776_445_105_197_794_357_8),
            (0.975, 7.3, 2.345_066_736_547_703_644),
            (0.995, 2.5, 7.163_728_138_948_785_519_9),
            (0.975, 11.7, 2.185_025_154_553_299_540_6),
            (0.975, 1000.0, 1.962_339_080_826_408_485),
        ] {
            assert!(
                close(t_quantile(p, df), t, 1e-9),
                "quantile {p}, df {df}: {}",
                t_quantile(p, df)
            );
        }
        assert!(close(
            t_two_sided_p(1.96, f64::INFINITY),
            0.049_995_790_296_440_93,
            1e-9
        ));
        assert!(close(t_quantile(0.975, f64::INFINITY), 1.959_963_984_540_054, 1e-10));
        assert!(t_two_sided_p(1.0, 0.0).is_nan() && t_quantile(0.9, -1.0).is_nan());
    }

    #[test]
    fn polygamma_values() {
        for (x, di, tri) in [
            (1.0, -0.577_215_664_901_532_860_61, 1.644_934_066_848_226_436_5),
            (10.5, 2.303_001_034_297_686_375_3, 0.099_916_956_059_126_733_204),
            (0.3, -3.502_524_222_200_132_989, 12.245_364_546_107_730_465),
            (3.7, 1.167_153_539_361_511_385_9, 0.310_037_857_670_038_319_1),
        ] {
            assert!(close(digamma(x), di, 1e-10), "digamma {x}: {}", digamma(x));
            assert!(close(trigamma(x), tri, 1e-10), "trigamma {x}: {}", trigamma(x));
        }
        for y in [0.3, 1.0, 2.5, 40.0] {
            assert!(close(trigamma_inverse(trigamma(y)), y, 1e-7), "{y}");
        }
    }
}
