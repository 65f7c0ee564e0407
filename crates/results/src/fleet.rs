//! A fleet run's results as matrices, and two fleet runs compared pair by
//! pair: what `stackmeter fleet report` and `fleet compare` print.
//!
//! Every test of a fleet run is stored as a document labelled
//! `CLIENT->TARGET`, with its step and repetition. A [`FleetReport`] sets
//! one figure of one step side by side for every pair: a matrix of
//! clients by targets (the median over repetitions), drawn as a heatmap
//! in HTML, with the pairs furthest from their matrix's median listed
//! first, so the slow pair is found at a glance. A [`FleetComparison`]
//! judges every pair and figure of two runs with the same statistics as
//! `compare` (docs/suite.md): a pair is flagged when it got significantly
//! worse by more than the tolerance (a kernel or NIC change across the
//! fleet: which pairs got slower); significant improvements past the
//! tolerance are listed apart.

use crate::doc::{figures, Document};
use crate::figures::Figure;
use crate::TestKind;
use serde::Serialize;
use stackmeter_compare::{compare, Direction, RowStats, Verdict};

/// One stored test of a fleet run.
#[derive(Clone, Debug)]
pub struct PairTest {
    /// The node that ran the client.
    pub client: String,
    /// The node measured.
    pub target: String,
    /// The step of the fleet's tests.
    pub step: String,
    /// Repetition, from 0.
    pub repetition: usize,
    /// The result.
    pub doc: Document,
}

impl PairTest {
    /// Splits a fleet test's label `CLIENT->TARGET`.
    pub fn pair(label: &str) -> Option<(&str, &str)> {
        label.split_once("->").filter(|(a, b)| !a.is_empty() && !b.is_empty())
    }
}

/// Which figure a matrix holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FigureKey {
    /// The step.
    pub step: String,
    /// Its test.
    pub test: TestKind,
    /// The row ("1 B:1 KiB", "64 B", "up 128 KiB").
    pub row: String,
    /// The series ("rtt", "total", "loss").
    pub series: String,
    /// The statistic ("p50", "p99", "value").
    pub stat: String,
}

impl FigureKey {
    /// "latency (rr) 1 B:1 KiB: rtt p99".
    pub fn title(&self) -> String {
        let stat = if self.stat == "value" {
            String::new()
        } else {
            format!(" {}", self.stat)
        };
        format!("{} ({}) {}: {}{stat}", self.step, self.test, self.row, self.series)
    }
}

/// One figure for every pair.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Matrix {
    /// Which figure.
    pub key: FigureKey,
    /// Its unit.
    pub unit: String,
    /// True for times and losses.
    pub lower_is_better: bool,
    /// Median over the matrix's cells.
    pub median: f64,
    /// Every measured pair.
    pub cells: Vec<Cell>,
}

/// One pair's figure.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Cell {
    /// Client node.
    pub client: String,
    /// Target node.
    pub target: String,
    /// Median over the repetitions.
    pub value: f64,
    /// Every repetition's value, in order.
    pub values: Vec<f64>,
    /// How far from the matrix's median, the bad way: value / median for
    /// times and losses, median / value for rates (1: typical).
    pub badness: f64,
}

/// A pair among the worst of its matrix.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Worst {
    /// Client node.
    pub client: String,
    /// Target node.
    pub target: String,
    /// The figure.
    pub figure: String,
    /// Its unit.
    pub unit: String,
    /// The pair's value.
    pub value: f64,
    /// The matrix's median.
    pub median: f64,
    /// How far from it, the bad way (see [`Cell::badness`]).
    pub badness: f64,
}

/// A fleet run's report.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct FleetReport {
    /// The fleet run's name.
    pub run: String,
    /// Every node seen, clients and targets, by name (numbers in order).
    pub nodes: Vec<String>,
    /// Tests stored.
    pub tests: usize,
    /// Tests that stopped early (their rows count as far as they went).
    pub incomplete: usize,
    /// One matrix per figure.
    pub matrices: Vec<Matrix>,
    /// The pairs furthest from their matrix's median, worst first.
    pub worst: Vec<Worst>,
}

/// How many worst pairs a report lists.
pub const WORST: usize = 12;
/// A pair is listed among the worst only this far from the median.
pub const WORST_FROM: f64 = 1.5;

/// The figures a fleet matrix is made of: the p50 and p99 of every
/// latency series `compare` looks at, every compared rate, and losses.
fn chosen(all: &[Figure]) -> Vec<&Figure> {
    let compared_series: Vec<&str> = all.iter().filter(|f| f.compared).map(|f| f.series.as_str()).collect();
    all.iter()
        .filter(|f| {
            let latency = f.unit == "us" && matches!(f.stat.as_str(), "p50" | "p99");
            let rate = f.stat == "value" && f.compared;
            let loss = f.unit == "%";
            (latency && compared_series.contains(&f.series.as_str())) || rate || loss
        })
        .collect()
}

/// A name as text and numbers, so "n2" sorts before "n10".
pub fn natural(s: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut digits = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            if !digits.is_empty() {
                out.push((std::mem::take(&mut text), digits.parse().unwrap_or(u64::MAX)));
                digits.clear();
            }
            text.push(c);
        }
    }
    out.push((text, digits.parse().unwrap_or(0)));
    out
}

/// Median of `v` (not empty).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    match n % 2 {
        1 => s[n / 2],
        _ => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

fn badness(value: f64, median: f64, lower_is_better: bool, unit: &str) -> f64 {
    // Losses are often 0: a small floor keeps the ratio finite.
    let floor = if unit == "%" { 0.1 } else { 1e-12 };
    let (v, m) = (value.max(0.0) + floor, median.max(0.0) + floor);
    if lower_is_better {
        v / m
    } else {
        m / v
    }
}

/// Per figure key, per pair: (unit, lower is better, values by repetition).
type Collected = Vec<(FigureKey, String, bool, Vec<((String, String), Vec<f64>)>)>;

fn collect(tests: &[PairTest]) -> Collected {
    let mut out: Collected = Vec::new();
    for t in tests {
        let figs = figures(&t.doc);
        for f in chosen(&figs) {
            let key = FigureKey {
                step: t.step.clone(),
                test: t.doc.body.kind(),
                row: f.row_label.clone(),
                series: f.series.clone(),
                stat: f.stat.clone(),
            };
            let i = match out.iter().position(|e| e.0 == key) {
                Some(i) => i,
                None => {
                    out.push((key, f.unit.clone(), f.lower_is_better, Vec::new()));
                    out.len() - 1
                }
            };
            let pair = (t.client.clone(), t.target.clone());
            let cells = &mut out[i].3;
            match cells.iter_mut().find(|c| c.0 == pair) {
                Some(c) => c.1.push(f.value),
                None => cells.push((pair, vec![f.value])),
            }
        }
    }
    out
}

impl FleetReport {
    /// The report of fleet run `run` from its tests.
    pub fn build(run: &str, tests: &[PairTest]) -> FleetReport {
        let mut nodes: Vec<String> = Vec::new();
        for t in tests {
            for n in [&t.client, &t.target] {
                if !nodes.contains(n) {
                    nodes.push(n.clone());
                }
            }
        }
        nodes.sort_by_key(|n| natural(n));
        let mut matrices = Vec::new();
        for (key, unit, lower, cells) in collect(tests) {
            let medians: Vec<f64> = cells.iter().map(|(_, v)| median(v)).collect();
            let m = median(&medians);
            matrices.push(Matrix {
                cells: cells
                    .into_iter()
                    .zip(&medians)
                    .map(|(((client, target), values), &value)| Cell {
                        client,
                        target,
                        value,
                        values,
                        badness: badness(value, m, lower, &unit),
                    })
                    .collect(),
                key,
                unit,
                lower_is_better: lower,
                median: m,
            });
        }
        let mut worst: Vec<Worst> = matrices
            .iter()
            .flat_map(|mx| {
                mx.cells.iter().filter(|c| c.badness >= WORST_FROM).map(|c| Worst {
                    client: c.client.clone(),
                    target: c.target.clone(),
                    figure: mx.key.title(),
                    unit: mx.unit.clone(),
                    value: c.value,
                    median: mx.median,
                    badness: c.badness,
                })
            })
            .collect();
        worst.sort_by(|a, b| b.badness.total_cmp(&a.badness));
        worst.truncate(WORST);
        FleetReport {
            run: run.to_string(),
            nodes,
            tests: tests.len(),
            incomplete: tests.iter().filter(|t| !t.doc.complete).count(),
            matrices,
            worst,
        }
    }
}

/// One pair's figure in two fleet runs.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct PairChange {
    /// Client node.
    pub client: String,
    /// Target node.
    pub target: String,
    /// The figure.
    pub key: FigureKey,
    /// Its unit.
    pub unit: String,
    /// The statistics of B against A (`compare`'s).
    pub stats: RowStats,
    /// Significantly worse, past the tolerance.
    pub flagged: bool,
    /// Significantly better, past the tolerance.
    pub improved: bool,
}

/// Two fleet runs, pair by pair.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct FleetComparison {
    /// The baseline run.
    pub a: String,
    /// The candidate run.
    pub b: String,
    /// A pair is flagged only when its change is larger, percent.
    pub tolerance_pct: f64,
    /// Pairs and figures both runs have.
    pub compared: usize,
    /// Of them, too few repetitions on a side for a verdict.
    pub too_few: usize,
    /// Every flagged change (worse), worst first.
    pub flagged: Vec<PairChange>,
    /// Every change better past the tolerance, best first.
    #[serde(default)]
    pub improved: Vec<PairChange>,
    /// Every change judged (flagged or not), in figure and pair order.
    pub changes: Vec<PairChange>,
}

impl FleetComparison {
    /// Every pair and figure of `b` against `a`.
    pub fn build(a: &str, a_tests: &[PairTest], b: &str, b_tests: &[PairTest], tolerance_pct: f64) -> FleetComparison {
        let ca = collect(a_tests);
        let cb = collect(b_tests);
        let mut changes = Vec::new();
        let mut too_few = 0;
        for (key, unit, lower, cells) in &ca {
            let Some((_, _, _, other)) = cb.iter().find(|e| &e.0 == key) else {
                continue;
            };
            for (pair, va) in cells {
                let Some((_, vb)) = other.iter().find(|c| &c.0 == pair) else {
                    continue;
                };
                let dir = if *lower {
                    Direction::LowerIsBetter
                } else {
                    Direction::HigherIsBetter
                };
                let Some(stats) = compare(va, vb, dir) else { continue };
                if stats.verdict == Verdict::TooFewRepetitions {
                    too_few += 1;
                }
                let past = stats.percent.abs() > tolerance_pct;
                changes.push(PairChange {
                    client: pair.0.clone(),
                    target: pair.1.clone(),
                    key: key.clone(),
                    unit: unit.clone(),
                    stats,
                    flagged: stats.verdict == Verdict::Slower && past,
                    improved: stats.verdict == Verdict::Faster && past,
                });
            }
        }
        let mut flagged: Vec<PairChange> = changes.iter().filter(|c| c.flagged).cloned().collect();
        flagged.sort_by(|x, y| x.stats.percent.total_cmp(&y.stats.percent));
        let mut improved: Vec<PairChange> = changes.iter().filter(|c| c.improved).cloned().collect();
        improved.sort_by(|x, y| y.stats.percent.total_cmp(&x.stats.percent));
        FleetComparison {
            a: a.to_string(),
            b: b.to_string(),
            tolerance_pct,
            compared: changes.len(),
            too_few,
            flagged,
            improved,
            changes,
        }
    }

    /// The pairs (client, target) with a flagged change, each once.
    pub fn flagged_pairs(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for c in &self.flagged {
            let p = (c.client.clone(), c.target.clone());
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }
}
