//! The incremental analysis: runs arrive one at a time (a nightly job, a
//! CI pipeline) and each is judged against the runs since the last
//! confirmed change point, never the whole history again.
//!
//! Per run: its summary, the prefix sums extended (O(1): only the last
//! few runs' winsorised values change), and a scan of the current
//! segment, O(runs since the last change). The noise model is refitted
//! on the whole series when it has grown by an eighth, O(n) each time,
//! so O(1) per run on average. The test a new change must pass is the
//! batch analysis' test of its last change point (the same p-value over
//! the same segment), so both agree on well-separated changes. Only the
//! last change point is still open: as runs follow it, it may move (to
//! where the batch analysis would put it), or be withdrawn when the runs
//! after it no longer support it (a burst of slow runs that ended); the
//! ones before it are final. Moving it costs one more scan, of the runs
//! since the change point before it.

use crate::change::{describe, describe_all, ChangePoint};
use crate::detect::{split_p, Found};
use crate::error::HistoryError;
use crate::model::{Model, Prepared, RunSummary};
use crate::series::Series;
use crate::settings::Settings;

/// Refit the noise model when the series has grown by this fraction.
const REFIT_GROWTH: usize = 8;

/// A series that grows one run at a time, with its confirmed change points.
#[derive(Clone, Debug)]
pub struct Tracker {
    settings: Settings,
    series: Series,
    runs: Vec<RunSummary>,
    model: Option<Model>,
    fitted_at: usize,
    prep: Prepared,
    /// First run of the current segment (the last change point, or 0).
    settled: usize,
    /// Every confirmed change point's first run after it.
    confirmed: Vec<usize>,
    scratch: Vec<f64>,
}

impl Tracker {
    /// An empty tracker. Errors when a setting is out of range.
    pub fn new(settings: Settings) -> Result<Tracker, HistoryError> {
        settings.check()?;
        Ok(Tracker {
            settings,
            series: Series::new(),
            runs: Vec::new(),
            model: None,
            fitted_at: 0,
            prep: Prepared::default(),
            settled: 0,
            confirmed: Vec::new(),
            scratch: Vec::new(),
        })
    }

    /// A tracker that has seen `series` run by run (the change points it
    /// confirmed on the way are in [`Tracker::change_points`]).
    pub fn replay(settings: Settings, series: &Series) -> Result<Tracker, HistoryError> {
        let mut t = Tracker::new(settings)?;
        for run in series.iter() {
            t.push(run)?;
        }
        Ok(t)
    }

    /// Appends one run's repetitions; returns the change point this run
    /// confirmed, if any (described over the runs so far). The last change
    /// point may still move or be withdrawn by later runs:
    /// [`Tracker::change_points`] is the current list.
    pub fn push(&mut self, repetitions: &[f64]) -> Result<Option<ChangePoint>, HistoryError> {
        self.series.push_run(repetitions)?;
        let run = RunSummary::of(repetitions, &mut self.scratch);
        self.runs.push(run);
        let n = self.runs.len();
        if n < self.settings.min_runs() {
            return Ok(None);
        }
        match self.model {
            Some(model) if n < self.fitted_at + self.fitted_at / REFIT_GROWTH + 1 => {
                self.prep.push(&run, &model);
            }
            _ => {
                let model = Model::fit(&self.runs);
                self.prep = Prepared::with_model(&self.runs, &model);
                self.model = Some(model);
                self.fitted_at = n;
            }
        }
        let m = self.settings.min_segment;
        self.refine_last(n);
        self.withdraw_last(n);
        let Some((k, _)) = self.prep.best_split(self.settled, n, m) else {
            return Ok(None);
        };
        let p = split_p(&self.prep, self.settled, k, n, m);
        if p >= self.settings.alpha {
            return Ok(None);
        }
        let cp = describe(&self.prep, self.settled, k, n, p, &self.settings);
        self.confirmed.push(k);
        self.settled = k;
        Ok(Some(cp))
    }

    /// Moves the last confirmed change point to the best split of the runs
    /// from the one before it to the newest: where the batch analysis
    /// would put it now that more runs follow it (first found with a few
    /// runs after it, it may be off by several). O(runs since the change
    /// point before it).
    fn refine_last(&mut self, n: usize) {
        let Some(&k) = self.confirmed.last() else { return };
        let j = self.confirmed.len() - 1;
        let s = if j == 0 { 0 } else { self.confirmed[j - 1] };
        if let Some((best, z)) = self.prep.best_split(s, n, self.settings.min_segment) {
            // Stay put unless the new place is strictly better.
            if z.abs() > self.prep.z(s, k, n).abs() {
                self.confirmed[j] = best;
                self.settled = best;
            }
        }
    }

    /// Withdraws the last confirmed change point when the runs since no
    /// longer support it (its p-value between the one before it and the
    /// newest run is no longer below alpha): a burst of slow runs that
    /// looked like a change until the runs after it came back. O(1).
    fn withdraw_last(&mut self, n: usize) {
        let Some(&k) = self.confirmed.last() else { return };
        let j = self.confirmed.len() - 1;
        let s = if j == 0 { 0 } else { self.confirmed[j - 1] };
        if split_p(&self.prep, s, k, n, self.settings.min_segment) >= self.settings.alpha {
            self.confirmed.pop();
            self.settled = s;
        }
    }

    /// Every change point confirmed so far, each described over the runs
    /// between its neighbours as the series stands now (the last one's
    /// after side has grown since it was confirmed), episodes marked: what
    /// [`crate::analyze`] would say of these positions. O(runs).
    pub fn change_points(&self) -> Vec<ChangePoint> {
        let n = self.runs.len();
        let m = self.settings.min_segment;
        let found: Vec<Found> = (0..self.confirmed.len())
            .map(|j| {
                let s = if j == 0 { 0 } else { self.confirmed[j - 1] };
                let e = self.confirmed.get(j + 1).copied().unwrap_or(n);
                let k = self.confirmed[j];
                Found {
                    index: k,
                    p_value: split_p(&self.prep, s, k, e, m),
                }
            })
            .collect();
        describe_all(&self.prep, &found, &self.settings)
    }

    /// Every run pushed.
    pub fn series(&self) -> &Series {
        &self.series
    }

    /// The settings it judges with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }
}
