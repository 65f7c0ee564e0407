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
use stackmeter_statistics::fdr::Correction;
use stackmeter_statistics::twoway;
use stackmeter_statistics::{compare, median, Direction, RowStats, Verdict, ALPHA};

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
    /// Whether nodes are judged on this figure: medians, rates and
    /// losses, not tails. A p99 of a hundred samples rests on one or two
    /// of them, which a node's CPU neighbours move as much as its link;
    /// tails still show in the matrices and among the worst pairs.
    pub fn attributable(&self) -> bool {
        !matches!(self.stat.as_str(), "p90" | "p99" | "p99.9" | "max")
    }

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
    #[serde(rename = "lower_is_better", with = "stackmeter_statistics::as_lower_is_better")]
    #[schemars(with = "bool")]
    pub direction: Direction,
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
    /// The nodes whose pairs stand out together, as a client or as a
    /// target (a two-way fit of each matrix), worst first.
    #[serde(default)]
    pub suspects: Vec<NodeEffect>,
}

/// Which side of its pairs a node's effect is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The node's pairs in which it is the client (it opens the session:
    /// in rr it sends the requests and receives the responses).
    Client,
    /// The node's pairs in which it is the target (in rr it receives the
    /// requests and sends the responses).
    Target,
}

/// A node whose pairs moved (or stand out) together.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct NodeEffect {
    /// The node.
    pub node: String,
    /// As a client or as a target.
    pub role: Role,
    /// The figure.
    pub figure: String,
    /// How many times worse its pairs are than the others', the other
    /// role's effects removed (a median polish of the matrix): 2.0 is
    /// twice the time, or half the rate.
    pub factor: f64,
    /// Its pairs in the matrix.
    pub pairs: usize,
    /// Mann-Whitney p-value of its pairs against every other pair.
    pub p_value: f64,
    /// The same adjusted across every node, role and figure judged
    /// (Benjamini-Hochberg).
    pub q_value: f64,
}

/// Node effects of one matrix: `cells` (client, target, value on a log
/// scale where larger is worse) fitted by median polish; one candidate
/// per node and role, with its p-value ([`twoway::effects`]).
fn node_effects(figure: &str, nodes: &[String], cells: &[(String, String, f64)]) -> Vec<NodeEffect> {
    let clients: Vec<&String> = nodes.iter().filter(|n| cells.iter().any(|c| &c.0 == *n)).collect();
    let targets: Vec<&String> = nodes.iter().filter(|n| cells.iter().any(|c| &c.1 == *n)).collect();
    let grid: Vec<Vec<Option<f64>>> = clients
        .iter()
        .map(|cl| {
            targets
                .iter()
                .map(|t| cells.iter().find(|c| &c.0 == *cl && &c.1 == *t).map(|c| c.2))
                .collect()
        })
        .collect();
    twoway::effects(&grid)
        .into_iter()
        .map(|e| {
            let (role, name) = match e.side {
                twoway::Side::Row => (Role::Client, clients[e.index]),
                twoway::Side::Col => (Role::Target, targets[e.index]),
            };
            NodeEffect {
                node: name.clone(),
                role,
                figure: figure.to_string(),
                factor: e.factor,
                pairs: e.cells,
                p_value: e.p_value,
                q_value: f64::NAN,
            }
        })
        .collect()
}

/// Of every candidate, those that stand out ([`twoway::standing_out`]:
/// adjusted p-value below [`ALPHA`], pairs worse by at least `factor`,
/// an outlier among the nodes of the same figure and role), worst first:
/// a fault is an outlier among the nodes, not only a significant effect.
fn significant(all: Vec<NodeEffect>, factor: f64) -> Vec<NodeEffect> {
    let mut groups: Vec<(&str, Role)> = Vec::new();
    let candidates: Vec<twoway::Candidate> = all
        .iter()
        .map(|e| {
            let g = (e.figure.as_str(), e.role);
            let group = groups.iter().position(|x| *x == g).unwrap_or_else(|| {
                groups.push(g);
                groups.len() - 1
            });
            twoway::Candidate {
                group,
                factor: e.factor,
                p_value: e.p_value,
            }
        })
        .collect();
    twoway::standing_out(&candidates, ALPHA, factor)
        .into_iter()
        .map(|(i, q)| NodeEffect {
            q_value: q,
            ..all[i].clone()
        })
        .collect()
}

/// A value on the log scale where larger is worse.
fn worse_log(value: f64, direction: Direction, unit: &str) -> f64 {
    let floor = if unit == "%" { 0.1 } else { 1e-12 };
    let v = (value.max(0.0) + floor).ln();
    match direction {
        Direction::LowerIsBetter => v,
        Direction::HigherIsBetter => -v,
    }
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

fn badness(value: f64, median: f64, direction: Direction, unit: &str) -> f64 {
    // Losses are often 0: a small floor keeps the ratio finite.
    let floor = if unit == "%" { 0.1 } else { 1e-12 };
    let (v, m) = (value.max(0.0) + floor, median.max(0.0) + floor);
    match direction {
        Direction::LowerIsBetter => v / m,
        Direction::HigherIsBetter => m / v,
    }
}

/// Per figure key, per pair: (unit, which way is better, values by repetition).
type Collected = Vec<(FigureKey, String, Direction, Vec<((String, String), Vec<f64>)>)>;

/// Every chosen figure of `tests`, per pair, in test order. With
/// `by_round`, each value is taken relative to its round: divided by the
/// median over the pairs of the same figure and repetition (a round of
/// every pair: `fleet run --order rounds`), times the median of those
/// medians, so load that lands on a whole round moves no pair; a round of
/// fewer than three pairs, or a figure with a value of 0 or less, is left
/// as measured.
fn collect(tests: &[PairTest], by_round: bool) -> Collected {
    let mut out: Collected = Vec::new();
    // Where each value went (figure, pair, index) and its round.
    let mut placed: Vec<(usize, usize, usize, usize)> = Vec::new();
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
                    out.push((key, f.unit.clone(), f.direction, Vec::new()));
                    out.len() - 1
                }
            };
            let pair = (t.client.clone(), t.target.clone());
            let cells = &mut out[i].3;
            let c = match cells.iter().position(|c| c.0 == pair) {
                Some(c) => c,
                None => {
                    cells.push((pair, Vec::new()));
                    cells.len() - 1
                }
            };
            cells[c].1.push(f.value);
            placed.push((i, c, cells[c].1.len() - 1, t.repetition));
        }
    }
    if by_round {
        for (i, entry) in out.iter_mut().enumerate() {
            let mine: Vec<&(usize, usize, usize, usize)> = placed.iter().filter(|p| p.0 == i).collect();
            if mine.iter().any(|&&(_, c, k, _)| entry.3[c].1[k] <= 0.0) {
                continue;
            }
            let mut rounds: Vec<usize> = mine.iter().map(|p| p.3).collect();
            rounds.sort_unstable();
            rounds.dedup();
            let level = |r: usize| -> Option<f64> {
                let logs: Vec<f64> = mine
                    .iter()
                    .filter(|p| p.3 == r)
                    .map(|&&(_, c, k, _)| entry.3[c].1[k].ln())
                    .collect();
                (logs.len() >= 3).then(|| median(&logs)).flatten()
            };
            let levels: Vec<(usize, f64)> = rounds.iter().filter_map(|&r| level(r).map(|l| (r, l))).collect();
            let Some(overall) = median(&levels.iter().map(|l| l.1).collect::<Vec<_>>()) else {
                continue;
            };
            for &&(_, c, k, r) in &mine {
                if let Some(&(_, l)) = levels.iter().find(|l| l.0 == r) {
                    let v = &mut entry.3[c].1[k];
                    *v = (v.ln() - l + overall).exp();
                }
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
        for (key, unit, direction, cells) in collect(tests, false) {
            let medians: Vec<f64> = cells.iter().map(|(_, v)| median(v).unwrap_or(f64::NAN)).collect();
            let m = median(&medians).unwrap_or(f64::NAN);
            matrices.push(Matrix {
                cells: cells
                    .into_iter()
                    .zip(&medians)
                    .map(|(((client, target), values), &value)| Cell {
                        client,
                        target,
                        value,
                        values,
                        badness: badness(value, m, direction, &unit),
                    })
                    .collect(),
                key,
                unit,
                direction,
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
        let candidates = matrices
            .iter()
            .filter(|m| m.key.attributable())
            .flat_map(|m| {
                let cells: Vec<(String, String, f64)> = m
                    .cells
                    .iter()
                    .map(|c| {
                        (
                            c.client.clone(),
                            c.target.clone(),
                            worse_log(c.value, m.direction, &m.unit),
                        )
                    })
                    .collect();
                node_effects(&m.key.title(), &nodes, &cells)
            })
            .collect();
        let suspects = significant(candidates, WORST_FROM);
        FleetReport {
            run: run.to_string(),
            nodes,
            tests: tests.len(),
            incomplete: tests.iter().filter(|t| !t.doc.complete).count(),
            matrices,
            worst,
            suspects,
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
    /// The statistics of B against A (`compare`'s), its verdict after the
    /// correction across every pair and figure.
    pub stats: RowStats,
    /// The p-value adjusted across every pair and figure judged
    /// (Benjamini-Hochberg; none without a verdict).
    #[serde(default)]
    pub q_value: Option<f64>,
    /// B/A of the pair relative to the change every pair of the figure
    /// shared (the geometric mean of its repetitions' ratio, divided by the
    /// median pair's): what its verdict and the tolerance judge. None with
    /// too few repetitions.
    #[serde(default)]
    pub relative: Option<f64>,
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
    /// How the verdicts were corrected for being judged together.
    #[serde(default)]
    pub correction: Option<Correction>,
    /// The nodes whose pairs got worse together, as a client or as a
    /// target (a two-way fit of each figure's matrix of changes), worst
    /// first: where to look.
    #[serde(default)]
    pub nodes: Vec<NodeEffect>,
}

impl FleetComparison {
    /// Every pair and figure of `b` against `a`.
    pub fn build(a: &str, a_tests: &[PairTest], b: &str, b_tests: &[PairTest], tolerance_pct: f64) -> FleetComparison {
        // Each round a block: a pair against the other pairs of its round.
        let ca = collect(a_tests, true);
        let cb = collect(b_tests, true);
        let mut changes = Vec::new();
        let mut too_few = 0;
        for (key, unit, dir, cells) in &ca {
            let Some((_, _, _, other)) = cb.iter().find(|e| &e.0 == key) else {
                continue;
            };
            let dir = *dir;
            let both: Vec<_> = cells
                .iter()
                .filter_map(|(pair, va)| other.iter().find(|c| &c.0 == pair).map(|(_, vb)| (pair, va, vb)))
                .collect();
            // Every pair of this figure tested with the variance they share.
            let groups: Vec<(&[f64], &[f64])> = both.iter().map(|(_, a, b)| (&a[..], &b[..])).collect();
            // Centred on the shift every pair shares: load on the whole
            // machine (or fleet) in one run is no pair's change.
            let moderated = stackmeter_statistics::moderated::moderated_t(&groups, true);
            for ((pair, va, vb), m) in both.into_iter().zip(moderated) {
                let Some(mut stats) = compare(va, vb, dir) else {
                    continue;
                };
                let relative = m.map(|m| m.shift.exp());
                stats.verdict = match m {
                    None => Verdict::TooFewRepetitions,
                    Some(m) => {
                        stats.p_value = m.p;
                        // The shift of the log means and the ratio of medians
                        // shown beside it must agree on the way, or no verdict.
                        let b_higher = m.shift > 0.0;
                        let agree = b_higher == (stats.ratio > 1.0);
                        match (m.p < ALPHA && agree, b_higher == (dir == Direction::LowerIsBetter)) {
                            (false, _) => Verdict::NoSignificantDifference,
                            (true, true) => Verdict::Slower,
                            (true, false) => Verdict::Faster,
                        }
                    }
                };
                if stats.verdict == Verdict::TooFewRepetitions {
                    too_few += 1;
                }
                changes.push(PairChange {
                    client: pair.0.clone(),
                    target: pair.1.clone(),
                    key: key.clone(),
                    unit: unit.clone(),
                    stats,
                    q_value: None,
                    relative,
                    flagged: false,
                    improved: false,
                });
            }
        }
        let mut correction =
            crate::comparison::correct_rows(changes.iter_mut().map(|c| (&mut c.stats, &mut c.q_value)));
        // The moderated t has no smallest p-value: a large change passes
        // alone, whatever the number of pairs.
        if let Some(c) = correction.as_mut() {
            c.method = format!(
                "each repetition a block (a pair's values relative to the median pair of the same round), moderated t (variance pooled across each figure's pairs, Smyth 2004), then {}",
                c.method
            );
            c.alone_cannot_pass = false;
        }
        for c in &mut changes {
            // Past the tolerance relative to the change all pairs shared.
            let past = c
                .relative
                .is_some_and(|r| (r.max(1.0 / r) - 1.0) * 100.0 > tolerance_pct);
            c.flagged = c.stats.verdict == Verdict::Slower && past;
            c.improved = c.stats.verdict == Verdict::Faster && past;
        }
        let nodes = changed_nodes(&changes, 1.0 + tolerance_pct / 100.0);
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
            correction,
            nodes,
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

/// The nodes whose pairs got worse together: each figure's matrix of
/// changes (the log of B/A, larger worse) fitted one effect per node and
/// role, the candidates corrected together, those at least `factor` worse.
fn changed_nodes(changes: &[PairChange], factor: f64) -> Vec<NodeEffect> {
    let mut nodes: Vec<String> = Vec::new();
    for c in changes {
        for n in [&c.client, &c.target] {
            if !nodes.contains(n) {
                nodes.push(n.clone());
            }
        }
    }
    nodes.sort_by_key(|n| natural(n));
    let mut keys: Vec<&FigureKey> = Vec::new();
    for c in changes {
        if !keys.contains(&&c.key) {
            keys.push(&c.key);
        }
    }
    let candidates = keys
        .iter()
        .filter(|k| k.attributable())
        .flat_map(|k| {
            let cells: Vec<(String, String, f64)> = changes
                .iter()
                .filter(|c| &c.key == *k && c.stats.ratio > 0.0 && c.stats.ratio.is_finite())
                .map(|c| {
                    let worse = match c.stats.direction {
                        Direction::LowerIsBetter => c.stats.ratio.ln(),
                        Direction::HigherIsBetter => -c.stats.ratio.ln(),
                    };
                    (c.client.clone(), c.target.clone(), worse)
                })
                .collect();
            node_effects(&k.title(), &nodes, &cells)
        })
        .collect();
    significant(candidates, factor)
}
