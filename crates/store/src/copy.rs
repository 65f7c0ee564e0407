//! `store copy SRC DST`: a whole history from one store to another, either
//! database to either. Every run goes across with its tests, figures,
//! histograms and intervals, in its own transaction on the destination;
//! the destination assigns new ids and every reference (test to run, row
//! to test) is rebuilt from them. A run is recognised by its `uid`: one the
//! destination already has is not copied again, only the tests it lacks
//! are added (by their own `uid`) and its status brought up to date, so
//! copying twice, or after an interrupted copy, duplicates nothing.

use crate::backend::{params, Conn};
use crate::open::Store;
use crate::read::{read_histograms, read_intervals};
use crate::rows::{self, read_run, TestRow, RUN_COLUMNS, TEST_COLUMNS};
use crate::run::Run;
use crate::Result;
use stackmeter_results::Figure;

/// What a copy did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Copied {
    /// Runs new to the destination.
    pub runs: usize,
    /// Tests written to the destination (of new runs, or missing from runs it had).
    pub tests: usize,
    /// Runs the destination already had whole.
    pub already: usize,
}

/// Copies every run of `src` into `dst`, oldest first.
pub fn copy(src: &Store, dst: &mut Store) -> Result<Copied> {
    let mut done = Copied::default();
    for (id, run) in read_runs(&src.conn)? {
        let tests = read_tests(&src.conn, id)?;
        let (new_run, added) = dst.conn.transaction(|c| merge_run(c, &run, &tests))?;
        match (new_run, added) {
            (true, n) => {
                done.runs += 1;
                done.tests += n;
            }
            (false, 0) => done.already += 1,
            (false, n) => done.tests += n,
        }
    }
    Ok(done)
}

/// Puts `run` and `tests` into the store `c` (inside a transaction): the
/// run if it is not there, each test it lacks, and the run's status and
/// end. Returns whether the run was new and how many tests were written.
/// `store flush` sends spooled runs through here too.
pub(crate) fn merge_run(c: &Conn, run: &Run, tests: &[TestRow]) -> Result<(bool, usize)> {
    let (id, new) = match find_run(c, &run.uid)? {
        Some(id) => (id, false),
        None => (rows::insert_run(c, run)?, true),
    };
    let mut added = 0;
    for t in tests {
        if !new && has_test(c, &t.uid)? {
            continue;
        }
        rows::insert_test(c, id, t)?;
        added += 1;
    }
    if !new && run.status != "running" {
        rows::set_status(c, id, &run.status, run.finished.as_deref())?;
    }
    Ok((new, added))
}

/// The id of the run with identity `uid`, if the store has it.
pub(crate) fn find_run(c: &Conn, uid: &str) -> Result<Option<i64>> {
    c.query_opt("SELECT id FROM runs WHERE uid = ?1", params![uid])?
        .map(|r| r.int(0))
        .transpose()
}

/// Whether the store has the test with identity `uid`.
pub(crate) fn has_test(c: &Conn, uid: &str) -> Result<bool> {
    Ok(c.query_opt("SELECT 1 FROM tests WHERE uid = ?1", params![uid])?
        .is_some())
}

/// Every run's id and row, oldest first.
pub(crate) fn read_runs(c: &Conn) -> Result<Vec<(i64, Run)>> {
    // The id last, after the columns `read_run` reads.
    let sql = format!("SELECT {RUN_COLUMNS}, id FROM runs ORDER BY id");
    let mut attrs = rows::read_attrs(c, "1 = 1", vec![])?;
    c.query(&sql, vec![])?
        .iter()
        .map(|r| {
            let id = r.int(14)?;
            let mut run = read_run(r)?;
            run.attrs = attrs.remove(&id).unwrap_or_default();
            Ok((id, run))
        })
        .collect()
}

/// Every test of run `run` with its figures, histograms and intervals, in order.
pub(crate) fn read_tests(c: &Conn, run: i64) -> Result<Vec<TestRow>> {
    let sql = format!("SELECT id, {TEST_COLUMNS} FROM tests WHERE run_id = ?1 ORDER BY seq");
    let mut out = Vec::new();
    for r in c.query(&sql, params![run])? {
        let id = r.int(0)?;
        let figures = c
            .query(
                "SELECT row, row_label, series, stat, unit, value, lower_is_better, compared
                 FROM figures WHERE test_id = ?1 ORDER BY row, series, stat",
                params![id],
            )?
            .iter()
            .map(|f| {
                Ok(Figure {
                    row: f.int(0)? as usize,
                    row_label: f.text(1)?,
                    series: f.text(2)?,
                    stat: f.text(3)?,
                    unit: f.text(4)?,
                    value: f.real(5)?,
                    direction: stackmeter_results::Direction::from_lower_is_better(f.int(6)? != 0),
                    compared: f.int(7)? != 0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        out.push(TestRow {
            uid: r.text(1)?,
            label: r.text(2)?,
            repetition: r.int(3)?,
            step: r.text(4)?,
            test: r.text(5)?,
            started: r.text(6)?,
            target_name: r.text(7)?,
            target_address: r.text(8)?,
            embedded: r.int(9)? != 0,
            client_cpu: r.opt_int(10)?,
            responder_cpu: r.opt_int(11)?,
            complete: r.int(12)? != 0,
            error: r.opt_text(13)?,
            params: r.text(14)?,
            document: r.text(15)?,
            figures,
            histograms: read_histograms(c, id)?,
            intervals: read_intervals(c, id)?,
        });
    }
    Ok(out)
}
