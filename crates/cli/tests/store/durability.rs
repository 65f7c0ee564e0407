//! The store never loses a run: a suite killed with SIGKILL at several
//! moments, two suites and a crowd of single commands writing one file at
//! once, and a disk that fills up under a suite (many processes opening a
//! store at once: concurrency.rs). Real processes, a real
//! SQLite file, a real (tmpfs) full disk; `store check` judges the file.

use super::{db, ok, runs, sm, stdout};
use crate::{json_of, stderr, Server, BIN};
use stackmeter_store::Store;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A suite of many short tests (about 70 ms each on loopback) against two
/// responders, storing into `db`.
fn suite(db: &Path, a: &Server, b: &Server, repeat: &str) -> Child {
    crate::sandbox(&mut Command::new(BIN))
        .args(["suite", "udp-echo", "--json", "--repeat", repeat, "--target"])
        .arg(format!("a={}", a.target()))
        .arg("--target")
        .arg(format!("b={}", b.target()))
        .env("STACKMETER_DB", db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("stackmeter suite starts")
}

/// Ids of the tests committed to run `run` so far (read by another
/// connection, as `runs` would).
fn committed(db: &Path, run: i64) -> BTreeSet<i64> {
    Store::open(db)
        .and_then(|s| s.tests_of_run(run))
        .map(|t| t.iter().map(|t| t.id).collect())
        .unwrap_or_default()
}

/// Waits until run `run` holds at least `n` tests; returns their ids.
fn wait_for_tests(db: &Path, run: i64, n: usize, child: &mut Child) -> BTreeSet<i64> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ids = committed(db, run);
        if ids.len() >= n {
            return ids;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("suite ended ({st}) with {} of {n} tests stored", ids.len());
        }
        assert!(
            Instant::now() < deadline,
            "{} of {n} tests stored within 60 s",
            ids.len()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `store check` passes: "ok: R runs, T tests".
pub(super) fn check_ok(db: &Path) -> (usize, usize) {
    let out = ok(sm(db, &["store", "check"]));
    let line = stdout(&out);
    let counts: Vec<usize> = line
        .trim()
        .strip_prefix("ok: ")
        .unwrap_or_else(|| panic!("not ok: {line}"))
        .split(", ")
        .map(|p| p.split(' ').next().unwrap().parse().unwrap())
        .collect();
    (counts[0], counts[1])
}

#[test]
fn kill_9_at_any_moment_of_a_suite_loses_no_finished_test() {
    let db = db("kill9");
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    // Kill after 1, 2, 5, ... committed tests, and a little after (the
    // process is then often inside its next commit): xorshift, fixed seed.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for (i, n) in [1, 2, 5, 3, 8, 4, 13, 6].into_iter().enumerate() {
        let run = i as i64 + 1;
        let mut child = suite(&db, &a, &b, "100");
        let seen = wait_for_tests(&db, run, n, &mut child);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        std::thread::sleep(Duration::from_micros(x % 40_000));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert_eq!(status.code(), None, "killed by a signal, not ended by itself");
        let after = committed(&db, run);
        assert!(after.is_superset(&seen), "run {run}: had {seen:?}, kept {after:?}");
        let (runs_n, _) = check_ok(&db);
        assert_eq!(runs_n, run as usize);
        let listed = runs(&db);
        assert_eq!(listed[i]["status"], "partial", "a killed suite's run reads as partial");
        assert_eq!(listed[i]["tests"].as_u64(), Some(after.len() as u64));
    }
    // Every stored document reads back and the file takes new runs.
    let store = Store::open(&db).unwrap();
    let all: usize = (1..=8).map(|r| store.tests_of_run(r).unwrap().len()).sum();
    assert!(all >= 42, "{all} tests kept");
    drop(store);
    ok(sm(&db, &["ping", "-c", "20"]));
    assert_eq!(check_ok(&db), (9, all + 1));
}

#[test]
fn two_suites_and_many_commands_write_one_store_at_once() {
    let db = db("concurrent");
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let suites: Vec<Child> = (0..2).map(|_| suite(&db, &a, &b, "15")).collect();
    let singles: Vec<Child> = (0..8)
        .map(|i| {
            crate::sandbox(&mut Command::new(BIN))
                .args([
                    "ping",
                    "-c",
                    "50",
                    "--json",
                    "--label",
                    &format!("single{i}"),
                    &a.target(),
                ])
                .env("STACKMETER_DB", &db)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut measured = 0;
    for c in suites.into_iter().chain(singles) {
        let out = ok(c.wait_with_output().unwrap());
        assert!(!stderr(&out).contains("not stored"), "{}", stderr(&out));
        let v = json_of(&out);
        measured += v["tests"].as_u64().unwrap_or(1) as usize;
    }
    assert_eq!(measured, 2 * 30 + 8);
    let list = runs(&db);
    assert_eq!(list.len(), 10);
    assert!(list.iter().all(|r| r["status"] == "complete"), "{list:?}");
    let stored: u64 = list.iter().map(|r| r["tests"].as_u64().unwrap()).sum();
    assert_eq!(stored as usize, measured);
    assert_eq!(check_ok(&db), (10, measured));
}

/// A tmpfs of `size` mounted on `dir` while it lives (root only).
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let _ = Command::new("umount").arg(dir).stderr(Stdio::null()).status();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .ok()?;
        out.status.success().then(|| Tmpfs(dir.to_path_buf()))
    }

    /// Writes zeros into `fill` until the file system has no room left.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.0.join("fill")).unwrap();
        let block = [0u8; 4096];
        loop {
            match f.write(&block) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
                Err(e) => panic!("filling the tmpfs: {e}"),
            }
        }
    }

    fn free(&self) {
        std::fs::remove_file(self.0.join("fill")).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_is_one_clear_error_and_loses_nothing_stored_before() {
    let dir = db("full").parent().unwrap().join("tmpfs");
    let Some(fs) = Tmpfs::mount(&dir, "8m") else {
        eprintln!("skipped: mounting a tmpfs needs root (CAP_SYS_ADMIN)");
        return;
    };
    let db = dir.join("results.db");
    ok(sm(&db, &["rr", "--sizes", "1:1", "-n", "50"]));
    // A suite fills the disk's last room while it runs: the tests that
    // end afterwards cannot be stored (the WAL cannot grow).
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let mut child = suite(&db, &a, &b, "40");
    let before = wait_for_tests(&db, 2, 3, &mut child);
    fs.fill();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    let v = json_of(&out);
    let measured = v["tests"].as_u64().unwrap() as usize;
    assert_eq!(out.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap_or("");
    assert!(
        last.starts_with("stackmeter: error: ") && last.contains("not stored: ") && last.contains("disk is full"),
        "{err}"
    );
    // A single command on the full disk: refused before it measures when
    // the store cannot even be opened, else measured, printed and not
    // stored; one line and exit 1 either way.
    let single = sm(&db, &["rr", "--sizes", "1:1", "-n", "50"]);
    assert_eq!(single.status.code(), Some(1));
    let err1 = stderr(&single);
    assert_eq!(err1.lines().count(), 1, "{err1}");
    assert!(
        err1.contains("no space left on the device")
            || err1.contains("not stored: results store: database or disk is full"),
        "{err1}"
    );
    fs.free();
    // Everything stored before the disk filled is there, and sound.
    let after = committed(&db, 2);
    assert!(after.is_superset(&before), "had {before:?}, kept {after:?}");
    assert!(
        after.len() < measured,
        "{} of {measured} stored on a full disk",
        after.len()
    );
    assert_eq!(check_ok(&db), (2, 1 + after.len()));
    assert_eq!(runs(&db)[1]["status"], "partial");
}
