//! Rows that arrive while a test runs: stream intervals and udp-max
//! trials. The engine reports each as an event; a terminal prints it as a
//! table row (the same cells the finished view holds: the render crate's
//! `live_cells`), `--json-lines`
//! prints it as one JSON object.

use crate::stream::Interval;
use crate::udp_max::Trial;
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
