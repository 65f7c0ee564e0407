//! The figures of a document as a flat list: what the store indexes, what
//! `compare` sets side by side and what reports chart. Each test's module
//! says which of its numbers are figures, through a [`Figures`] collector;
//! `Document::figures` asks the document's test.

use crate::latency::LatencyUs;
use serde::{Deserialize, Serialize};
use stackmeter_statistics::Direction;

/// One number from one row of a document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Figure {
    /// Index of the row in the document's `results`.
    pub row: usize,
    /// The row as a reader names it ("1 B:1 KiB", "64 B").
    pub row_label: String,
    /// What was measured: "rtt", "connect", "transaction", "server", "rate".
    pub series: String,
    /// Which statistic: "mean", "p50", "p99", or "value" for rates and counts.
    pub stat: String,
    /// Unit of `value`: "us", "tps", "cps", "pps", "bit/s", "%".
    pub unit: String,
    /// The figure.
    pub value: f64,
    /// True for times and losses, false for rates.
    #[serde(rename = "lower_is_better", with = "stackmeter_statistics::as_lower_is_better")]
    #[schemars(with = "bool")]
    pub direction: Direction,
    /// True for the figures `compare` sets side by side by default.
    pub compared: bool,
}

/// The label of row `row` among `figures` ("" when no figure names it).
pub fn row_label(figures: &[Figure], row: usize) -> String {
    figures
        .iter()
        .find(|f| f.row == row)
        .map(|f| f.row_label.clone())
        .unwrap_or_default()
}

/// " [step]" after a test's name when its plan step is named otherwise
/// ("" for a single command or a step named after its test).
pub fn step_suffix(test: &str, step: &str) -> String {
    match step.is_empty() || step == test {
        true => String::new(),
        false => format!(" [{step}]"),
    }
}

/// Collects a document's figures in the order every reader expects:
/// latencies row by row, then whole-run times, then rates.
#[derive(Default)]
pub struct Figures {
    latencies: Vec<Figure>,
    times: Vec<Figure>,
    rates: Vec<Figure>,
}

impl Figures {
    /// Mean, p50 and p99 of a latency, microseconds (lower is better).
    pub fn latency(&mut self, row: usize, label: &str, series: &str, s: &LatencyUs, compared: bool) {
        for (stat, value) in [("mean", s.mean), ("p50", s.p50), ("p99", s.p99)] {
            self.latencies.push(figure(
                row,
                label,
                series,
                stat,
                "us",
                value,
                Direction::LowerIsBetter,
                compared,
            ));
        }
    }

    /// A delay in microseconds that is not a distribution (lower is
    /// better), compared whatever the latency metric is.
    pub fn delay(&mut self, row: usize, label: &str, series: &str, value: f64, compared: bool) {
        self.latencies.push(figure(
            row,
            label,
            series,
            "value",
            "us",
            value,
            Direction::LowerIsBetter,
            compared,
        ));
    }

    /// A rate (higher is better) in `unit`, under the series `series`.
    pub fn rate(&mut self, row: usize, label: &str, series: &str, unit: &str, value: f64, compared: bool) {
        self.rates.push(figure(
            row,
            label,
            series,
            "value",
            unit,
            value,
            Direction::HigherIsBetter,
            compared,
        ));
    }

    /// A whole-run time in seconds (lower is better).
    pub fn time(&mut self, row: usize, label: &str, series: &str, value: f64, compared: bool) {
        self.cost(row, label, series, "s", value, compared);
    }

    /// What a target spent on a run (lower is better) in `unit`: CPU
    /// time per byte, memory.
    pub fn cost(&mut self, row: usize, label: &str, series: &str, unit: &str, value: f64, compared: bool) {
        let f = figure(
            row,
            label,
            series,
            "value",
            unit,
            value,
            Direction::LowerIsBetter,
            compared,
        );
        self.times.push(f);
    }

    /// Every figure collected, in order.
    pub fn finish(self) -> Vec<Figure> {
        let mut out = self.latencies;
        out.extend(self.times);
        out.extend(self.rates);
        out
    }
}

#[allow(clippy::too_many_arguments)]
fn figure(
    row: usize,
    label: &str,
    series: &str,
    stat: &str,
    unit: &str,
    value: f64,
    direction: Direction,
    compared: bool,
) -> Figure {
    Figure {
        row,
        row_label: label.to_string(),
        series: series.to_string(),
        stat: stat.to_string(),
        unit: unit.to_string(),
        value,
        direction,
        compared,
    }
}
