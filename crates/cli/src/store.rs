//! The commands that read the results store: `compare`, `runs`, `show`,
//! `export`, `report` and `store check`. The engine reads; this chooses
//! the format and where the output goes.

use crate::out::{fail, finish};
use clap::{Args, Subcommand, ValueEnum};
use stackmeter_engine::flags::{DbFlags, FormatArg, FormatFlags, GateFlags, MetricArg};
use stackmeter_engine::stored::{self, Export};
use stackmeter_results::{render, Format, Style};
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
    /// Latency figure taken from each repetition.
    #[arg(long, value_enum, default_value_t = MetricArg::Mean)]
    pub metric: MetricArg,
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
    /// The file to write.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Html)]
    pub format: FormatArg,
    /// Latency figure compared per repetition.
    #[arg(long, value_enum, default_value_t = MetricArg::Mean)]
    pub metric: MetricArg,
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
    /// Check the store: SQLite's integrity_check and foreign_key_check, and
    /// that every stored document reads back. Prints the counts and "ok"
    /// (exit 0), or one line per problem (exit 1).
    Check {
        #[command(flatten)]
        db: DbFlags,
    },
}

/// Runs `f` on the store `db` names; an error is reported with its code.
fn with_store(db: &DbFlags, f: impl FnOnce(&stackmeter_store::Store) -> Result<i32, stackmeter_engine::Error>) -> i32 {
    match stackmeter_engine::record::open(db).and_then(|s| f(&s)) {
        Ok(code) => code,
        Err(e) => crate::out::error(&e),
    }
}

pub fn compare(a: CompareArgs) -> i32 {
    if let Err(e) = a.gate.check() {
        return fail(2, e);
    }
    with_store(&a.db, |s| {
        let (side_a, side_b) = (stored::resolve(s, &a.a)?, stored::resolve(s, &a.b)?);
        let c = stored::compare(&side_a, &side_b, a.metric.name());
        if c.sections.is_empty() {
            let tests = |side: &(String, Vec<stackmeter_store::StoredTest>)| {
                let mut names: Vec<&str> = Vec::new();
                for t in &side.1 {
                    if !names.contains(&t.doc.body.test_name()) {
                        names.push(t.doc.body.test_name());
                    }
                }
                names.join(", ")
            };
            return Ok(fail(
                crate::out::NOTHING_TO_COMPARE,
                format!(
                    "nothing to compare: A ({}: {}) and B ({}: {}) have no test and figure in common",
                    a.a,
                    tests(&side_a),
                    a.b,
                    tests(&side_b)
                ),
            ));
        }
        match finish(&render(&c, a.format.into(), &Style::default())) {
            0 => Ok(crate::out::gate(&a.gate.failures(std::slice::from_ref(&c)))),
            code => Ok(code),
        }
    })
}

pub fn runs(a: RunsArgs) -> i32 {
    let format = if a.json { Format::Json } else { Format::Text };
    with_store(&a.db, |s| {
        Ok(finish(&render(&stored::runs(s)?, format, &Style::default())))
    })
}

pub fn show(a: ShowArgs) -> i32 {
    let format = match a.output.format() {
        Ok(f) => f,
        Err(e) => return fail(2, e),
    };
    with_store(&a.db, |s| {
        let style = a.output.style();
        Ok(finish(&match a.percentiles {
            true => render(&stored::spectrum(s, a.run)?, format, &style),
            false => stored::show(s, a.run, format, &style)?,
        }))
    })
}

pub fn export(a: ExportArgs) -> i32 {
    let format = match a.format {
        ExportFormat::Csv => Export::Csv,
        ExportFormat::Json => Export::Json,
    };
    with_store(&a.db, |s| {
        let out = stored::export(s, &a.runs, a.label.as_deref(), format)?;
        Ok(match &a.output {
            Some(path) => write(path, &out),
            None => finish(&out),
        })
    })
}

pub fn report(a: ReportArgs) -> i32 {
    with_store(&a.db, |s| {
        let r = stackmeter_engine::report::build(s, &a.sources, a.metric.name())?;
        let code = write(&a.output, &render(&r, a.format.into(), &Style::default()));
        if code == 0 {
            eprintln!("stackmeter: wrote {}", a.output.display());
        }
        Ok(code)
    })
}

pub fn store(a: StoreArgs) -> i32 {
    match a.command {
        StoreCommand::Check { db } => check(&db),
    }
}

fn check(db: &DbFlags) -> i32 {
    // Opening creates a missing file: a check of nothing must not.
    match stackmeter_engine::record::db_path(db) {
        Ok(path) if !path.exists() => return fail(1, format!("no results store at {}", path.display())),
        Err(e) => return crate::out::error(&e),
        Ok(_) => {}
    }
    with_store(db, |s| {
        let c = s.check()?;
        if c.problems.is_empty() {
            return Ok(finish(&format!("ok: {} runs, {} tests\n", c.runs, c.tests)));
        }
        for p in &c.problems {
            println!("{p}");
        }
        Ok(fail(
            1,
            format!("the results store has {} problem(s)", c.problems.len()),
        ))
    })
}

fn write(path: &std::path::Path, text: &str) -> i32 {
    match std::fs::write(path, text) {
        Ok(()) => 0,
        Err(e) => fail(1, format!("cannot write {}: {e}", path.display())),
    }
}
