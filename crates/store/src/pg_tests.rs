//! Store tests on a real PostgreSQL server (`testing.rs`: initdb in a
//! temporary folder, one database per test), and the same store on SQLite
//! beside it where the two must agree.

use super::testing::{missing, TempPostgres};
use super::tests::{add_one, doc, tmp};
use super::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The shared server and a fresh database `name` on it.
fn database(test: &str, name: &str) -> Option<(Arc<TempPostgres>, Location)> {
    let pg = match TempPostgres::shared() {
        Ok(pg) => pg,
        Err(why) => {
            missing(test, &format!("no PostgreSQL server: {why}"));
            return None;
        }
    };
    let url = pg.database(name).unwrap();
    Some((pg, at(&url)))
}

fn at(url: &str) -> Location {
    Location::parse(std::ffi::OsStr::new(url)).unwrap()
}

const TABLES: [&str; 5] = ["runs", "tests", "figures", "histograms", "intervals"];

#[test]
fn postgres_builds_the_same_tables_and_reads_back_whole() {
    let Some((_pg, db)) = database("postgres_builds_the_same_tables", "same_tables") else {
        return;
    };
    let mut s = Store::open(&db).unwrap();
    assert_eq!(s.version().unwrap(), MIGRATIONS.len() as i64);
    let lite = Store::open_in_memory().unwrap();
    for t in TABLES {
        assert_eq!(s.columns(t).unwrap(), lite.columns(t).unwrap(), "table {t}");
    }
    let (run, test) = add_one(&mut s, "app");
    let info = s.run(run).unwrap().unwrap();
    assert_eq!(
        (info.run.status.as_str(), info.tests, info.labels.as_slice()),
        ("running", 1, &["app".to_string()][..])
    );
    s.finish_run(run, "complete", "2026-11-21T02:31:00Z").unwrap();
    assert_eq!(
        s.run(run).unwrap().unwrap().run.finished.as_deref(),
        Some("2026-11-21T02:31:00Z")
    );
    let back = s.tests_of_run(run).unwrap();
    assert_eq!(
        serde_json::to_string_pretty(&back[0].doc).unwrap(),
        serde_json::to_string_pretty(&doc()).unwrap()
    );
    let h = s.histograms(test).unwrap();
    assert_eq!(
        (h[0].metric.as_str(), h[0].data.as_slice()),
        ("rtt_us", &[1u8, 2, 3][..])
    );
    assert!(s.has_label("app").unwrap() && !s.has_label("nope").unwrap());
    assert_eq!(s.tests_with_label("app").unwrap().len(), 1);
    let c = s.check().unwrap();
    assert_eq!((c.runs, c.tests, c.problems.len()), (1, 1, 0), "{c:?}");
    // Opening again migrates nothing and finds the run.
    drop(s);
    let s = Store::open(&db).unwrap();
    assert_eq!(s.runs().unwrap().len(), 1);
    assert!(Store::exists(&db).unwrap());
}

#[test]
fn hosts_opening_a_new_database_at_once_migrate_it_once() {
    let Some((_pg, db)) = database("hosts_opening_a_new_database_at_once", "open_at_once") else {
        return;
    };
    assert!(!Store::exists(&db).unwrap(), "an empty database holds no store");
    let openers: Vec<_> = (0..8)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || Store::open(&db).map(|s| s.version().unwrap()))
        })
        .collect();
    for o in openers {
        assert_eq!(o.join().unwrap().unwrap(), MIGRATIONS.len() as i64);
    }
}

#[test]
fn concurrent_writers_lose_nothing_on_postgres() {
    let Some((_pg, db)) = database("concurrent_writers_lose_nothing", "writers") else {
        return;
    };
    drop(Store::open(&db).unwrap());
    let (writers, each) = (8, 25);
    let threads: Vec<_> = (0..writers)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut s = Store::open(&db).unwrap();
                (0..each).map(|_| add_one(&mut s, &format!("w{w}"))).collect::<Vec<_>>()
            })
        })
        .collect();
    let mut ids: Vec<(i64, i64)> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let s = Store::open(&db).unwrap();
    let runs = s.runs().unwrap();
    assert_eq!(runs.len(), writers * each);
    for w in 0..writers {
        assert_eq!(s.tests_with_label(&format!("w{w}")).unwrap().len(), each, "writer {w}");
    }
    // Every id the writers were given is there, once.
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), writers * each);
    for (run, _) in &ids {
        assert!(runs.iter().any(|r| r.id == *run && r.tests == 1), "run {run}");
    }
    assert!(s.check().unwrap().problems.is_empty());
}

#[test]
fn a_history_copied_sqlite_postgres_sqlite_comes_back_the_same() {
    let Some((_pg, db)) = database("a_history_copied_sqlite_postgres_sqlite", "copy_round") else {
        return;
    };
    let mut src = Store::open(&tmp("pg-copy-src")).unwrap();
    for label in ["a", "b", "c"] {
        let (run, test) = add_one(&mut src, label);
        src.conn
            .sqlite()
            .execute(
                "INSERT INTO intervals VALUES (?1, 0, 'total', 0, 0.0, 1.0, 941.5, 'Mbit/s')",
                [test],
            )
            .unwrap();
        src.finish_run(run, "complete", "2026-11-21T02:31:00Z").unwrap();
    }
    let mut pg = Store::open(&db).unwrap();
    assert_eq!(
        copy(&src, &mut pg).unwrap(),
        Copied {
            runs: 3,
            tests: 3,
            already: 0
        }
    );
    assert_eq!(
        copy(&src, &mut pg).unwrap(),
        Copied {
            runs: 0,
            tests: 0,
            already: 3
        }
    );
    let mut back = Store::open(&tmp("pg-copy-back")).unwrap();
    assert_eq!(
        copy(&pg, &mut back).unwrap(),
        Copied {
            runs: 3,
            tests: 3,
            already: 0
        }
    );
    // Every row of every table, ids aside, is what it was.
    let rows = |s: &Store| {
        copy::read_runs(&s.conn)
            .unwrap()
            .into_iter()
            .map(|(id, r)| (r, copy::read_tests(&s.conn, id).unwrap()))
            .collect::<Vec<_>>()
    };
    let (a, b) = (rows(&src), rows(&back));
    assert_eq!(a, b);
    assert_eq!(a, rows(&pg));
    assert_eq!(a[0].1[0].intervals[0].value, 941.5);
    assert!(pg.check().unwrap().problems.is_empty());
}

#[test]
fn check_on_postgres_names_orphans_and_unreadable_documents() {
    let Some((pg, db)) = database("check_on_postgres_names_orphans", "check_orphans") else {
        return;
    };
    let mut s = Store::open(&db).unwrap();
    for _ in 0..3 {
        add_one(&mut s, "a");
    }
    // Only a session that switches the foreign keys off (a superuser's
    // replica mode) can leave an orphan.
    pg.admin_in(
        "check_orphans",
        "SET session_replication_role = replica;
         INSERT INTO figures VALUES (999, 0, 'x', 'rtt', 'mean', 'us', 1.0, 1, 1);
         UPDATE tests SET document = '{\"schema\": 7' WHERE id = 2;",
    )
    .unwrap();
    let bad = s.check().unwrap();
    assert_eq!(bad.problems.len(), 2, "{bad:?}");
    assert_eq!(
        bad.problems[0],
        "foreign keys: 1 figures row(s) point at tests row 999, which does not exist"
    );
    assert!(
        bad.problems[1].starts_with("test 2 of run 2: document does not read"),
        "{bad:?}"
    );
}

#[test]
fn a_newer_postgres_store_is_refused() {
    let Some((pg, db)) = database("a_newer_postgres_store_is_refused", "newer") else {
        return;
    };
    drop(Store::open(&db).unwrap());
    pg.admin_in("newer", "UPDATE stackmeter_schema SET version = 99")
        .unwrap();
    let e = Store::open(&db).err().unwrap();
    assert!(e.to_string().contains("schema version 99"), "{e}");
}

#[test]
fn connection_failures_say_what_and_where_without_the_password() {
    let Some((pg, db)) = database("connection_failures_say_what_and_where", "failures") else {
        return;
    };
    drop(Store::open(&db).unwrap());
    let port = pg.port();
    let cases = [
        (
            format!("postgres://meter:wrong@127.0.0.1:{port}/failures"),
            "refused the connection: password authentication failed for user \"meter\"",
        ),
        (
            pg.url("no_such_db"),
            "refused the connection: database \"no_such_db\" does not exist",
        ),
        (
            "postgres://meter:pw@127.0.0.1:1/failures".to_string(),
            "cannot reach results store postgres://meter@127.0.0.1:1/failures: ",
        ),
    ];
    for (url, says) in cases {
        let e = Store::open(at(&url)).err().unwrap();
        let line = e.to_string();
        assert!(line.contains(says), "{url}: {line}");
        assert!(!line.contains("wrong") && !line.contains(testing::PASSWORD), "{line}");
        assert!(!line.contains('\n'), "{line}");
        assert_eq!(e.is_unreachable(), url.contains(":1/"), "{line}");
    }
    // A server that accepts the connection and never answers: the whole
    // attempt is bounded by connect_timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "postgres://meter:pw@{}/x?connect_timeout=1",
        silent.local_addr().unwrap()
    );
    let start = Instant::now();
    let e = Store::open(at(&url)).err().unwrap();
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    assert!(e.is_unreachable(), "{e}");
    assert!(e.to_string().contains("no answer within 1 s"), "{e}");
}

#[test]
fn a_writer_that_loses_the_server_spools_and_a_flush_sends_it_once() {
    let pg = match TempPostgres::start() {
        Ok(pg) => pg,
        Err(why) => return missing("a_writer_that_loses_the_server_spools", &why),
    };
    let db = at(&pg.database("lost").unwrap());
    let spool = Spool::new(tmp("pg-lost").with_file_name("spool"));
    let mut w = Writer::open(&db, Some(spool.clone())).unwrap();
    let d = doc();
    let key = w
        .begin_run(&Run::start("suite", Some("p"), &d.env, serde_json::json!({}), 42))
        .unwrap();
    let test = |rep| NewTest {
        label: "a",
        repetition: rep,
        step: "s",
        doc: &d,
        histograms: vec![],
        intervals: vec![],
    };
    w.add_test(&key, &test(0)).unwrap();
    w.add_test(&key, &test(1)).unwrap();
    assert_eq!(w.spooled_tests(), 0);
    pg.stop();
    w.add_test(&key, &test(2)).unwrap();
    w.add_test(&key, &test(3)).unwrap();
    w.finish_run(&key, "complete", "2026-11-21T02:31:00Z").unwrap();
    assert_eq!(w.spooled_tests(), 2);
    assert!(w.note().unwrap().contains("2 test(s) of 1 run(s)"), "{:?}", w.note());
    // Down: the flush fails and keeps every file.
    let e = Store::open(&db).err().unwrap();
    assert!(e.is_unreachable(), "{e}");
    pg.resume().unwrap();
    let mut s = Store::open(&db).unwrap();
    let sent = flush(&spool, &mut s).unwrap();
    assert_eq!(
        (sent.runs, sent.tests, sent.already),
        (0, 2, 0),
        "the run was there, two tests were not"
    );
    let run = &s.runs().unwrap()[0];
    assert_eq!((run.tests, run.run.status.as_str()), (4, "complete"));
    let reps: Vec<usize> = s.tests_of_run(run.id).unwrap().iter().map(|t| t.repetition).collect();
    assert_eq!(reps, [0, 1, 2, 3], "in the order measured");
}

#[test]
fn locks_of_overlapping_sets_are_never_held_at_once() {
    let Some((_pg, db)) = database("locks_of_overlapping_sets", "locks") else {
        return;
    };
    // Three takers, each set overlapping another's, in orders that would
    // deadlock if taken as given.
    let sets: [&[i64]; 3] = [&[3, 1, 2], &[2, 5, 4], &[4, 1]];
    let held: Arc<Vec<AtomicBool>> = Arc::new((0..6).map(|_| AtomicBool::new(false)).collect());
    let rounds = Arc::new(AtomicUsize::new(0));
    let takers: Vec<_> = sets
        .iter()
        .map(|set| {
            let (db, held, rounds, set) = (db.clone(), held.clone(), rounds.clone(), set.to_vec());
            std::thread::spawn(move || {
                for _ in 0..15 {
                    let locks = Locks::acquire(&db, &set, Duration::from_secs(30)).unwrap();
                    let mut sorted = set.clone();
                    sorted.sort();
                    assert_eq!(locks.keys(), sorted.as_slice());
                    for k in &set {
                        let was = held[*k as usize].swap(true, Ordering::SeqCst);
                        assert!(!was, "key {k} held twice at once");
                    }
                    std::thread::sleep(Duration::from_millis(2));
                    for k in &set {
                        held[*k as usize].store(false, Ordering::SeqCst);
                    }
                    rounds.fetch_add(1, Ordering::SeqCst);
                    drop(locks);
                }
            })
        })
        .collect();
    for t in takers {
        t.join().expect("a taker failed");
    }
    assert_eq!(rounds.load(Ordering::SeqCst), 45);
}

#[test]
fn a_lock_wait_is_bounded_and_leaves_nothing_held() {
    let Some((_pg, db)) = database("a_lock_wait_is_bounded", "lock_wait") else {
        return;
    };
    let first = Locks::acquire(&db, &[20], Duration::from_secs(5)).unwrap();
    let start = Instant::now();
    let e = Locks::acquire(&db, &[10, 20], Duration::from_millis(300))
        .err()
        .unwrap();
    let waited = start.elapsed();
    assert!(matches!(e, LockError::Timeout { key: 20, .. }), "{e}");
    assert!(waited >= Duration::from_millis(250), "{waited:?}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    // The loser released key 10 on its way out.
    let ten = Locks::acquire(&db, &[10], Duration::from_millis(100)).unwrap();
    drop(ten);
    drop(first);
    let both = Locks::acquire(&db, &[10, 20], Duration::from_millis(100)).unwrap();
    assert!(both.still_held());
}

#[test]
fn shared_holders_share_and_keep_an_exclusive_one_out() {
    let Some((_pg, db)) = database("shared_holders_share", "lock_shared") else {
        return;
    };
    let wait = Duration::from_millis(100);
    let a = Locks::acquire_as(&db, &[30, 31], true, wait).unwrap();
    let b = Locks::acquire_as(&db, &[31], true, wait).unwrap();
    assert!(matches!(
        Locks::acquire(&db, &[31], wait),
        Err(LockError::Timeout { key: 31, .. })
    ));
    drop(a);
    // Key 30 is free; 31 is still shared by b.
    let thirty = Locks::acquire(&db, &[30], wait).unwrap();
    assert!(
        Locks::acquire_as(&db, &[30], true, wait).is_err(),
        "shared waits for exclusive"
    );
    drop(b);
    drop(thirty);
    let all = Locks::acquire(&db, &[30, 31], wait).unwrap();
    assert_eq!(all.keys(), &[30, 31]);
}

#[test]
fn locks_die_with_their_connection() {
    let Some((pg, db)) = database("locks_die_with_their_connection", "lock_death") else {
        return;
    };
    let holder = Locks::acquire(&db, &[7], Duration::from_secs(5)).unwrap();
    assert!(Locks::acquire(&db, &[7], Duration::from_millis(50)).is_err());
    // The holder's host vanishes: the server ends its session.
    let pid = holder.backend_pid().unwrap();
    pg.admin(&format!("SELECT pg_terminate_backend({pid})")).unwrap();
    let next = Locks::acquire(&db, &[7], Duration::from_secs(5)).unwrap();
    assert!(next.still_held());
    assert!(!holder.still_held(), "the dead holder knows it holds nothing");
}

#[test]
fn many_rows_and_repeated_keys_are_written_alike_on_both() {
    let Some((_pg, db)) = database("many_rows_and_repeated_keys", "many_rows") else {
        return;
    };
    let d = doc();
    let hist = |data: Vec<u8>| Histogram {
        row: 0,
        metric: "rtt_us".into(),
        unit: "ns".into(),
        encoding: "hdrhistogram-v2".into(),
        data,
    };
    // More intervals than one statement takes, and a histogram given
    // twice (the later one is kept, as SQLite's INSERT OR REPLACE did).
    let intervals: Vec<StoredInterval> = (0..1001)
        .map(|seq| StoredInterval {
            row: 0,
            series: "total".into(),
            seq,
            start_s: seq as f64 * 0.1,
            end_s: (seq + 1) as f64 * 0.1,
            value: 900.0 + seq as f64,
            unit: "Mbit/s".into(),
        })
        .collect();
    for at in [Location::Sqlite(tmp("many-rows")), db] {
        let mut s = Store::open(&at).unwrap();
        let run = s
            .begin_run(&Run::start("single", None, &d.env, serde_json::json!({}), 1))
            .unwrap();
        let test = s
            .add_test(
                run,
                &NewTest {
                    label: "a",
                    repetition: 0,
                    step: "",
                    doc: &d,
                    histograms: vec![hist(vec![1]), hist(vec![2, 2])],
                    intervals: intervals.clone(),
                },
            )
            .unwrap();
        assert_eq!(s.intervals(test).unwrap(), intervals, "{at}");
        let h = s.histograms(test).unwrap();
        assert_eq!((h.len(), h[0].data.as_slice()), (1, &[2u8, 2][..]), "{at}");
    }
}
