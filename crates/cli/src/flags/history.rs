//! `stackmeter history`'s flags, checked into a `history::Query` (and CSV
//! options), and the history they ask for: from the store, or from a CSV
//! file in Otava's shape.

use crate::error::Error;
use crate::flags::{DbFlags, FormatFlags};
use clap::Args;
use stackmeter_history::Direction;
use stackmeter_history_csv::{CsvOptions, RunGrouping};
use stackmeter_query::history::{self, Query};
use stackmeter_results::history::History;
use std::path::PathBuf;

/// `stackmeter history`'s flags.
#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Labels whose runs to line up (none: every label in the store).
    pub labels: Vec<String>,
    /// Only this test (rr, crr, ping, stream, ...).
    #[arg(long, value_name = "TEST")]
    pub test: Option<String>,
    /// Only this row, as the tables name it ("1 B:1 KiB", "64 B").
    #[arg(long, value_name = "ROW")]
    pub row: Option<String>,
    /// Only this figure: "rtt p50", a statistic ("p99") or a series ("rtt").
    /// Default: the figures `compare` compares.
    #[arg(long, value_name = "FIGURE")]
    pub figure: Option<String>,
    /// Show and gate only the last N runs of each series (the analysis
    /// still reads every run before them).
    #[arg(long, value_name = "N", conflicts_with = "since")]
    pub last: Option<usize>,
    /// Show and gate only the runs since TIME: a UTC date (2026-11-27), an
    /// RFC 3339 time (2026-11-27T09:00:00Z), or an age: 12h, 7d, 4w, 1h30m.
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Order the runs by this attribute (commit, firmware, kernel, ...;
    /// numbers inside compared as numbers) instead of by time.
    #[arg(long, value_name = "ATTR")]
    pub by: Option<String>,
    /// A change is a regression when the figure got worse by more than
    /// this, percent.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    pub tolerance: f64,
    /// Divide each run's figure by the same job's run of this label (a
    /// reference measured in the same suite or fleet run), so that a slow
    /// machine, which slows both, cancels.
    #[arg(long, value_name = "LABEL", conflicts_with = "csv")]
    pub relative_to: Option<String>,
    /// Exit with code 9 when a regression lies in the window.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Write the change points found to the store's change_points table
    /// (what the Grafana dashboard draws).
    #[arg(long, conflicts_with = "csv")]
    pub save: bool,
    /// Read the series from this CSV file (Otava's shape: a time column,
    /// attribute columns, metric columns) instead of the store.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// The CSV file's time column.
    #[arg(long, value_name = "NAME", default_value = "time", requires = "csv")]
    pub time_column: String,
    /// A CSV metric where higher is better (repeatable).
    #[arg(long, value_name = "METRIC", requires = "csv")]
    pub higher_is_better: Vec<String>,
    /// A CSV metric where lower is better (repeatable; the default for
    /// metrics not named).
    #[arg(long, value_name = "METRIC", requires = "csv")]
    pub lower_is_better: Vec<String>,
    /// Every CSV row is a run of its own (default: rows in a row with the
    /// same time are one run's repetitions).
    #[arg(long, requires = "csv")]
    pub row_per_run: bool,
    #[command(flatten)]
    pub output: FormatFlags,
    #[command(flatten)]
    pub db: DbFlags,
}

impl HistoryArgs {
    /// The query the flags ask for; one line naming a bad one.
    pub fn query(&self, now_unix: u64) -> Result<Query, Error> {
        if !(self.tolerance.is_finite() && self.tolerance >= 0.0 && self.tolerance < 100.0) {
            return Err(Error::flag(format!(
                "--tolerance {}: expected a percentage from 0 to below 100",
                self.tolerance
            )));
        }
        if self.last == Some(0) {
            return Err(Error::flag("--last 0: give at least 1 run"));
        }
        let since = self
            .since
            .as_deref()
            .map(|s| stackmeter_spec::time::since(s, now_unix).map_err(|e| Error::flag(e.to_string())))
            .transpose()?;
        Ok(Query {
            labels: self.labels.clone(),
            test: self.test.clone(),
            row: self.row.clone(),
            figure: self.figure.clone(),
            last: self.last,
            since,
            by: self.by.clone(),
            tolerance: self.tolerance / 100.0,
            relative_to: self.relative_to.clone(),
        })
    }

    /// How to read the CSV file.
    pub fn csv_options(&self) -> CsvOptions {
        let mut metrics: Vec<(String, Direction)> = Vec::new();
        for m in &self.higher_is_better {
            metrics.push((m.clone(), Direction::HigherIsBetter));
        }
        for m in &self.lower_is_better {
            metrics.push((m.clone(), Direction::LowerIsBetter));
        }
        CsvOptions {
            time_column: self.time_column.clone(),
            metrics,
            runs: if self.row_per_run {
                RunGrouping::Row
            } else {
                RunGrouping::Time
            },
            ..CsvOptions::default()
        }
    }
}

/// The history the flags ask for, and the store it came from (to save
/// change points to), if any.
pub fn history(a: &HistoryArgs) -> Result<(History, Option<stackmeter_store::Store>), Error> {
    let q = a.query(stackmeter_sys::unix_now())?;
    match &a.csv {
        Some(path) => {
            let name = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|e| Error::file(format!("cannot read {name}: {e}")))?;
            Ok((history::from_csv(&name, &text, &a.csv_options(), &q)?, None))
        }
        None => {
            let store = stackmeter_engine::record::open(a.db.db.as_deref())?;
            Ok((history::from_store(&store, &q)?, Some(store)))
        }
    }
}
