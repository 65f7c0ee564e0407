//! A fleet report (pair matrices as heatmaps, worst pairs first) and a fleet
//! comparison (every pair's verdict).
use stackmeter_results::fleet::{
    natural, Cell, FigureKey, FleetComparison, FleetReport, Matrix, NodeEffect, PairChange, Role, WORST_FROM,
};

use crate::view::{Block, Col, Heatmap, Table, View};
use stackmeter_results::num;
use stackmeter_statistics::Direction;

/// A matrix as a heatmap: clients down, targets across; the rows and
/// columns of the nodes in `marked` (for this figure) outlined.
fn heatmap(
    m: &Matrix,
    nodes: &[String],
    title: String,
    values: impl Fn(&Cell) -> f64,
    marked: &[NodeEffect],
) -> Heatmap {
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
    let figure = m.key.title();
    let mark = |names: &[String], role: Role| -> Vec<usize> {
        names
            .iter()
            .enumerate()
            .filter(|(_, n)| {
                marked
                    .iter()
                    .any(|e| e.role == role && &e.node == *n && e.figure == figure)
            })
            .map(|(i, _)| i)
            .collect()
    };
    Heatmap {
        title,
        marked_rows: mark(&clients, Role::Client),
        marked_cols: mark(&targets, Role::Target),
        rows: clients,
        cols: targets,
        cells,
        unit: m.unit.clone(),
        direction: m.direction,
        center: m.median,
    }
}

/// The nodes whose pairs stand out (or moved) together, as a table.
fn nodes_table(effects: &[NodeEffect]) -> Table {
    Table {
        cols: vec![
            Col::text("node", 0),
            Col::text("as", 0),
            Col::text("figure", 0),
            Col::num("x worse", 0),
            Col::num("pairs", 0),
            Col::num("p-value", 0),
            Col::num("q", 0),
        ],
        rows: effects
            .iter()
            .map(|e| {
                vec![
                    e.node.clone(),
                    match e.role {
                        Role::Client => "client".into(),
                        Role::Target => "target".into(),
                    },
                    e.figure.clone(),
                    format!("{:.2}", e.factor),
                    e.pairs.to_string(),
                    format!("{:.1e}", e.p_value),
                    format!("{:.1e}", e.q_value),
                ]
            })
            .collect(),
        ..Table::default()
    }
}

impl crate::format::Render for FleetReport {
    fn view(&self, _style: &crate::format::Style) -> View {
        let mut v = View::new();
        v.push(Block::Title(self.title()));
        v.line(format!(
            "{} test(s) between {} node(s) ({} incomplete); each cell is the median over the pair's repetitions; rows are clients, columns targets",
            self.tests,
            self.nodes.len(),
            self.incomplete
        ));
        v.push(Block::Heading("Suspect nodes".into()));
        match self.suspects.is_empty() {
            true => v.line(format!(
                "no node's pairs stand out together by {WORST_FROM}x or more (a two-way fit of each matrix: one effect per node as a client, one as a target; Mann-Whitney of its pairs against the rest, Benjamini-Hochberg across nodes)"
            )),
            false => v.push(Block::Table(nodes_table(&self.suspects))),
        };
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
            let better = m.direction.word();
            let title = format!("{} ({}, {better} is better)", m.key.title(), m.unit);
            v.push(Block::Heatmap(heatmap(
                m,
                &self.nodes,
                title,
                |c| c.value,
                &self.suspects,
            )));
        }
        v
    }

    fn title(&self) -> String {
        format!("stackmeter fleet report: {}", self.run)
    }
}

impl crate::format::Render for FleetComparison {
    fn view(&self, _style: &crate::format::Style) -> View {
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
        v.push(Block::Heading("Nodes that got worse".into()));
        match self.nodes.is_empty() {
            true => v.line(format!(
                "no node's pairs got worse together by more than {}% (a two-way fit of each figure's changes: one effect per node as a client, one as a target)",
                self.tolerance_pct
            )),
            false => v.push(Block::Table(nodes_table(&self.nodes))),
        };
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
                direction: mine.first().map_or(Direction::LowerIsBetter, |c| c.stats.direction),
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
                &self.nodes,
            )));
        }
        if let Some(c) = &self.correction {
            v.line(format!("Correction: {}.", c.describe()));
        }
        v.line(format!(
            "Method: per pair and figure, the logs of A's and B's repetitions compared by a moderated t test (each pair's variance pooled with the variance its figure's other pairs share, Smyth 2004; at least 2 repetitions a side), each pair's change taken relative to the change all its figure's pairs shared; the ratio of medians with its bootstrap 95% interval shown; flagged when significantly worse by more than {}%, listed as better when significantly better by as much.",
            self.tolerance_pct
        ));
        v
    }

    fn title(&self) -> String {
        format!("stackmeter fleet compare: A = {} (baseline), B = {}", self.a, self.b)
    }
}
