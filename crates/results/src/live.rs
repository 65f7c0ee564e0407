//! Rows that arrive while a test runs: stream intervals and udp-max
//! trials. The engine reports each as an event; a terminal prints it as a
//! table row (the same cells the finished view holds), `--json-lines`
//! prints it as one JSON object.

use crate::stream::{interval_cells, Interval};
use crate::udp_max::{trial_cells, Trial};
use serde::Serialize;

/// One live row.
#[derive(Clone, Copy, Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Live<'a> {
    /// A stream interval has ended.
    Interval(&'a Interval),
    /// A udp-max trial has ended.
    Trial(TrialRow<'a>),
}

/// A trial with its number (0 = the warm-up trial).
#[derive(Clone, Copy, Debug, Serialize, schemars::JsonSchema)]
pub struct TrialRow<'a> {
    /// Position in the search.
    pub n: usize,
    /// The trial.
    #[serde(flatten)]
    pub trial: &'a Trial,
}

impl Live<'_> {
    /// The row's cells, under the columns of its test's live table.
    pub fn cells(&self, style: &crate::render::Style) -> Vec<String> {
        match self {
            Live::Interval(i) => interval_cells(i, style.units),
            Live::Trial(t) => trial_cells(t.n, t.trial),
        }
    }
}
