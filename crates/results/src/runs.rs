//! The list of stored runs (`stackmeter runs`) as a typed value, and its
//! view: one row per run with its status and the figure that names it.

use serde::Serialize;

/// One run in the list.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ListedRun {
    /// Run id.
    pub id: i64,
    /// When it started, UTC RFC 3339.
    pub time: String,
    /// When it ended, if it did.
    pub finished: Option<String>,
    /// Its labels, comma-separated.
    pub label: String,
    /// Its labels.
    pub labels: Vec<String>,
    /// "rr", "stream,ping", or "suite PLAN".
    pub test: String,
    /// "single" or "suite".
    pub kind: String,
    /// The suite's plan.
    pub plan: Option<String>,
    /// "complete", "partial" (cut short or interrupted) or "running".
    pub status: String,
    /// Tests stored.
    pub tests: usize,
    /// The figure that names the run ("rtt mean 1 B:1 KiB 20.1 us").
    pub key_figure: String,
    /// Where it ran.
    pub hostname: String,
    /// stackmeter's version.
    pub version: String,
    /// The command line.
    pub command: Vec<String>,
    /// What the user said the run measured (`--attr KEY=VALUE`).
    pub attrs: std::collections::BTreeMap<String, String>,
}

/// The stored runs (`stackmeter runs`).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct RunList {
    /// Always `stackmeter/1`.
    pub schema: String,
    /// Oldest first.
    pub runs: Vec<ListedRun>,
}
