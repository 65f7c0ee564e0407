//! Writing a run and its tests straight into an open store (a measuring
//! command that may spool goes through `spool::Writer`, which calls the
//! same row functions).

use crate::open::Store;
use crate::rows::{self, TestRow};
use crate::run::Run;
use crate::stored::NewTest;
use crate::Result;

impl Store {
    /// Starts a run; its status is `running` until [`Store::finish_run`].
    pub fn begin_run(&self, r: &Run) -> Result<i64> {
        rows::insert_run(&self.conn, r)
    }

    /// Writes one test with its figures, histograms and intervals, in one
    /// transaction (committed when this returns).
    pub fn add_test(&mut self, run: i64, t: &NewTest) -> Result<i64> {
        let row = TestRow::new(t, crate::uid::new_uid())?;
        self.conn.transaction(|c| rows::insert_test(c, run, &row))
    }

    /// Ends a run with `status` ("complete", "partial", "failed") at `time`.
    pub fn finish_run(&self, run: i64, status: &str, time: &str) -> Result<()> {
        rows::set_status(&self.conn, run, status, Some(time))
    }
}
