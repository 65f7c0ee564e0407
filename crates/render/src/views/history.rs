//! A history's view: the regressions first, worst first, each with the run
//! where it happened and what that run measured (its commit, firmware,
//! kernel); then every series' change points; in HTML a chart per series
//! with every run's median and the spread of its repetitions, the level of
//! each segment, and the segments between change points shaded.

use crate::chart::{Axis, Band, Chart, Kind, Trace, COLORS};
use crate::view::{Block, Col, Table, View};
use stackmeter_results::history::{AttrChange, History, HistoryChange, HistorySeries};
use stackmeter_results::num;

impl crate::format::Render for History {
    fn view(&self, _style: &crate::format::Style) -> View {
        let mut v = View::new();
        v.push(Block::Title(self.title()));
        let s = &self.settings;
        let relative = s
            .relative_to
            .as_ref()
            .map_or_else(String::new, |r| format!(", each run divided by its job's run of {r}"));
        v.line(format!(
            "{} series from {}{relative}, runs in {} order, window: {}; change points: {} (alpha {}, at least {} runs a side); a regression is worse by more than {}%",
            self.series.len(),
            s.source,
            s.order,
            s.window,
            s.method,
            s.alpha,
            s.min_segment,
            (100.0 * s.tolerance * 100.0).round() / 100.0
        ));
        let regressions = self.regressions();
        v.blank();
        match regressions.is_empty() {
            true => v.line("no regression in the window"),
            false => v.line(format!(
                "{} regression(s) in the window, worst first:",
                regressions.len()
            )),
        };
        for r in &regressions {
            v.line(format!("  REGRESSION {r}"));
        }
        for series in &self.series {
            series_view(&mut v, series);
        }
        for sk in &self.skipped {
            v.push(Block::Note(format!("not judged: {}: {}", sk.series, sk.why)));
        }
        v
    }

    fn title(&self) -> String {
        "stackmeter history".into()
    }
}

/// One series: a line when nothing changed, else a table of its change
/// points; its chart.
fn series_view(v: &mut View, s: &HistorySeries) {
    let shown = s.runs.iter().filter(|r| r.shown).count();
    v.push(Block::Heading(format!("{} ({})", s.name(), unit_words(s))));
    let last = s
        .runs
        .last()
        .map_or(String::new(), |r| format!("{} {}", num(r.median), s.unit));
    match s.changes.is_empty() {
        true => v.line(format!(
            "no change point in {} runs ({shown} in the window); latest {last}",
            s.runs.len()
        )),
        false => v.line(format!(
            "{} change point(s) in {} runs ({shown} in the window); latest {last}",
            s.changes.len(),
            s.runs.len()
        )),
    };
    if !s.changes.is_empty() {
        v.push(Block::Table(changes_table(s)));
    }
    v.push(Block::Chart(chart(s)));
}

fn unit_words(s: &HistorySeries) -> String {
    let better = format!("{} is better", s.direction.word());
    match s.unit.is_empty() {
        true => better,
        false => format!("{}, {better}", s.unit),
    }
}

fn changes_table(s: &HistorySeries) -> Table {
    let cols = vec![
        Col::text("run", 0),
        Col::text("started", 0),
        Col::num("before", 0),
        Col::num("after", 0),
        Col::num("change", 0),
        Col::text("95% CI of the ratio", 0),
        Col::num("p", 0),
        Col::text("verdict", 0),
        Col::text("what changed with it", 0),
    ];
    let rows = s
        .changes
        .iter()
        .map(|c| {
            vec![
                c.run_id
                    .map_or_else(|| format!("#{}", c.change.index), |r| r.to_string()),
                c.started.clone(),
                num(c.change.before_median),
                num(c.change.after_median),
                format!("{:+.1}%", 100.0 * (c.change.ratio - 1.0)),
                format!("{:.3}-{:.3}", c.change.ratio_ci.0, c.change.ratio_ci.1),
                format!("{:.1e}", c.change.p_value),
                verdict(c).into(),
                match c.changed.is_empty() {
                    true => "no attribute".into(),
                    false => c
                        .changed
                        .iter()
                        .map(AttrChange::describe)
                        .collect::<Vec<_>>()
                        .join(", "),
                },
            ]
        })
        .collect();
    Table {
        cols,
        rows,
        ..Table::default()
    }
}

fn verdict(c: &HistoryChange) -> &'static str {
    match (c.change.regression, c.change.improvement, c.change.transient, c.shown) {
        (true, _, false, true) => "REGRESSION",
        (true, _, true, _) => "worse for a while",
        (true, _, false, false) => "regression (before the window)",
        (_, true, true, _) => "better for a while",
        (_, true, false, _) => "improvement",
        _ => "within the tolerance",
    }
}

/// Every run's median with the spread of its repetitions (minimum to
/// maximum), the median level of each segment, and the segments shaded
/// and named by the change that starts them.
fn chart(s: &HistorySeries) -> Chart {
    let n = s.runs.len();
    let pts: Vec<(f64, f64)> = s.runs.iter().enumerate().map(|(i, r)| (i as f64, r.median)).collect();
    let spread: Vec<(f64, f64)> = s
        .runs
        .iter()
        .map(|r| {
            let lo = r.values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = r.values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (lo, hi)
        })
        .collect();
    let (lo, hi) = spread
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &(l, h)| {
            (a.min(l), b.max(h))
        });
    let (lo, hi) = match lo.is_finite() && hi.is_finite() && hi > lo {
        true => (lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)),
        false => (lo * 0.9, hi * 1.1 + 1e-9),
    };
    let mut runs = Trace::line("run median (bar: repetitions' range)", 0, pts);
    runs.kind = Kind::Points { radius: 2.5 };
    runs.errors = spread;
    let mut series = vec![runs];
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(s.changes.iter().map(|c| c.change.index));
    bounds.push(n);
    let mut level = Vec::new();
    for w in bounds.windows(2) {
        let medians: Vec<f64> = s.runs[w[0]..w[1]].iter().map(|r| r.median).collect();
        if let Some(m) = stackmeter_statistics::median(&medians) {
            level.push((w[0] as f64 - 0.5, m));
            level.push((w[1] as f64 - 0.5, m));
        }
    }
    series.push(Trace {
        color: COLORS[1].into(),
        ..Trace::line("segment median", 1, level)
    });
    let mut chart = Chart::new(
        "history",
        s.name(),
        Axis::linear("runs in order", -0.5, (n.max(1) as f64) - 0.5),
        Axis::linear(s.figure.clone(), lo, hi).unit(s.unit.clone()).snapped(),
        series,
    );
    chart.bands = s
        .changes
        .iter()
        .enumerate()
        .map(|(k, c)| Band {
            from: c.change.index as f64 - 0.5,
            to: bounds[k + 2] as f64 - 0.5,
            label: format!("{:+.0}%", 100.0 * (c.change.ratio - 1.0)),
        })
        .collect();
    chart
}
