//! A suite's outcome as one typed value: the settings it ran with (kept
//! with the run in the store, so `show` renders a stored suite again), and
//! either the comparison of every target against the first (a fixed number
//! of repetitions) or B's decision against A (run until decided). Built
//! from finished documents by pure code; the engine runs the tests, this
//! only judges them.

use crate::comparison::{self, Comparison, Side};
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
    /// A target on this host that the suite did not start: the process
    /// listening on its address, and where it may run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<TargetProcess>,
}

/// The process behind a local target, as /proc showed it when the suite
/// began.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TargetProcess {
    /// Its process id.
    pub pid: u32,
    /// Its command name.
    pub command: String,
    /// The CPUs its threads may run on.
    pub cpus: Vec<usize>,
    /// The CPUs its threads ran on last.
    pub last_cpus: Vec<usize>,
}

impl TargetProcess {
    /// "pid 4242 stackmeter, CPUs 0-1".
    pub fn describe(&self) -> String {
        format!("pid {} {}, CPUs {}", self.pid, self.command, cpu_list(&self.cpus))
    }
}

/// CPUs as the kernel lists them: `0-3,6`.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(match j > i {
            true => format!("{}-{}", cpus[i], cpus[j]),
            false => cpus[i].to_string(),
        });
        i = j + 1;
    }
    out.join(",")
}

/// The warning a suite's local targets call for: two targets' processes
/// that may run on one CPU, or one that may run where the client does
/// (`client`: the CPUs the measuring thread may run on, of `online`). A
/// difference between them may then be where the scheduler put them.
pub fn shared_cpu_warning(targets: &[SuiteTarget], client: &[usize], online: usize) -> Option<String> {
    let local: Vec<(&SuiteTarget, &TargetProcess)> = targets
        .iter()
        .filter_map(|t| t.process.as_ref().map(|p| (t, p)))
        .collect();
    let mut shared = Vec::new();
    for (i, (a, pa)) in local.iter().enumerate() {
        for (b, pb) in &local[i + 1..] {
            if pa.pid != pb.pid && pa.cpus.iter().any(|c| pb.cpus.contains(c)) {
                shared.push(format!("{} and {} may share a CPU", a.label, b.label));
            }
        }
        let both: Vec<usize> = pa.cpus.iter().copied().filter(|c| client.contains(c)).collect();
        match (both.is_empty(), client.len() >= online) {
            (true, _) => {}
            (false, true) => shared.push(format!(
                "{} may run where the client does (the client is not pinned)",
                a.label
            )),
            (false, false) => shared.push(format!(
                "{} may run on the client's CPUs ({})",
                a.label,
                cpu_list(&both)
            )),
        }
    }
    if shared.is_empty() {
        return None;
    }
    Some(format!(
        "placement: {}: a difference may be where the scheduler put them, not the stacks; pin each responder to a CPU of its own (taskset -c, serve --affinity) and the client to another (--affinity), or give no --target and let the suite start and pin its own",
        shared.join("; ")
    ))
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
    /// The netperf-style goal of runs before 0.3 (`--confidence`, removed:
    /// docs/methods.md), kept so their settings still read.
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub confidence: Option<Vec<f64>>,
    /// Latency figure compared per repetition ("mean", "p50", "p99").
    pub metric: String,
    /// Something the reader must know (e.g. which responders were compared).
    pub note: Option<String>,
    /// Run until decided (paired blocks, a confidence sequence per row)
    /// instead of a fixed number of repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decide: Option<crate::decision::DecideSettings>,
    /// Why a decided run stopped (kept with the run, so `show` says it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
}

/// One finished test of a suite.
pub struct Finished<'a> {
    /// Target label.
    pub label: &'a str,
    /// Plan step.
    pub step: &'a str,
    /// Repetition (a decided run's pair, from 1).
    pub repetition: usize,
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
    /// Each target against the first (fixed repetitions).
    pub comparisons: Vec<Comparison>,
    /// B against A, run until decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<crate::decision::Decision>,
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
        let mut decision = None;
        if let (Some(d), [a, b]) = (&settings.decide, &labels[..]) {
            let stop = settings.stop.as_deref().unwrap_or("stopped");
            let blocks: Vec<_> = done.iter().map(|f| (f.label, f.step, f.repetition, f.doc)).collect();
            decision = Some(crate::decision::Decision::replay(
                a,
                b,
                d.clone(),
                &settings.metric,
                &blocks,
                stop,
            ));
        } else if let Some(first) = labels.first() {
            let (a, sa) = side(first);
            for other in labels.iter().skip(1) {
                let (b, sb) = side(other);
                comparisons.push(comparison::build(&a, &sa, &b, &sb, &settings.metric));
            }
        }
        SuiteOutcome {
            schema: crate::doc::SCHEMA.into(),
            suite: settings,
            run,
            tests: done.len(),
            repetitions,
            comparisons,
            decision,
        }
    }
}
