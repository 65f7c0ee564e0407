//! A run and a test as the rows the store writes: what `begin_run` and
//! `add_test` insert, what the spool keeps on disk when the database cannot
//! be reached, and what `store copy` reads from one store and writes to
//! another. One insert path for all three, so a spooled or copied test is
//! stored exactly as one written directly.

use crate::backend::{params, Conn, Row};
use crate::run::Run;
use crate::stored::{Histogram, NewTest, StoredInterval};
use crate::{Result, StoreError};
use serde::{Deserialize, Serialize};
use stackmeter_results::Figure;

pub(crate) const RUN_COLUMNS: &str =
    "uid, started, finished, kind, plan, status, pid, tool_version, hostname, kernel, cpu_model, cpus, command, settings";

/// A run's row from the columns of [`RUN_COLUMNS`], in order (its
/// attributes are read apart: [`read_attrs`]).
pub(crate) fn read_run(r: &Row) -> Result<Run> {
    Ok(Run {
        // Empty for a run stored before identities, until migrated.
        uid: r.opt_text(0)?.unwrap_or_default(),
        started: r.text(1)?,
        finished: r.opt_text(2)?,
        kind: r.text(3)?,
        plan: r.opt_text(4)?,
        status: r.text(5)?,
        pid: r.int(6)? as u32,
        tool_version: r.text(7)?,
        hostname: r.text(8)?,
        kernel: r.text(9)?,
        cpu_model: r.text(10)?,
        cpus: r.int(11)? as u32,
        command: serde_json::from_str(&r.text(12)?).unwrap_or_default(),
        settings: serde_json::from_str(&r.text(13)?).unwrap_or_default(),
        attrs: Default::default(),
    })
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
    pub figures: Vec<Figure>,
    pub histograms: Vec<Histogram>,
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
            figures: stackmeter_results::figures(doc),
            histograms: t.histograms.clone(),
            intervals: t.intervals.clone(),
        })
    }
}

/// Inserts a run; the database assigns its id.
pub(crate) fn insert_run(c: &Conn, r: &Run) -> Result<i64> {
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
            r.pid as i64,
            &r.tool_version,
            &r.hostname,
            &r.kernel,
            &r.cpu_model,
            r.cpus as i64,
            json(&r.command),
            r.settings.to_string(),
        ],
    )?
    .int(0)
    .and_then(|id| {
        insert_attrs(c, id, &r.attrs)?;
        Ok(id)
    })
}

/// Inserts a run's attributes.
fn insert_attrs(c: &Conn, run: i64, attrs: &std::collections::BTreeMap<String, String>) -> Result<()> {
    if attrs.is_empty() {
        return Ok(());
    }
    insert_many(
        c,
        "INSERT INTO run_attrs (run_id, key, value)",
        "ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value",
        attrs
            .iter()
            .map(|(k, v)| params![run, k.as_str(), v.as_str()])
            .collect(),
    )
}

/// The attributes of the runs `filter` selects (a condition on `r`, the
/// runs table), by run id.
pub(crate) fn read_attrs(
    c: &Conn,
    filter: &str,
    p: Vec<crate::backend::Value>,
) -> Result<std::collections::HashMap<i64, std::collections::BTreeMap<String, String>>> {
    let sql = format!("SELECT a.run_id, a.key, a.value FROM run_attrs a JOIN runs r ON r.id = a.run_id WHERE {filter}");
    let mut out: std::collections::HashMap<i64, std::collections::BTreeMap<String, String>> = Default::default();
    for row in c.query(&sql, p)? {
        out.entry(row.int(0)?).or_default().insert(row.text(1)?, row.text(2)?);
    }
    Ok(out)
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
                    f.row as i64,
                    &f.row_label,
                    &f.series,
                    &f.stat,
                    &f.unit,
                    f.value,
                    f.direction.lower_is_better(),
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

/// Replaces a run's settings (what a run learnt while it ran: why a run
/// until decided stopped).
pub(crate) fn set_settings(c: &Conn, run: i64, settings: &serde_json::Value) -> Result<()> {
    c.exec(
        "UPDATE runs SET settings = ?2 WHERE id = ?1",
        params![run, settings.to_string()],
    )?;
    Ok(())
}

pub(crate) fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    // Cannot fail: documents and string lists hold no non-string map keys.
    serde_json::to_string(v).expect("a document serializes")
}
