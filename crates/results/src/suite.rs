//! A suite's outcome as one typed value: the settings it ran with (kept
//! with the run in the store, so `show` renders a stored suite again), the
//! comparison of every target against the first, and the figures whose
//! confidence goal was not reached. Built from finished documents by pure
//! code; the engine runs the tests, this only judges them.

use crate::comparison::{self, Comparison, Side};
use crate::doc::figures;
use crate::doc::Document;
use serde::{Deserialize, Serialize};

/// A target of the suite as the output names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SuiteTarget {
    /// Its label ("rust", "c", or LABEL of `--target LABEL=ADDR`).
    pub label: String,
    /// The address as given.
    pub name: String,
    /// The resolved socket address.
    pub address: String,
    /// The client's real-time knobs for this member (a suite variant);
    /// default when the suite has no variants.
    #[serde(default, skip_serializing_if = "crate::KnobRequest::is_default")]
    pub knobs: crate::KnobRequest,
}

/// What a suite ran: stored with its run, read back by `show`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SuiteSettings {
    /// Built-in plan name or plan file.
    pub plan: String,
    /// The targets, baseline first.
    pub targets: Vec<SuiteTarget>,
    /// Repetitions asked for per target.
    pub repeat: usize,
    /// Counts and durations scaled down.
    pub quick: bool,
    /// Confidence goal `[level, width]` (0.99, 0.05), if any.
    pub confidence: Option<Vec<f64>>,
    /// Most repetitions with a confidence goal.
    pub max_repeat: usize,
    /// Latency figure compared per repetition ("mean", "p50", "p99").
    pub metric: String,
    /// Something the reader must know (e.g. which responders were compared).
    pub note: Option<String>,
}

/// One finished test of a suite.
pub struct Finished<'a> {
    /// Target label.
    pub label: &'a str,
    /// Plan step.
    pub step: &'a str,
    /// The result.
    pub doc: &'a Document,
}

/// The outcome of a suite (JSON: the keys of `stackmeter suite --json`).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct SuiteOutcome {
    /// Always `stackmeter/1`.
    pub schema: String,
    /// What ran.
    pub suite: SuiteSettings,
    /// The run id in the store, if stored.
    pub run: Option<i64>,
    /// Tests finished.
    pub tests: usize,
    /// Repetitions the baseline ran of the first step.
    pub repetitions: usize,
    /// Each target against the first.
    pub comparisons: Vec<Comparison>,
    /// Figures whose confidence goal was not reached, one line each.
    pub not_converged: Vec<String>,
}

impl SuiteOutcome {
    /// Judges the finished tests of a suite run with `settings`.
    pub fn build(settings: SuiteSettings, run: Option<i64>, done: &[Finished]) -> SuiteOutcome {
        let labels: Vec<&str> = settings.targets.iter().map(|t| t.label.as_str()).collect();
        let repetitions = match (labels.first(), done.first()) {
            (Some(l), Some(first)) => done.iter().filter(|d| d.label == *l && d.step == first.step).count(),
            _ => 0,
        };
        let side = |label: &str| -> (Side<'_>, Vec<String>) {
            let mine: Vec<&Finished> = done.iter().filter(|d| d.label == label).collect();
            (
                Side {
                    name: label.to_string(),
                    docs: mine.iter().map(|d| d.doc).collect(),
                },
                mine.iter().map(|d| d.step.to_string()).collect(),
            )
        };
        let mut comparisons = Vec::new();
        if let Some(first) = labels.first() {
            let (a, sa) = side(first);
            for other in labels.iter().skip(1) {
                let (b, sb) = side(other);
                comparisons.push(comparison::build(&a, &sa, &b, &sb, &settings.metric));
            }
        }
        let not_converged = match settings.confidence.as_deref() {
            Some([level, width]) => convergence_misses(done, &settings.metric, (*level, *width)),
            _ => Vec::new(),
        };
        SuiteOutcome {
            schema: crate::doc::SCHEMA.into(),
            suite: settings,
            run,
            tests: done.len(),
            repetitions,
            comparisons,
            not_converged,
        }
    }
}

/// Every compared figure per target and step whose `conf` = (level,
/// width) interval is not yet reached, one line each (netperf `-I`).
pub fn convergence_misses(done: &[Finished], metric: &str, conf: (f64, f64)) -> Vec<String> {
    let mut series: Vec<(String, Vec<f64>)> = Vec::new();
    for d in done {
        for f in figures(d.doc) {
            if f.compared && (f.stat == metric || f.stat == "value") {
                let key = format!("{} {} {} {} {}", d.label, d.step, f.series, f.stat, f.row_label);
                match series.iter_mut().find(|s| s.0 == key) {
                    Some(s) => s.1.push(f.value),
                    None => series.push((key, vec![f.value])),
                }
            }
        }
    }
    series
        .iter()
        .filter_map(|(k, v)| {
            let c = stackmeter_compare::converged(v, conf.0, conf.1);
            (!c.reached).then(|| format!("{k}: +/-{:.1}% after {} repetitions", c.half_width * 100.0, c.n))
        })
        .collect()
}
