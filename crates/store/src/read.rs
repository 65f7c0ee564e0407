//! Reading a store back: runs as listed, the tests of a run or a label,
//! a test's histograms and interval series.

use crate::backend::{self, params, Conn};
use crate::open::Store;
use crate::rows::{read_run, RUN_COLUMNS};
use crate::run::StoredRun;
use crate::stored::{Histogram, StoredInterval, StoredTest};
use crate::{Result, StoreError};

impl Store {
    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<StoredRun>> {
        self.query_runs("1 = 1", vec![])
    }

    /// One run.
    pub fn run(&self, id: i64) -> Result<Option<StoredRun>> {
        Ok(self.query_runs("r.id = ?1", params![id])?.pop())
    }

    fn query_runs(&self, filter: &str, p: Vec<backend::Value>) -> Result<Vec<StoredRun>> {
        // The id and the test count after the columns `read_run` reads.
        let sql = format!(
            "SELECT {RUN_COLUMNS}, r.id, (SELECT COUNT(*) FROM tests t WHERE t.run_id = r.id)
             FROM runs r WHERE {filter} ORDER BY r.id"
        );
        let mut out = Vec::new();
        for r in self.conn.query(&sql, p.clone())? {
            out.push(StoredRun {
                id: r.int(14)?,
                run: read_run(&r)?,
                tests: r.int(15)? as usize,
                labels: Vec::new(),
                test_names: Vec::new(),
            });
        }
        let mut attrs = crate::rows::read_attrs(&self.conn, filter, p.clone())?;
        for r in &mut out {
            r.run.attrs = attrs.remove(&r.id).unwrap_or_default();
        }
        // Labels and test names of every listed run in one query (one per
        // run would cost a round trip each on PostgreSQL).
        let sql = format!(
            "SELECT t.run_id, t.label, t.test FROM tests t JOIN runs r ON r.id = t.run_id WHERE {filter} ORDER BY t.run_id, t.seq"
        );
        let mut at = 0;
        for row in self.conn.query(&sql, p)? {
            let (run, label, test) = (row.int(0)?, row.text(1)?, row.text(2)?);
            while at < out.len() && out[at].id < run {
                at += 1;
            }
            let Some(info) = out.get_mut(at).filter(|i| i.id == run) else {
                continue;
            };
            if !info.labels.contains(&label) {
                info.labels.push(label);
            }
            if !info.test_names.contains(&test) {
                info.test_names.push(test);
            }
        }
        Ok(out)
    }

    /// The tests of a run, in order.
    pub fn tests_of_run(&self, run: i64) -> Result<Vec<StoredTest>> {
        self.query_tests("run_id = ?1", params![run])
    }

    /// Every test with this label, across runs, oldest first.
    pub fn tests_with_label(&self, label: &str) -> Result<Vec<StoredTest>> {
        self.query_tests("label = ?1", params![label])
    }

    fn query_tests(&self, filter: &str, p: Vec<backend::Value>) -> Result<Vec<StoredTest>> {
        let sql = format!(
            "SELECT id, run_id, seq, label, repetition, step, document FROM tests WHERE {filter} ORDER BY run_id, seq"
        );
        let mut out = Vec::new();
        for r in self.conn.query(&sql, p)? {
            let (id, run_id) = (r.int(0)?, r.int(1)?);
            let doc = serde_json::from_str(&r.text(6)?)
                .map_err(|e| StoreError::Corrupt(format!("test {id} of run {run_id}: document does not read: {e}")))?;
            out.push(StoredTest {
                id,
                run_id,
                seq: r.int(2)?,
                label: r.text(3)?,
                repetition: r.int(4)? as usize,
                step: r.text(5)?,
                doc,
            });
        }
        Ok(out)
    }

    /// The histograms of a test.
    pub fn histograms(&self, test: i64) -> Result<Vec<Histogram>> {
        read_histograms(&self.conn, test)
    }

    /// The per-interval series of a test.
    pub fn intervals(&self, test: i64) -> Result<Vec<StoredInterval>> {
        read_intervals(&self.conn, test)
    }

    /// The status and test count of the run with identity `uid`, if the
    /// store has it (what a writer reads back to confirm its run).
    pub fn run_by_uid(&self, uid: &str) -> Result<Option<(String, usize)>> {
        self.conn
            .query_opt(
                "SELECT r.status, (SELECT COUNT(*) FROM tests t WHERE t.run_id = r.id) FROM runs r WHERE r.uid = ?1",
                params![uid],
            )?
            .map(|r| Ok((r.text(0)?, r.int(1)? as usize)))
            .transpose()
    }

    /// How many tests of repetition `repetition` the runs of kind `kind`
    /// named `plan` hold together (every client's part of one fleet run):
    /// what a fleet client waits on between rounds. Reads no document.
    pub fn count_repetition(&self, kind: &str, plan: &str, repetition: usize) -> Result<usize> {
        let row = self.conn.query_opt(
            "SELECT COUNT(*) FROM tests t JOIN runs r ON r.id = t.run_id WHERE r.kind = ?1 AND r.plan = ?2 AND t.repetition = ?3",
            params![kind, plan, repetition as i64],
        )?;
        Ok(match row {
            Some(r) => r.int(0)? as usize,
            None => 0,
        })
    }

    /// Whether a label exists.
    pub fn has_label(&self, label: &str) -> Result<bool> {
        Ok(self
            .conn
            .query_opt("SELECT 1 FROM tests WHERE label = ?1 LIMIT 1", params![label])?
            .is_some())
    }
}

pub(crate) fn read_histograms(c: &Conn, test: i64) -> Result<Vec<Histogram>> {
    c.query(
        "SELECT row, metric, unit, encoding, data FROM histograms WHERE test_id = ?1 ORDER BY row, metric",
        params![test],
    )?
    .iter()
    .map(|r| {
        Ok(Histogram {
            row: r.int(0)? as usize,
            metric: r.text(1)?,
            unit: r.text(2)?,
            encoding: r.text(3)?,
            data: r.blob(4)?,
        })
    })
    .collect()
}

pub(crate) fn read_intervals(c: &Conn, test: i64) -> Result<Vec<StoredInterval>> {
    c.query(
        "SELECT row, series, seq, start_s, end_s, value, unit FROM intervals WHERE test_id = ?1 ORDER BY row, series, seq",
        params![test],
    )?
    .iter()
    .map(|r| {
        Ok(StoredInterval {
            row: r.int(0)? as usize,
            series: r.text(1)?,
            seq: r.int(2)? as usize,
            start_s: r.real(3)?,
            end_s: r.real(4)?,
            value: r.real(5)?,
            unit: r.text(6)?,
        })
    })
    .collect()
}
