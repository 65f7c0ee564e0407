//! The results store: every run of every measuring command in one SQLite
//! file, or in one PostgreSQL database that many hosts write at once, so
//! results are kept and reused as baselines (the bps-throughput write-up of docs/scenarios.md: "these are the
//! benchmark values for further tests").
//!
//! A run is one command (`rr`, `suite`, ...); it holds tests, one per
//! measured document. Each test is written in its own transaction as soon
//! as it completes, with its whole `stackmeter/1` document (so `show`
//! re-renders it and new test types need no new columns), its figures as
//! rows (so they can be queried), its full histograms (HdrHistogram V2
//! bytes) and any per-interval series. A run stays `running` until its
//! command ends it as `complete`, `partial` (interrupted, or a test broke
//! off) or `failed`; a run left `running` by a dead process was cut short.
//! Ids are assigned by the database; a run and a test also carry a unique
//! identity (`uid`) that stays the same when `copy` moves a history to
//! another store or the spool sends what it kept (`spool.rs`), which is
//! how doing either twice is recognised.
//!
//! The schema is versioned and migrated on open (`schema.rs`: one list of
//! migrations for both databases); `schema.sql` and `schema-postgres.sql`
//! are the golden files of the result.
//!
//! **Two databases, one `Store`.** The backend is an enum
//! (`backend::Conn`), not a trait: there are exactly two, each query is
//! written once against the enum's small interface (statements with `?N`
//! parameters, rows of plain values, transactions), and the differences
//! between the two sit side by side in `backend.rs` and `schema.rs` where
//! a reader can see all of them. A trait would have put each query in
//! two places (or behind generics that every caller then carries); an
//! enum keeps `Store` one concrete type, so no caller knows or cares which
//! database it talks to.
//!
//! Beside the store: `location.rs` (a path or a URL, shown without its
//! password), `copy.rs` (`store copy`), `spool.rs` (results kept on disk
//! while PostgreSQL cannot be reached, and `store flush`), `locks.rs`
//! (PostgreSQL advisory locks for work that must not overlap).

mod backend;
mod copy;
mod location;
mod locks;
mod pg_error;
mod rows;
mod schema;
mod spool;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use backend::{params, Conn, Pg};
use stackmeter_results::{Document, Env};
use std::path::{Path, PathBuf};

pub use copy::{copy, Copied};
pub use location::{default_location, default_spool_dir, BadUrl, Location, PgUrl};
pub use locks::{LockError, Locks};
pub use schema::{postgres_schema, MIGRATIONS};
pub use spool::{flush, Flushed, RunKey, Spool, Writer};

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
    /// A `--db` URL that cannot be read.
    BadUrl(BadUrl),
    /// The PostgreSQL server cannot be reached, or was lost (down, no
    /// answer in time, out of connections): what a measuring command
    /// spools instead of failing.
    Unreachable {
        /// The URL without password.
        shown: String,
        /// What happened.
        reason: String,
    },
    /// The PostgreSQL server refused the connection (password, unknown
    /// database or user, permission).
    Refused {
        /// The URL without password.
        shown: String,
        /// The server's words.
        reason: String,
    },
    /// A PostgreSQL statement failed.
    Postgres {
        /// The URL without password.
        shown: String,
        /// The server's words.
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
    /// The spool could not be written or read.
    Spool(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Open { path, reason } => write!(f, "cannot open results store {}: {reason}", path.display()),
            StoreError::BadUrl(b) => write!(f, "{b}"),
            StoreError::Unreachable { shown, reason } => write!(f, "cannot reach results store {shown}: {reason}"),
            StoreError::Refused { shown, reason } => write!(f, "results store {shown} refused the connection: {reason}"),
            StoreError::Postgres { shown, reason } => write!(f, "results store {shown}: {reason}"),
            StoreError::TooNew { found, known } => write!(
                f,
                "results store has schema version {found}, this stackmeter knows up to {known}: upgrade stackmeter or pass another --db"
            ),
            StoreError::Sqlite(e) => write!(f, "results store: {e}"),
            StoreError::Corrupt(what) => write!(f, "results store: {what}"),
            StoreError::Spool(what) => write!(f, "spool: {what}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sqlite(e)
    }
}

impl StoreError {
    /// True when the database could not be reached or was lost: the
    /// results can wait in the spool.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, StoreError::Unreachable { .. })
    }

    /// True for a malformed `--db` URL (a command-line error).
    pub fn is_bad_url(&self) -> bool {
        matches!(self, StoreError::BadUrl(_))
    }
}

/// Shorthand.
pub type Result<T> = std::result::Result<T, StoreError>;

/// An open store, SQLite or PostgreSQL.
pub struct Store {
    conn: Conn,
    location: Location,
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
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NewHistogram {
    /// Row index in the document.
    pub row: usize,
    /// JSON key of the figure it backs.
    pub metric: String,
    /// Unit of the recorded values ("ns").
    pub unit: String,
    /// Encoding name of `data`.
    pub encoding: String,
    /// The bytes (hexadecimal in a spool file).
    #[serde(with = "hex")]
    pub data: Vec<u8>,
}

/// One point of a per-interval series.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredInterval {
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
    pub intervals: Vec<StoredInterval>,
}

/// A run as listed.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunInfo {
    /// Run id.
    pub id: i64,
    /// Its identity, the same in every store it is copied to.
    pub uid: String,
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
    /// Opens the store at a path (an SQLite file, created with its folder
    /// if needed) or a PostgreSQL URL, and migrates it.
    pub fn open(at: impl Into<Location>) -> Result<Store> {
        Store::open_at_version(at, MIGRATIONS.len())
    }

    /// Opens a store migrated only up to version `to` (tests of
    /// migrations use a lower `to` to build an old store).
    pub fn open_at_version(at: impl Into<Location>, to: usize) -> Result<Store> {
        let location = at.into();
        let conn = match &location {
            Location::Sqlite(path) => Store::open_sqlite(path, to)?,
            Location::Postgres(url) => {
                let conn = Conn::Postgres(Pg::connect(url)?);
                schema::migrate(&conn, to)?;
                conn
            }
        };
        Ok(Store { conn, location })
    }

    fn open_sqlite(path: &Path, to: usize) -> Result<Conn> {
        let fail = |reason: String| StoreError::Open {
            path: path.to_path_buf(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
        }
        let conn = rusqlite::Connection::open(path).map_err(|e| fail(e.to_string()))?;
        Store::setup_sqlite(conn, to).map_err(|e| match e {
            StoreError::Sqlite(e) if no_room(path) => fail(format!("no space left on the device ({e})")),
            StoreError::Sqlite(e) => fail(e.to_string()),
            other => other,
        })
    }

    /// A store in memory (tests).
    pub fn open_in_memory() -> Result<Store> {
        Ok(Store {
            conn: Store::setup_sqlite(rusqlite::Connection::open_in_memory()?, MIGRATIONS.len())?,
            location: Location::Sqlite(":memory:".into()),
        })
    }

    fn setup_sqlite(conn: rusqlite::Connection, to: usize) -> Result<Conn> {
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        // WAL lets `runs` read while a suite writes; in memory it stays "memory".
        let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        // FULL: a committed test survives a power cut too, not only a
        // killed process (NORMAL may lose the last commits); the cost is
        // one fsync per test, between tests, never inside a timed loop.
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")?;
        let conn = Conn::Sqlite(conn);
        schema::migrate(&conn, to)?;
        Ok(conn)
    }

    /// Whether a store is there, without creating one: the file exists,
    /// or the database has stackmeter's tables (a database that cannot be
    /// reached is an error).
    pub fn exists(at: impl Into<Location>) -> Result<bool> {
        match at.into() {
            Location::Sqlite(path) => Ok(path.exists()),
            Location::Postgres(url) => {
                let conn = Conn::Postgres(Pg::connect(&url)?);
                Ok(schema::version(&conn)? > 0)
            }
        }
    }

    /// Applies migrations up to version `to`.
    pub fn migrate(&mut self, to: usize) -> Result<()> {
        schema::migrate(&self.conn, to)
    }

    /// The schema version of the open store.
    pub fn version(&self) -> Result<i64> {
        schema::version(&self.conn)
    }

    /// Where the store is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The schema of an SQLite store as SQL, one object per statement,
    /// sorted by name: what the golden file holds.
    pub fn schema_sql(&self) -> Result<String> {
        if let Conn::Postgres(_) = self.conn {
            return Ok(postgres_schema());
        }
        let rows = self.conn.query(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type DESC, name",
            vec![],
        )?;
        let mut out = String::new();
        for r in rows {
            out.push_str(r.text(0)?.trim());
            out.push_str(";\n\n");
        }
        Ok(out)
    }

    /// The columns of `table`, in order (tests: both databases build the same tables).
    #[cfg(test)]
    pub(crate) fn columns(&self, table: &str) -> Result<Vec<String>> {
        let sql = match self.conn {
            Conn::Sqlite(_) => "SELECT name FROM pragma_table_info(?1) ORDER BY cid",
            Conn::Postgres(_) => {
                "SELECT column_name::text FROM information_schema.columns
                 WHERE table_name = ?1 AND table_schema = current_schema() ORDER BY ordinal_position"
            }
        };
        self.conn
            .query(sql, params![table])?
            .iter()
            .map(|r| r.text(0))
            .collect()
    }

    /// Starts a run; its status is `running` until [`Store::finish_run`].
    pub fn begin_run(&self, r: &NewRun) -> Result<i64> {
        rows::insert_run(&self.conn, &rows::RunRow::new(r, new_uid()))
    }

    /// Writes one test with its figures, histograms and intervals, in one
    /// transaction (committed when this returns).
    pub fn add_test(&mut self, run: i64, t: &NewTest) -> Result<i64> {
        let row = rows::TestRow::new(t, new_uid())?;
        self.conn.transaction(|c| rows::insert_test(c, run, &row))
    }

    /// Ends a run with `status` ("complete", "partial", "failed") at `time`.
    pub fn finish_run(&self, run: i64, status: &str, time: &str) -> Result<()> {
        rows::set_status(&self.conn, run, status, Some(time))
    }

    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunInfo>> {
        self.query_runs("1 = 1", vec![])
    }

    /// One run.
    pub fn run(&self, id: i64) -> Result<Option<RunInfo>> {
        Ok(self.query_runs("r.id = ?1", params![id])?.pop())
    }

    fn query_runs(&self, filter: &str, p: Vec<backend::Value>) -> Result<Vec<RunInfo>> {
        let sql = format!(
            "SELECT r.id, r.started, r.finished, r.kind, r.plan, r.status, r.pid, r.hostname, r.tool_version, r.command, r.settings,
                    (SELECT COUNT(*) FROM tests t WHERE t.run_id = r.id), r.uid
             FROM runs r WHERE {filter} ORDER BY r.id"
        );
        let mut out = Vec::new();
        for r in self.conn.query(&sql, p.clone())? {
            out.push(RunInfo {
                id: r.int(0)?,
                started: r.text(1)?,
                finished: r.opt_text(2)?,
                kind: r.text(3)?,
                plan: r.opt_text(4)?,
                status: r.text(5)?,
                pid: r.int(6)? as u32,
                hostname: r.text(7)?,
                tool_version: r.text(8)?,
                command: serde_json::from_str(&r.text(9)?).unwrap_or_default(),
                settings: serde_json::from_str(&r.text(10)?).unwrap_or_default(),
                tests: r.int(11)? as usize,
                uid: r.opt_text(12)?.unwrap_or_default(),
                labels: Vec::new(),
                test_names: Vec::new(),
            });
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
    pub fn histograms(&self, test: i64) -> Result<Vec<StoredHistogram>> {
        Ok(read_histograms(&self.conn, test)?
            .into_iter()
            .map(|h| StoredHistogram {
                row: h.row,
                metric: h.metric,
                unit: h.unit,
                encoding: h.encoding,
                data: h.data,
            })
            .collect())
    }

    /// The per-interval series of a test.
    pub fn intervals(&self, test: i64) -> Result<Vec<StoredInterval>> {
        read_intervals(&self.conn, test)
    }

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

    /// Whether a label exists.
    pub fn has_label(&self, label: &str) -> Result<bool> {
        Ok(self
            .conn
            .query_opt("SELECT 1 FROM tests WHERE label = ?1 LIMIT 1", params![label])?
            .is_some())
    }
}

fn read_histograms(c: &Conn, test: i64) -> Result<Vec<NewHistogram>> {
    c.query(
        "SELECT row, metric, unit, encoding, data FROM histograms WHERE test_id = ?1 ORDER BY row, metric",
        params![test],
    )?
    .iter()
    .map(|r| {
        Ok(NewHistogram {
            row: r.int(0)? as usize,
            metric: r.text(1)?,
            unit: r.text(2)?,
            encoding: r.text(3)?,
            data: r.blob(4)?,
        })
    })
    .collect()
}

fn read_intervals(c: &Conn, test: i64) -> Result<Vec<StoredInterval>> {
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

/// A new identity for a run or a test: 128 random bits in hexadecimal,
/// from the kernel (or, where /dev/urandom cannot be read, from the
/// standard library's randomly keyed hasher).
pub(crate) fn new_uid() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        use std::hash::{BuildHasher, Hasher};
        for (i, half) in bytes.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(i);
            h.write_u32(std::process::id());
            half.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    hex::encode(bytes)
}

/// Bytes as lowercase hexadecimal, for spool files (serde `with`).
mod hex {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn encode(bytes: impl AsRef<[u8]>) -> String {
        bytes.as_ref().iter().map(|b| format!("{b:02x}")).collect()
    }

    pub fn decode(s: &str) -> Option<Vec<u8>> {
        if !s.len().is_multiple_of(2) {
            return None;
        }
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
            .collect()
    }

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        decode(&s).ok_or_else(|| serde::de::Error::custom("not hexadecimal"))
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
mod pg_tests;
#[cfg(test)]
mod tests;
