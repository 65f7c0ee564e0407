//! The schema as one list of migrations for both databases. The version
//! of a store is how many have been applied: SQLite keeps it in `PRAGMA
//! user_version`, PostgreSQL in the one row of `stackmeter_schema`.
//! Opening a store applies the rest, each in its own transaction (on
//! PostgreSQL under an advisory lock, so hosts opening a new database at
//! once apply each migration once). Never edit a migration that has
//! shipped: add one.
//!
//! The migrations are written in SQLite's words; [`postgres`] turns them
//! into PostgreSQL's, and that is the whole difference: a 64-bit integer
//! (SQLite's INTEGER) is BIGINT, an id the database assigns (SQLite's
//! INTEGER PRIMARY KEY) is a BIGINT identity column, REAL is DOUBLE
//! PRECISION and BLOB is BYTEA. A true/false column stays an integer 0/1
//! on both. `schema.sql` is the golden file of what SQLite builds,
//! `schema-postgres.sql` that of the translated list.

use crate::backend::Conn;
use crate::{Result, StoreError};

/// Every migration, in order; the schema version is the number applied.
pub const MIGRATIONS: &[&str] = &[
    // 1: runs, their tests, the figures, the histograms.
    r#"
CREATE TABLE runs (
    id           INTEGER PRIMARY KEY,
    started      TEXT NOT NULL,            -- UTC, RFC 3339
    finished     TEXT,                     -- UTC, RFC 3339; NULL while running
    kind         TEXT NOT NULL,            -- 'single' (one measuring command) or 'suite'
    plan         TEXT,                     -- suite plan name or file
    status       TEXT NOT NULL,            -- 'running', 'complete', 'partial', 'failed'
    pid          INTEGER NOT NULL,         -- process that wrote it (tells a crash from a live run)
    tool_version TEXT NOT NULL,
    hostname     TEXT NOT NULL,
    kernel       TEXT NOT NULL,
    cpu_model    TEXT NOT NULL,
    cpus         INTEGER NOT NULL,
    command      TEXT NOT NULL,            -- JSON array of arguments
    settings     TEXT NOT NULL             -- JSON object: suite settings (repeat, quick, ...)
);
CREATE TABLE tests (
    id             INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq            INTEGER NOT NULL,       -- order within the run
    label          TEXT NOT NULL,
    repetition     INTEGER NOT NULL,       -- 0-based, per label and step
    step           TEXT NOT NULL,          -- plan step name ('' for a single command)
    test           TEXT NOT NULL,          -- 'rr', 'crr', 'ping', ...
    started        TEXT NOT NULL,
    target_name    TEXT NOT NULL,
    target_address TEXT NOT NULL,
    embedded       INTEGER NOT NULL,
    client_cpu     INTEGER,
    responder_cpu  INTEGER,
    complete       INTEGER NOT NULL,
    error          TEXT,
    params         TEXT NOT NULL,          -- JSON: the test's parameters
    document       TEXT NOT NULL           -- JSON: the whole stackmeter/1 document
);
CREATE INDEX tests_by_run ON tests(run_id, seq);
CREATE INDEX tests_by_label ON tests(label, test);
CREATE TABLE figures (
    test_id          INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
    row              INTEGER NOT NULL,
    row_label        TEXT NOT NULL,
    series           TEXT NOT NULL,
    stat             TEXT NOT NULL,
    unit             TEXT NOT NULL,
    value            REAL NOT NULL,
    lower_is_better  INTEGER NOT NULL,
    compared         INTEGER NOT NULL,
    PRIMARY KEY (test_id, row, series, stat)
);
CREATE TABLE histograms (
    test_id   INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
    row       INTEGER NOT NULL,
    metric    TEXT NOT NULL,               -- JSON key of the figure it backs: 'rtt_us', ...
    unit      TEXT NOT NULL,               -- unit of the recorded values: 'ns'
    encoding  TEXT NOT NULL,               -- 'hdrhistogram-v2'
    data      BLOB NOT NULL,
    PRIMARY KEY (test_id, row, metric)
);
"#,
    // 2: per-interval series (throughput over time).
    r#"
CREATE TABLE intervals (
    test_id  INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
    row      INTEGER NOT NULL,
    series   TEXT NOT NULL,                -- 'total', 'sent', 'received', ...
    seq      INTEGER NOT NULL,
    start_s  REAL NOT NULL,                -- seconds from the test's start
    end_s    REAL NOT NULL,
    value    REAL NOT NULL,
    unit     TEXT NOT NULL,
    PRIMARY KEY (test_id, row, series, seq)
);
"#,
    // 3: a unique identity for every run and test, carried when a history
    // is copied to another store or sent from the spool, so that doing
    // either twice adds nothing. Runs stored before get one from who wrote
    // them, when, and their id; their tests, the run's and their order.
    r#"
ALTER TABLE runs ADD COLUMN uid TEXT;
ALTER TABLE tests ADD COLUMN uid TEXT;
UPDATE runs SET uid = 'run:' || hostname || ':' || pid || ':' || started || ':' || id;
UPDATE tests SET uid = (SELECT r.uid FROM runs r WHERE r.id = tests.run_id) || ':' || seq;
CREATE UNIQUE INDEX runs_by_uid ON runs(uid);
CREATE UNIQUE INDEX tests_by_uid ON tests(uid);
"#,
    // 4: a run's attributes (what it measured: `--attr commit=...`,
    // `firmware=`, `nic=`), and the change points `history --save` found,
    // which a dashboard reads beside the figures. The view gives every
    // run's attributes together with the host facts the run recorded
    // (host, kernel, cpu, version), an attribute the user gave first.
    r#"
CREATE TABLE run_attrs (
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE VIEW run_attributes AS
    SELECT run_id, key, value FROM run_attrs
    UNION ALL SELECT id, 'host', hostname FROM runs r
        WHERE NOT EXISTS (SELECT 1 FROM run_attrs a WHERE a.run_id = r.id AND a.key = 'host')
    UNION ALL SELECT id, 'kernel', kernel FROM runs r
        WHERE NOT EXISTS (SELECT 1 FROM run_attrs a WHERE a.run_id = r.id AND a.key = 'kernel')
    UNION ALL SELECT id, 'cpu', cpu_model FROM runs r
        WHERE NOT EXISTS (SELECT 1 FROM run_attrs a WHERE a.run_id = r.id AND a.key = 'cpu')
    UNION ALL SELECT id, 'version', tool_version FROM runs r
        WHERE NOT EXISTS (SELECT 1 FROM run_attrs a WHERE a.run_id = r.id AND a.key = 'version');
CREATE TABLE change_points (
    found       TEXT NOT NULL,             -- when `history --save` found it, UTC RFC 3339
    label       TEXT NOT NULL,
    test        TEXT NOT NULL,
    step        TEXT NOT NULL,
    row_label   TEXT NOT NULL,
    figure      TEXT NOT NULL,             -- 'rtt p50', 'total', ...
    unit        TEXT NOT NULL,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, -- the first run after the change
    before      REAL NOT NULL,             -- median before and after
    after       REAL NOT NULL,
    ratio       REAL NOT NULL,             -- after / before, with its 95% interval
    ratio_low   REAL NOT NULL,
    ratio_high  REAL NOT NULL,
    p_value     REAL NOT NULL,
    regression  INTEGER NOT NULL,          -- 1: worse, past the tolerance
    PRIMARY KEY (label, test, step, row_label, figure, run_id)
);
"#,
];

/// A migration in PostgreSQL's words (see the module doc): whole words
/// replaced, nothing else.
pub fn postgres(sql: &str) -> String {
    const WORDS: [(&str, &str); 4] = [
        (
            "INTEGER PRIMARY KEY",
            "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
        ),
        ("INTEGER", "BIGINT"),
        ("REAL", "DOUBLE PRECISION"),
        ("BLOB", "BYTEA"),
    ];
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let mut out = String::with_capacity(sql.len() + 256);
    let mut i = 0;
    'scan: while i < sql.len() {
        let rest = &sql[i..];
        let before = sql[..i].chars().next_back();
        if !ident(before) {
            for (from, to) in WORDS {
                if rest.starts_with(from) && !ident(rest[from.len()..].chars().next()) {
                    out.push_str(to);
                    i += from.len();
                    continue 'scan;
                }
            }
        }
        let c = rest.chars().next().unwrap_or_default();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// The PostgreSQL schema: every migration translated, in order (what
/// `schema-postgres.sql` holds).
pub fn postgres_schema() -> String {
    MIGRATIONS
        .iter()
        .enumerate()
        .map(|(v, sql)| format!("-- migration {}\n{}\n", v + 1, postgres(sql.trim())))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Serialises migrations on PostgreSQL: a transaction-level advisory lock
/// in the two-integer key space (the fleet's locks use the one-bigint
/// space, so the two never meet).
const MIGRATION_LOCK: &str = "SELECT pg_advisory_xact_lock(1937008993, 1)";

/// The version a store is at (0: an empty database or file).
pub(crate) fn version(conn: &Conn) -> Result<i64> {
    match conn {
        Conn::Sqlite(_) => conn.query_row("PRAGMA user_version", vec![])?.int(0),
        Conn::Postgres(_) => {
            let exists = conn.query_row("SELECT to_regclass('stackmeter_schema') IS NOT NULL", vec![])?;
            if exists.int(0)? == 0 {
                return Ok(0);
            }
            Ok(conn
                .query_opt("SELECT version FROM stackmeter_schema", vec![])?
                .map(|r| r.int(0))
                .transpose()?
                .unwrap_or(0))
        }
    }
}

fn set_version(conn: &Conn, v: usize) -> Result<()> {
    match conn {
        Conn::Sqlite(_) => conn.batch(&format!("PRAGMA user_version = {v}")),
        Conn::Postgres(_) => conn
            .exec("UPDATE stackmeter_schema SET version = ?1", vec![(v as i64).into()])
            .map(drop),
    }
}

/// Applies migrations up to version `to`, each in its own transaction in
/// which the version is read again (two processes opening a new store at
/// once must not both apply one).
pub(crate) fn migrate(conn: &Conn, to: usize) -> Result<()> {
    let known = MIGRATIONS.len() as i64;
    let found = version(conn)?;
    if found > known {
        return Err(StoreError::TooNew { found, known });
    }
    for (v, sql) in MIGRATIONS.iter().enumerate().take(to).skip(found as usize) {
        conn.transaction(|tx| {
            if let Conn::Postgres(_) = tx {
                tx.batch(MIGRATION_LOCK)?;
                tx.batch(
                    "CREATE TABLE IF NOT EXISTS stackmeter_schema (version BIGINT NOT NULL);
                     INSERT INTO stackmeter_schema (version)
                         SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM stackmeter_schema);",
                )?;
            }
            let now = version(tx)?;
            if now > known {
                return Err(StoreError::TooNew { found: now, known });
            }
            if now > v as i64 {
                return Ok(());
            }
            match tx {
                Conn::Sqlite(_) => tx.batch(sql)?,
                Conn::Postgres(_) => tx.batch(&postgres(sql))?,
            }
            set_version(tx, v + 1)
        })?;
    }
    Ok(())
}
