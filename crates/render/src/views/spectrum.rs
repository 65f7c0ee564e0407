//! A stored run's latency spectrum: every histogram by percentile.
use stackmeter_results::Spectrum;
use stackmeter_results::SpectrumRow;

use crate::chart::{by_percentile, Axis, Chart, Trace};
use crate::view::{Block, Col, Table, View};
use stackmeter_results::step_suffix;

/// One row's title: whose histogram, of what, with its sample count.
fn title(row: &SpectrumRow) -> String {
    let step = step_suffix(row.test.name(), &row.step);
    format!(
        "{} {}{step} {} {} (repetition {}, {} samples)",
        row.label,
        row.test,
        row.row,
        row.metric.trim_end_matches("_us"),
        row.repetition + 1,
        row.count
    )
}

/// Value against 1/(1-q) on log axes: the maximum (q = 1) has no place on
/// it and is left to the table.
fn chart(row: &SpectrumRow) -> Chart {
    let pts = by_percentile(row.points.iter().map(|p| (p.percentile / 100.0, p.value_us.max(1e-3))));
    let xmax = pts.last().map_or(10.0, |p| p.0);
    let (lo, hi) = pts
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), p| (lo.min(p.1), hi.max(p.1)));
    let (lo, hi) = match pts.is_empty() {
        true => (1.0, 10.0),
        false => ((lo * 0.9).max(1e-3), (hi * 1.1).max(lo * 1.5)),
    };
    Chart::new(
        "percentiles",
        title(row),
        Axis::percentiles(xmax),
        Axis::log(row.metric.trim_end_matches("_us"), lo, hi)
            .unit("us")
            .snapped(),
        vec![Trace::line(row.label.clone(), 0, pts)],
    )
}

impl crate::format::Render for Spectrum {
    fn view(&self, _style: &crate::format::Style) -> View {
        let mut v = View::new();
        v.push(Block::Title(self.title()));
        if self.rows.is_empty() {
            v.line("no histograms stored with this run");
        }
        for r in &self.rows {
            v.push(Block::Heading(title(r)));
            v.push(Block::Table(Table {
                cols: vec![
                    Col::num("percentile", 10),
                    Col::num("value us", 9),
                    Col::num("samples at or below", 7),
                    Col::num("1/(1-q)", 7),
                ],
                rows: r
                    .points
                    .iter()
                    .map(|p| {
                        let inv = if p.percentile < 100.0 {
                            format!("{:.1}", 100.0 / (100.0 - p.percentile))
                        } else {
                            "-".into()
                        };
                        vec![
                            format!("{:.4}", p.percentile),
                            stackmeter_results::latency_text(p.value_us),
                            p.count.to_string(),
                            inv,
                        ]
                    })
                    .collect(),
                ..Table::default()
            }));
            v.push(Block::Chart(chart(r)));
        }
        v
    }

    fn title(&self) -> String {
        format!("stackmeter percentiles of run {}", self.run)
    }
}
