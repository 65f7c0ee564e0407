//! The noise model: each run reduced to the median of its log values and
//! the spread of its repetitions, and a variance-components fit over the
//! series. The pooled within-run spread comes from each run's median
//! absolute deviation, so repetitions thrown far off by a burst of load
//! (one in five, in most runs) do not make every run look noisy. A run's
//! centre varies around its segment's level by a between-run part (tau^2:
//! what changes from run to run, load and placement) plus a within-run
//! part (the repetitions' variance over their count, larger for a median
//! than for a mean); its weight is one over the sum. Centres are then
//! winsorised against a running median, so one wild run moves no
//! segment's level by more than 2 of its own standard deviations.

pub use stackmeter_statistics::median_in_place;

/// One run as the method sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunSummary {
    /// Median of the logarithms of the repetitions.
    pub center: f64,
    /// Sample variance of the logarithms (0 for one repetition).
    pub s2: f64,
    /// Median absolute deviation of the logarithms from `center` (0 for
    /// one repetition).
    pub mad: f64,
    /// Number of repetitions.
    pub reps: u32,
}

/// Runs that are kept in a small array on the stack while summarised.
const SMALL: usize = 16;

impl RunSummary {
    /// Summarises one run's repetitions (non-empty, positive: the series
    /// checked them). `scratch` is reused between runs.
    pub fn of(run: &[f64], scratch: &mut Vec<f64>) -> RunSummary {
        let n = run.len();
        let mut small = [0.0f64; SMALL];
        let logs: &mut [f64] = if n <= SMALL {
            &mut small[..n]
        } else {
            scratch.clear();
            scratch.resize(n, 0.0);
            &mut scratch[..]
        };
        for (l, v) in logs.iter_mut().zip(run) {
            *l = v.ln();
        }
        let mean = logs.iter().sum::<f64>() / n as f64;
        let s2 = if n > 1 {
            logs.iter().map(|l| (l - mean) * (l - mean)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let center = median_in_place(logs);
        for l in logs.iter_mut() {
            *l = (*l - center).abs();
        }
        RunSummary {
            center,
            s2,
            mad: median_in_place(logs),
            reps: u32::try_from(n).unwrap_or(u32::MAX),
        }
    }
}

/// Prior weight, in degrees of freedom, of the pooled within-run variance
/// when a run's own is estimated: a run of 5 repetitions (4 df) counts
/// its own spread a fifth. A run whose repetitions disagree badly (a
/// disturbed run) still weighs less, but the weights do not follow the
/// chance spread of five values, which would make the test overconfident.
const PRIOR_DF: f64 = 16.0;
/// How far from the running median a run's centre may lie, in its own
/// standard deviations, before it is pulled in.
pub const WINSOR: f64 = 2.0;
/// Half-width of the running median that winsorising measures from.
pub const RUNNING: usize = 3;
/// Asymptotic relative efficiency of the MAD, which sets how many degrees
/// of freedom a scale estimated from n differences is worth.
const MAD_EFFICIENCY: f64 = 0.37;

/// The variance components of a series and what they imply.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Model {
    /// Between-run variance of log centres.
    pub tau2: f64,
    /// Pooled within-run variance of one log repetition (0 when no run has
    /// two repetitions).
    pub sigma_w2: f64,
    /// Smallest within-run variance of a centre that any run is given: a
    /// quarter of the typical one, so a run whose repetitions happened to
    /// agree does not outweigh the series.
    pub u_floor: f64,
    /// Degrees of freedom the scale is worth (for small series).
    pub df: f64,
}

impl Model {
    /// Fits the components to the runs' summaries. Robust: the between-run
    /// part comes from the median absolute deviation of successive
    /// differences, which level shifts and single wild runs barely move;
    /// the within-run part from the runs' own median absolute deviations,
    /// which a wild repetition in every run barely moves.
    pub fn fit(runs: &[RunSummary]) -> Model {
        let mut scratch: Vec<f64> = Vec::with_capacity(runs.len());
        let sigma_w2 = pooled_within(runs, &mut scratch);
        let partial = Model {
            tau2: 0.0,
            sigma_w2,
            u_floor: 0.0,
            df: f64::INFINITY,
        };
        scratch.clear();
        scratch.extend(runs.iter().map(|r| partial.within(r)));
        let u_typical = if scratch.is_empty() {
            0.0
        } else {
            median_in_place(&mut scratch)
        };
        scratch.clear();
        scratch.extend(runs.windows(2).map(|w| w[1].center - w[0].center));
        let sd_diff = robust_sd(&mut scratch);
        let tau2 = (0.5 * sd_diff * sd_diff - u_typical).max(0.0);
        // Degrees of freedom: the between-run part is known from n - 1
        // differences at the MAD's efficiency, the within-run part from
        // every repetition beyond the first of each run.
        let within_df: f64 = runs.iter().map(|r| f64::from(r.reps.saturating_sub(1))).sum();
        let between_df = MAD_EFFICIENCY * runs.len().saturating_sub(1) as f64;
        let total = tau2 + u_typical;
        let share = if total > 0.0 { tau2 / total } else { 1.0 };
        let df = (share * between_df + (1.0 - share) * within_df).max(1.0);
        Model {
            tau2,
            sigma_w2,
            u_floor: 0.25 * u_typical,
            df,
        }
    }

    /// Within-run variance of one run's centre: its own spread shrunk
    /// towards the pool, over its repetitions, times the median's
    /// variance factor; the pool's for a run of one repetition.
    fn within(&self, r: &RunSummary) -> f64 {
        let m = f64::from(r.reps);
        if r.reps < 2 {
            return self.sigma_w2;
        }
        let shrunk = (PRIOR_DF * self.sigma_w2 + (m - 1.0) * r.s2) / (PRIOR_DF + m - 1.0);
        median_factor(r.reps) * shrunk / m
    }

    /// Variance of one run's centre around its segment's level.
    pub fn variance(&self, r: &RunSummary) -> f64 {
        (self.tau2 + self.within(r).max(self.u_floor)).max(f64::MIN_POSITIVE)
    }
}

/// The pooled variance of one log repetition: the median over runs of
/// each run's MAD scaled to a standard deviation. When most runs' MADs are
/// 0 (a quantised figure whose repetitions tie), the median of the runs'
/// sample variances instead, corrected for the median's bias.
fn pooled_within(runs: &[RunSummary], scratch: &mut Vec<f64>) -> f64 {
    scratch.clear();
    scratch.extend(runs.iter().filter(|r| r.reps > 1).map(|r| r.mad / mad_median(r.reps)));
    if scratch.is_empty() {
        return 0.0;
    }
    let sd = median_in_place(scratch);
    if sd > 0.0 {
        return sd * sd;
    }
    scratch.clear();
    scratch.extend(runs.iter().filter(|r| r.reps > 1).map(|r| r.s2));
    let typical_df = {
        let mut reps: Vec<f64> = runs.iter().filter(|r| r.reps > 1).map(|r| f64::from(r.reps)).collect();
        median_in_place(&mut reps) - 1.0
    };
    // The median of s^2 is below sigma^2: chi-square's median is about
    // df (1 - 2 / (9 df))^3 (Wilson-Hilferty).
    let bias = (1.0 - 2.0 / (9.0 * typical_df)).powi(3);
    median_in_place(scratch) / bias
}

/// Median of the MAD (around the sample median) of `m` standard normal
/// draws, so that a run's MAD over it estimates the standard deviation
/// without bias in the median over runs. Values for small m from 400,000
/// simulated runs each; beyond, 0.6745 (1 - 1.12 / m), which fits the
/// simulated values from 17 to 100 within 0.1%.
fn mad_median(m: u32) -> f64 {
    const TABLE: [f64; 17] = [
        1.0, 1.0, 0.4783, 0.3611, 0.4542, 0.5027, 0.5351, 0.5567, 0.5727, 0.5866, 0.5951, 0.6036, 0.6096, 0.6153,
        0.6192, 0.6238, 0.6260,
    ];
    TABLE
        .get(m as usize)
        .copied()
        .unwrap_or_else(|| 0.674_49 * (1.0 - 1.12 / f64::from(m)))
}

/// Variance of the median of `m` normal draws over that of their mean
/// (exact values for small m from order-statistic tables, pi/2 beyond).
fn median_factor(m: u32) -> f64 {
    const TABLE: [f64; 10] = [1.0, 1.0, 1.0, 1.349, 1.193, 1.434, 1.286, 1.468, 1.332, 1.487];
    TABLE.get(m as usize).copied().unwrap_or(std::f64::consts::FRAC_PI_2)
}

/// Robust standard deviation of `xs` (reordered): the MAD times its
/// normal consistency factor; when more than half the values tie (a
/// quantised figure), the mean absolute deviation from the median instead.
fn robust_sd(xs: &mut [f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let med = median_in_place(xs);
    let mut dev: Vec<f64> = xs.iter().map(|x| (x - med).abs()).collect();
    let mad = median_in_place(&mut dev);
    if mad > 0.0 {
        return stackmeter_statistics::MAD_TO_SD * mad;
    }
    // Mean absolute deviation of a normal is sd * sqrt(2 / pi).
    dev.iter().sum::<f64>() / dev.len() as f64 * (std::f64::consts::FRAC_PI_2).sqrt()
}

/// The series as the scan reads it: winsorised centres `y`, weights `w`
/// and their prefix sums, all relative to an offset that keeps the sums
/// small.
#[derive(Clone, Debug, Default)]
pub struct Prepared {
    /// Raw log centres (for medians).
    pub center: Vec<f64>,
    /// Variance of each centre under the model.
    pub var: Vec<f64>,
    /// `pw[i]` = sum of weights of runs before i.
    pub pw: Vec<f64>,
    /// `py[i]` = sum of weight * (winsorised centre - offset) before i.
    pub py: Vec<f64>,
    /// Degrees of freedom of the scale.
    pub df: f64,
}

impl Prepared {
    /// Fits the model and prepares the sums.
    pub fn new(runs: &[RunSummary]) -> Prepared {
        let model = Model::fit(runs);
        Prepared::with_model(runs, &model)
    }

    /// Prepares the sums under a given model.
    pub fn with_model(runs: &[RunSummary], model: &Model) -> Prepared {
        let n = runs.len();
        let center: Vec<f64> = runs.iter().map(|r| r.center).collect();
        let var: Vec<f64> = runs.iter().map(|r| model.variance(r)).collect();
        let offset = center.first().copied().unwrap_or(0.0);
        let mut pw = Vec::with_capacity(n + 1);
        let mut py = Vec::with_capacity(n + 1);
        pw.push(0.0);
        py.push(0.0);
        let (mut sw, mut sy) = (0.0, 0.0);
        for i in 0..n {
            let y = winsorised(&center, &var, i) - offset;
            let w = 1.0 / var[i];
            sw += w;
            sy += w * y;
            pw.push(sw);
            py.push(sy);
        }
        Prepared {
            center,
            var,
            pw,
            py,
            df: model.df,
        }
    }

    /// Appends one run under `model` (the one the rest was prepared
    /// with). The runs whose running median now reaches the new one are
    /// winsorised again, so the result equals preparing the whole series
    /// at once: O(1) per run.
    pub fn push(&mut self, run: &RunSummary, model: &Model) {
        if self.pw.is_empty() {
            *self = Prepared::with_model(std::slice::from_ref(run), model);
            return;
        }
        self.center.push(run.center);
        self.var.push(model.variance(run));
        let n = self.center.len();
        let offset = self.center[0];
        // Runs whose neighbourhood reaches the new one; all of them while
        // the series is shorter than a neighbourhood.
        let from = if n <= 2 * RUNNING + 1 { 0 } else { n - RUNNING - 1 };
        self.pw.truncate(from + 1);
        self.py.truncate(from + 1);
        let (mut sw, mut sy) = (self.pw[from], self.py[from]);
        for i in from..n {
            let y = winsorised(&self.center, &self.var, i) - offset;
            let w = 1.0 / self.var[i];
            sw += w;
            sy += w * y;
            self.pw.push(sw);
            self.py.push(sy);
        }
    }

    /// Runs prepared.
    pub fn len(&self) -> usize {
        self.center.len()
    }

    /// Weight and weighted sum of runs `a..b`.
    pub fn sums(&self, a: usize, b: usize) -> (f64, f64) {
        (self.pw[b] - self.pw[a], self.py[b] - self.py[a])
    }

    /// Standardised difference of the weighted means of `k..e` and `s..k`.
    pub fn z(&self, s: usize, k: usize, e: usize) -> f64 {
        let (wl, yl) = self.sums(s, k);
        let (wr, yr) = self.sums(k, e);
        (yr / wr - yl / wl) / (1.0 / wl + 1.0 / wr).sqrt()
    }

    /// The split of `s..e` with the largest |z|, each side at least `m`
    /// runs: (first run of the right side, z). `None` when no split fits.
    pub fn best_split(&self, s: usize, e: usize, m: usize) -> Option<(usize, f64)> {
        if e < s + 2 * m {
            return None;
        }
        let (w0, y0) = (self.pw[s], self.py[s]);
        let (wt, yt) = (self.pw[e] - w0, self.py[e] - y0);
        let mut best = (s + m, 0.0f64, -1.0f64);
        for k in s + m..=e - m {
            let wl = self.pw[k] - w0;
            let yl = self.py[k] - y0;
            let wr = wt - wl;
            let d = (yt - yl) / wr - yl / wl;
            // z^2 = d^2 * wl * wr / wt; compare without the root.
            let z2 = d * d * wl * wr;
            if z2 > best.2 {
                best = (k, d, z2);
            }
        }
        let z = (best.2 / wt).sqrt().copysign(best.1);
        Some((best.0, z))
    }
}

/// Run `i`'s centre pulled to within [`WINSOR`] standard deviations of
/// the median of its neighbourhood: `RUNNING` runs either side, and near
/// either end of the series the same number of runs moved inwards, so
/// two wild runs at the end of a series are still outvoted. A running
/// median keeps a step's edge, so a real shift is not pulled back once
/// `RUNNING + 1` runs follow it.
pub fn winsorised(center: &[f64], var: &[f64], i: usize) -> f64 {
    let width = 2 * RUNNING + 1;
    let lo = i.saturating_sub(RUNNING).min(center.len().saturating_sub(width));
    let hi = (lo + width).min(center.len());
    let mut window = [0.0f64; 2 * RUNNING + 1];
    let window = &mut window[..hi - lo];
    window.copy_from_slice(&center[lo..hi]);
    let level = median_in_place(window);
    let limit = WINSOR * var[i].sqrt();
    level + (center[i] - level).clamp(-limit, limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackmeter_statistics::rng::Rng;

    fn summaries(rng: &mut Rng, n: usize, reps: usize, tau: f64, sigma: f64) -> Vec<RunSummary> {
        let mut scratch = Vec::new();
        (0..n)
            .map(|_| {
                let level = tau * rng.normal();
                let run: Vec<f64> = (0..reps).map(|_| (level + sigma * rng.normal()).exp()).collect();
                RunSummary::of(&run, &mut scratch)
            })
            .collect()
    }

    #[test]
    fn a_run_is_its_log_median_and_log_spread() {
        let r = RunSummary::of(&[1.0, std::f64::consts::E, 10.0], &mut Vec::new());
        assert!((r.center - 1.0).abs() < 1e-12);
        assert_eq!(r.reps, 3);
        let one = RunSummary::of(&[5.0], &mut Vec::new());
        assert_eq!((one.s2, one.reps), (0.0, 1));
        let mut v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(median_in_place(&mut v), 2.5);
    }

    #[test]
    fn components_are_recovered() {
        let mut rng = Rng::new(3);
        let runs = summaries(&mut rng, 2000, 5, 0.05, 0.10);
        let m = Model::fit(&runs);
        assert!((m.sigma_w2.sqrt() - 0.10).abs() < 0.01, "{m:?}");
        assert!((m.tau2.sqrt() - 0.05).abs() < 0.01, "{m:?}");
        // No between-run part: tau^2 near 0, and the weights come from
        // the repetitions.
        let runs = summaries(&mut rng, 2000, 5, 0.0, 0.10);
        let m = Model::fit(&runs);
        assert!(m.tau2.sqrt() < 0.02, "{m:?}");
        assert!(m.df > 1000.0, "{m:?}");
        // Single repetitions: everything is between runs.
        let runs = summaries(&mut rng, 2000, 1, 0.05, 0.0);
        let m = Model::fit(&runs);
        assert_eq!(m.sigma_w2, 0.0);
        assert!((m.tau2.sqrt() - 0.05).abs() < 0.005, "{m:?}");
    }

    #[test]
    fn the_pool_ignores_a_wild_repetition_in_most_runs_and_falls_back_on_ties() {
        let mut rng = Rng::new(5);
        let mut scratch = Vec::new();
        let runs: Vec<RunSummary> = (0..200)
            .map(|i| {
                let mut run: Vec<f64> = (0..5).map(|_| (0.02 * rng.normal()).exp()).collect();
                if i % 3 != 0 {
                    run[i % 5] *= 4.0;
                }
                RunSummary::of(&run, &mut scratch)
            })
            .collect();
        let m = Model::fit(&runs);
        // A wild repetition moves a run's MAD a little (about 1.3x here),
        // its sample variance a lot (the median over runs of those is a
        // spread of 0.6 in logs, 30x).
        let sd = m.sigma_w2.sqrt();
        assert!(sd > 0.018 && sd < 0.03, "{m:?}");
        // A quantised figure: four of five repetitions tie in every run.
        let tied: Vec<RunSummary> = (0..50)
            .map(|i| RunSummary::of(&[1.0, 1.0, 1.0, 1.0, 1.0 + 0.01 * f64::from(i % 5 + 1)], &mut scratch))
            .collect();
        assert!(tied.iter().all(|r| r.mad == 0.0));
        assert!(Model::fit(&tied).sigma_w2 > 0.0);
    }

    #[test]
    fn a_noisy_run_weighs_less() {
        let mut rng = Rng::new(4);
        let mut runs = summaries(&mut rng, 200, 5, 0.01, 0.05);
        runs[10].s2 = 0.25; // spread 0.5 in logs
        let m = Model::fit(&runs);
        assert!(m.variance(&runs[10]) > 3.0 * m.variance(&runs[11]));
    }

    #[test]
    fn winsorising_pulls_an_outlier_and_keeps_a_step() {
        let mut center = vec![0.0; 20];
        center[10..].iter_mut().for_each(|c| *c = 1.0);
        center[5] = 5.0;
        let var = vec![0.01; 20];
        assert!((winsorised(&center, &var, 5) - WINSOR * 0.1).abs() < 1e-12);
        for i in 6..20 {
            assert_eq!(winsorised(&center, &var, i), center[i], "run {i}");
        }
    }

    #[test]
    fn best_split_finds_a_step() {
        let mut rng = Rng::new(9);
        let mut runs = summaries(&mut rng, 100, 3, 0.01, 0.02);
        for r in &mut runs[60..] {
            r.center += 0.1;
        }
        let p = Prepared::new(&runs);
        let (k, z) = p.best_split(0, 100, 3).unwrap();
        assert_eq!(k, 60);
        assert!(z > 10.0, "{z}");
        assert!((p.z(0, 60, 100) - z).abs() < 1e-9);
        assert!(p.best_split(0, 5, 3).is_none());
    }

    #[test]
    fn pushing_runs_equals_preparing_them_at_once() {
        let mut rng = Rng::new(10);
        let runs = summaries(&mut rng, 50, 3, 0.05, 0.05);
        let model = Model::fit(&runs);
        let whole = Prepared::with_model(&runs, &model);
        let mut pushed = Prepared::default();
        for r in &runs {
            pushed.push(r, &model);
        }
        assert_eq!(whole.center, pushed.center);
        for (a, b) in whole.py.iter().zip(&pushed.py) {
            assert!((a - b).abs() < 1e-9, "{a} {b}");
        }
        assert_eq!(whole.pw.len(), pushed.pw.len());
    }
}
