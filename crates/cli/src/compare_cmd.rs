//! `stackmeter compare A B`: find the stored tests each side names, build
//! the comparison and print it in the format asked for.

use crate::args::DbArgs;
use crate::comparison::{self, Side};
use crate::fail;
use clap::{Args, ValueEnum};
use stackmeter_store::{Store, StoredTest};
use std::io::Write;

/// Output formats of a comparison.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    Text,
    Md,
    Json,
    Html,
}

/// Latency statistic compared per repetition.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Metric {
    Mean,
    P50,
    P99,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Mean => "mean",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
        }
    }
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Baseline: a label (every stored test with it), a run id, or RUN:LABEL.
    pub a: String,
    /// Candidate, same forms as A.
    pub b: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Latency figure taken from each repetition (seed 000 compared means).
    #[arg(long, value_enum, default_value = "mean")]
    pub metric: Metric,
    #[command(flatten)]
    pub db: DbArgs,
}

/// The tests a side names, and how to call it. An error is a message.
pub fn resolve(store: &Store, spec: &str) -> Result<(String, Vec<StoredTest>), String> {
    let err = |e: stackmeter_store::StoreError| e.to_string();
    if let Some((run, label)) = spec.split_once(':') {
        if let Ok(id) = run.parse::<i64>() {
            let tests: Vec<StoredTest> = store
                .tests_of_run(id)
                .map_err(err)?
                .into_iter()
                .filter(|t| t.label == label)
                .collect();
            if tests.is_empty() {
                return Err(format!("'{spec}': run {id} has no tests labelled '{label}'"));
            }
            return Ok((format!("{label} (run {id})"), tests));
        }
    }
    if let Ok(id) = spec.parse::<i64>() {
        if store.run(id).map_err(err)?.is_some() {
            let tests = store.tests_of_run(id).map_err(err)?;
            if tests.is_empty() {
                return Err(format!("run {id} has no stored tests"));
            }
            let mut labels: Vec<&str> = tests.iter().map(|t| t.label.as_str()).collect();
            labels.dedup();
            return Ok((format!("run {id} ({})", labels.join(",")), tests));
        }
    }
    let tests = store.tests_with_label(spec).map_err(err)?;
    if tests.is_empty() {
        return Err(format!(
            "'{spec}' is neither a stored label nor a run id (see `stackmeter runs`)"
        ));
    }
    Ok((spec.to_string(), tests))
}

/// Builds the comparison of two resolved sides.
pub fn of(a: (String, Vec<StoredTest>), b: (String, Vec<StoredTest>), metric: Metric) -> comparison::Comparison {
    let steps = |t: &[StoredTest]| t.iter().map(|t| t.step.clone()).collect::<Vec<_>>();
    let (sa, sb) = (steps(&a.1), steps(&b.1));
    let side_a = Side {
        name: a.0,
        docs: a.1.iter().map(|t| &t.doc).collect(),
    };
    let side_b = Side {
        name: b.0,
        docs: b.1.iter().map(|t| &t.doc).collect(),
    };
    comparison::build(&side_a, &sa, &side_b, &sb, metric.name())
}

/// Renders in `format`.
pub fn render(c: &comparison::Comparison, format: Format) -> String {
    match format {
        Format::Text => comparison::text(c),
        Format::Md => comparison::markdown(c),
        Format::Json => comparison::json(c),
        Format::Html => crate::report_cmd::comparison_page(c),
    }
}

pub fn run(a: CompareArgs) -> i32 {
    let store = match crate::record::open(&a.db) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let side_a = match resolve(&store, &a.a) {
        Ok(s) => s,
        Err(e) => return fail(2, e),
    };
    let side_b = match resolve(&store, &a.b) {
        Ok(s) => s,
        Err(e) => return fail(2, e),
    };
    let c = of(side_a, side_b, a.metric);
    print(&render(&c, a.format))
}

/// Writes `s` to stdout; a closed pipe is not an error.
pub fn print(s: &str) -> i32 {
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => fail(1, format!("cannot write the output: {e}")),
        _ => 0,
    }
}
