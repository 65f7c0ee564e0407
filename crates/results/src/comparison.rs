//! The comparison of two sets of results (A the baseline, B the
//! candidate) as one typed value, and its view: the latency grid's table
//! (A, B, difference, "% faster") with the statistics that make a verdict
//! defensible. Used by `compare`, by `suite` (which prints it at the end),
//! by `show` of a suite run and by `report`.

use crate::doc::figures;
use crate::doc::Document;
use crate::kind::TestKind;
use serde::Serialize;
use stackmeter_statistics::fdr::Correction;
use stackmeter_statistics::{compare, geomean_interval, summarize, Direction, Overall, RowStats, Verdict, ALPHA};

/// How the verdicts were reached, printed under every comparison.
pub const METHOD: &str = "each repetition gives one figure per row; A and B are the medians over repetitions; \
the 95% CI of B/A is a bootstrap of the ratio of medians (2000 resamples, fixed seed); \
p is the two-sided Mann-Whitney U test (normal approximation, tie-corrected); \
a row is faster or slower only when the CI excludes 1 and p < 0.05, else \"~ no significant difference\"; \
when several rows are judged together, p is also corrected across them (Benjamini-Hochberg, false discovery rate 0.05: q, the adjusted p, must be below 0.05 too); \
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
    /// How the rows' verdicts were corrected for being judged together
    /// (none with fewer than two rows that could have one).
    #[serde(default)]
    pub correction: Option<Correction>,
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
    #[serde(rename = "lower_is_better", with = "stackmeter_statistics::as_lower_is_better")]
    #[schemars(with = "bool")]
    pub direction: Direction,
    /// The rows.
    pub rows: Vec<Row>,
}

/// One compared row.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Row {
    /// "1 B:1 KiB", "64 B".
    pub label: String,
    /// The statistics (the verdict after the correction across rows).
    #[serde(flatten)]
    pub stats: RowStats,
    /// The p-value adjusted across every row judged together
    /// (Benjamini-Hochberg); none for a row without a verdict, or alone.
    #[serde(default)]
    pub q_value: Option<f64>,
    /// Every repetition's value of A, in order.
    pub values_a: Vec<f64>,
    /// Every repetition's value of B, in order.
    pub values_b: Vec<f64>,
}

type Key = (TestKind, String, String, String); // test, step, series, stat

/// (section key, unit, which way is better, row label) -> values, in first-seen order.
fn collect(docs: &[&Document], steps: &[String], metric: &str) -> Vec<(Key, String, Direction, String, Vec<f64>)> {
    let mut out: Vec<(Key, String, Direction, String, Vec<f64>)> = Vec::new();
    for (doc, step) in docs.iter().zip(steps) {
        for f in figures(doc) {
            if !f.compared || !(f.stat == metric || f.stat == "value") {
                continue;
            }
            let key = (doc.body.kind(), step.clone(), f.series.clone(), f.stat.clone());
            match out.iter_mut().find(|e| e.0 == key && e.3 == f.row_label) {
                Some(e) => e.4.push(f.value),
                None => out.push((key, f.unit.clone(), f.direction, f.row_label.clone(), vec![f.value])),
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
    for (key, unit, dir, label, va) in &ca {
        let Some((.., vb)) = cb.iter().find(|e| &e.0 == key && &e.3 == label) else {
            notes.push(format!("{} {} {}: only in {}", key.0, key.2, label, a.name));
            continue;
        };
        let Some(stats) = compare(va, vb, *dir) else { continue };
        let row = Row {
            label: label.clone(),
            stats,
            q_value: None,
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
                direction: *dir,
                rows: vec![row],
            }),
        }
    }
    for (key, _, _, label, _) in &cb {
        if !ca.iter().any(|e| &e.0 == key && &e.3 == label) {
            notes.push(format!("{} {} {}: only in {}", key.0, key.2, label, b.name));
        }
    }
    let correction = correct(&mut sections);
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
        correction,
        sections,
        notes,
    }
}

/// Corrects the verdicts of every row that could have one for being
/// judged together: a row stays faster or slower only when its adjusted
/// p-value (q) is below [`ALPHA`] too. None with fewer than two such rows.
pub(crate) fn correct_rows<'a>(
    rows: impl Iterator<Item = (&'a mut RowStats, &'a mut Option<f64>)>,
) -> Option<Correction> {
    let mut rows: Vec<(&mut RowStats, &mut Option<f64>)> = rows.collect();
    let judged = |s: &RowStats| s.verdict != Verdict::TooFewRepetitions;
    let p: Vec<f64> = rows
        .iter()
        .map(|(s, _)| if judged(s) { s.p_value } else { f64::NAN })
        .collect();
    let reps: Vec<(usize, usize)> = rows
        .iter()
        .filter(|(s, _)| judged(s))
        .map(|(s, _)| (s.n_a, s.n_b))
        .collect();
    if reps.len() < 2 {
        return None;
    }
    let (c, q) = Correction::of(&p, &reps, ALPHA);
    for ((s, qv), q) in rows.iter_mut().zip(q) {
        **qv = q.is_finite().then_some(q);
        // A NaN q (no test) is not below ALPHA either.
        let passes = q < ALPHA;
        if matches!(s.verdict, Verdict::Faster | Verdict::Slower) && !passes {
            s.verdict = Verdict::NoSignificantDifference;
        }
    }
    Some(c)
}

fn correct(sections: &mut [Section]) -> Option<Correction> {
    correct_rows(
        sections
            .iter_mut()
            .flat_map(|s| s.rows.iter_mut())
            .map(|r| (&mut r.stats, &mut r.q_value)),
    )
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
                self.b, self.a, stackmeter_statistics::MIN_REPETITIONS
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
        let better = self.direction.word();
        format!(
            "{}{step}: {}{stat} per repetition, {} ({better} is better)",
            self.test, self.series, self.unit
        )
    }
}

/// "72.4% faster", "12.0% slower".
pub fn percent_words(p: f64) -> String {
    if p >= 0.0 {
        format!("{p:.1}% faster")
    } else {
        format!("{:.1}% slower", -p)
    }
}

pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}
