//! `runs`, `show` and `export`: reading the results store back.

use crate::args::DbArgs;
use crate::compare_cmd::print;
use crate::fail;
use clap::{Args, ValueEnum};
use stackmeter_store::{RunInfo, Store};
use std::fmt::Write;

#[derive(Args, Debug)]
pub struct RunsArgs {
    /// Print {"runs": [...]} instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Run id (see `stackmeter runs`).
    pub run: i64,
    /// Print the JSON document(s) instead of the text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

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
    #[arg(long, value_enum, default_value = "csv")]
    pub format: ExportFormat,
    /// Write to this file instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// The status a reader should see: a run still `running` whose process is
/// gone on this host was cut short (crash, kill -9): it is partial.
pub fn status(r: &RunInfo) -> String {
    if r.status == "running" && r.hostname == stackmeter_sys::host().hostname {
        let alive = std::path::Path::new(&format!("/proc/{}", r.pid)).exists();
        if !alive || r.pid == std::process::id() {
            return "partial".into();
        }
    }
    r.status.clone()
}

/// The figure that names a run in the list: the first compared figure of
/// its first test, or a count for a suite.
fn key_figure(store: &Store, r: &RunInfo) -> String {
    if r.kind == "suite" {
        return format!("{} tests", r.tests);
    }
    let Ok(tests) = store.tests_of_run(r.id) else {
        return String::new();
    };
    let Some(t) = tests.first() else {
        return String::new();
    };
    stackmeter_results::figures(&t.doc)
        .into_iter()
        .find(|f| f.compared && (f.stat == "mean" || f.stat == "value"))
        .map(|f| {
            format!(
                "{} {} {} {} {}",
                f.series,
                if f.stat == "value" { "" } else { &f.stat },
                f.row_label,
                crate::comparison::num(f.value),
                f.unit
            )
            .replace("  ", " ")
        })
        .unwrap_or_default()
}

pub fn runs(a: RunsArgs) -> i32 {
    let store = match crate::record::open(&a.db) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let runs = match store.runs() {
        Ok(r) => r,
        Err(e) => return fail(1, e),
    };
    if a.json {
        let list: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id,
                    "time": r.started,
                    "finished": r.finished,
                    "label": r.labels.join(","),
                    "labels": r.labels,
                    "test": if r.kind == "suite" { format!("suite {}", r.plan.clone().unwrap_or_default()) } else { r.test_names.join(",") },
                    "kind": r.kind,
                    "plan": r.plan,
                    "status": status(r),
                    "tests": r.tests,
                    "key_figure": key_figure(&store, r),
                    "hostname": r.hostname,
                    "version": r.tool_version,
                    "command": r.command,
                })
            })
            .collect();
        let doc = serde_json::json!({ "runs": list });
        // Cannot fail: a Value always serializes.
        return print(&(serde_json::to_string_pretty(&doc).expect("a JSON value serializes") + "\n"));
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:>5}  {:<20}  {:<8}  {:<20}  {:<22}  key figure",
        "id", "time (UTC)", "status", "label", "test"
    );
    for r in &runs {
        let test = if r.kind == "suite" {
            format!("suite {}", r.plan.clone().unwrap_or_default())
        } else {
            r.test_names.join(",")
        };
        let _ = writeln!(
            o,
            "{:>5}  {:<20}  {:<8}  {:<20}  {:<22}  {}",
            r.id,
            r.started,
            status(r),
            r.labels.join(","),
            test,
            key_figure(&store, r)
        );
    }
    if runs.is_empty() {
        o.push_str("no stored runs\n");
    }
    print(&o)
}

pub fn show(a: ShowArgs) -> i32 {
    let store = match crate::record::open(&a.db) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let run = match store.run(a.run) {
        Ok(Some(r)) => r,
        Ok(None) => return fail(2, format!("no run {} in the store (see `stackmeter runs`)", a.run)),
        Err(e) => return fail(1, e),
    };
    let tests = match store.tests_of_run(run.id) {
        Ok(t) => t,
        Err(e) => return fail(1, e),
    };
    if run.kind == "suite" {
        return print(&crate::suite::render_stored(&run, &tests, a.json));
    }
    let mut out = String::new();
    for t in &tests {
        if a.json {
            out.push_str(&(stackmeter_results::json(&t.doc) + "\n"));
        } else {
            out.push_str(&render_text(&t.doc));
        }
    }
    print(&out)
}

/// The text a measuring command printed for `doc`: the table, or for a
/// stream the head, one line per interval and the tail it printed live.
pub fn render_text(doc: &stackmeter_results::Document) -> String {
    use stackmeter_results::Body;
    match &doc.body {
        Body::Stream {
            params,
            intervals,
            summary,
        } => {
            let mut t = stackmeter_results::stream_head(&stackmeter_results::first_line(doc), params);
            for i in intervals {
                t.push_str(&stackmeter_results::interval_line(i));
            }
            let mut tail = stackmeter_results::stream_tail(params, summary.as_deref());
            stackmeter_results::trailer(&mut tail, doc);
            t.push_str(&tail);
            t
        }
        _ => stackmeter_results::text(doc),
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn export(a: ExportArgs) -> i32 {
    let store = match crate::record::open(&a.db) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let all = match store.runs() {
        Ok(r) => r,
        Err(e) => return fail(1, e),
    };
    for id in &a.runs {
        if !all.iter().any(|r| r.id == *id) {
            return fail(2, format!("no run {id} in the store (see `stackmeter runs`)"));
        }
    }
    let chosen: Vec<&RunInfo> = all
        .iter()
        .filter(|r| a.runs.is_empty() || a.runs.contains(&r.id))
        .collect();
    let mut out = String::new();
    let mut json_runs = Vec::new();
    if a.format == ExportFormat::Csv {
        out.push_str("run,test_id,time,label,test,step,repetition,row,row_label,series,stat,unit,value\n");
    }
    for r in chosen {
        let tests = match store.tests_of_run(r.id) {
            Ok(t) => t,
            Err(e) => return fail(1, e),
        };
        let tests: Vec<_> = tests
            .into_iter()
            .filter(|t| a.label.as_ref().is_none_or(|l| &t.label == l))
            .collect();
        match a.format {
            ExportFormat::Csv => {
                for t in &tests {
                    for f in stackmeter_results::figures(&t.doc) {
                        let _ = writeln!(
                            out,
                            "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                            r.id,
                            t.id,
                            csv_field(&t.doc.env.time),
                            csv_field(&t.label),
                            t.doc.body.test_name(),
                            csv_field(&t.step),
                            t.repetition,
                            f.row,
                            csv_field(&f.row_label),
                            f.series,
                            f.stat,
                            csv_field(&f.unit),
                            f.value
                        );
                    }
                }
            }
            ExportFormat::Json => {
                let tests: Vec<serde_json::Value> = tests
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "id": t.id, "label": t.label, "step": t.step, "repetition": t.repetition,
                            "status": status(r),
                            "document": serde_json::to_value(&t.doc).unwrap_or_default(),
                        })
                    })
                    .collect();
                let mut info = serde_json::to_value(r).unwrap_or_default();
                info["status"] = status(r).into();
                info["tests"] = tests.into();
                json_runs.push(info);
            }
        }
    }
    if a.format == ExportFormat::Json {
        let doc = serde_json::json!({ "schema": stackmeter_results::SCHEMA, "runs": json_runs });
        // Cannot fail: a Value always serializes.
        out = serde_json::to_string_pretty(&doc).expect("a JSON value serializes") + "\n";
    }
    match &a.output {
        Some(path) => match std::fs::write(path, out) {
            Ok(()) => 0,
            Err(e) => fail(1, format!("cannot write {}: {e}", path.display())),
        },
        None => print(&out),
    }
}
