//! A change point as a reader sees it: where, the level on each side,
//! the ratio with its interval, the evidence, and whether it is a
//! regression. Built from the segments on either side.

use crate::detect::Found;
use crate::model::{median_in_place, Prepared};
use crate::settings::Settings;
use serde::{Deserialize, Serialize};
use stackmeter_statistics::dist::t_quantile;

/// One change in a series.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChangePoint {
    /// Index of the first run after the change.
    pub index: usize,
    /// Runs in the segment before (from the previous change point).
    pub before_runs: usize,
    /// Runs in the segment after (up to the next change point or the end).
    pub after_runs: usize,
    /// Median over the runs before of each run's median repetition.
    pub before_median: f64,
    /// The same over the runs after.
    pub after_median: f64,
    /// `after_median / before_median`.
    pub ratio: f64,
    /// 95% interval of the ratio (from the variance of the two medians
    /// under the series' noise model).
    pub ratio_ci: (f64, f64),
    /// Two-sided p-value of a change anywhere between the neighbouring
    /// change points at least this large, given that the position was
    /// searched for.
    pub p_value: f64,
    /// The ratio moved the worse way by more than the tolerance.
    pub regression: bool,
    /// The ratio moved the better way by more than the tolerance.
    pub improvement: bool,
    /// This change and its neighbour bound an episode: the level came back
    /// within `Settings::max_episode` runs (a burst of slow runs, a
    /// regression soon fixed). `regression` and `improvement` still say
    /// which way it went; the level outside the episode did not change.
    pub transient: bool,
}

/// A segment's level: the median of its runs' log centres and that
/// median's variance under the noise model.
#[derive(Clone, Copy, Debug)]
struct Level {
    log_median: f64,
    var: f64,
    runs: usize,
}

/// The level of runs `a..b` (non-empty).
fn level(prep: &Prepared, a: usize, b: usize, scratch: &mut Vec<f64>) -> Level {
    scratch.clear();
    scratch.extend_from_slice(&prep.center[a..b]);
    let n = (b - a) as f64;
    Level {
        log_median: median_in_place(scratch),
        // Variance of a median of n draws: about pi/2 times the mean's.
        var: std::f64::consts::FRAC_PI_2 * prep.var[a..b].iter().sum::<f64>() / (n * n),
        runs: b - a,
    }
}

/// Half-width, in logs, of the 95% interval of the ratio of two levels.
fn half_width(a: &Level, b: &Level, df: f64) -> f64 {
    let df = df.min((a.runs + b.runs) as f64 - 2.0).max(1.0);
    t_quantile(0.975, df) * (a.var + b.var).sqrt()
}

/// The change point at `index` between two levels.
fn between(index: usize, before: &Level, after: &Level, p_value: f64, df: f64, settings: &Settings) -> ChangePoint {
    let log_ratio = after.log_median - before.log_median;
    let half = half_width(before, after, df);
    let ratio = log_ratio.exp();
    ChangePoint {
        index,
        before_runs: before.runs,
        after_runs: after.runs,
        before_median: before.log_median.exp(),
        after_median: after.log_median.exp(),
        ratio,
        ratio_ci: ((log_ratio - half).exp(), (log_ratio + half).exp()),
        p_value,
        regression: settings.is_regression(ratio),
        improvement: settings.is_improvement(ratio),
        transient: false,
    }
}

/// The change point at `k` between the segments `s..k` and `k..e`.
pub fn describe(prep: &Prepared, s: usize, k: usize, e: usize, p_value: f64, settings: &Settings) -> ChangePoint {
    let mut scratch = Vec::with_capacity((k - s).max(e - k));
    let before = level(prep, s, k, &mut scratch);
    let after = level(prep, k, e, &mut scratch);
    between(k, &before, &after, p_value, prep.df, settings)
}

/// Every change point of `found` (in order) described over the segments
/// between them, episodes marked.
pub fn describe_all(prep: &Prepared, found: &[Found], settings: &Settings) -> Vec<ChangePoint> {
    let mut bounds = Vec::with_capacity(found.len() + 2);
    bounds.push(0);
    bounds.extend(found.iter().map(|f| f.index));
    bounds.push(prep.len());
    let mut scratch = Vec::new();
    let levels: Vec<Level> = bounds
        .windows(2)
        .map(|w| level(prep, w[0], w[1], &mut scratch))
        .collect();
    let mut cps: Vec<ChangePoint> = found
        .iter()
        .enumerate()
        .map(|(j, f)| between(f.index, &levels[j], &levels[j + 1], f.p_value, prep.df, settings))
        .collect();
    mark_episodes(&mut cps, |a, b| level(prep, a, b, &mut scratch), settings, prep.df);
    cps
}

/// Marks the change points that bound an episode: a chain of neighbours
/// whose first and last are at most `max_episode` runs apart, where the
/// level just after the last is back at the level just before the first
/// (within the tolerance, or within the 95% interval of the two levels'
/// ratio). "Just" is up to `max_episode` runs, inside the neighbouring
/// segments: a slow drift elsewhere in them is no part of the episode. A
/// regression only partly fixed leaves a change in the level, and stays.
/// Left to right, the longest chain first.
fn mark_episodes(cps: &mut [ChangePoint], mut local: impl FnMut(usize, usize) -> Level, settings: &Settings, df: f64) {
    let floor = settings.tolerance.ln_1p();
    let reach = settings.max_episode.max(settings.min_segment);
    let mut j = 0;
    while j + 1 < cps.len() {
        let first = cps[j].index;
        let outside = local(first - cps[j].before_runs.min(reach), first);
        let mut end = None;
        for (j2, cp) in cps.iter().enumerate().skip(j + 1) {
            let last = cp.index;
            if last - first > settings.max_episode {
                break;
            }
            let back = local(last, last + cp.after_runs.min(reach));
            let d = (back.log_median - outside.log_median).abs();
            if d <= floor.max(half_width(&outside, &back, df)) {
                end = Some(j2);
            }
        }
        match end {
            Some(end) => {
                cps[j..=end].iter_mut().for_each(|c| c.transient = true);
                j = end + 1;
            }
            None => j += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackmeter_statistics::Direction;

    /// Change points at `at` between segments at `levels`, each level with
    /// a variance of `var` (1e-4: a 2% interval of a ratio); which are
    /// transient.
    fn transient_with(at: &[usize], levels: &[f64], var: f64) -> Vec<bool> {
        let n = at.last().map_or(0, |l| l + 30);
        let segment = |i: usize| at.iter().filter(|&&a| a <= i).count();
        let levels: Vec<Level> = levels
            .iter()
            .map(|&l| Level {
                log_median: f64::ln(l),
                var,
                runs: 30,
            })
            .collect();
        let settings = Settings::new(Direction::LowerIsBetter);
        let bounds: Vec<usize> = std::iter::once(0).chain(at.iter().copied()).chain([n]).collect();
        let mut cps: Vec<ChangePoint> = at
            .iter()
            .enumerate()
            .map(|(j, &i)| {
                let mut c = between(i, &levels[j], &levels[j + 1], 0.0, 100.0, &settings);
                c.before_runs = bounds[j + 1] - bounds[j];
                c.after_runs = bounds[j + 2] - bounds[j + 1];
                c
            })
            .collect();
        // Every stretch asked for lies inside one segment.
        mark_episodes(&mut cps, |a, _| levels[segment(a)], &settings, 100.0);
        cps.iter().map(|c| c.transient).collect()
    }

    fn transient(at: &[usize], levels: &[f64]) -> Vec<bool> {
        transient_with(at, levels, 1e-4)
    }

    #[test]
    fn episodes_are_undone_changes_within_the_window() {
        // A busy neighbour for 20 runs: out and back.
        assert_eq!(transient(&[50, 70], &[100.0, 180.0, 104.0]), [true, true]);
        // Out in two steps and back, then a lasting change.
        assert_eq!(
            transient(&[50, 58, 66, 200], &[100.0, 150.0, 220.0, 97.0, 125.0]),
            [true, true, true, false]
        );
        // A staircase is not an episode; nor is a change undone too late.
        assert_eq!(transient(&[50, 60], &[100.0, 110.0, 121.0]), [false, false]);
        assert_eq!(transient(&[50, 71], &[100.0, 180.0, 100.0]), [false, false]);
        // A lasting change of 20% behind a burst (the burst ends above
        // where it started): not an episode.
        assert_eq!(transient(&[50, 60], &[100.0, 200.0, 120.0]), [false, false]);
        // A regression of 25% fixed to within the 5% tolerance: an episode.
        assert_eq!(transient(&[50, 60], &[100.0, 125.0, 104.0]), [true, true]);
    }

    #[test]
    fn a_level_back_within_its_noise_is_back() {
        // 7% above, but the two levels' interval is wider than that.
        assert_eq!(transient_with(&[50, 60], &[100.0, 200.0, 107.0], 0.002), [true, true]);
        assert_eq!(
            transient_with(&[50, 60], &[100.0, 200.0, 107.0], 0.0001),
            [false, false]
        );
    }
}
