//! Many processes on one SQLite store at once, both CPUs busy: every run a
//! command reported (exit 0) is listed with every one of its tests.
//!
//! A store once lost runs here without a word: setting a new store up
//! took a `flock` on a second descriptor of the database file, and closing
//! that descriptor dropped the POSIX locks SQLite held through its own, so
//! another process closing the store checkpointed and deleted the WAL the
//! first one still wrote into (docs/store.md, "Several processes at once").
//! The first test below replays that order of events on purpose; it lost
//! the writer's run on every trial with that code. The second is the
//! crowd a fleet or a CI job makes, fresh store and existing store.
//!
//! The writers run the binary named by `STACKMETER_STRESS_BIN` when it is
//! set (an older build, to measure how often it loses), else this build;
//! `bench/store-stress.sh` runs the same with hundreds of trials.

use super::durability::check_ok;
use super::{db, ok, runs, stdout};
use crate::{json_of, stderr, Server, BIN};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary the writers run.
fn writer_bin() -> String {
    std::env::var("STACKMETER_STRESS_BIN").unwrap_or_else(|_| BIN.to_string())
}

/// Trials of the crowd test (`STACKMETER_STRESS_TRIALS`, default 8).
fn trials() -> usize {
    std::env::var("STACKMETER_STRESS_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8)
}

fn writer(db: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(writer_bin());
    crate::sandbox(&mut c)
        .args(args)
        .env("STACKMETER_DB", db)
        .env("STACKMETER_C_RESPONDER", "")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Two busy loops, one per CPU, stopped on drop. Each runs under
/// `timeout`, which ends it should this test process itself be killed,
/// and holds none of this process's output pipes (a loop left holding one
/// would keep `scripts/test`'s `tee` waiting). Stopped with SIGTERM, which
/// `timeout` passes on to its loop (SIGKILL would orphan the loop).
struct Burners(Vec<Child>);

impl Burners {
    fn start() -> Burners {
        Burners(
            (0..2)
                .map(|_| {
                    Command::new("timeout")
                        .args(["600", "sh", "-c", "while :; do :; done"])
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let _ = c.wait();
        }
    }
}

/// A fleet file of two nodes at `a` and `b`, one rr step.
fn two_node_fleet(path: &Path, name: &str, a: &Server, b: &Server) {
    std::fs::write(
        path,
        format!(
            "name = \"{name}\"\n[[step]]\nname = \"lat\"\ntest = \"rr\"\nsizes = \"1:1\"\niterations = 20\n\n\
             [[node]]\nname = \"n1\"\naddress = \"127.0.0.1\"\nport = {}\n\n\
             [[node]]\nname = \"n2\"\naddress = \"127.0.0.1\"\nport = {}\n",
            a.addr.port(),
            b.addr.port()
        ),
    )
    .unwrap();
}

/// Status and test count of every stored run, by its kind, plan (or "-")
/// and labels.
fn stored(db: &Path) -> BTreeMap<String, (String, u64)> {
    runs(db)
        .iter()
        .map(|r| {
            let label = r["labels"]
                .as_array()
                .map(|l| l.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>().join(","))
                .unwrap_or_default();
            let key = format!(
                "{} {} {}",
                r["kind"].as_str().unwrap_or(""),
                r["plan"].as_str().unwrap_or("-"),
                label
            );
            (
                key,
                (
                    r["status"].as_str().unwrap_or("").to_string(),
                    r["tests"].as_u64().unwrap_or(0),
                ),
            )
        })
        .collect()
}

fn wait_ok(c: Child, what: &str) -> Output {
    let out = c.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{what} exited {:?}: {}",
        out.status.code(),
        stderr(&out)
    );
    out
}

/// The order of events that lost runs: A sets a new store up and measures;
/// meanwhile B opens the store, reads and closes it; C opens it and stays
/// open while A writes its run and exits. A's run must be there.
#[test]
fn a_reader_closing_while_a_new_stores_writer_measures_takes_nothing_away() {
    let server = Server::start(&[]);
    let target = server.target();
    for trial in 0..3 {
        let db = db(&format!("reader-close-{trial}"));
        let wal = PathBuf::from(format!("{}-wal", db.display()));
        // A: sets the store up, then measures for about 1.5 s.
        let a = writer(
            &db,
            &["ping", "-c", "30", "--interval-us", "50000", "--label", "a", &target],
        )
        .spawn()
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !wal.exists() {
            assert!(Instant::now() < deadline, "A set no store up within 20 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(200));
        // B: a reader that opens the store and closes it.
        let b = wait_ok(writer(&db, &["runs", "--json"]).spawn().unwrap(), "runs");
        assert_eq!(json_of(&b)["runs"].as_array().map(Vec::len), Some(0));
        // C: opens the store now and stays open past A's end.
        let c = writer(
            &db,
            &["ping", "-c", "80", "--interval-us", "50000", "--label", "c", &target],
        )
        .spawn()
        .unwrap();
        wait_ok(a, "A");
        wait_ok(c, "C");
        let kept = stored(&db);
        assert_eq!(
            kept.keys().cloned().collect::<Vec<_>>(),
            ["single - a", "single - c"],
            "trial {trial}: {kept:?}"
        );
        assert_eq!(check_ok(&db), (2, 2));
    }
}

/// What one trial of the crowd started, by the key `stored` lists it under.
struct Crowd {
    children: Vec<(String, Child)>,
    readers: Vec<Child>,
}

/// Five single commands, a suite, two clients of a two-node fleet (file
/// locks), two `runs` and a `store copy` reading, all at once.
fn crowd(db: &Path, trial: usize, a: &Server, b: &Server, fleet: &Path, locks: &Path) -> Crowd {
    let mut children = Vec::new();
    for i in 0..5 {
        let label = format!("t{trial}p{i}");
        let c = writer(db, &["ping", "-c", "20", "--label", &label, &a.target()])
            .spawn()
            .unwrap();
        children.push((format!("single - {label}"), c));
    }
    let suite = writer(
        db,
        &[
            "suite",
            "udp-echo",
            "--quick",
            "--repeat",
            "1",
            "--json",
            "--target",
            &format!("a{trial}={}", a.target()),
            "--target",
            &format!("b{trial}={}", b.target()),
        ],
    )
    .spawn()
    .unwrap();
    children.push((format!("suite udp-echo a{trial},b{trial}"), suite));
    for (node, other) in [("n1", "n2"), ("n2", "n1")] {
        let c = writer(
            db,
            &[
                "fleet",
                "run",
                fleet.to_str().unwrap(),
                "--node",
                node,
                "--run",
                &format!("r{trial}"),
                "--lock-dir",
                locks.to_str().unwrap(),
            ],
        )
        .spawn()
        .unwrap();
        children.push((format!("fleet r{trial} {node}->{other}"), c));
    }
    let copy = db.with_file_name(format!("copy-{trial}.db"));
    let mut readers = vec![
        writer(db, &["runs"]).spawn().unwrap(),
        writer(db, &["runs"]).spawn().unwrap(),
    ];
    readers.push(
        writer(db, &["store", "copy", db.to_str().unwrap(), copy.to_str().unwrap()])
            .spawn()
            .unwrap(),
    );
    Crowd { children, readers }
}

/// Eleven processes at once on a store, both CPUs busy (so it runs alone,
/// in scripts/test's serial group: its busy loops would slow every test
/// beside it): on odd trials the
/// store is new (every process may be the one that sets it up), on even
/// ones it is the store of the trial before. Every writer that exited 0 has
/// its run listed, complete, with all its tests; `store check` is ok.
#[test]
#[ignore = "run alone by scripts/test, after the other tests: it keeps both CPUs busy"]
fn a_crowd_of_writers_and_readers_keeps_every_run_on_a_new_and_an_old_store() {
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let dir = db("crowd").parent().unwrap().to_path_buf();
    let fleet = dir.join("fleet.toml");
    two_node_fleet(&fleet, "crowd", &a, &b);
    let locks = dir.join("locks");
    std::fs::create_dir_all(&locks).unwrap();
    let _burners = Burners::start();
    let mut db_path = dir.join("none.db");
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for trial in 0..trials() {
        if trial % 2 == 0 {
            db_path = dir.join(format!("store-{trial}.db"));
            expected.clear();
        }
        let crowd = crowd(&db_path, trial, &a, &b, &fleet, &locks);
        for (key, child) in crowd.children {
            let out = wait_ok(child, &key);
            // A suite says how many tests it measured; the rest measure one.
            let tests = if key.starts_with("suite") {
                json_of(&out)["tests"].as_u64().unwrap()
            } else {
                1
            };
            expected.insert(key, tests);
        }
        for r in crowd.readers {
            wait_ok(r, "reader");
        }
        let kept = stored(&db_path);
        let got: BTreeMap<String, u64> = kept.iter().map(|(k, (_, n))| (k.clone(), *n)).collect();
        assert_eq!(got, expected, "trial {trial}: runs lost or short");
        assert!(kept.values().all(|(s, _)| s == "complete"), "trial {trial}: {kept:?}");
        let total: u64 = expected.values().sum();
        assert_eq!(check_ok(&db_path), (expected.len(), total as usize));
    }
    // The last copy is a sound store too.
    let copy = dir.join(format!("copy-{}.db", trials() - 1));
    assert!(stdout(&ok(super::sm(&copy, &["store", "check"]))).starts_with("ok: "));
}

/// A store that loses what it was given (a trigger deletes a run's tests
/// as the run ends: every write succeeds, the read-back finds none): a
/// single command, a suite and a fleet client each print one error naming
/// the run and the counts, and exit 1.
#[test]
fn every_writer_reads_its_run_back_and_fails_loudly_when_it_is_not_there() {
    let db = db("read-back");
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    ok(super::sm(&db, &["runs"]));
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER drop_tests AFTER UPDATE OF status ON runs BEGIN DELETE FROM tests WHERE run_id = NEW.id; END;",
        )
        .unwrap();
    let fleet = db.with_file_name("fleet.toml");
    two_node_fleet(&fleet, "lost", &a, &b);
    let locks = db.with_file_name("locks");
    let cases: [(&str, Vec<String>, &str); 3] = [
        (
            "single",
            vec!["ping".into(), "-c".into(), "20".into(), a.target()],
            "stackmeter: error: the result was printed but not stored: results were lost: run ",
        ),
        (
            "suite",
            vec![
                "suite".into(),
                "udp-echo".into(),
                "--quick".into(),
                "--repeat".into(),
                "1".into(),
                "--target".into(),
                format!("a={}", a.target()),
                "--target".into(),
                format!("b={}", b.target()),
            ],
            "stackmeter: error: the suite's run was not kept as written: results were lost: run ",
        ),
        (
            "fleet",
            vec![
                "fleet".into(),
                "run".into(),
                fleet.to_str().unwrap().into(),
                "--node".into(),
                "n1".into(),
                "--run".into(),
                "r".into(),
                "--lock-dir".into(),
                locks.to_str().unwrap().into(),
            ],
            "stackmeter: error: results were lost: run ",
        ),
    ];
    for (what, args, says) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = super::sm(&db, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        let line = err
            .lines()
            .find(|l| l.starts_with(says))
            .unwrap_or_else(|| panic!("{what}: {err}"));
        assert!(
            line.contains("but reads back with 0 test(s), status "),
            "{what}: {line}"
        );
    }
}
