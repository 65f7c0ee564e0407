//! A comparison's view: the hand-made table's columns (both sides, the
//! difference, "% faster") with the interval, the p-value, the verdict and
//! the overall geometric mean; charts of the ratios and repetitions.
use stackmeter_results::p_value;
use stackmeter_results::percent_words;
use stackmeter_results::Comparison;
use stackmeter_results::Row;
use stackmeter_results::Section;

use crate::chart::{Axis, Chart, Kind, Trace};
use crate::view::{Block, Col, Table, View};
use stackmeter_results::TestKind;
use stackmeter_statistics::{RowStats, Verdict};

/// The B vs A cell: the percentage, or "~ no significant difference".
fn verdict_words(r: &RowStats) -> String {
    match r.verdict {
        Verdict::Faster | Verdict::Slower => percent_words(r.percent),
        Verdict::NoSignificantDifference => "~ no significant difference".to_string(),
        Verdict::TooFewRepetitions => format!(
            "est. {} (no verdict: n < {})",
            percent_words(r.percent),
            stackmeter_statistics::MIN_REPETITIONS
        ),
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
        } else if s.rows > 0
            && c.sections
                .iter()
                .any(|x| x.direction == stackmeter_statistics::Direction::HigherIsBetter)
        {
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
        // Without a verdict the estimate is said as one, with both ends of
        // its interval as changes of B against A, so it never reads as a
        // finding.
        let change = |r: f64| format!("{:+.1}%", (r - 1.0) * 100.0);
        let estimate = match ci {
            Some((lo, hi)) => format!(
                "point estimate {}, not significant: 95% CI of B/A {} .. {}",
                percent_words(s.geomean_percent),
                change(lo),
                change(hi)
            ),
            None => format!("point estimate {}, no interval", percent_words(s.geomean_percent)),
        };
        let words = match (judged, spans) {
            (false, _) => format!(
                "no verdict (no row has {} or more repetitions a side); {estimate}",
                stackmeter_statistics::MIN_REPETITIONS
            ),
            (true, true) => format!("~ no significant difference; {estimate}"),
            (true, false) => percent_words(s.geomean_percent),
        };
        let ci = ci
            .map(|(lo, hi)| format!(", 95% CI {lo:.3}-{hi:.3}"))
            .unwrap_or_default();
        out.push(format!(
            "Overall, B ({}) vs A ({}): {words} (geometric mean of the per-row ratios B/A over {} row(s): {g:.3}{ci}{how})",
            c.b, c.a, s.rows,
        ));
        out.push(format!(
            "Arithmetic mean of the percentages (the \"Average: N% faster\" of hand-made tables; it overweights large changes, quote the geometric mean): {}",
            percent_words(s.mean_of_percentages)
        ));
    }
    out
}

/// The decimals of a table's A, B and Difference columns.
fn decimals(s: &Section) -> usize {
    crate::view::decimals(s.rows.iter().flat_map(|r| [r.stats.median_a, r.stats.median_b]))
}

/// Cells of one row: Size, A, B, Difference, B vs A, CI, p, reps.
fn cells(r: &Row, d: usize) -> Vec<String> {
    let s = &r.stats;
    vec![
        r.label.clone(),
        format!("{:.d$}", s.median_a),
        format!("{:.d$}", s.median_b),
        format!("{:+.d$}", s.difference),
        verdict_words(s),
        // One repetition on a side has no spread to resample.
        match s.n_a < 2 || s.n_b < 2 {
            true => "-".into(),
            false => format!("{:.3}-{:.3}", s.ratio_ci.0, s.ratio_ci.1),
        },
        p_value(s.p_value),
        r.q_value.map_or_else(|| "-".into(), p_value),
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
        Col::num("q", 0),
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
    let bars = Trace {
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
        ..Trace::line(format!("B/A: {} / {}, 95% interval", c.b, c.a), 1, points.collect())
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
        Trace {
            kind: Kind::Points { radius: 2.5 },
            ..Trace::line(name.to_string(), k, pts.collect())
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

impl crate::format::Render for Comparison {
    fn view(&self, _style: &crate::format::Style) -> View {
        let mut v = View::new();
        v.push(Block::Title(format!(
            "stackmeter compare: A = {} (baseline), B = {}",
            self.a, self.b
        )));
        for s in &self.sections {
            v.push(Block::Heading(s.title()));
            v.push(Block::Table(Table {
                cols: cols(self, &s.unit, s.test),
                rows: s.rows.iter().map(|r| cells(r, decimals(s))).collect(),
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
        if let Some(c) = &self.correction {
            v.line(format!("Correction: {}.", c.describe()));
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
