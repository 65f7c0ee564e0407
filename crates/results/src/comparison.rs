//! The comparison of two sets of results (A the baseline, B the
//! candidate) as one typed value, and its view: the latency grid's table
//! (A, B, difference, "% faster") with the statistics that make a verdict
//! defensible. Used by `compare`, by `suite` (which prints it at the end),
//! by `show` of a suite run and by `report`.

use crate::chart::{Axis, Chart, Kind, Series};
use crate::doc::figures;
use crate::doc::Document;
use crate::kind::TestKind;
use crate::units::num;
use crate::view::{Block, Col, Table, View};
use serde::Serialize;
use stackmeter_compare::{compare, geomean_interval, summarize, Direction, Overall, RowStats, Verdict};

/// How the verdicts were reached, printed under every comparison.
pub const METHOD: &str = "each repetition gives one figure per row; A and B are the medians over repetitions; \
the 95% CI of B/A is a bootstrap of the ratio of medians (2000 resamples, fixed seed); \
p is the two-sided Mann-Whitney U test (normal approximation, tie-corrected); \
a row is faster or slower only when the CI excludes 1 and p < 0.05, else \"~ no significant difference\"; \
5 or more repetitions per side are needed for a verdict; \
the overall interval of the geometric mean resamples the repetitions (bootstrap, 2000 resamples)";

/// One side of a comparison: a name and its documents (one per repetition).
pub struct Side<'a> {
    /// How the side is named in the output (a label or "run N").
    pub name: String,
    /// Its documents, any test types.
    pub docs: Vec<&'a Document>,
}

/// The comparison.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Comparison {
    /// Always `stackmeter/1`.
    pub schema: String,
    /// Baseline name.
    pub a: String,
    /// Candidate name.
    pub b: String,
    /// Latency statistic compared per repetition ("mean", "p50", "p99").
    pub metric: String,
    /// The method, in words.
    pub method: String,
    /// One section per test and figure.
    pub sections: Vec<Section>,
    /// Across every row of every section.
    pub summary: Option<Overall>,
    /// Things to know (rows only one side has, convergence not reached).
    pub notes: Vec<String>,
}

/// Rows of one figure of one test.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Section {
    /// The test.
    pub test: TestKind,
    /// Plan step, if any.
    pub step: String,
    /// "rtt", "connect", "rate", ...
    pub series: String,
    /// "mean", "p50", "p99", "value".
    pub stat: String,
    /// Unit of the values.
    pub unit: String,
    /// True for times.
    pub lower_is_better: bool,
    /// The rows.
    pub rows: Vec<Row>,
}

/// One compared row.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Row {
    /// "1 B:1 KiB", "64 B".
    pub label: String,
    /// The statistics.
    #[serde(flatten)]
    pub stats: RowStats,
    /// Every repetition's value of A, in order.
    pub values_a: Vec<f64>,
    /// Every repetition's value of B, in order.
    pub values_b: Vec<f64>,
}

type Key = (TestKind, String, String, String); // test, step, series, stat

/// (section key, unit, lower_is_better, row label) -> values, in first-seen order.
fn collect(docs: &[&Document], steps: &[String], metric: &str) -> Vec<(Key, String, bool, String, Vec<f64>)> {
    let mut out: Vec<(Key, String, bool, String, Vec<f64>)> = Vec::new();
    for (doc, step) in docs.iter().zip(steps) {
        for f in figures(doc) {
            if !f.compared || !(f.stat == metric || f.stat == "value") {
                continue;
            }
            let key = (doc.body.kind(), step.clone(), f.series.clone(), f.stat.clone());
            match out.iter_mut().find(|e| e.0 == key && e.3 == f.row_label) {
                Some(e) => e.4.push(f.value),
                None => out.push((
                    key,
                    f.unit.clone(),
                    f.lower_is_better,
                    f.row_label.clone(),
                    vec![f.value],
                )),
            }
        }
    }
    out
}

/// Compares B against the baseline A. `steps` give each document's plan
/// step ("" outside suites), in the same order as the side's documents.
pub fn build(a: &Side, a_steps: &[String], b: &Side, b_steps: &[String], metric: &str) -> Comparison {
    let ca = collect(&a.docs, a_steps, metric);
    let cb = collect(&b.docs, b_steps, metric);
    let mut sections: Vec<Section> = Vec::new();
    let mut notes = Vec::new();
    for (key, unit, lower, label, va) in &ca {
        let Some((.., vb)) = cb.iter().find(|e| &e.0 == key && &e.3 == label) else {
            notes.push(format!("{} {} {}: only in {}", key.0, key.2, label, a.name));
            continue;
        };
        let dir = if *lower {
            Direction::LowerIsBetter
        } else {
            Direction::HigherIsBetter
        };
        let Some(stats) = compare(va, vb, dir) else { continue };
        let row = Row {
            label: label.clone(),
            stats,
            values_a: va.clone(),
            values_b: vb.clone(),
        };
        match sections
            .iter_mut()
            .find(|s| (&s.test, &s.step, &s.series, &s.stat) == (&key.0, &key.1, &key.2, &key.3))
        {
            Some(s) => s.rows.push(row),
            None => sections.push(Section {
                test: key.0,
                step: key.1.clone(),
                series: key.2.clone(),
                stat: key.3.clone(),
                unit: unit.clone(),
                lower_is_better: *lower,
                rows: vec![row],
            }),
        }
    }
    for (key, _, _, label, _) in &cb {
        if !ca.iter().any(|e| &e.0 == key && &e.3 == label) {
            notes.push(format!("{} {} {}: only in {}", key.0, key.2, label, b.name));
        }
    }
    let all: Vec<RowStats> = sections.iter().flat_map(|s| s.rows.iter().map(|r| r.stats)).collect();
    let samples: Vec<(&[f64], &[f64], Direction)> = sections
        .iter()
        .flat_map(|s| s.rows.iter())
        .map(|r| (&r.values_a[..], &r.values_b[..], r.stats.direction))
        .collect();
    let mut summary = summarize(&all);
    if let Some(s) = summary.as_mut() {
        s.geomean_ci = geomean_interval(&samples);
    }
    Comparison {
        schema: crate::doc::SCHEMA.into(),
        a: a.name.clone(),
        b: b.name.clone(),
        metric: metric.to_string(),
        method: METHOD.to_string(),
        summary,
        sections,
        notes,
    }
}

impl Comparison {
    /// The rows where B is significantly worse than A by more than
    /// `tolerance` percent (a regression gate), one line each; with
    /// `any_change`, significantly better rows count too. A comparison in
    /// which no row could be judged (too few repetitions, nothing in
    /// common) fails too: a gate that judged nothing has not passed.
    pub fn regressions(&self, tolerance: f64, any_change: bool) -> Vec<String> {
        let mut out = Vec::new();
        let judged = self
            .sections
            .iter()
            .flat_map(|s| &s.rows)
            .any(|r| r.stats.verdict != Verdict::TooFewRepetitions);
        if !judged {
            out.push(format!(
                "{} against {}: no row could be judged (each needs {} or more repetitions on both sides, and a figure both have)",
                self.b, self.a, stackmeter_compare::MIN_REPETITIONS
            ));
        }
        for s in &self.sections {
            for r in &s.rows {
                let worse = r.stats.verdict == Verdict::Slower;
                let better = r.stats.verdict == Verdict::Faster;
                if (worse || (any_change && better)) && r.stats.percent.abs() > tolerance {
                    out.push(format!(
                        "{} {} {}: {} (95% CI of B/A {:.3}-{:.3}, p {})",
                        s.test,
                        s.series,
                        r.label,
                        percent_words(r.stats.percent),
                        r.stats.ratio_ci.0,
                        r.stats.ratio_ci.1,
                        p_value(r.stats.p_value)
                    ));
                }
            }
        }
        out
    }
}

impl Section {
    /// "rr rtt mean (us, lower is better)".
    pub fn title(&self) -> String {
        let step = crate::figures::step_suffix(self.test.name(), &self.step);
        let stat = if self.stat == "value" {
            String::new()
        } else {
            format!(" {}", self.stat)
        };
        let better = if self.lower_is_better { "lower" } else { "higher" };
        format!(
            "{}{step}: {}{stat} per repetition, {} ({better} is better)",
            self.test, self.series, self.unit
        )
    }
}

/// "72.4% faster", "12.0% slower".
fn percent_words(p: f64) -> String {
    if p >= 0.0 {
        format!("{p:.1}% faster")
    } else {
        format!("{:.1}% slower", -p)
    }
}

/// The B vs A cell: the percentage, or "~ no significant difference".
fn verdict_words(r: &RowStats) -> String {
    match r.verdict {
        Verdict::Faster | Verdict::Slower => percent_words(r.percent),
        Verdict::NoSignificantDifference => "~ no significant difference".to_string(),
        Verdict::TooFewRepetitions => format!(
            "{} (no verdict: n < {})",
            percent_words(r.percent),
            stackmeter_compare::MIN_REPETITIONS
        ),
    }
}

fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// The overall lines under the tables.
fn summary_lines(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(s) = &c.summary {
        // All rates: B/A as measured; otherwise times' B/A with any rate
        // inverted (A/B), so below 1 is better throughout.
        let (g, ci, how) = if s.all_rates {
            (
                1.0 / s.geomean_ratio,
                s.geomean_ci.map(|(lo, hi)| (1.0 / hi, 1.0 / lo)),
                "",
            )
        } else if s.rows > 0 && c.sections.iter().any(|x| !x.lower_is_better) {
            (
                s.geomean_ratio,
                s.geomean_ci,
                "; rates inverted (A/B) so below 1 is better",
            )
        } else {
            (s.geomean_ratio, s.geomean_ci, "")
        };
        let rows = || c.sections.iter().flat_map(|x| x.rows.iter());
        // A side with one repetition has no spread: no interval, and no
        // verdict unless some row earned one.
        let single = rows().any(|r| r.stats.n_a < 2 || r.stats.n_b < 2);
        let judged = rows().any(|r| r.stats.verdict != Verdict::TooFewRepetitions);
        let ci = ci.filter(|_| !single);
        let spans = matches!(ci, Some((lo, hi)) if lo <= 1.0 && hi >= 1.0);
        let words = match (judged, spans) {
            (false, _) => format!(
                "no verdict (no row has {} or more repetitions a side), point estimate ",
                stackmeter_compare::MIN_REPETITIONS
            ),
            (true, true) => "~ no significant difference, point estimate ".into(),
            (true, false) => String::new(),
        };
        let ci = ci
            .map(|(lo, hi)| format!(", 95% CI {lo:.3}-{hi:.3}"))
            .unwrap_or_default();
        out.push(format!(
            "Overall, B ({}) vs A ({}): {words}{} (geometric mean of the per-row ratios B/A over {} row(s): {g:.3}{ci}{how})",
            c.b,
            c.a,
            percent_words(s.geomean_percent),
            s.rows,
        ));
        out.push(format!(
            "Arithmetic mean of the percentages (the \"Average: N% faster\" of hand-made tables; it overweights large changes, quote the geometric mean): {}",
            percent_words(s.mean_of_percentages)
        ));
    }
    out
}

/// Cells of one row: Size, A, B, Difference, B vs A, CI, p, reps.
fn cells(r: &Row) -> Vec<String> {
    let s = &r.stats;
    vec![
        r.label.clone(),
        num(s.median_a),
        num(s.median_b),
        if s.difference >= 0.0 {
            format!("+{}", num(s.difference))
        } else {
            num(s.difference)
        },
        verdict_words(s),
        // One repetition on a side has no spread to resample.
        match s.n_a < 2 || s.n_b < 2 {
            true => "-".into(),
            false => format!("{:.3}-{:.3}", s.ratio_ci.0, s.ratio_ci.1),
        },
        p_value(s.p_value),
        format!("{}/{}", s.n_a, s.n_b),
    ]
}

fn cols(c: &Comparison, unit: &str, test: TestKind) -> Vec<Col> {
    vec![
        Col::text(test.row_label(), 0),
        Col::num(&format!("A: {} ({unit})", c.a), 0),
        Col::num(&format!("B: {} ({unit})", c.b), 0),
        Col::num(&format!("Difference ({unit})"), 0),
        Col::text("B vs A", 0),
        Col::num("95% CI of B/A", 0),
        Col::num("p-value", 0),
        Col::num("reps A/B", 0),
    ]
}

/// B/A per row: a dot at the ratio of medians and its 95% interval as a
/// whisker, around the line at 1 (no bars: a bar's base would be an
/// arbitrary cut of the axis). On a log axis, where 0.5 and 2 are as far
/// from 1, unless a ratio or a bound is 0 or below; either way the axis
/// ends on labelled values around every point and interval, however far
/// from 1 they are.
fn ratio_chart(c: &Comparison, s: &Section) -> Chart {
    let (mut lo, mut hi) = (1.0f64, 1.0f64);
    for r in &s.rows {
        let ci = match r.stats.n_a < 2 || r.stats.n_b < 2 {
            true => (r.stats.ratio, r.stats.ratio),
            false => r.stats.ratio_ci,
        };
        for v in [r.stats.ratio, ci.0, ci.1] {
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    let y = if lo > 0.0 {
        Axis::log("B / A", lo / 1.05, hi * 1.05)
    } else {
        let pad = 0.05 * (hi - lo);
        Axis::linear("B / A", lo - pad, hi + pad)
    };
    let points = s.rows.iter().enumerate().map(|(i, r)| (i as f64, r.stats.ratio));
    let bars = Series {
        // One repetition on a side has no interval (the table prints "-").
        errors: s
            .rows
            .iter()
            .map(|r| match r.stats.n_a < 2 || r.stats.n_b < 2 {
                true => (f64::NAN, f64::NAN),
                false => r.stats.ratio_ci,
            })
            .collect(),
        kind: Kind::Points { radius: 4.0 },
        ..Series::line(format!("B/A: {} / {}, 95% interval", c.b, c.a), 1, points.collect())
    };
    Chart {
        categories: s.rows.iter().map(|r| r.label.clone()).collect(),
        hline: Some(1.0),
        ..Chart::new(
            "comparison",
            format!("{}: B / A per row, with 95% interval", figure_name(s)),
            Axis::linear("", -0.6, s.rows.len() as f64 - 0.4),
            y.snapped(),
            vec![bars],
        )
    }
}

/// The section's figure as a chart names it: "rtt mean", "down".
fn figure_name(s: &Section) -> String {
    match s.stat.as_str() {
        "value" => s.series.clone(),
        stat => format!("{} {stat}", s.series),
    }
}

/// Every repetition's figure of A and B per row, side by side: what the
/// verdicts rest on.
fn repetitions_chart(c: &Comparison, s: &Section) -> Chart {
    let side = |name: &str, k: usize, off: f64, pick: fn(&Row) -> &Vec<f64>| {
        let pts = s.rows.iter().enumerate().flat_map(|(i, r)| {
            let v = pick(r);
            let n = v.len().max(1) as f64;
            v.iter()
                .enumerate()
                .map(move |(j, &y)| (i as f64 + off + 0.2 * (j as f64 / n - 0.5), y))
        });
        Series {
            kind: Kind::Points { radius: 2.5 },
            ..Series::line(name.to_string(), k, pts.collect())
        }
    };
    let all = s.rows.iter().flat_map(|r| r.values_a.iter().chain(&r.values_b));
    let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let pad = 0.05 * (hi - lo).max(hi.abs() * 0.01).max(1e-9);
    // Figures that cannot be negative keep the axis at 0 or above.
    let bottom = match lo >= 0.0 {
        true => (lo - pad).max(0.0),
        false => lo - pad,
    };
    Chart {
        categories: s.rows.iter().map(|r| r.label.clone()).collect(),
        ..Chart::new(
            "repetitions",
            format!("{}: every repetition", figure_name(s)),
            Axis::linear("", -0.6, s.rows.len() as f64 - 0.4),
            Axis::linear(figure_name(s), bottom, hi + pad)
                .unit(s.unit.clone())
                .snapped(),
            vec![
                side(&format!("A: {}", c.a), 0, -0.2, |r| &r.values_a),
                side(&format!("B: {}", c.b), 1, 0.2, |r| &r.values_b),
            ],
        )
    }
}

impl crate::render::Render for Comparison {
    fn view(&self, _style: &crate::render::Style) -> View {
        let mut v = View::new();
        v.push(Block::Title(format!(
            "stackmeter compare: A = {} (baseline), B = {}",
            self.a, self.b
        )));
        for s in &self.sections {
            v.push(Block::Heading(s.title()));
            v.push(Block::Table(Table {
                cols: cols(self, &s.unit, s.test),
                rows: s.rows.iter().map(cells).collect(),
                ..Table::default()
            }));
            v.push(Block::Chart(ratio_chart(self, s)));
            v.push(Block::Chart(repetitions_chart(self, s)));
        }
        if self.sections.is_empty() {
            v.blank();
            v.line("nothing to compare: A and B have no test rows in common");
        }
        v.blank();
        for l in summary_lines(self) {
            v.line(l);
        }
        for n in &self.notes {
            v.push(Block::Note(n.clone()));
        }
        v.line(format!("Method: {}.", self.method));
        v
    }

    fn title(&self) -> String {
        format!("stackmeter compare {} vs {}", self.b, self.a)
    }
}
