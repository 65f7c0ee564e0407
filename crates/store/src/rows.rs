//! A run and a test as the rows the store writes: what `begin_run` and
//! `add_test` insert, what the spool keeps on disk when the database cannot
//! be reached, and what `store copy` reads from one store and writes to
//! another. One insert path for all three, so a spooled or copied test is
//! stored exactly as one written directly.

use crate::backend::{params, Conn};
use crate::{json, NewHistogram, NewRun, NewTest, Result, StoreError, StoredInterval};
use serde::{Deserialize, Serialize};

/// A run's row, with the identity that survives copies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunRow {
    pub uid: String,
    pub started: String,
    pub finished: Option<String>,
    pub kind: String,
    pub plan: Option<String>,
    pub status: String,
    pub pid: i64,
    pub tool_version: String,
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cpus: i64,
    /// JSON array of arguments, as stored.
    pub command: String,
    /// JSON object, as stored.
    pub settings: String,
}

pub(crate) const RUN_COLUMNS: &str =
    "uid, started, finished, kind, plan, status, pid, tool_version, hostname, kernel, cpu_model, cpus, command, settings";

impl RunRow {
    /// A new run, `running`.
    pub fn new(r: &NewRun, uid: String) -> RunRow {
        RunRow {
            uid,
            started: r.env.time.clone(),
            finished: None,
            kind: r.kind.into(),
            plan: r.plan.map(Into::into),
            status: "running".into(),
            pid: r.pid as i64,
            tool_version: r.env.version.clone(),
            hostname: r.env.hostname.clone(),
            kernel: r.env.kernel.clone(),
            cpu_model: r.env.cpu_model.clone(),
            cpus: r.env.cpus as i64,
            command: json(&r.env.command),
            settings: r.settings.to_string(),
        }
    }
}

/// A figure's row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct FigureRow {
    pub row: i64,
    pub row_label: String,
    pub series: String,
    pub stat: String,
    pub unit: String,
    pub value: f64,
    pub lower_is_better: bool,
    pub compared: bool,
}

/// A test's row with its figures, histograms and intervals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct TestRow {
    pub uid: String,
    pub label: String,
    pub repetition: i64,
    pub step: String,
    pub test: String,
    pub started: String,
    pub target_name: String,
    pub target_address: String,
    pub embedded: bool,
    pub client_cpu: Option<i64>,
    pub responder_cpu: Option<i64>,
    pub complete: bool,
    pub error: Option<String>,
    /// JSON, as stored.
    pub params: String,
    /// The whole document, JSON, as stored: byte for byte what `show` reads.
    pub document: String,
    pub figures: Vec<FigureRow>,
    pub histograms: Vec<NewHistogram>,
    pub intervals: Vec<StoredInterval>,
}

pub(crate) const TEST_COLUMNS: &str =
    "uid, label, repetition, step, test, started, target_name, target_address, embedded, \
                            client_cpu, responder_cpu, complete, error, params, document";

impl TestRow {
    /// The rows of a measured test.
    pub fn new(t: &NewTest, uid: String) -> Result<TestRow> {
        let doc = t.doc;
        let body = serde_json::to_value(&doc.body).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        Ok(TestRow {
            uid,
            label: t.label.into(),
            repetition: t.repetition as i64,
            step: t.step.into(),
            test: doc.body.test_name().into(),
            started: doc.env.time.clone(),
            target_name: doc.target.name.clone(),
            target_address: doc.target.address.clone(),
            embedded: doc.target.embedded,
            client_cpu: doc.placement.client_cpu.map(|c| c as i64),
            responder_cpu: doc.placement.responder_cpu.map(|c| c as i64),
            complete: doc.complete,
            error: doc.error.clone(),
            params: body
                .get("params")
                .map(serde_json::Value::to_string)
                .unwrap_or_else(|| "{}".into()),
            document: json(doc),
            figures: stackmeter_results::figures(doc)
                .into_iter()
                .map(|f| FigureRow {
                    row: f.row as i64,
                    row_label: f.row_label,
                    series: f.series,
                    stat: f.stat,
                    unit: f.unit,
                    value: f.value,
                    lower_is_better: f.lower_is_better,
                    compared: f.compared,
                })
                .collect(),
            histograms: t.histograms.clone(),
            intervals: t.intervals.clone(),
        })
    }
}

/// Inserts a run; the database assigns its id.
pub(crate) fn insert_run(c: &Conn, r: &RunRow) -> Result<i64> {
    let sql = format!(
        "INSERT INTO runs ({RUN_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) RETURNING id"
    );
    c.query_row(
        &sql,
        params![
            &r.uid,
            &r.started,
            r.finished.clone(),
            &r.kind,
            r.plan.clone(),
            &r.status,
            r.pid,
            &r.tool_version,
            &r.hostname,
            &r.kernel,
            &r.cpu_model,
            r.cpus,
            &r.command,
            &r.settings,
        ],
    )?
    .int(0)
}

/// Inserts a test, its figures, histograms and intervals, at the end of
/// run `run` (call inside a transaction).
pub(crate) fn insert_test(c: &Conn, run: i64, t: &TestRow) -> Result<i64> {
    let seq = c
        .query_row("SELECT COUNT(*) FROM tests WHERE run_id = ?1", params![run])?
        .int(0)?;
    let sql = format!(
        "INSERT INTO tests (run_id, seq, {TEST_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17) RETURNING id"
    );
    let id = c
        .query_row(
            &sql,
            params![
                run,
                seq,
                &t.uid,
                &t.label,
                t.repetition,
                &t.step,
                &t.test,
                &t.started,
                &t.target_name,
                &t.target_address,
                t.embedded,
                t.client_cpu,
                t.responder_cpu,
                t.complete,
                t.error.clone(),
                &t.params,
                &t.document,
            ],
        )?
        .int(0)?;
    // A later row with the same key replaces an earlier one, as SQLite's
    // INSERT OR REPLACE did before the store spoke two databases; the rows
    // go in a few statements, not one each (a round trip each on
    // PostgreSQL: a stream's intervals are hundreds of rows).
    let figures = last_per_key(&t.figures, |f| (f.row, f.series.clone(), f.stat.clone()));
    insert_many(
        c,
        "INSERT INTO figures (test_id, row, row_label, series, stat, unit, value, lower_is_better, compared)",
        "ON CONFLICT (test_id, row, series, stat) DO UPDATE SET row_label = excluded.row_label,
             unit = excluded.unit, value = excluded.value, lower_is_better = excluded.lower_is_better,
             compared = excluded.compared",
        figures
            .iter()
            .map(|f| {
                params![
                    id,
                    f.row,
                    &f.row_label,
                    &f.series,
                    &f.stat,
                    &f.unit,
                    f.value,
                    f.lower_is_better,
                    f.compared
                ]
            })
            .collect(),
    )?;
    let histograms = last_per_key(&t.histograms, |h| (h.row, h.metric.clone()));
    insert_many(
        c,
        "INSERT INTO histograms (test_id, row, metric, unit, encoding, data)",
        "ON CONFLICT (test_id, row, metric) DO UPDATE SET unit = excluded.unit,
             encoding = excluded.encoding, data = excluded.data",
        histograms
            .iter()
            .map(|h| params![id, h.row, &h.metric, &h.unit, &h.encoding, h.data.clone()])
            .collect(),
    )?;
    let intervals = last_per_key(&t.intervals, |i| (i.row, i.series.clone(), i.seq));
    insert_many(
        c,
        "INSERT INTO intervals (test_id, row, series, seq, start_s, end_s, value, unit)",
        "ON CONFLICT (test_id, row, series, seq) DO UPDATE SET start_s = excluded.start_s,
             end_s = excluded.end_s, value = excluded.value, unit = excluded.unit",
        intervals
            .iter()
            .map(|i| params![id, i.row, &i.series, i.seq, i.start_s, i.end_s, i.value, &i.unit])
            .collect(),
    )?;
    Ok(id)
}

/// The rows of `all`, the last of each key kept, in their order.
fn last_per_key<T, K: Eq + std::hash::Hash>(all: &[T], key: impl Fn(&T) -> K) -> Vec<&T> {
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<&T> = all.iter().rev().filter(|x| seen.insert(key(x))).collect();
    out.reverse();
    out
}

/// Inserts `rows` (each the same number of values) with `insert` (the
/// statement up to VALUES) and `conflict`, a few hundred rows a statement:
/// under both databases' limits on parameters. One key per statement at
/// most (PostgreSQL refuses to update a row twice in one statement), which
/// [`last_per_key`] makes sure of.
fn insert_many(c: &Conn, insert: &str, conflict: &str, rows: Vec<Vec<crate::backend::Value>>) -> Result<()> {
    const ROWS: usize = 400;
    for chunk in rows.chunks(ROWS) {
        let width = chunk[0].len();
        let mut sql = format!("{insert} VALUES ");
        for r in 0..chunk.len() {
            sql.push_str(if r == 0 { "(" } else { ", (" });
            let marks: Vec<String> = (1..=width).map(|i| format!("?{}", r * width + i)).collect();
            sql.push_str(&marks.join(", "));
            sql.push(')');
        }
        sql.push(' ');
        sql.push_str(conflict);
        c.exec(&sql, chunk.concat())?;
    }
    Ok(())
}

/// Sets a run's status and end time.
pub(crate) fn set_status(c: &Conn, run: i64, status: &str, finished: Option<&str>) -> Result<()> {
    c.exec(
        "UPDATE runs SET status = ?2, finished = ?3 WHERE id = ?1",
        params![run, status, finished],
    )?;
    Ok(())
}
