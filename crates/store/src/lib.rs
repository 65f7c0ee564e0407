//! The results store: every run of every measuring command in one SQLite
//! file, so results are kept and reused as baselines (seed 001).
//!
//! A run is one command (`rr`, `suite`, ...); it holds tests, one per
//! measured document. Each test is written in its own transaction as soon
//! as it completes, with its whole `stackmeter/1` document (so `show`
//! re-renders it and new test types need no new columns), its figures as
//! rows (so they can be queried), its full histograms (HdrHistogram V2
//! bytes) and any per-interval series. A run stays `running` until its
//! command ends it as `complete`, `partial` (interrupted, or a test broke
//! off) or `failed`; a run left `running` by a dead process was cut short.
//!
//! The schema is versioned (`PRAGMA user_version`) and migrated on open
//! (`schema.rs`); `schema.sql` is the golden file of the result.

mod schema;

use rusqlite::{params, Connection, OptionalExtension};
use stackmeter_results::{Document, Env};
use std::path::{Path, PathBuf};

pub use schema::MIGRATIONS;

/// Why the store could not be used.
#[derive(Debug)]
pub enum StoreError {
    /// The file or its folder could not be opened or created.
    Open {
        /// The database path.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The file was written by a newer stackmeter (schema version above
    /// what this one knows): upgrade stackmeter or use another `--db`.
    TooNew {
        /// Version found in the file.
        found: i64,
        /// Newest version this build knows.
        known: i64,
    },
    /// A query failed.
    Sqlite(rusqlite::Error),
    /// A stored document does not read back (hand-edited or damaged file).
    Corrupt(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Open { path, reason } => write!(f, "cannot open results store {}: {reason}", path.display()),
            StoreError::TooNew { found, known } => write!(
                f,
                "results store has schema version {found}, this stackmeter knows up to {known}: upgrade stackmeter or pass another --db"
            ),
            StoreError::Sqlite(e) => write!(f, "results store: {e}"),
            StoreError::Corrupt(what) => write!(f, "results store: {what}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sqlite(e)
    }
}

/// Shorthand.
pub type Result<T> = std::result::Result<T, StoreError>;

/// Where the store lives when no `--db` is given: `$STACKMETER_DB`, else
/// `$XDG_DATA_HOME/stackmeter/results.db`, else
/// `$HOME/.local/share/stackmeter/results.db`. `var` looks up one
/// environment variable (empty counts as unset).
pub fn default_path(var: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let get = |k: &str| var(k).filter(|v| !v.is_empty());
    if let Some(p) = get("STACKMETER_DB") {
        return Some(PathBuf::from(p));
    }
    let base = match get("XDG_DATA_HOME") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(get("HOME")?).join(".local/share"),
    };
    Some(base.join("stackmeter").join("results.db"))
}

/// An open store.
pub struct Store {
    conn: Connection,
}

/// What a run is, when it starts.
pub struct NewRun<'a> {
    /// "single" or "suite".
    pub kind: &'a str,
    /// Suite plan name or file.
    pub plan: Option<&'a str>,
    /// Host, tool and command line.
    pub env: &'a Env,
    /// Suite settings (repeat, quick, ...) as JSON; `{}` for a single command.
    pub settings: serde_json::Value,
    /// Writing process.
    pub pid: u32,
}

/// One full distribution to keep with a test.
pub struct NewHistogram {
    /// Row index in the document.
    pub row: usize,
    /// JSON key of the figure it backs.
    pub metric: String,
    /// Unit of the recorded values ("ns").
    pub unit: String,
    /// Encoding name of `data`.
    pub encoding: String,
    /// The bytes.
    pub data: Vec<u8>,
}

/// One point of a per-interval series.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Interval {
    /// Row index in the document.
    pub row: usize,
    /// Series name ("total", "sent", "received").
    pub series: String,
    /// Interval number from 0.
    pub seq: usize,
    /// Start, seconds from the test's start.
    pub start_s: f64,
    /// End, seconds from the test's start.
    pub end_s: f64,
    /// The value over the interval.
    pub value: f64,
    /// Its unit.
    pub unit: String,
}

/// One test to write.
pub struct NewTest<'a> {
    /// Target label (`--label`, or the suite's LABEL=ADDR).
    pub label: &'a str,
    /// Repetition number from 0.
    pub repetition: usize,
    /// Plan step ("" for a single command).
    pub step: &'a str,
    /// The document as printed.
    pub doc: &'a Document,
    /// Its histograms.
    pub histograms: Vec<NewHistogram>,
    /// Its per-interval series.
    pub intervals: Vec<Interval>,
}

/// A run as listed.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunInfo {
    /// Run id.
    pub id: i64,
    /// Start, UTC RFC 3339.
    pub started: String,
    /// End, if it ended.
    pub finished: Option<String>,
    /// "single" or "suite".
    pub kind: String,
    /// Suite plan.
    pub plan: Option<String>,
    /// As stored: "running", "complete", "partial", "failed".
    pub status: String,
    /// Writing process.
    pub pid: u32,
    /// Host that ran it.
    pub hostname: String,
    /// Tool version.
    pub tool_version: String,
    /// Command line.
    pub command: Vec<String>,
    /// Suite settings.
    pub settings: serde_json::Value,
    /// Tests stored.
    pub tests: usize,
    /// Distinct labels, in order of first appearance.
    pub labels: Vec<String>,
    /// Distinct test names, in order of first appearance.
    pub test_names: Vec<String>,
}

/// A stored test.
#[derive(Clone, Debug)]
pub struct StoredTest {
    /// Test id.
    pub id: i64,
    /// Its run.
    pub run_id: i64,
    /// Order in the run.
    pub seq: i64,
    /// Label.
    pub label: String,
    /// Repetition from 0.
    pub repetition: usize,
    /// Plan step.
    pub step: String,
    /// The document.
    pub doc: Document,
}

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

/// A stored histogram.
#[derive(Clone, Debug)]
pub struct StoredHistogram {
    /// Row index.
    pub row: usize,
    /// JSON key of the figure it backs.
    pub metric: String,
    /// Unit of the values.
    pub unit: String,
    /// Encoding of `data`.
    pub encoding: String,
    /// The bytes.
    pub data: Vec<u8>,
}

impl Store {
    /// Opens (creating file and folder if needed) and migrates the store.
    pub fn open(path: &Path) -> Result<Store> {
        let fail = |reason: String| StoreError::Open {
            path: path.to_path_buf(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
        }
        let conn = Connection::open(path).map_err(|e| fail(e.to_string()))?;
        let store = Store::setup(conn).map_err(|e| match e {
            StoreError::Sqlite(e) if no_room(path) => fail(format!("no space left on the device ({e})")),
            StoreError::Sqlite(e) => fail(e.to_string()),
            other => other,
        })?;
        Ok(store)
    }

    /// A store in memory (tests).
    pub fn open_in_memory() -> Result<Store> {
        Store::setup(Connection::open_in_memory()?)
    }

    fn setup(conn: Connection) -> Result<Store> {
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        // WAL lets `runs` read while a suite writes; in memory it stays "memory".
        let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        // FULL: a committed test survives a power cut too, not only a
        // killed process (NORMAL may lose the last commits); the cost is
        // one fsync per test, between tests, never inside a timed loop.
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")?;
        let mut s = Store { conn };
        s.migrate(MIGRATIONS.len())?;
        Ok(s)
    }

    /// Applies migrations up to version `to` (tests use a lower `to` to
    /// build an old store).
    pub fn migrate(&mut self, to: usize) -> Result<()> {
        let known = MIGRATIONS.len() as i64;
        let found: i64 = self.conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if found > known {
            return Err(StoreError::TooNew { found, known });
        }
        for (v, sql) in MIGRATIONS.iter().enumerate().take(to).skip(found as usize) {
            // IMMEDIATE takes the write lock first, and the version is read
            // again under it: two processes opening a new store at once
            // (a suite and a `runs`) must not both apply a migration.
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let now: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if now > v as i64 {
                continue;
            }
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (v + 1) as i64)?;
            tx.commit()?;
        }
        Ok(())
    }

    /// Opens a store at `path` migrated only up to version `to` (tests of
    /// migrations).
    pub fn open_at_version(path: &Path, to: usize) -> Result<Store> {
        let conn = Connection::open(path)?;
        conn.execute_batch("PRAGMA foreign_keys = ON;")?;
        let mut s = Store { conn };
        s.migrate(to)?;
        Ok(s)
    }

    /// The schema version of the open file.
    pub fn version(&self) -> Result<i64> {
        Ok(self.conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    /// The schema as SQL, one object per statement, sorted by name: what
    /// the golden file holds.
    pub fn schema_sql(&self) -> Result<String> {
        let mut st = self.conn.prepare(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type DESC, name",
        )?;
        let rows = st.query_map([], |r| r.get::<_, String>(0))?;
        let mut out = String::new();
        for sql in rows {
            out.push_str(sql?.trim());
            out.push_str(";\n\n");
        }
        Ok(out)
    }

    /// Starts a run; its status is `running` until [`Store::finish_run`].
    pub fn begin_run(&self, r: &NewRun) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO runs (started, kind, plan, status, pid, tool_version, hostname, kernel, cpu_model, cpus, command, settings)
             VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                r.env.time,
                r.kind,
                r.plan,
                r.pid,
                r.env.version,
                r.env.hostname,
                r.env.kernel,
                r.env.cpu_model,
                r.env.cpus as i64,
                json(&r.env.command),
                r.settings.to_string(),
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Writes one test with its figures, histograms and intervals, in one
    /// transaction (committed when this returns).
    pub fn add_test(&mut self, run: i64, t: &NewTest) -> Result<i64> {
        let doc = t.doc;
        // IMMEDIATE: take the write lock before the first statement, so a
        // second writer waits (busy timeout) instead of failing at once
        // with "database is locked" when its read snapshot goes stale.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let seq: i64 = tx.query_row("SELECT COUNT(*) FROM tests WHERE run_id = ?1", [run], |r| r.get(0))?;
        let body = serde_json::to_value(&doc.body).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        tx.execute(
            "INSERT INTO tests (run_id, seq, label, repetition, step, test, started, target_name, target_address, embedded,
                                client_cpu, responder_cpu, complete, error, params, document)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            params![
                run,
                seq,
                t.label,
                t.repetition as i64,
                t.step,
                doc.body.test_name(),
                doc.env.time,
                doc.target.name,
                doc.target.address,
                doc.target.embedded,
                doc.placement.client_cpu.map(|c| c as i64),
                doc.placement.responder_cpu.map(|c| c as i64),
                doc.complete,
                doc.error,
                body.get("params").map(std::string::ToString::to_string).unwrap_or_else(|| "{}".into()),
                json(doc),
            ],
        )?;
        let id = tx.last_insert_rowid();
        for f in stackmeter_results::figures(doc) {
            tx.execute(
                "INSERT OR REPLACE INTO figures VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    id,
                    f.row as i64,
                    f.row_label,
                    f.series,
                    f.stat,
                    f.unit,
                    f.value,
                    f.lower_is_better,
                    f.compared
                ],
            )?;
        }
        for h in &t.histograms {
            tx.execute(
                "INSERT OR REPLACE INTO histograms VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, h.row as i64, h.metric, h.unit, h.encoding, h.data],
            )?;
        }
        for i in &t.intervals {
            tx.execute(
                "INSERT OR REPLACE INTO intervals VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    id,
                    i.row as i64,
                    i.series,
                    i.seq as i64,
                    i.start_s,
                    i.end_s,
                    i.value,
                    i.unit
                ],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// Ends a run with `status` ("complete", "partial", "failed") at `time`.
    pub fn finish_run(&self, run: i64, status: &str, time: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?2, finished = ?3 WHERE id = ?1",
            params![run, status, time],
        )?;
        Ok(())
    }

    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunInfo>> {
        self.query_runs("1 = 1", [])
    }

    /// One run.
    pub fn run(&self, id: i64) -> Result<Option<RunInfo>> {
        Ok(self.query_runs("r.id = ?1", [id])?.pop())
    }

    fn query_runs<P: rusqlite::Params>(&self, filter: &str, p: P) -> Result<Vec<RunInfo>> {
        let sql = format!(
            "SELECT r.id, r.started, r.finished, r.kind, r.plan, r.status, r.pid, r.hostname, r.tool_version, r.command, r.settings,
                    (SELECT COUNT(*) FROM tests t WHERE t.run_id = r.id)
             FROM runs r WHERE {filter} ORDER BY r.id"
        );
        let mut st = self.conn.prepare(&sql)?;
        let rows = st.query_map(p, |r| {
            Ok(RunInfo {
                id: r.get(0)?,
                started: r.get(1)?,
                finished: r.get(2)?,
                kind: r.get(3)?,
                plan: r.get(4)?,
                status: r.get(5)?,
                pid: r.get(6)?,
                hostname: r.get(7)?,
                tool_version: r.get(8)?,
                command: serde_json::from_str(&r.get::<_, String>(9)?).unwrap_or_default(),
                settings: serde_json::from_str(&r.get::<_, String>(10)?).unwrap_or_default(),
                tests: r.get::<_, i64>(11)? as usize,
                labels: Vec::new(),
                test_names: Vec::new(),
            })
        })?;
        let mut out = rows.collect::<rusqlite::Result<Vec<_>>>()?;
        let mut st = self
            .conn
            .prepare("SELECT label, test FROM tests WHERE run_id = ?1 ORDER BY seq")?;
        for run in &mut out {
            let pairs = st.query_map([run.id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            for p in pairs {
                let (label, test) = p?;
                if !run.labels.contains(&label) {
                    run.labels.push(label);
                }
                if !run.test_names.contains(&test) {
                    run.test_names.push(test);
                }
            }
        }
        Ok(out)
    }

    /// The tests of a run, in order.
    pub fn tests_of_run(&self, run: i64) -> Result<Vec<StoredTest>> {
        self.query_tests("run_id = ?1", [run])
    }

    /// Every test with this label, across runs, oldest first.
    pub fn tests_with_label(&self, label: &str) -> Result<Vec<StoredTest>> {
        self.query_tests("label = ?1", [label])
    }

    fn query_tests<P: rusqlite::Params>(&self, filter: &str, p: P) -> Result<Vec<StoredTest>> {
        let sql = format!(
            "SELECT id, run_id, seq, label, repetition, step, document FROM tests WHERE {filter} ORDER BY run_id, seq"
        );
        let mut st = self.conn.prepare(&sql)?;
        let rows = st.query_map(p, |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, String>(6)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, run_id, seq, label, repetition, step, document) = row?;
            let doc = serde_json::from_str(&document)
                .map_err(|e| StoreError::Corrupt(format!("test {id} of run {run_id}: document does not read: {e}")))?;
            out.push(StoredTest {
                id,
                run_id,
                seq,
                label,
                repetition: repetition as usize,
                step,
                doc,
            });
        }
        Ok(out)
    }

    /// The histograms of a test.
    pub fn histograms(&self, test: i64) -> Result<Vec<StoredHistogram>> {
        let mut st = self.conn.prepare(
            "SELECT row, metric, unit, encoding, data FROM histograms WHERE test_id = ?1 ORDER BY row, metric",
        )?;
        let rows = st.query_map([test], |r| {
            Ok(StoredHistogram {
                row: r.get::<_, i64>(0)? as usize,
                metric: r.get(1)?,
                unit: r.get(2)?,
                encoding: r.get(3)?,
                data: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// The per-interval series of a test.
    pub fn intervals(&self, test: i64) -> Result<Vec<Interval>> {
        let mut st = self.conn.prepare(
            "SELECT row, series, seq, start_s, end_s, value, unit FROM intervals WHERE test_id = ?1 ORDER BY row, series, seq",
        )?;
        let rows = st.query_map([test], |r| {
            Ok(Interval {
                row: r.get::<_, i64>(0)? as usize,
                series: r.get(1)?,
                seq: r.get::<_, i64>(2)? as usize,
                start_s: r.get(3)?,
                end_s: r.get(4)?,
                value: r.get(5)?,
                unit: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Checks the whole file: SQLite's `integrity_check` (every page,
    /// index and constraint), `foreign_key_check` (no figure, histogram,
    /// interval or test without its parent) and that every stored document
    /// reads back. Problems are listed, not returned as errors; an error
    /// means the check itself could not run.
    pub fn check(&self) -> Result<Check> {
        let mut problems = Vec::new();
        let mut st = self.conn.prepare("PRAGMA integrity_check")?;
        for line in st.query_map([], |r| r.get::<_, String>(0))? {
            let line = line?;
            if line != "ok" {
                problems.push(format!("integrity_check: {line}"));
            }
        }
        let mut st = self.conn.prepare("PRAGMA foreign_key_check")?;
        let orphans = st.query_map([], |r| {
            Ok(format!(
                "foreign_key_check: {} row {} has no {} row",
                r.get::<_, String>(0)?,
                r.get::<_, Option<i64>>(1)?.map_or("?".into(), |id| id.to_string()),
                r.get::<_, String>(2)?
            ))
        })?;
        for o in orphans {
            problems.push(o?);
        }
        let mut st = self
            .conn
            .prepare("SELECT id, run_id, document FROM tests ORDER BY id")?;
        let mut rows = st.query([])?;
        let mut tests = 0;
        while let Some(r) = rows.next()? {
            tests += 1;
            let (id, run): (i64, i64) = (r.get(0)?, r.get(1)?);
            if let Err(e) = serde_json::from_str::<Document>(&r.get::<_, String>(2)?) {
                problems.push(format!("test {id} of run {run}: document does not read: {e}"));
            }
        }
        let runs: i64 = self.conn.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))?;
        Ok(Check {
            runs: runs as usize,
            tests,
            problems,
        })
    }

    /// Whether a label exists.
    pub fn has_label(&self, label: &str) -> Result<bool> {
        Ok(self
            .conn
            .query_row("SELECT 1 FROM tests WHERE label = ?1 LIMIT 1", [label], |_| Ok(()))
            .optional()?
            .is_some())
    }
}

/// Whether the store's folder has no room left: SQLite says only "disk I/O
/// error" when it cannot create the `-shm` file a WAL store needs beside
/// it, so a full disk is recognised by trying to write as much.
fn no_room(path: &Path) -> bool {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let probe = dir.join(format!(".stackmeter-space-{}", std::process::id()));
    let written = std::fs::write(&probe, [0u8; 32 << 10]);
    let _ = std::fs::remove_file(&probe);
    matches!(written, Err(e) if e.kind() == std::io::ErrorKind::StorageFull)
}

fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    // Cannot fail: documents and string lists hold no non-string map keys.
    serde_json::to_string(v).expect("a document serializes")
}

#[cfg(test)]
mod tests;
