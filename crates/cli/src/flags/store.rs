//! The flags of the commands that read the results store: `compare`,
//! `runs`, `show`, `export`, `report`, `store check|copy|flush`.

use crate::flags::{DbFlags, FormatArg, FormatFlags, GateFlags, MetricArg};
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Baseline: a label (every stored test with it), a run id, or RUN:LABEL.
    pub a: String,
    /// Candidate, same forms as A.
    pub b: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Latency figure taken from each repetition (default: the mean; for the two targets of one run made until decided, the figure it was decided on).
    #[arg(long, value_enum)]
    pub metric: Option<MetricArg>,
    #[command(flatten)]
    pub gate: GateFlags,
    #[command(flatten)]
    pub db: DbFlags,
}

#[derive(Args, Debug)]
pub struct RunsArgs {
    /// Print {"runs": [...]} instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbFlags,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Run id (see `stackmeter runs`).
    pub run: i64,
    /// Print the percentile spectrum of every stored histogram instead
    /// (0%, 50%, 75% ... to the maximum, as HdrHistogram does).
    #[arg(long)]
    pub percentiles: bool,
    #[command(flatten)]
    pub output: FormatFlags,
    #[command(flatten)]
    pub db: DbFlags,
}

/// Export formats.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum ExportFormat {
    /// One line per figure: run, test, label, row, series, statistic, unit, value.
    Csv,
    /// Every run with its complete documents.
    Json,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Runs to export (default: all).
    pub runs: Vec<i64>,
    /// Only tests with this label.
    #[arg(long)]
    pub label: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Csv)]
    pub format: ExportFormat,
    /// Write to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbFlags,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// What to report: labels, run ids or RUN:LABEL; the first is the baseline of the comparisons.
    #[arg(required = true)]
    pub sources: Vec<String>,
    /// The file to write (default: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format (default: html into a file, text on standard output).
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Latency figure compared per repetition (default: the mean; for the two targets of one run made until decided, the figure it was decided on).
    #[arg(long, value_enum)]
    pub metric: Option<MetricArg>,
    #[command(flatten)]
    pub db: DbFlags,
}

#[derive(Args, Debug)]
pub struct StoreArgs {
    #[command(subcommand)]
    pub command: StoreCommand,
}

#[derive(Subcommand, Debug)]
pub enum StoreCommand {
    /// Check the store: on SQLite its integrity_check and foreign_key_check,
    /// on PostgreSQL the schema version and rows without their parent; on
    /// both, that every stored document reads back. Prints the counts and
    /// "ok" (exit 0), or one line per problem (exit 1).
    Check {
        #[command(flatten)]
        db: DbFlags,
    },
    /// Copy every run (tests, figures, histograms, intervals) from SRC to
    /// DST, each an SQLite file or a postgres:// URL. Ids may change; a run
    /// DST already has (the same run, by its identity) is not copied again.
    Copy {
        /// The store to read.
        #[arg(value_name = "SRC")]
        src: PathBuf,
        /// The store to write (created if needed).
        #[arg(value_name = "DST")]
        dst: PathBuf,
    },
    /// Send the results kept in the spool while the PostgreSQL store could
    /// not be reached ($XDG_DATA_HOME/stackmeter/spool, else
    /// ~/.local/share/stackmeter/spool) to the store, and remove what was
    /// sent. Repeating a flush that failed half way duplicates nothing.
    Flush {
        #[command(flatten)]
        db: DbFlags,
    },
}
