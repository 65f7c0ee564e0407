//! Store tests on real SQLite files in a temporary folder.

use super::*;
use stackmeter_results::Document;
use std::path::{Path, PathBuf};

const DOC: &str = r#"{
  "schema": "stackmeter/1",
  "target": { "name": "embedded", "address": "127.0.0.1:41531", "embedded": true },
  "test": "rr",
  "params": { "sizes": [{ "req": 1, "resp": 1024 }], "iterations": 100, "warmup": 10, "nodelay": true, "timeout_ms": 5000 },
  "results": [
    { "req_bytes": 1, "resp_bytes": 1024, "samples": 100, "warmup": 10,
      "rtt_us": { "count": 100, "min": 7.9, "mean": 9.1, "p50": 8.6, "p90": 10.2, "p99": 17.0, "p999": 21.3, "max": 21.3, "stddev": 1.9 },
      "tps": 108695.6, "levels": null }
  ],
  "placement": { "client_cpu": 1, "responder_cpu": 0 },
  "env": { "tool": "stackmeter", "version": "0.1.0", "time": "2026-11-21T02:30:00Z", "hostname": "h", "kernel": "Linux 6.1.0", "cpu_model": "c", "cpus": 2, "command": ["stackmeter", "rr"] },
  "complete": true,
  "error": null,
  "warnings": []
}"#;

pub(crate) fn doc() -> Document {
    serde_json::from_str(DOC).unwrap()
}

pub(crate) fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stackmeter-store-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("results.db")
}

pub(crate) fn add_one(s: &mut Store, label: &str) -> (i64, i64) {
    add_one_with(s, label, Default::default())
}

/// A run with `attrs` and one test labelled `label`: (run, test).
pub(crate) fn add_one_with(
    s: &mut Store,
    label: &str,
    attrs: std::collections::BTreeMap<String, String>,
) -> (i64, i64) {
    let d = doc();
    let run = s
        .begin_run(&Run::start("single", None, &d.env, serde_json::json!({}), 42).with_attrs(attrs))
        .unwrap();
    let test = s
        .add_test(
            run,
            &NewTest {
                label,
                repetition: 0,
                step: "",
                doc: &d,
                histograms: vec![Histogram {
                    row: 0,
                    metric: "rtt_us".into(),
                    unit: "ns".into(),
                    encoding: "hdrhistogram-v2".into(),
                    data: vec![1, 2, 3],
                }],
                intervals: vec![],
            },
        )
        .unwrap();
    (run, test)
}

#[test]
fn schema_matches_the_golden_file() {
    let s = Store::open_in_memory().unwrap();
    let got = s.schema_sql().unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema.sql");
    if std::env::var_os("STACKMETER_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_default();
    assert_eq!(
        got, want,
        "schema changed: add a migration, then rerun with STACKMETER_UPDATE_GOLDEN=1 and check schema.sql in"
    );
    assert_eq!(s.version().unwrap(), MIGRATIONS.len() as i64);
}

/// A run and test as a stackmeter of schema version 1 or 2 wrote them
/// (no identity columns yet).
fn add_old(s: &Store, label: &str) {
    s.conn
        .sqlite()
        .execute_batch(&format!(
            "INSERT INTO runs (started, kind, status, pid, tool_version, hostname, kernel, cpu_model, cpus, command, settings)
             VALUES ('2026-11-21T02:30:00Z', 'single', 'complete', 42, '0.1.0', 'h', 'k', 'c', 2, '[]', '{{}}');
             INSERT INTO tests (run_id, seq, label, repetition, step, test, started, target_name, target_address,
                                embedded, complete, params, document)
             VALUES (last_insert_rowid(), 0, '{label}', 0, '', 'rr', '2026-11-21T02:30:00Z', 'embedded', '127.0.0.1:1',
                     1, 1, '{{}}', '{}');",
            DOC.replace('\'', "''")
        ))
        .unwrap();
}

#[test]
fn an_old_store_is_migrated_and_keeps_its_runs() {
    let path = tmp("migrate");
    {
        let old = Store::open_at_version(&path, 1).unwrap();
        assert_eq!(old.version().unwrap(), 1);
        add_old(&old, "before");
        assert!(old.intervals(1).is_err(), "version 1 has no intervals table");
    }
    {
        let v2 = Store::open_at_version(&path, 2).unwrap();
        add_old(&v2, "before");
    }
    let mut s = Store::open(&path).unwrap();
    assert_eq!(s.version().unwrap(), MIGRATIONS.len() as i64);
    assert_eq!(s.tests_with_label("before").unwrap().len(), 2);
    // Runs from before identities got one each, from who wrote them and when.
    let runs = s.runs().unwrap();
    assert_eq!(runs[0].run.uid, "run:h:42:2026-11-21T02:30:00Z:1");
    assert_ne!(runs[0].run.uid, runs[1].run.uid);
    let (_, t) = add_one(&mut s, "after");
    assert!(s.intervals(t).unwrap().is_empty());
    assert_eq!(
        s.runs().unwrap()[2].run.uid.len(),
        32,
        "a new run's identity is 128 random bits"
    );
    // Opening again changes nothing.
    drop(s);
    let s = Store::open(&path).unwrap();
    assert_eq!(s.runs().unwrap().len(), 3);
    assert!(s.check().unwrap().problems.is_empty());
}

#[test]
fn a_newer_store_is_refused_with_a_clear_error() {
    let path = tmp("newer");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
    }
    let e = Store::open(&path).err().unwrap();
    assert!(e.to_string().contains("schema version 99"), "{e}");
}

#[test]
fn a_test_reads_back_whole() {
    let mut s = Store::open(&tmp("roundtrip")).unwrap();
    let (run, test) = add_one(&mut s, "app");
    let info = s.run(run).unwrap().unwrap();
    assert_eq!((info.run.status.as_str(), info.tests), ("running", 1));
    assert_eq!(info.labels, vec!["app".to_string()]);
    assert_eq!(info.test_names, vec!["rr".to_string()]);
    s.finish_run(run, "complete", "2026-11-21T02:31:00Z").unwrap();
    assert_eq!(s.run(run).unwrap().unwrap().run.status, "complete");
    let back = s.tests_of_run(run).unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(
        serde_json::to_string_pretty(&back[0].doc).unwrap(),
        serde_json::to_string_pretty(&doc()).unwrap()
    );
    let h = s.histograms(test).unwrap();
    assert_eq!(
        (h[0].metric.as_str(), h[0].data.as_slice()),
        ("rtt_us", &[1u8, 2, 3][..])
    );
    let figures: i64 = s
        .conn
        .sqlite()
        .query_row(
            "SELECT COUNT(*) FROM figures WHERE test_id = ?1 AND series = 'rtt'",
            [test],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(figures, 3);
    assert!(s.has_label("app").unwrap() && !s.has_label("nope").unwrap());
}

#[test]
fn an_unwritable_path_is_a_clear_error() {
    let e = Store::open(Path::new("/proc/stackmeter-no/results.db")).err().unwrap();
    assert!(
        e.to_string()
            .starts_with("cannot open results store /proc/stackmeter-no/results.db"),
        "{e}"
    );
}

#[test]
fn default_location_follows_the_environment() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    };
    let at = |pairs| default_location(env(pairs)).map(|l| l.unwrap().to_string());
    assert_eq!(at(&[("STACKMETER_DB", "/x.db"), ("HOME", "/h")]), Some("/x.db".into()));
    assert_eq!(
        at(&[("STACKMETER_DB", "postgres://u:pw@db.example/results"), ("HOME", "/h")]),
        Some("postgres://u@db.example/results".into())
    );
    assert_eq!(
        at(&[("XDG_DATA_HOME", "/d"), ("HOME", "/h")]),
        Some("/d/stackmeter/results.db".into())
    );
    assert_eq!(
        at(&[("XDG_DATA_HOME", ""), ("HOME", "/h")]),
        Some("/h/.local/share/stackmeter/results.db".into())
    );
    assert!(default_location(env(&[])).is_none());
    assert_eq!(
        default_spool_dir(env(&[("HOME", "/h")])),
        Some("/h/.local/share/stackmeter/spool".into())
    );
}

#[test]
fn a_url_is_postgres_and_never_shows_its_password() {
    let parse = |s: &str| Location::parse(std::ffi::OsStr::new(s));
    for (given, shown, command) in [
        (
            "postgres://meter:s3cr%40t@db.example:5433/results",
            "postgres://meter@db.example:5433/results",
            "postgres://meter:PASSWORD@db.example:5433/results",
        ),
        (
            "postgresql://meter@10.0.0.7/results?connect_timeout=3",
            "postgresql://meter@10.0.0.7/results?connect_timeout=3",
            "postgresql://meter@10.0.0.7/results?connect_timeout=3",
        ),
        (
            "postgres://db.example/results?user=meter&password=hunter2&connect_timeout=3",
            "postgres://db.example/results?user=meter&connect_timeout=3",
            "postgres://db.example/results?user=meter&password=PASSWORD&connect_timeout=3",
        ),
    ] {
        let l = parse(given).unwrap();
        assert!(l.is_postgres());
        assert_eq!(l.to_string(), shown);
        assert_eq!(format!("{l:?}"), shown);
        // Quoted for the shell where it needs to be ('?', '&').
        let quoted = if command.contains('?') {
            format!("'{command}'")
        } else {
            command.to_string()
        };
        assert_eq!(l.for_command(), quoted);
    }
    // A path stays a path, whatever it looks like.
    assert_eq!(parse("results.db").unwrap(), Location::Sqlite("results.db".into()));
    assert_eq!(
        parse("./postgres/x.db").unwrap(),
        Location::Sqlite("./postgres/x.db".into())
    );
    // Bad URLs say what is wrong, without the password.
    for (given, says) in [
        ("postgres://meter:pw@db.example:notaport/results", "invalid"),
        ("postgres://meter:pw@db.example:5432", "no database name"),
        ("postgres://meter:pw@/results", "no host"),
        ("postgres:/db.example/results", "expected postgres://"),
        ("postgres://db.example/results?colour=blue", "colour"),
    ] {
        let e = parse(given).unwrap_err();
        let line = StoreError::BadUrl(e).to_string();
        assert!(line.starts_with("bad results store URL "), "{line}");
        assert!(line.contains(says), "{given}: {line}");
        assert!(!line.contains("pw@"), "{line}");
    }
}

#[test]
fn migrations_read_the_same_in_postgres_words() {
    assert_eq!(
        migrations::postgres("id INTEGER PRIMARY KEY, n INTEGER NOT NULL, x REAL, b BLOB, realm TEXT, -- REAL_ish INTEGERS"),
        "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, n BIGINT NOT NULL, x DOUBLE PRECISION, b BYTEA, realm TEXT, -- REAL_ish INTEGERS"
    );
    let got = postgres_schema();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema-postgres.sql");
    if std::env::var_os("STACKMETER_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_default();
    assert_eq!(
        got, want,
        "rerun with STACKMETER_UPDATE_GOLDEN=1 and check schema-postgres.sql in"
    );
    assert_eq!(backend::dollar_params("a = ?1 AND b = ?12"), "a = $1 AND b = $12");
}

#[test]
fn two_writers_at_once_both_succeed() {
    // Two connections (as two stackmeter processes would have) writing
    // whole tests at the same moment: each waits for the other's write
    // lock, none fails with "database is locked".
    let path = tmp("two-writers");
    drop(Store::open(&path).unwrap());
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut s = Store::open(&path).unwrap();
                for _ in 0..40 {
                    add_one(&mut s, &format!("writer{w}"));
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("a writer failed");
    }
    let s = Store::open(&path).unwrap();
    assert_eq!(s.runs().unwrap().len(), 80);
}

#[test]
fn check_passes_a_sound_store_and_names_each_problem() {
    let path = tmp("check");
    let mut s = Store::open(&path).unwrap();
    for _ in 0..3 {
        add_one(&mut s, "a");
    }
    let sound = s.check().unwrap();
    assert_eq!((sound.runs, sound.tests, sound.problems.len()), (3, 3, 0), "{sound:?}");
    // A figure whose test is gone, and a document that no longer reads.
    s.conn
        .sqlite()
        .execute_batch(
            "PRAGMA foreign_keys = OFF;
             INSERT INTO figures VALUES (999, 0, 'x', 'rtt', 'mean', 'us', 1.0, 1, 1);
             UPDATE tests SET document = '{\"schema\": 7' WHERE id = 2;
             PRAGMA foreign_keys = ON;",
        )
        .unwrap();
    let bad = s.check().unwrap();
    assert_eq!(bad.problems.len(), 2, "{bad:?}");
    assert!(bad.problems[0].starts_with("foreign_key_check: figures row"), "{bad:?}");
    assert!(
        bad.problems[1].starts_with("test 2 of run 2: document does not read"),
        "{bad:?}"
    );
}

#[test]
fn check_finds_a_damaged_page() {
    let path = tmp("damaged");
    let mut s = Store::open(&path).unwrap();
    for _ in 0..40 {
        add_one(&mut s, "a");
    }
    drop(s);
    // Closing the last connection checkpoints the WAL into the file; then
    // the middle of the file (b-tree pages of tests and figures) is zeroed.
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    assert!(n > 8 * 4096, "{n} bytes");
    bytes[n / 2..n / 2 + 4096].fill(0);
    std::fs::write(&path, &bytes).unwrap();
    let found = Store::open(&path).and_then(|s| s.check());
    match found {
        Ok(c) => assert!(!c.problems.is_empty(), "a zeroed page went unnoticed: {c:?}"),
        Err(e) => assert!(e.to_string().contains("malformed"), "{e}"),
    }
}

#[test]
fn a_copy_into_sqlite_keeps_everything_and_is_not_repeated() {
    let mut src = Store::open(&tmp("copy-src")).unwrap();
    let (run, test) = add_one(&mut src, "a");
    add_one(&mut src, "b");
    src.finish_run(run, "complete", "2026-11-21T02:31:00Z").unwrap();
    let mut dst = Store::open(&tmp("copy-dst")).unwrap();
    add_one(&mut dst, "already-there");
    let first = copy(&src, &mut dst).unwrap();
    assert_eq!(
        first,
        Copied {
            runs: 2,
            tests: 2,
            already: 0
        }
    );
    let again = copy(&src, &mut dst).unwrap();
    assert_eq!(
        again,
        Copied {
            runs: 0,
            tests: 0,
            already: 2
        }
    );
    let runs = dst.runs().unwrap();
    assert_eq!(runs.len(), 3);
    let copied = &runs[1];
    assert_eq!(
        (copied.run.status.as_str(), copied.run.uid.as_str()),
        ("complete", src.run(run).unwrap().unwrap().run.uid.as_str())
    );
    let t = &dst.tests_of_run(copied.id).unwrap()[0];
    assert_eq!(t.label, "a");
    assert_eq!(
        dst.histograms(t.id).unwrap()[0].data,
        src.histograms(test).unwrap()[0].data
    );
    assert!(dst.check().unwrap().problems.is_empty());
}

#[test]
fn spooled_results_are_sent_once_even_when_a_flush_is_repeated() {
    let dir = tmp("spool").with_file_name("spool");
    let spool = Spool::new(&dir);
    // An unreachable PostgreSQL (nothing listens on port 1): the writer spools.
    let down = Location::parse(std::ffi::OsStr::new("postgres://meter:pw@127.0.0.1:1/results")).unwrap();
    let mut w = Writer::open(&down, Some(spool.clone())).unwrap();
    let d = doc();
    let new_run = Run::start("suite", Some("p"), &d.env, serde_json::json!({}), 42);
    let key = w.begin_run(&new_run).unwrap();
    assert_eq!(key.id, None);
    for rep in 0..3 {
        let t = NewTest {
            label: "a",
            repetition: rep,
            step: "s",
            doc: &d,
            histograms: vec![],
            intervals: vec![],
        };
        w.add_test(&key, &t).unwrap();
    }
    w.finish_run(&key, "complete", "2026-11-21T02:31:00Z").unwrap();
    let note = w.note().unwrap();
    assert!(
        note.starts_with("cannot reach results store postgres://meter@127.0.0.1:1/results: "),
        "{note}"
    );
    assert!(note.contains("3 test(s) of 1 run(s) kept in"), "{note}");
    assert!(
        note.ends_with("stackmeter store flush --db postgres://meter:PASSWORD@127.0.0.1:1/results"),
        "{note}"
    );
    // Spool files; a flush's lock file (a dot file) is not one.
    let files = || {
        std::fs::read_dir(&dir)
            .map(|d| {
                d.filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| !e.file_name().to_string_lossy().starts_with('.'))
                })
                .count()
            })
            .unwrap_or(0)
    };
    assert_eq!(files(), 4, "a run file and three test files");
    // A flush whose files could not be removed after the commit: the
    // same files are sent again, and nothing is doubled.
    let kept = tmp("spool-copy").with_file_name("kept");
    std::fs::create_dir_all(&kept).unwrap();
    for e in std::fs::read_dir(&dir).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), kept.join(e.file_name())).unwrap();
    }
    let mut store = Store::open(&tmp("spool-dst")).unwrap();
    let sent = flush(&spool, &mut store).unwrap();
    assert_eq!((sent.runs, sent.tests, sent.already), (1, 3, 0));
    assert_eq!(files(), 0, "sent files are removed");
    let again = flush(&Spool::new(&kept), &mut store).unwrap();
    assert_eq!((again.runs, again.tests, again.already), (0, 0, 1));
    let runs = store.runs().unwrap();
    assert_eq!(
        (runs.len(), runs[0].tests, runs[0].run.status.as_str()),
        (1, 3, "complete")
    );
    assert_eq!(flush(&spool, &mut store).unwrap(), Flushed::default());
}

#[test]
fn locks_need_postgres() {
    let sqlite = Locks::acquire(
        &Location::Sqlite("x.db".into()),
        &[1],
        std::time::Duration::from_millis(10),
    );
    assert!(matches!(sqlite, Err(LockError::NotPostgres(_))));
}

/// A store that drops what it is given (here a trigger deletes a run's
/// tests as the run ends; in life, a WAL deleted under a writer): the writer's
/// read-back at the end of the run says so, with the run and the counts,
/// where the writes themselves all succeeded.
#[test]
fn a_run_that_does_not_read_back_as_written_is_an_error() {
    let path = tmp("read-back");
    let d = doc();
    let test = NewTest {
        label: "a",
        repetition: 0,
        step: "",
        doc: &d,
        histograms: vec![],
        intervals: vec![],
    };
    let at = Location::Sqlite(path.clone());
    let mut w = Writer::open(&at, None).unwrap();
    let key = w
        .begin_run(&Run::start("single", None, &d.env, serde_json::json!({}), 42))
        .unwrap();
    w.add_test(&key, &test).unwrap();
    w.finish_run(&key, "complete", "2026-11-21T02:31:00Z").unwrap();
    // The same writer, once the store starts dropping tests.
    let sabotage = rusqlite::Connection::open(&path).unwrap();
    sabotage
        .execute_batch(
            "CREATE TRIGGER drop_tests AFTER UPDATE OF status ON runs BEGIN DELETE FROM tests WHERE run_id = NEW.id; END;",
        )
        .unwrap();
    let key = w
        .begin_run(&Run::start("single", None, &d.env, serde_json::json!({}), 42))
        .unwrap();
    w.add_test(&key, &test).unwrap();
    w.add_test(&key, &test).unwrap();
    let e = w.finish_run(&key, "complete", "2026-11-21T02:31:00Z").unwrap_err();
    assert!(matches!(e, StoreError::NotKept(_)), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.starts_with("results were lost: run ")
            && msg.ends_with("(2 test(s), status complete) but reads back with 0 test(s), status complete"),
        "{msg}"
    );
    // A run whose row is gone altogether.
    sabotage.execute_batch("DROP TRIGGER drop_tests;").unwrap();
    let key = w
        .begin_run(&Run::start("single", None, &d.env, serde_json::json!({}), 42))
        .unwrap();
    w.add_test(&key, &test).unwrap();
    sabotage
        .execute_batch("PRAGMA foreign_keys = OFF; DELETE FROM runs WHERE id = (SELECT MAX(id) FROM runs);")
        .unwrap();
    let msg = w
        .finish_run(&key, "complete", "2026-11-21T02:31:00Z")
        .unwrap_err()
        .to_string();
    assert!(msg.ends_with("but is not there when read back"), "{msg}");
}

/// Setting a new store up locks a file of its own beside it, never the
/// database: the database, its -wal and -shm are opened by SQLite alone.
#[test]
fn setup_locks_a_file_of_its_own() {
    let path = tmp("setup-lock");
    drop(Store::open(&path).unwrap());
    let lock = crate::open::setup_lock_path(&path);
    assert_eq!(lock.file_name().unwrap(), "results.db.setup-lock");
    assert!(lock.exists());
}

/// The SQLite compiled in has the fix of the WAL-reset bug (3.51.3, March
/// 2026: two connections checkpointing and writing at once could corrupt
/// a WAL-mode database; SQLite's "Write-Ahead Logging", 10), and a store
/// is opened in WAL mode, synchronous FULL, foreign keys on.
#[test]
fn sqlite_has_the_wal_reset_fix_and_stores_open_as_documented() {
    assert!(
        rusqlite::version_number() >= 3_051_003,
        "SQLite {} predates the WAL-reset fix (3.51.3)",
        rusqlite::version()
    );
    let path = tmp("pragmas");
    drop(Store::open(&path).unwrap());
    let c = rusqlite::Connection::open(&path).unwrap();
    let mode: String = c.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let s = Store::open(&path).unwrap();
    let crate::backend::Conn::Sqlite(conn) = &s.conn else {
        unreachable!()
    };
    let sync: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0)).unwrap();
    let fk: i64 = conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0)).unwrap();
    assert_eq!((sync, fk), (2, 1), "synchronous FULL, foreign keys on");
}

/// A path is a file name, never a URI that could switch SQLite's locks
/// off; a file with a second hard link is refused with the reason.
#[test]
fn uri_paths_are_file_names_and_hard_links_are_refused() {
    let dir = tmp("uri").with_file_name("uri-dir");
    std::fs::create_dir_all(&dir).unwrap();
    let uri = dir.join("file:r.db?nolock=1");
    drop(Store::open(&uri).unwrap());
    assert!(uri.exists(), "the literal name is the file");
    // A relative name is made absolute first: never a URI.
    let relative = crate::open::sqlite_path(std::path::Path::new("file:r.db?nolock=1"));
    assert!(relative.is_absolute() && !relative.to_string_lossy().starts_with("file:"));
    let path = tmp("links");
    drop(Store::open(&path).unwrap());
    std::fs::hard_link(&path, path.with_file_name("other.db")).unwrap();
    let e = Store::open(&path).err().unwrap().to_string();
    assert!(e.contains("the file has 2 hard links"), "{e}");
}

/// A store file replaced under a writer (a restore, a `mv`) takes no more
/// writes: the next one is an error naming what happened.
#[test]
fn a_store_replaced_under_a_writer_takes_no_more_writes() {
    let path = tmp("replaced");
    let d = doc();
    let mut w = Writer::open(&Location::Sqlite(path.clone()), None).unwrap();
    let key = w
        .begin_run(&Run::start("single", None, &d.env, serde_json::json!({}), 42))
        .unwrap();
    std::fs::rename(&path, path.with_file_name("moved.db")).unwrap();
    drop(Store::open(&path).unwrap());
    let t = NewTest {
        label: "a",
        repetition: 0,
        step: "",
        doc: &d,
        histograms: vec![],
        intervals: vec![],
    };
    let e = w.add_test(&key, &t).unwrap_err().to_string();
    assert!(
        e.contains("the file was moved, removed or replaced while this command ran"),
        "{e}"
    );
}
