//! One comparison row (medians, ratio interval, p-value, verdict) and the
//! summary across rows (geometric mean of ratios, arithmetic mean of
//! percentages).

use crate::median::{hodges_lehmann, median, median_sorted};
use crate::mwu::mann_whitney_u;
use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// Significance level of every verdict (two-sided).
pub const ALPHA: f64 = 0.05;
/// Bootstrap resamples behind each ratio interval.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;
/// Fewer repetitions than this on a side give no verdict. docs/methods.md
/// asks for at least 5 per side; below 4 the Mann-Whitney normal
/// approximation cannot even reach p < 0.05, and 4 against 4 reaches it only
/// when the two sides do not overlap at all.
pub const MIN_REPETITIONS: usize = 5;
/// Seed of the bootstrap generator: fixed, so the same data always gives
/// the same interval.
const SEED: u64 = 0x5EED_0000;

/// Which way is better for a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Times: smaller is better.
    LowerIsBetter,
    /// Rates: larger is better.
    HigherIsBetter,
}

impl Direction {
    /// The direction of a figure that is better when lower (`true`), as the
    /// store and the JSON documents keep it (`lower_is_better`).
    pub const fn from_lower_is_better(lower: bool) -> Direction {
        match lower {
            true => Direction::LowerIsBetter,
            false => Direction::HigherIsBetter,
        }
    }

    /// True for [`Direction::LowerIsBetter`].
    pub const fn lower_is_better(self) -> bool {
        matches!(self, Direction::LowerIsBetter)
    }

    /// "lower" or "higher" (as in "lower is better").
    pub const fn word(self) -> &'static str {
        match self {
            Direction::LowerIsBetter => "lower",
            Direction::HigherIsBetter => "higher",
        }
    }
}

/// A [`Direction`] kept as the boolean `lower_is_better`, for a field
/// declared `#[serde(rename = "lower_is_better", with =
/// "stackmeter_statistics::as_lower_is_better")]`: the JSON and the store
/// stay as they were while the code says which way is better by name.
pub mod as_lower_is_better {
    use super::Direction;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `d` as `true` (lower is better) or `false`.
    pub fn serialize<S: Serializer>(d: &Direction, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(d.lower_is_better())
    }

    /// Reads a `lower_is_better` boolean.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Direction, D::Error> {
        bool::deserialize(d).map(Direction::from_lower_is_better)
    }
}

/// The outcome of one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is better than A: the interval excludes 1 and p < [`ALPHA`].
    Faster,
    /// B is worse than A, with the same evidence.
    Slower,
    /// The interval spans 1 or p >= [`ALPHA`].
    NoSignificantDifference,
    /// Fewer than [`MIN_REPETITIONS`] repetitions on a side.
    TooFewRepetitions,
}

/// Everything the renderers print for one row.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RowStats {
    /// Repetitions of A.
    pub n_a: usize,
    /// Repetitions of B.
    pub n_b: usize,
    /// Median of A's repetitions.
    pub median_a: f64,
    /// Median of B's repetitions.
    pub median_b: f64,
    /// `median_b - median_a`.
    pub difference: f64,
    /// Hodges-Lehmann shift B - A (median of pairwise differences).
    pub hodges_lehmann: f64,
    /// `median_b / median_a`.
    pub ratio: f64,
    /// 95% bootstrap percentile interval of the ratio of medians.
    pub ratio_ci: (f64, f64),
    /// Two-sided Mann-Whitney U p-value.
    pub p_value: f64,
    /// How much better B is than A, in percent of A, as hand-made tables
    /// write it ("72.4% faster" is 72.4; slower is negative): (A - B) / A
    /// for times, (B - A) / A for rates.
    pub percent: f64,
    /// Which way is better.
    pub direction: Direction,
    /// The verdict.
    pub verdict: Verdict,
}

/// Compares B against the baseline A, one figure per repetition on each
/// side. `None` when a side is empty or A's median is 0.
pub fn compare(a: &[f64], b: &[f64], direction: Direction) -> Option<RowStats> {
    let (median_a, median_b) = (median(a)?, median(b)?);
    if median_a == 0.0 {
        return None;
    }
    let ratio = median_b / median_a;
    let ratio_ci = bootstrap_ratio(a, b, &mut Rng::new(SEED));
    let p_value = mann_whitney_u(a, b)?;
    let percent = match direction {
        Direction::LowerIsBetter => (median_a - median_b) / median_a * 100.0,
        Direction::HigherIsBetter => (median_b - median_a) / median_a * 100.0,
    };
    let significant = p_value < ALPHA && (ratio_ci.0 > 1.0 || ratio_ci.1 < 1.0);
    let verdict = if a.len() < MIN_REPETITIONS || b.len() < MIN_REPETITIONS {
        Verdict::TooFewRepetitions
    } else if !significant {
        Verdict::NoSignificantDifference
    } else if percent > 0.0 {
        Verdict::Faster
    } else {
        Verdict::Slower
    };
    Some(RowStats {
        n_a: a.len(),
        n_b: b.len(),
        median_a,
        median_b,
        difference: median_b - median_a,
        hodges_lehmann: hodges_lehmann(a, b)?,
        ratio,
        ratio_ci,
        p_value,
        percent,
        direction,
        verdict,
    })
}

/// 95% percentile interval of median(B*) / median(A*) over bootstrap
/// resamples of each side.
fn bootstrap_ratio(a: &[f64], b: &[f64], rng: &mut Rng) -> (f64, f64) {
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    let mut ratios = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for x in &mut ra {
            *x = a[rng.index(a.len())];
        }
        for x in &mut rb {
            *x = b[rng.index(b.len())];
        }
        ra.sort_by(f64::total_cmp);
        rb.sort_by(f64::total_cmp);
        let ma = median_sorted(&ra);
        if ma != 0.0 {
            ratios.push(median_sorted(&rb) / ma);
        }
    }
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    if ratios.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    (at(0.025), at(0.975))
}

/// The summary across rows.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Overall {
    /// Rows summarised.
    pub rows: usize,
    /// Geometric mean of the per-row cost ratios (B/A for times, A/B for
    /// rates, so below 1 always means B is better).
    pub geomean_ratio: f64,
    /// 95% interval of the geometric mean: a bootstrap that resamples
    /// every row's repetitions ([`geomean_interval`]), so the noise of the
    /// measurements is in it, not only the spread between rows. `None`
    /// when the rows' samples were not given.
    pub geomean_ci: Option<(f64, f64)>,
    /// The geometric mean as a percentage in the rows' own sense (positive:
    /// B better): time saved, (1 - ratio) * 100, when any row is a time;
    /// rate gained, (1 / ratio - 1) * 100, when every row is a rate.
    pub geomean_percent: f64,
    /// Every row is a rate (higher is better).
    pub all_rates: bool,
    /// Arithmetic mean of the rows' percentages: what hand-made tables
    /// print as "Average ... faster". Kept for comparison; it overweights
    /// large changes and is not symmetric (Fleming & Wallace 1986).
    pub mean_of_percentages: f64,
}

/// Summarises rows; `None` when there are none.
pub fn summarize(rows: &[RowStats]) -> Option<Overall> {
    let logs: Vec<f64> = rows
        .iter()
        .map(|r| match r.direction {
            Direction::LowerIsBetter => r.ratio.ln(),
            Direction::HigherIsBetter => -r.ratio.ln(),
        })
        .filter(|x| x.is_finite())
        .collect();
    if logs.is_empty() {
        return None;
    }
    let k = logs.len() as f64;
    let m = logs.iter().sum::<f64>() / k;
    let geomean_ci = None;
    let geomean_ratio = m.exp();
    let all_rates = rows.iter().all(|r| r.direction == Direction::HigherIsBetter);
    Some(Overall {
        rows: rows.len(),
        geomean_ratio,
        geomean_ci,
        geomean_percent: if all_rates {
            (1.0 / geomean_ratio - 1.0) * 100.0
        } else {
            (1.0 - geomean_ratio) * 100.0
        },
        all_rates,
        mean_of_percentages: rows.iter().map(|r| r.percent).sum::<f64>() / rows.len() as f64,
    })
}

/// 95% percentile interval of the geometric mean of the rows' cost ratios
/// (B/A for times, A/B for rates), by a bootstrap that resamples each row's
/// A and B repetitions: each resample takes the ratio of medians per row
/// and their geometric mean. Rows of few repetitions widen it, as they
/// should; a t interval over the rows' point ratios would not (two rows
/// that are two views of one measurement agree closely, whatever the
/// noise). `None` when no row has samples on both sides.
pub fn geomean_interval(rows: &[(&[f64], &[f64], Direction)]) -> Option<(f64, f64)> {
    let rows: Vec<_> = rows.iter().filter(|r| !r.0.is_empty() && !r.1.is_empty()).collect();
    if rows.is_empty() {
        return None;
    }
    let mut rng = Rng::new(SEED ^ 0x6E0);
    // Rows of one comparison usually come from the same repetitions (a
    // time and its rate, several sizes of one run): when every row has
    // the same counts, resample whole repetitions, so rows that move
    // together stay together; otherwise each row on its own.
    let (na, nb) = (rows[0].0.len(), rows[0].1.len());
    let joint = rows.iter().all(|r| r.0.len() == na && r.1.len() == nb);
    let mut means = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    let (mut ia, mut ib) = (vec![0usize; na], vec![0usize; nb]);
    let (mut ra, mut rb) = (Vec::new(), Vec::new());
    'resample: for _ in 0..BOOTSTRAP_RESAMPLES {
        if joint {
            ia.iter_mut().for_each(|i| *i = rng.index(na));
            ib.iter_mut().for_each(|i| *i = rng.index(nb));
        }
        let mut sum = 0.0;
        for (a, b, dir) in &rows {
            ra.clear();
            rb.clear();
            if joint {
                ra.extend(ia.iter().map(|&i| a[i]));
                rb.extend(ib.iter().map(|&i| b[i]));
            } else {
                ra.extend((0..a.len()).map(|_| a[rng.index(a.len())]));
                rb.extend((0..b.len()).map(|_| b[rng.index(b.len())]));
            }
            ra.sort_by(f64::total_cmp);
            rb.sort_by(f64::total_cmp);
            let r = (median_sorted(&rb) / median_sorted(&ra)).ln();
            if !r.is_finite() {
                continue 'resample;
            }
            sum += match dir {
                Direction::LowerIsBetter => r,
                Direction::HigherIsBetter => -r,
            };
        }
        means.push((sum / rows.len() as f64).exp());
    }
    if means.is_empty() {
        return None;
    }
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((means.len() - 1) as f64 * q).round() as usize];
    Some((at(0.025), at(0.975)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rng: &mut Rng, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        (0..n).map(|_| mean + sd * rng.normal()).collect()
    }

    #[test]
    fn a_against_a_is_no_significant_difference_at_the_nominal_rate() {
        let mut rng = Rng::new(2024);
        let sims = 400;
        let mut quiet = 0;
        for _ in 0..sims {
            let a = sample(&mut rng, 10, 100.0, 8.0);
            let b = sample(&mut rng, 10, 100.0, 8.0);
            if compare(&a, &b, Direction::LowerIsBetter).unwrap().verdict == Verdict::NoSignificantDifference {
                quiet += 1;
            }
        }
        let rate = quiet as f64 / sims as f64;
        assert!(rate >= 0.90, "A vs A said 'no significant difference' in only {rate}");
    }

    #[test]
    fn a_ten_percent_shift_is_detected() {
        let mut rng = Rng::new(77);
        let sims = 200;
        let mut found = 0;
        for _ in 0..sims {
            let a = sample(&mut rng, 10, 100.0, 5.0);
            let b = sample(&mut rng, 10, 90.0, 5.0);
            let r = compare(&a, &b, Direction::LowerIsBetter).unwrap();
            if r.verdict == Verdict::Faster {
                found += 1;
                assert!(r.ratio_ci.1 < 1.0 && r.percent > 0.0);
            }
        }
        assert!(found as f64 / sims as f64 >= 0.9, "detected {found} of {sims}");
        // The same data as a rate: B's lower figure is now worse.
        let a = sample(&mut rng, 10, 100.0, 1.0);
        let b = sample(&mut rng, 10, 90.0, 1.0);
        assert_eq!(
            compare(&a, &b, Direction::HigherIsBetter).unwrap().verdict,
            Verdict::Slower
        );
    }

    #[test]
    fn geomean_interval_carries_the_rows_noise() {
        let mut rng = Rng::new(5);
        // Two rows that are two views of the same noisy measurement (a
        // time and its rate): their point ratios agree, but with 4 noisy
        // repetitions a side the interval must still span 1.
        let a = sample(&mut rng, 4, 100.0, 20.0);
        let b = sample(&mut rng, 4, 100.0, 20.0);
        let ra: Vec<f64> = a.iter().map(|x| 1e6 / x).collect();
        let rb: Vec<f64> = b.iter().map(|x| 1e6 / x).collect();
        let (lo, hi) = geomean_interval(&[
            (&a, &b, Direction::LowerIsBetter),
            (&ra, &rb, Direction::HigherIsBetter),
        ])
        .unwrap();
        assert!(lo < 1.0 && hi > 1.0, "{lo}..{hi}");
        // A clear 20% shift with little noise is outside 1.
        let a = sample(&mut rng, 10, 100.0, 2.0);
        let b = sample(&mut rng, 10, 80.0, 2.0);
        let (lo, hi) = geomean_interval(&[(&a, &b, Direction::LowerIsBetter)]).unwrap();
        assert!(hi < 1.0 && lo > 0.7, "{lo}..{hi}");
    }

    #[test]
    fn latency_grid_percentages() {
        // The latency grid's write-up, 10 KB row: application 290.580 us,
        // io-sock 80.321 us.
        let r = compare(&[290.580; 5], &[80.321; 5], Direction::LowerIsBetter).unwrap();
        assert!((r.percent - 72.358).abs() < 0.01, "{}", r.percent);
        assert!((r.difference + 210.259).abs() < 1e-9);
        assert_eq!(r.verdict, Verdict::Faster);
    }

    #[test]
    fn too_few_repetitions_give_no_verdict() {
        let r = compare(&[1.0, 1.1], &[5.0, 5.1], Direction::LowerIsBetter).unwrap();
        assert_eq!(r.verdict, Verdict::TooFewRepetitions);
        assert!(compare(&[], &[1.0], Direction::LowerIsBetter).is_none());
    }

    #[test]
    fn summary_geomean_and_mean_of_percentages() {
        // The latency grid's write-up, 1-byte requests: four rows, "Average
        // io-sock performance: 47.4% faster".
        let rows: Vec<RowStats> = [
            (346.243, 322.807),
            (290.580, 80.321),
            (443.578, 103.626),
            (2592.273, 1715.813),
        ]
        .iter()
        .map(|&(a, b)| compare(&[a; 4], &[b; 4], Direction::LowerIsBetter).unwrap())
        .collect();
        let s = summarize(&rows).unwrap();
        assert!((s.mean_of_percentages - 47.4).abs() < 0.05, "{}", s.mean_of_percentages);
        // Geometric mean of 0.9323, 0.2764, 0.2336, 0.6619 = 0.4468.
        assert!((s.geomean_ratio - 0.4468).abs() < 0.001, "{}", s.geomean_ratio);
        // Constant repetitions: no noise, so the interval is the point.
        let a: Vec<Vec<f64>> = [346.243, 290.580, 443.578, 2592.273]
            .iter()
            .map(|&x| vec![x; 4])
            .collect();
        let b: Vec<Vec<f64>> = [322.807, 80.321, 103.626, 1715.813]
            .iter()
            .map(|&x| vec![x; 4])
            .collect();
        let rows: Vec<(&[f64], &[f64], Direction)> = a
            .iter()
            .zip(&b)
            .map(|(a, b)| (&a[..], &b[..], Direction::LowerIsBetter))
            .collect();
        let (lo, hi) = geomean_interval(&rows).unwrap();
        assert!((lo - s.geomean_ratio).abs() < 1e-9 && (hi - s.geomean_ratio).abs() < 1e-9);
    }
}
