//! `store check`: the whole store's integrity, as a list of problems.

use crate::backend::Conn;
use crate::migrations::MIGRATIONS;
use crate::open::Store;
use crate::Result;
use stackmeter_results::Document;

/// What [`Store::check`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Check {
    /// Runs stored.
    pub runs: usize,
    /// Tests stored.
    pub tests: usize,
    /// One line per problem; empty when the store is sound.
    pub problems: Vec<String>,
}

impl Store {
    /// Checks the whole store. SQLite: its `integrity_check` (every page,
    /// index and constraint) and `foreign_key_check` (no figure,
    /// histogram, interval or test without its parent). PostgreSQL keeps
    /// its own pages and enforces the foreign keys itself, so there: the
    /// schema version, and a query per child table for rows without their
    /// parent (which only a session that switched the checks off can
    /// leave). On both: every stored document reads back. Problems are
    /// listed, not returned as errors; an error means the check itself
    /// could not run.
    pub fn check(&self) -> Result<Check> {
        let mut problems = Vec::new();
        match &self.conn {
            Conn::Sqlite(_) => {
                for r in self.conn.query("PRAGMA integrity_check", vec![])? {
                    let line = r.text(0)?;
                    if line != "ok" {
                        problems.push(format!("integrity_check: {line}"));
                    }
                }
                for r in self.conn.query("PRAGMA foreign_key_check", vec![])? {
                    problems.push(format!(
                        "foreign_key_check: {} row {} has no {} row",
                        r.text(0)?,
                        r.opt_int(1)?.map_or("?".into(), |id| id.to_string()),
                        r.text(2)?
                    ));
                }
            }
            Conn::Postgres(_) => {
                let (found, known) = (self.version()?, MIGRATIONS.len() as i64);
                if found != known {
                    problems.push(format!("schema version {found}, expected {known}"));
                }
                let orphans = [
                    ("tests", "run_id", "runs"),
                    ("figures", "test_id", "tests"),
                    ("histograms", "test_id", "tests"),
                    ("intervals", "test_id", "tests"),
                ];
                for (child, key, parent) in orphans {
                    let sql = format!(
                        "SELECT c.{key}, COUNT(*) FROM {child} c LEFT JOIN {parent} p ON p.id = c.{key}
                         WHERE p.id IS NULL GROUP BY c.{key} ORDER BY c.{key}"
                    );
                    for r in self.conn.query(&sql, vec![])? {
                        problems.push(format!(
                            "foreign keys: {} {child} row(s) point at {parent} row {}, which does not exist",
                            r.int(1)?,
                            r.int(0)?
                        ));
                    }
                }
            }
        }
        let mut tests = 0;
        for r in self
            .conn
            .query("SELECT id, run_id, document FROM tests ORDER BY id", vec![])?
        {
            tests += 1;
            let (id, run) = (r.int(0)?, r.int(1)?);
            if let Err(e) = serde_json::from_str::<Document>(&r.text(2)?) {
                problems.push(format!("test {id} of run {run}: document does not read: {e}"));
            }
        }
        let runs = self.conn.query_row("SELECT COUNT(*) FROM runs", vec![])?.int(0)?;
        Ok(Check {
            runs: runs as usize,
            tests,
            problems,
        })
    }
}
