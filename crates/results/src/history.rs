//! A history: every stored run of a target as a series per figure, in
//! time order or in the order of an attribute, with the change points the
//! method found (`stackmeter history`, docs/history.md). The method is the
//! `stackmeter-history` crate's; this is the value it leaves for the
//! renderers, the JSON output and a regression gate.

use serde::Serialize;
use stackmeter_history::ChangePoint;
use stackmeter_statistics::Direction;
use std::collections::BTreeMap;

/// The whole output of one `history` command.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct History {
    /// Always `stackmeter/1`.
    pub schema: String,
    /// How the series were read and judged.
    pub settings: HistorySettings,
    /// Every series judged: those with a regression first (the largest
    /// first), then those with any other change, then the rest.
    pub series: Vec<HistorySeries>,
    /// Series too short to judge, and why.
    pub skipped: Vec<Skipped>,
}

/// How the series were read and judged.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct HistorySettings {
    /// The method, in words (docs/methods.md, "History").
    pub method: String,
    /// Significance level of a change point.
    pub alpha: f64,
    /// Smallest change, as a fraction, that counts as a regression or an
    /// improvement.
    pub tolerance: f64,
    /// Fewest runs on either side of a change point.
    pub min_segment: usize,
    /// "time", or "attribute KEY" (`--by KEY`).
    pub order: String,
    /// The runs shown and judged by a gate: "all", "last N runs" or "since
    /// TIME". The analysis reads every stored run before them too.
    pub window: String,
    /// Where the series came from: the store, or a CSV file.
    pub source: String,
    /// The label every run was divided by (the same job's run of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative_to: Option<String>,
}

/// One series: one figure of one row of one test of one label, run by run.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct HistorySeries {
    /// The label (a target), or the CSV file's name.
    pub label: String,
    /// The test ("rr"), or "csv".
    pub test: String,
    /// The plan step ("" for single commands).
    pub step: String,
    /// The row ("1 B:1 KiB"; "" for a CSV metric).
    pub row: String,
    /// The figure ("rtt p50", "total"; a CSV metric's name).
    pub figure: String,
    /// Its unit.
    pub unit: String,
    /// Which way is better.
    #[serde(rename = "lower_is_better", with = "stackmeter_statistics::as_lower_is_better")]
    #[schemars(with = "bool")]
    pub direction: Direction,
    /// The runs in order; `shown` marks those in the window.
    pub runs: Vec<HistoryRun>,
    /// The change points, in order of their run.
    pub changes: Vec<HistoryChange>,
}

/// One run of a series.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct HistoryRun {
    /// The stored run (none for a CSV row).
    pub run_id: Option<i64>,
    /// When it started (a CSV row's time column).
    pub started: String,
    /// What it measured: the user's attributes and the host facts (CSV:
    /// its attribute columns).
    pub attrs: BTreeMap<String, String>,
    /// The figure of each repetition.
    pub values: Vec<f64>,
    /// Their median.
    pub median: f64,
    /// Inside the window (`--last`, `--since`).
    pub shown: bool,
}

/// A change point with the run where it happened.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct HistoryChange {
    /// The first run after the change.
    pub run_id: Option<i64>,
    /// When that run started.
    pub started: String,
    /// Its attributes (the commit or firmware that came with the change).
    pub attrs: BTreeMap<String, String>,
    /// The attributes that differ from the run before it: what changed
    /// with the figure.
    pub changed: Vec<AttrChange>,
    /// Inside the window: what `--fail-on-regression` judges.
    pub shown: bool,
    /// Where, how large, how sure, and which way.
    #[serde(flatten)]
    pub change: ChangePoint,
}

/// An attribute that differs between two runs.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AttrChange {
    /// The attribute.
    pub key: String,
    /// Its value in the run before (none: it had none).
    pub before: Option<String>,
    /// Its value in this run (none: it has none).
    pub after: Option<String>,
}

impl AttrChange {
    /// Every attribute that differs between `before` and `after`.
    pub fn between(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<AttrChange> {
        let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .filter(|k| before.get(*k) != after.get(*k))
            .map(|k| AttrChange {
                key: k.clone(),
                before: before.get(k).cloned(),
                after: after.get(k).cloned(),
            })
            .collect()
    }

    /// "commit 3f2a1c -> 9b0e44".
    pub fn describe(&self) -> String {
        format!(
            "{} {} -> {}",
            self.key,
            self.before.as_deref().unwrap_or("(none)"),
            self.after.as_deref().unwrap_or("(none)")
        )
    }
}

/// A series left out.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Skipped {
    /// The series, as [`HistorySeries::name`] writes it.
    pub series: String,
    /// Why.
    pub why: String,
}

impl HistorySeries {
    /// "board-7 rr 1 B:1 KiB rtt p50".
    pub fn name(&self) -> String {
        let step = crate::figures::step_suffix(&self.test, &self.step);
        [
            self.label.as_str(),
            &format!("{}{step}", self.test),
            &self.row,
            &self.figure,
        ]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
    }

    /// How much worse the worst regression shown made the figure: the
    /// ratio the bad way (2.0: twice as slow, or half the rate), or 1.0.
    pub fn worst(&self) -> f64 {
        self.changes
            .iter()
            .filter(|c| c.shown && c.change.regression && !c.change.transient)
            .map(|c| worse_factor(c.change.ratio, self.direction))
            .fold(1.0, f64::max)
    }
}

/// How many times worse a ratio after/before is (1.0 and up), whichever
/// way is worse for the figure.
pub fn worse_factor(ratio: f64, direction: Direction) -> f64 {
    match direction {
        Direction::LowerIsBetter => ratio,
        Direction::HigherIsBetter => 1.0 / ratio,
    }
}

impl History {
    /// The regressions inside the window, each as one line: what a gate
    /// (`--fail-on-regression`) reports.
    pub fn regressions(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in &self.series {
            // A regression undone within the series (an episode) is shown,
            // but gates nothing: the level outside it did not change.
            for c in s
                .changes
                .iter()
                .filter(|c| c.shown && c.change.regression && !c.change.transient)
            {
                let attrs: Vec<String> = c.changed.iter().map(AttrChange::describe).collect();
                let run = c.run_id.map(|r| format!("run {r}, ")).unwrap_or_default();
                out.push(format!(
                    "{}: {} -> {} {} ({:+.1}%, 95% CI of the ratio {:.3}-{:.3}, p {:.2e}) from {run}{}{}",
                    s.name(),
                    crate::num(c.change.before_median),
                    crate::num(c.change.after_median),
                    s.unit,
                    100.0 * (c.change.ratio - 1.0),
                    c.change.ratio_ci.0,
                    c.change.ratio_ci.1,
                    c.change.p_value,
                    c.started,
                    match attrs.is_empty() {
                        true => "; no attribute changed with it".to_string(),
                        false => format!("; with {}", attrs.join(", ")),
                    }
                ));
            }
        }
        out
    }

    /// Orders the series worst first: the largest regression shown, then
    /// any other change shown, then the rest, each group by name.
    pub fn sort(&mut self) {
        self.series.sort_by(|a, b| {
            let rank = |s: &HistorySeries| {
                let changed = s.changes.iter().any(|c| c.shown);
                (std::cmp::Reverse(ordered(s.worst())), !changed)
            };
            rank(a).cmp(&rank(b)).then_with(|| a.name().cmp(&b.name()))
        });
    }
}

/// A factor as a key that sorts (factors are finite and 1.0 or more).
fn ordered(f: f64) -> u64 {
    (f.max(0.0) * 1e6) as u64
}
