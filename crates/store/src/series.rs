//! The figures of many runs as the points of series: what `history`
//! reads. One query for every figure the filter keeps (a store of ten
//! thousand runs is one round trip on PostgreSQL, not one per run), the
//! runs' attributes with a second.

use crate::backend::{Conn, Value};
use crate::open::Store;
use crate::Result;
use stackmeter_results::Direction;
use std::collections::BTreeMap;

/// Which figures to read; `None` keeps all.
#[derive(Clone, Debug, Default)]
pub struct FigureFilter {
    /// Only these labels (empty: every label).
    pub labels: Vec<String>,
    /// Only this test ("rr", "stream", ...).
    pub test: Option<String>,
    /// Only runs that started at or after this time (UTC RFC 3339, or a
    /// prefix of one: a date).
    pub since: Option<String>,
    /// Only the figures marked `compared` (what `compare` sets side by
    /// side by default).
    pub compared_only: bool,
}

/// One figure of one repetition of one stored test.
#[derive(Clone, Debug, PartialEq)]
pub struct FigurePoint {
    /// The run it belongs to.
    pub run_id: i64,
    /// When the run started (UTC RFC 3339).
    pub started: String,
    /// The test's label.
    pub label: String,
    /// The test ("rr").
    pub test: String,
    /// Its plan step ("" for a single command).
    pub step: String,
    /// Its repetition in the run.
    pub repetition: usize,
    /// The row ("1 B:1 KiB").
    pub row_label: String,
    /// What was measured ("rtt").
    pub series: String,
    /// Which statistic ("p50", "value").
    pub stat: String,
    /// The unit ("us").
    pub unit: String,
    /// The figure.
    pub value: f64,
    /// Which way is better.
    pub direction: Direction,
}

impl Store {
    /// Every figure `f` keeps, of complete tests, oldest run first (runs
    /// in start order, then tests in their order).
    pub fn figure_points(&self, f: &FigureFilter) -> Result<Vec<FigurePoint>> {
        let (filter, params) = where_clause(f);
        let compared = if f.compared_only { " AND fg.compared = 1" } else { "" };
        let sql = format!(
            "SELECT r.id, r.started, t.label, t.test, t.step, t.repetition, fg.row_label, fg.series, fg.stat, fg.unit,
                    fg.value, fg.lower_is_better
             FROM figures fg JOIN tests t ON t.id = fg.test_id JOIN runs r ON r.id = t.run_id
             WHERE t.complete = 1 AND {filter}{compared}
             ORDER BY r.started, r.id, t.seq, fg.row, fg.series, fg.stat"
        );
        self.conn
            .query(&sql, params)?
            .iter()
            .map(|r| {
                Ok(FigurePoint {
                    run_id: r.int(0)?,
                    started: r.text(1)?,
                    label: r.text(2)?,
                    test: r.text(3)?,
                    step: r.text(4)?,
                    repetition: r.int(5)? as usize,
                    row_label: r.text(6)?,
                    series: r.text(7)?,
                    stat: r.text(8)?,
                    unit: r.text(9)?,
                    value: r.real(10)?,
                    direction: Direction::from_lower_is_better(r.int(11)? != 0),
                })
            })
            .collect()
    }

    /// Every attribute of every run `f` keeps (the user's and the host
    /// facts, as the `run_attributes` view has them), by run id.
    pub fn run_attributes(&self, f: &FigureFilter) -> Result<BTreeMap<i64, BTreeMap<String, String>>> {
        let (filter, params) = where_clause(f);
        let sql = format!(
            "SELECT a.run_id, a.key, a.value FROM run_attributes a
             WHERE a.run_id IN (SELECT DISTINCT t.run_id FROM tests t JOIN runs r ON r.id = t.run_id
                                WHERE t.complete = 1 AND {filter})"
        );
        let mut out: BTreeMap<i64, BTreeMap<String, String>> = BTreeMap::new();
        for r in self.conn.query(&sql, params)? {
            out.entry(r.int(0)?).or_default().insert(r.text(1)?, r.text(2)?);
        }
        Ok(out)
    }

    /// What `history --save` wrote, oldest run first.
    pub fn change_points(&self) -> Result<Vec<ChangePointRow>> {
        let sql = "SELECT found, label, test, step, row_label, figure, unit, run_id, before, after, ratio, ratio_low,
                          ratio_high, p_value, regression
                   FROM change_points ORDER BY run_id, label, test, step, row_label, figure";
        self.conn
            .query(sql, vec![])?
            .iter()
            .map(|r| {
                Ok(ChangePointRow {
                    found: r.text(0)?,
                    label: r.text(1)?,
                    test: r.text(2)?,
                    step: r.text(3)?,
                    row_label: r.text(4)?,
                    figure: r.text(5)?,
                    unit: r.text(6)?,
                    run_id: r.int(7)?,
                    before: r.real(8)?,
                    after: r.real(9)?,
                    ratio: r.real(10)?,
                    ratio_low: r.real(11)?,
                    ratio_high: r.real(12)?,
                    p_value: r.real(13)?,
                    regression: r.int(14)? != 0,
                })
            })
            .collect()
    }

    /// Writes change points for a dashboard: each one replaces what an
    /// earlier `history --save` wrote for the same series and run.
    pub fn save_change_points(&mut self, rows: &[ChangePointRow]) -> Result<usize> {
        if rows.is_empty() {
            return Ok(0);
        }
        self.conn.transaction(|c| {
            for r in rows {
                save_one(c, r)?;
            }
            Ok(rows.len())
        })
    }
}

/// A change point as the `change_points` table keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangePointRow {
    /// When `history` found it (UTC RFC 3339).
    pub found: String,
    /// The series: label, test, step, row, figure ("rtt p50") and unit.
    pub label: String,
    pub test: String,
    pub step: String,
    pub row_label: String,
    pub figure: String,
    pub unit: String,
    /// The first run after the change.
    pub run_id: i64,
    /// Median before and after.
    pub before: f64,
    pub after: f64,
    /// After / before, with its 95% interval.
    pub ratio: f64,
    pub ratio_low: f64,
    pub ratio_high: f64,
    pub p_value: f64,
    /// Worse, past the tolerance.
    pub regression: bool,
}

fn save_one(c: &Conn, r: &ChangePointRow) -> Result<()> {
    c.exec(
        "INSERT INTO change_points (found, label, test, step, row_label, figure, unit, run_id, before, after,
                                    ratio, ratio_low, ratio_high, p_value, regression)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
         ON CONFLICT (label, test, step, row_label, figure, run_id) DO UPDATE SET found = excluded.found,
             unit = excluded.unit, before = excluded.before, after = excluded.after, ratio = excluded.ratio,
             ratio_low = excluded.ratio_low, ratio_high = excluded.ratio_high, p_value = excluded.p_value,
             regression = excluded.regression",
        crate::backend::params![
            r.found.as_str(),
            r.label.as_str(),
            r.test.as_str(),
            r.step.as_str(),
            r.row_label.as_str(),
            r.figure.as_str(),
            r.unit.as_str(),
            r.run_id,
            r.before,
            r.after,
            r.ratio,
            r.ratio_low,
            r.ratio_high,
            r.p_value,
            r.regression
        ],
    )?;
    Ok(())
}

/// The filter as SQL over `t` (tests) and `r` (runs), with its parameters
/// numbered from 1.
fn where_clause(f: &FigureFilter) -> (String, Vec<Value>) {
    let mut parts = vec!["1 = 1".to_string()];
    let mut params: Vec<Value> = Vec::new();
    if !f.labels.is_empty() {
        let marks: Vec<String> = f
            .labels
            .iter()
            .map(|l| {
                params.push(Value::from(l.as_str()));
                format!("?{}", params.len())
            })
            .collect();
        parts.push(format!("t.label IN ({})", marks.join(", ")));
    }
    if let Some(test) = &f.test {
        params.push(Value::from(test.as_str()));
        parts.push(format!("t.test = ?{}", params.len()));
    }
    if let Some(since) = &f.since {
        params.push(Value::from(since.as_str()));
        parts.push(format!("r.started >= ?{}", params.len()));
    }
    (parts.join(" AND "), params)
}
