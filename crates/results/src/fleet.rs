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
use crate::units::num;
use crate::view::{Block, Col, Heatmap, Table, View};
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
fn natural(s: &str) -> Vec<(String, u64)> {
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

/// A matrix as a heatmap: clients down, targets across.
fn heatmap(m: &Matrix, nodes: &[String], title: String, values: impl Fn(&Cell) -> f64) -> Heatmap {
    let clients: Vec<String> = nodes
        .iter()
        .filter(|n| m.cells.iter().any(|c| &c.client == *n))
        .cloned()
        .collect();
    let targets: Vec<String> = nodes
        .iter()
        .filter(|n| m.cells.iter().any(|c| &c.target == *n))
        .cloned()
        .collect();
    let cells = clients
        .iter()
        .map(|c| {
            targets
                .iter()
                .map(|t| m.cells.iter().find(|x| &x.client == c && &x.target == t).map(&values))
                .collect()
        })
        .collect();
    Heatmap {
        title,
        rows: clients,
        cols: targets,
        cells,
        unit: m.unit.clone(),
        lower_is_better: m.lower_is_better,
        center: m.median,
    }
}

impl crate::render::Render for FleetReport {
    fn view(&self, _style: &crate::render::Style) -> View {
        let mut v = View::new();
        v.push(Block::Title(self.title()));
        v.line(format!(
            "{} test(s) between {} node(s) ({} incomplete); each cell is the median over the pair's repetitions; rows are clients, columns targets",
            self.tests,
            self.nodes.len(),
            self.incomplete
        ));
        v.push(Block::Heading("Worst pairs".into()));
        if self.worst.is_empty() {
            v.line(format!(
                "no pair is {WORST_FROM}x or more from its matrix's median the bad way"
            ));
        } else {
            v.push(Block::Table(Table {
                cols: vec![
                    Col::text("client -> target", 0),
                    Col::text("figure", 0),
                    Col::num("value", 0),
                    Col::num("median of pairs", 0),
                    Col::num("x worse", 0),
                ],
                rows: self
                    .worst
                    .iter()
                    .map(|w| {
                        vec![
                            format!("{} -> {}", w.client, w.target),
                            w.figure.clone(),
                            format!("{} {}", num(w.value), w.unit),
                            format!("{} {}", num(w.median), w.unit),
                            format!("{:.1}", w.badness),
                        ]
                    })
                    .collect(),
                ..Table::default()
            }));
        }
        for m in &self.matrices {
            let better = if m.lower_is_better { "lower" } else { "higher" };
            let title = format!("{} ({}, {better} is better)", m.key.title(), m.unit);
            v.push(Block::Heatmap(heatmap(m, &self.nodes, title, |c| c.value)));
        }
        v
    }

    fn title(&self) -> String {
        format!("stackmeter fleet report: {}", self.run)
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

impl crate::render::Render for FleetComparison {
    fn view(&self, _style: &crate::render::Style) -> View {
        let mut v = View::new();
        v.push(Block::Title(self.title()));
        let pairs = self.flagged_pairs().len();
        v.line(format!(
            "{} pair figure(s) in both runs; {} got significantly worse by more than {}% ({} pair(s)), {} better; {} with too few repetitions for a verdict",
            self.compared,
            self.flagged.len(),
            self.tolerance_pct,
            pairs,
            self.improved.len(),
            self.too_few
        ));
        for (heading, list) in [
            ("Flagged pairs (worse), worst first", &self.flagged),
            ("Better, best first", &self.improved),
        ] {
            if list.is_empty() {
                continue;
            }
            v.push(Block::Heading(heading.into()));
            v.push(Block::Table(Table {
                cols: vec![
                    Col::text("client -> target", 0),
                    Col::text("figure", 0),
                    Col::num("A", 0),
                    Col::num("B", 0),
                    Col::text("B vs A", 0),
                    Col::num("95% CI of B/A", 0),
                    Col::num("p-value", 0),
                    Col::num("reps A/B", 0),
                ],
                rows: list
                    .iter()
                    .map(|c| {
                        let s = &c.stats;
                        vec![
                            format!("{} -> {}", c.client, c.target),
                            c.key.title(),
                            format!("{} {}", num(s.median_a), c.unit),
                            format!("{} {}", num(s.median_b), c.unit),
                            if s.percent >= 0.0 {
                                format!("{:.1}% better", s.percent)
                            } else {
                                format!("{:.1}% worse", -s.percent)
                            },
                            format!("{:.3}-{:.3}", s.ratio_ci.0, s.ratio_ci.1),
                            format!("{:.3}", s.p_value),
                            format!("{}/{}", s.n_a, s.n_b),
                        ]
                    })
                    .collect(),
                ..Table::default()
            }));
        }
        // One heatmap of B/A per figure with a flagged pair.
        let mut keys: Vec<&FigureKey> = Vec::new();
        for c in &self.flagged {
            if !keys.contains(&&c.key) {
                keys.push(&c.key);
            }
        }
        for key in keys {
            let mine: Vec<&PairChange> = self.changes.iter().filter(|c| &c.key == key).collect();
            let mut nodes: Vec<String> = Vec::new();
            for c in &mine {
                for n in [&c.client, &c.target] {
                    if !nodes.contains(n) {
                        nodes.push(n.clone());
                    }
                }
            }
            nodes.sort_by_key(|n| natural(n));
            let m = Matrix {
                key: key.clone(),
                unit: "B/A".into(),
                lower_is_better: mine
                    .first()
                    .is_none_or(|c| c.stats.direction == Direction::LowerIsBetter),
                median: 1.0,
                cells: mine
                    .iter()
                    .map(|c| Cell {
                        client: c.client.clone(),
                        target: c.target.clone(),
                        value: c.stats.ratio,
                        values: Vec::new(),
                        badness: 1.0,
                    })
                    .collect(),
            };
            v.push(Block::Heatmap(heatmap(
                &m,
                &nodes,
                format!("{}: B/A per pair", key.title()),
                |c| c.value,
            )));
        }
        v.line(format!(
            "Method: per pair and figure, A's and B's repetitions compared as `compare` does (bootstrap 95% interval of the ratio of medians, Mann-Whitney U, at least {} repetitions a side); flagged when significantly worse by more than {}%, listed as better when significantly better by as much.",
            stackmeter_compare::MIN_REPETITIONS,
            self.tolerance_pct
        ));
        v
    }

    fn title(&self) -> String {
        format!("stackmeter fleet compare: A = {} (baseline), B = {}", self.a, self.b)
    }
}

#[cfg(test)]
mod tests;
