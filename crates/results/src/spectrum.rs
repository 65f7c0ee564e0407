//! The percentile spectrum of a stored run (`show RUN --percentiles`):
//! every histogram behind its figures read out at 0%, 50%, 75%, 87.5% ...
//! up to the maximum, as HdrHistogram prints it, and drawn against
//! 1/(1-q) so the tail is as wide as the body.

use crate::chart::{by_percentile, Axis, Chart, Series};
use crate::figures::step_suffix;
use crate::view::{Block, Col, Table, View};
use serde::Serialize;

/// One point of a spectrum.
#[derive(Clone, Copy, Debug, Serialize, schemars::JsonSchema)]
pub struct SpectrumPoint {
    /// Percentile, 0 to 100.
    pub percentile: f64,
    /// The value there, microseconds.
    pub value_us: f64,
    /// Samples at or below it.
    pub count: u64,
}

/// The spectrum of one histogram: one figure of one row of one test.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct SpectrumRow {
    /// Target label.
    pub label: String,
    /// The test.
    pub test: crate::TestKind,
    /// Plan step ("" outside suites).
    pub step: String,
    /// Repetition (0 outside suites).
    pub repetition: usize,
    /// The row ("1 B:1 KiB").
    pub row: String,
    /// The figure ("rtt_us").
    pub metric: String,
    /// Samples.
    pub count: u64,
    /// The points, ascending.
    pub points: Vec<SpectrumPoint>,
}

/// Every spectrum of a run.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Spectrum {
    /// Always `stackmeter/1`.
    pub schema: String,
    /// The run id.
    pub run: i64,
    /// One per stored histogram, in stored order.
    pub rows: Vec<SpectrumRow>,
}

impl SpectrumRow {
    fn title(&self) -> String {
        let step = step_suffix(self.test.name(), &self.step);
        format!(
            "{} {}{step} {} {} (repetition {}, {} samples)",
            self.label,
            self.test,
            self.row,
            self.metric.trim_end_matches("_us"),
            self.repetition + 1,
            self.count
        )
    }

    /// Value against 1/(1-q) on log axes: the maximum (q = 1) has no place
    /// on it and is left to the table.
    fn chart(&self) -> Chart {
        let pts = by_percentile(self.points.iter().map(|p| (p.percentile / 100.0, p.value_us.max(1e-3))));
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
            self.title(),
            Axis::percentiles(xmax),
            Axis::log(self.metric.trim_end_matches("_us"), lo, hi)
                .unit("us")
                .snapped(),
            vec![Series::line(self.label.clone(), 0, pts)],
        )
    }
}

impl crate::render::Render for Spectrum {
    fn view(&self, _style: &crate::render::Style) -> View {
        let mut v = View::new();
        v.push(Block::Title(self.title()));
        if self.rows.is_empty() {
            v.line("no histograms stored with this run");
        }
        for r in &self.rows {
            v.push(Block::Heading(r.title()));
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
                            crate::latency::num(p.value_us),
                            p.count.to_string(),
                            inv,
                        ]
                    })
                    .collect(),
                ..Table::default()
            }));
            v.push(Block::Chart(r.chart()));
        }
        v
    }

    fn title(&self) -> String {
        format!("stackmeter percentiles of run {}", self.run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{render, Format, Style};

    #[test]
    fn a_row_without_points_renders_in_every_format() {
        let s = Spectrum {
            schema: crate::SCHEMA.into(),
            run: 1,
            rows: vec![SpectrumRow {
                label: "a".into(),
                test: crate::TestKind::Load,
                step: String::new(),
                repetition: 0,
                row: "4 KiB".into(),
                metric: "latency_us".into(),
                count: 0,
                points: Vec::new(),
            }],
        };
        for f in [Format::Text, Format::Md, Format::Json, Format::Html] {
            assert!(render(&s, f, &Style::default()).contains("load"), "{f:?}");
        }
    }
}
