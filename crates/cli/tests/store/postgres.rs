//! The results store on a real PostgreSQL 15 (started by the tests:
//! initdb in a temporary folder, stopped and removed after, see the store
//! crate's `testing` module): every command that reads or writes the
//! store, many processes writing at once, `store copy` between SQLite and
//! PostgreSQL, the spool when the server is down or lost mid-run and
//! `store flush`, and the one-line errors. Every spawned binary gets a
//! temporary HOME (its spool lives there) and names its store itself.

use super::{ok, stdout};
use crate::{json_of, missing, sandbox, stderr, stderr_but_placement, Server, BIN};
use serde_json::Value;
use stackmeter_store::testing::TempPostgres;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The shared server and a fresh database `name` on it, or a skip.
fn database(test: &str, name: &str) -> Option<(Arc<TempPostgres>, String)> {
    match TempPostgres::shared() {
        Ok(pg) => {
            let url = pg.database(name).unwrap();
            Some((pg, url))
        }
        Err(why) => {
            missing(test, &format!("no PostgreSQL server: {why}"));
            None
        }
    }
}

/// A fresh HOME for one test's processes (their spool is under it).
fn home(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("pg-home-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The spool folder of the processes of `home`.
fn spool(home: &Path) -> PathBuf {
    home.join(".local/share/stackmeter/spool")
}

/// `stackmeter ARGS` in the tests' sandbox, storing into `db`
/// ($STACKMETER_DB), with `home` as HOME and its data folder (the spool is
/// there).
fn cmd(db: &str, home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    sandbox(&mut c)
        .args(args)
        .env("STACKMETER_DB", db)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("STACKMETER_C_RESPONDER", "");
    c
}

fn sm(db: &str, home: &Path, args: &[&str]) -> Output {
    cmd(db, home, args).output().expect("stackmeter runs")
}

fn runs(db: &str, home: &Path) -> Vec<Value> {
    json_of(&ok(sm(db, home, &["runs", "--json"])))["runs"]
        .as_array()
        .unwrap()
        .clone()
}

/// Every run's id and what `show` prints for it, in text and JSON.
fn shown(db: &str, home: &Path) -> Vec<(i64, String, String)> {
    runs(db, home)
        .iter()
        .map(|r| {
            let id = r["id"].as_i64().unwrap();
            let text = stdout(&ok(sm(db, home, &["show", &id.to_string()])));
            let json = stdout(&ok(sm(db, home, &["show", &id.to_string(), "--json"])));
            (id, text, json)
        })
        .collect()
}

/// A suite of two short steps on two responders, labelled x and y.
fn suite_args(a: &Server, b: &Server, plan: &Path, repeat: &str) -> Vec<String> {
    std::fs::write(
        plan,
        "[[step]]\ntest = \"rr\"\nsizes = \"1:1,1K:1\"\niterations = 30\n\n[[step]]\ntest = \"ping\"\ncount = 30\n",
    )
    .unwrap();
    [
        "suite",
        plan.to_str().unwrap(),
        "--repeat",
        repeat,
        "--target",
        &format!("x={}", a.target()),
        "--target",
        &format!("y={}", b.target()),
    ]
    .map(String::from)
    .to_vec()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn a_postgres_store_serves_every_command() {
    let Some((_pg, db)) = database("a_postgres_store_serves_every_command", "every_command") else {
        return;
    };
    let home = home("every");
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let rr = ok(sm(
        &db,
        &home,
        &["rr", "--sizes", "1:1K,1K:1", "-n", "50", "--label", "app"],
    ));
    let ping = ok(sm(&db, &home, &["ping", "-c", "50", "--label", "app", "--json"]));
    // JSON: a stream's live text leaves out the knobs line its stored text
    // has when the process runs niced (the same on SQLite).
    let stream = ok(sm(
        &db,
        &home,
        &["stream", "-t", "1", "-i", "0.25", "--label", "bulk", "--json"],
    ));
    let plan = home.join("plan.toml");
    let suite = ok(sm(&db, &home, &strs(&suite_args(&a, &b, &plan, "5"))));
    // `--db URL` names the store as the environment does.
    let list = json_of(&ok(cmd(
        "/nonexistent/not-this.db",
        &home,
        &["runs", "--json", "--db", &db],
    )
    .output()
    .unwrap()))["runs"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(list.len(), 4, "{list:?}");
    assert!(list.iter().all(|r| r["status"] == "complete"), "{list:?}");
    assert_eq!(list[3]["tests"].as_u64(), Some(20));
    let show = |id: i64, extra: &[&str]| {
        let mut args = vec!["show".to_string(), id.to_string()];
        args.extend(extra.iter().map(std::string::ToString::to_string));
        stdout(&ok(sm(&db, &home, &strs(&args))))
    };
    let id = |i: usize| list[i]["id"].as_i64().unwrap();
    assert_eq!(show(id(0), &[]), stdout(&rr));
    assert_eq!(show(id(1), &["--json"]), stdout(&ping));
    assert_eq!(show(id(2), &["--json"]), stdout(&stream));
    assert_eq!(show(id(3), &[]), stdout(&suite));
    assert!(
        show(id(0), &["--percentiles"]).contains("100"),
        "the histograms are there"
    );
    let c = json_of(&ok(sm(&db, &home, &["compare", "x", "y", "--format", "json"])));
    assert_eq!(
        c["sections"][0]["rows"][0]["values_a"].as_array().map(Vec::len),
        Some(5),
        "{c}"
    );
    let report = home.join("report.html");
    ok(sm(
        &db,
        &home,
        &["report", "x", "y", "bulk", "-o", report.to_str().unwrap()],
    ));
    let page = std::fs::read_to_string(&report).unwrap();
    for kind in ["percentiles", "comparison", "intervals"] {
        assert!(page.contains(&format!("data-chart=\"{kind}\"")), "no {kind} chart");
    }
    let csv = stdout(&ok(sm(&db, &home, &["export", "--format", "csv", "--label", "app"])));
    assert!(csv.contains(",app,rr,,0,1,1 KiB:1 B,rtt,mean,us,"), "{csv}");
    let all = json_of(&ok(sm(&db, &home, &["export", "--format", "json"])));
    assert_eq!(all["runs"].as_array().unwrap().len(), 4);
    let check = ok(sm(&db, &home, &["store", "check"]));
    assert_eq!(stdout(&check), "ok: 4 runs, 23 tests\n");
    assert!(!spool(&home).exists(), "nothing spooled while the server answers");
}

#[test]
fn many_processes_writing_at_once_lose_nothing() {
    let Some((_pg, db)) = database("many_processes_writing_at_once", "many_writers") else {
        return;
    };
    let home = home("many");
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    ok(sm(&db, &home, &["runs"]));
    let plan = home.join("plan.toml");
    let suites: Vec<Child> = (0..2)
        .map(|_| {
            cmd(&db, &home, &strs(&suite_args(&a, &b, &plan, "4")))
                .arg("--json")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Eight writers, each five single commands one after another.
    let (writers, each) = (8, 5);
    let singles: Vec<_> = (0..writers)
        .map(|w| {
            let (db, home, target) = (db.clone(), home.clone(), a.target());
            std::thread::spawn(move || {
                (0..each)
                    .map(|_| {
                        let out = ok(sm(
                            &db,
                            &home,
                            &["ping", "-c", "20", "--json", "--label", &format!("w{w}"), &target],
                        ));
                        assert!(stderr(&out).is_empty(), "{}", stderr(&out));
                        json_of(&out);
                    })
                    .count()
            })
        })
        .collect();
    let mut measured = 0;
    for s in suites {
        let out = ok(s.wait_with_output().unwrap());
        assert!(stderr_but_placement(&out).is_empty(), "{}", stderr(&out));
        measured += json_of(&out)["tests"].as_u64().unwrap() as usize;
    }
    for s in singles {
        measured += s.join().expect("a writer failed");
    }
    assert_eq!(measured, 2 * 16 + writers * each);
    let list = runs(&db, &home);
    assert_eq!(list.len(), 2 + writers * each);
    let mut ids: Vec<i64> = list.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.dedup();
    assert_eq!(ids.len(), list.len(), "ids assigned by the database, each once");
    for w in 0..writers {
        let mine = list.iter().filter(|r| r["label"] == format!("w{w}")).count();
        assert_eq!(mine, each, "writer {w}");
    }
    let stored: u64 = list.iter().map(|r| r["tests"].as_u64().unwrap()).sum();
    assert_eq!(stored as usize, measured);
    assert!(list.iter().all(|r| r["status"] == "complete"));
    assert_eq!(
        stdout(&ok(sm(&db, &home, &["store", "check"]))),
        format!("ok: {} runs, {measured} tests\n", list.len())
    );
}

#[test]
fn store_copy_round_trips_sqlite_postgres_sqlite() {
    let Some((_pg, db)) = database("store_copy_round_trips", "copy_trip") else {
        return;
    };
    let home = home("copy");
    let first = home.join("first.db");
    let lite = first.to_str().unwrap();
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    ok(sm(
        lite,
        &home,
        &["rr", "--sizes", "1:1,1K:1", "-n", "40", "--label", "app"],
    ));
    ok(sm(lite, &home, &["ping", "-c", "40", "--label", "app"]));
    ok(sm(lite, &home, &["stream", "-t", "1", "-i", "0.5", "--label", "bulk"]));
    ok(sm(
        lite,
        &home,
        &strs(&suite_args(&a, &b, &home.join("plan.toml"), "2")),
    ));
    let before = shown(lite, &home);
    assert_eq!(before.len(), 4);

    let copy = |src: &str, dst: &str| stdout(&ok(sm(lite, &home, &["store", "copy", src, dst])));
    let to_pg = copy(lite, &db);
    let shown_db = db.replace(":meter-secret@", "@");
    assert_eq!(
        to_pg,
        format!("copied 4 run(s) with 11 test(s) from {lite} to {shown_db}; 0 run(s) were there already\n")
    );
    assert!(!to_pg.contains("meter-secret"), "no password in the output");
    // Copying again adds nothing: every run is recognised by its identity.
    assert!(copy(lite, &db).starts_with("copied 0 run(s) with 0 test(s)"));
    assert_eq!(shown(&db, &home), before, "PostgreSQL shows every run as SQLite did");
    let back = home.join("back.db");
    assert!(copy(&db, back.to_str().unwrap()).starts_with("copied 4 run(s) with 11 test(s)"));
    assert_eq!(shown(back.to_str().unwrap(), &home), before);
    // Histograms and intervals came along.
    let pct = |store: &str| stdout(&ok(sm(store, &home, &["show", "1", "--percentiles", "--json"])));
    assert_eq!(pct(back.to_str().unwrap()), pct(lite));
    let csv = |store: &str| stdout(&ok(sm(store, &home, &["export", "--format", "csv"])));
    assert_eq!(csv(back.to_str().unwrap()), csv(lite));
    let report = |store: &str, name: &str| {
        let out = home.join(name);
        ok(sm(store, &home, &["report", "bulk", "-o", out.to_str().unwrap()]));
        std::fs::read_to_string(out).unwrap()
    };
    let page = report(back.to_str().unwrap(), "back.html");
    assert!(page.contains("data-chart=\"intervals\""), "the intervals were copied");
    assert_eq!(
        stdout(&ok(sm(&db, &home, &["store", "check"]))),
        "ok: 4 runs, 11 tests\n"
    );

    // Errors: a missing source, the same store twice, a bad URL.
    let out = sm(lite, &home, &["store", "copy", "/nonexistent/x.db", &db]);
    assert_eq!(
        (out.status.code(), stderr(&out).lines().count()),
        (Some(1), 1),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("no results store at /nonexistent/x.db"),
        "{}",
        stderr(&out)
    );
    let out = sm(lite, &home, &["store", "copy", &db, &db]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = sm(
        lite,
        &home,
        &["store", "copy", lite, "postgres://meter:pw@127.0.0.1:notaport/x"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("bad results store URL postgres://meter@127.0.0.1:notaport/x"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_run_with_the_server_down_is_spooled_and_flushed_once() {
    let pg = match TempPostgres::start() {
        Ok(pg) => pg,
        Err(why) => return missing("a_run_with_the_server_down_is_spooled", &why),
    };
    let db = pg.database("spooled").unwrap();
    let home = home("down");
    ok(sm(&db, &home, &["runs"]));
    pg.stop();
    let measured = ok(sm(
        &db,
        &home,
        &["rr", "--sizes", "1:1", "-n", "30", "--label", "offline"],
    ));
    let err = stderr(&measured);
    assert_eq!(err.lines().count(), 1, "{err}");
    let port = pg.port();
    assert!(
        err.starts_with(&format!(
            "stackmeter: cannot reach results store postgres://meter@127.0.0.1:{port}/spooled?connect_timeout=5: "
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("; 1 test(s) of 1 run(s) kept in {}: ", spool(&home).display())),
        "{err}"
    );
    assert!(
        err.trim_end().ends_with(&format!(
            ": send them with: stackmeter store flush --db 'postgres://meter:PASSWORD@127.0.0.1:{port}/spooled?connect_timeout=5'"
        )),
        "{err}"
    );
    assert!(!err.contains("meter-secret"), "{err}");
    // Spool files; a flush's lock file (a dot file) is not one.
    let files = || {
        std::fs::read_dir(spool(&home))
            .map(|d| {
                d.filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| !e.file_name().to_string_lossy().starts_with('.'))
                })
                .count()
            })
            .unwrap_or(0)
    };
    assert_eq!(files(), 2, "a run file and a test file");
    // Flushing while the server is still down: one line, and every file kept.
    let out = sm(&db, &home, &["store", "flush"]);
    assert_eq!(
        (out.status.code(), stderr(&out).lines().count()),
        (Some(1), 1),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("cannot reach results store"), "{}", stderr(&out));
    assert_eq!(files(), 2);
    pg.resume().unwrap();
    // A flush that committed but could not remove its files is repeated:
    // kept copies of the files are sent again and add nothing.
    let kept = home.join("kept");
    std::fs::create_dir_all(&kept).unwrap();
    for f in std::fs::read_dir(spool(&home)).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), kept.join(f.file_name())).unwrap();
    }
    let sent = stdout(&ok(sm(&db, &home, &["store", "flush", "--db", &db])));
    assert!(sent.starts_with("sent 1 run(s) and 1 test(s) from "), "{sent}");
    assert_eq!(files(), 0, "what was sent is removed");
    for f in std::fs::read_dir(&kept).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), spool(&home).join(f.file_name())).unwrap();
    }
    let again = stdout(&ok(sm(&db, &home, &["store", "flush"])));
    assert!(again.starts_with("sent 0 run(s) and 0 test(s) from "), "{again}");
    assert!(again.contains("1 run(s) were there already"), "{again}");
    assert!(stdout(&ok(sm(&db, &home, &["store", "flush"]))).starts_with("nothing spooled in "));
    let list = runs(&db, &home);
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(
        (list[0]["label"].as_str(), list[0]["status"].as_str()),
        (Some("offline"), Some("complete"))
    );
    let id = list[0]["id"].as_i64().unwrap().to_string();
    assert_eq!(stdout(&ok(sm(&db, &home, &["show", &id]))), stdout(&measured));
}

#[test]
fn a_suite_that_loses_the_server_mid_run_spools_the_rest() {
    let pg = match TempPostgres::start() {
        Ok(pg) => pg,
        Err(why) => return missing("a_suite_that_loses_the_server_mid_run", &why),
    };
    let db = pg.database("lost").unwrap();
    let home = home("lost");
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let plan = home.join("plan.toml");
    let mut child = cmd(&db, &home, &strs(&suite_args(&a, &b, &plan, "30")))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stop the server once the suite has stored a few tests.
    let store = stackmeter_store::Location::parse(std::ffi::OsStr::new(&db)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n = stackmeter_store::Store::open(&store)
            .and_then(|s| s.runs())
            .map(|r| r.first().map_or(0, |r| r.tests))
            .unwrap_or(0);
        if n >= 6 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the suite ended before the server was stopped"
        );
        assert!(Instant::now() < deadline, "{n} tests stored in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    pg.stop();
    let out = ok(child.wait_with_output().unwrap());
    let text = stdout(&out);
    let err = stderr_but_placement(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("kept in ") && err.contains("store flush --db"), "{err}");
    assert!(
        text.contains("; stored as run 1"),
        "the run was begun in the store: {text}"
    );
    pg.resume().unwrap();
    let sent = stdout(&ok(sm(&db, &home, &["store", "flush"])));
    assert!(
        sent.starts_with("sent 0 run(s) and "),
        "the run was there, its later tests were not: {sent}"
    );
    let list = runs(&db, &home);
    assert_eq!(list.len(), 1);
    assert_eq!(
        (list[0]["tests"].as_u64(), list[0]["status"].as_str()),
        (Some(120), Some("complete"))
    );
    // Every test once, in the order measured: the suite shows as it printed.
    assert_eq!(stdout(&ok(sm(&db, &home, &["show", "1"]))), text);
    assert_eq!(
        stdout(&ok(sm(&db, &home, &["store", "check"]))),
        "ok: 1 runs, 120 tests\n"
    );
}

#[test]
fn store_errors_are_one_line_naming_the_store_without_its_password() {
    let Some((pg, db)) = database("store_errors_are_one_line", "errors") else {
        return;
    };
    let home = home("errors");
    ok(sm(&db, &home, &["runs"]));
    let port = pg.port();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let cases = [
        (
            format!("postgres://meter:wrong-pw@127.0.0.1:{port}/errors"),
            format!("results store postgres://meter@127.0.0.1:{port}/errors refused the connection: password authentication failed for user \"meter\""),
            1,
        ),
        (
            pg.url("no_such_db"),
            format!("results store postgres://meter@127.0.0.1:{port}/no_such_db?connect_timeout=5 refused the connection: database \"no_such_db\" does not exist"),
            1,
        ),
        (
            "postgres://meter:wrong-pw@127.0.0.1:1/errors".into(),
            "cannot reach results store postgres://meter@127.0.0.1:1/errors: error connecting to server: Connection refused".into(),
            1,
        ),
        (
            format!("postgres://meter:wrong-pw@{}/errors?connect_timeout=1", silent.local_addr().unwrap()),
            format!("cannot reach results store postgres://meter@{}/errors?connect_timeout=1: no answer within 1 s", silent.local_addr().unwrap()),
            1,
        ),
        (
            "postgres://meter:wrong-pw@127.0.0.1:port/errors".into(),
            "bad results store URL postgres://meter@127.0.0.1:port/errors: invalid connection string: invalid value for option `port`".into(),
            2,
        ),
    ];
    for (url, says, code) in cases {
        for args in [
            &["runs"][..],
            &["store", "check"],
            &["show", "1"],
            &["compare", "a", "b"],
            &["export"],
        ] {
            let start = Instant::now();
            let out = sm(&url, &home, args);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(code), "{args:?} {url}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(
                err.starts_with(&format!("stackmeter: error: {says}")),
                "{args:?}: {err}\nwanted {says}"
            );
            assert!(!err.contains("wrong-pw") && !err.contains("panicked"), "{err}");
            assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
        }
    }
    // A measuring command with a store that refuses it measures nothing.
    let out = sm(
        &format!("postgres://meter:wrong-pw@127.0.0.1:{port}/errors"),
        &home,
        &["ping", "-c", "10"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "nothing measured with a store that refuses");
    assert!(!spool(&home).exists(), "a refusal is not spooled");
}

/// Several processes spool while the server is down, one of them killed
/// with SIGKILL mid-suite; when the server is back, three `store flush`es
/// start at once: every run is sent once, each finished test once, the
/// killed suite's run reads as partial with the tests it finished, and the
/// spool is empty.
#[test]
fn many_writers_spool_while_the_server_is_down_and_three_flushes_send_each_run_once() {
    let pg = match TempPostgres::start() {
        Ok(pg) => pg,
        Err(why) => return missing("many_writers_spool_and_three_flushes", &why),
    };
    let db = pg.database("crowd").unwrap();
    let home = home("crowd");
    ok(sm(&db, &home, &["runs"]));
    pg.stop();
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let mut suite = cmd(
        &db,
        &home,
        &[
            "suite",
            "udp-echo",
            "--repeat",
            "100",
            "--target",
            &format!("a={}", a.target()),
            "--target",
            &format!("b={}", b.target()),
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let singles: Vec<_> = (0..6)
        .map(|i| {
            cmd(
                &db,
                &home,
                &["ping", "-c", "20", "--label", &format!("s{i}"), &a.target()],
            )
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    for c in singles {
        let out = ok(c.wait_with_output().unwrap());
        assert!(stderr(&out).contains("kept in "), "{}", stderr(&out));
    }
    // The suite has spooled a few tests: kill it between two of them or
    // inside one (the test files are whole or absent).
    let spooled = || {
        std::fs::read_dir(spool(&home))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".test.json"))
                    .count()
            })
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while spooled() < 6 + 5 {
        assert!(Instant::now() < deadline, "{} tests spooled in 60 s", spooled());
        std::thread::sleep(Duration::from_millis(10));
    }
    suite.kill().unwrap();
    suite.wait().unwrap();
    let suite_tests = spooled() - 6;
    pg.resume().unwrap();
    let flushes: Vec<_> = (0..3)
        .map(|_| {
            cmd(&db, &home, &["store", "flush"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for f in flushes {
        ok(f.wait_with_output().unwrap());
    }
    assert_eq!(spooled(), 0, "everything sent is removed");
    let list = runs(&db, &home);
    assert_eq!(list.len(), 7, "{list:?}");
    let mut labels: Vec<String> = list
        .iter()
        .map(|r| r["label"].as_str().unwrap_or("").to_string())
        .collect();
    labels.sort();
    assert_eq!(labels, ["a,b", "s0", "s1", "s2", "s3", "s4", "s5"], "{list:?}");
    let suite_run = list.iter().find(|r| r["kind"] == "suite").unwrap();
    assert_eq!(suite_run["status"], "partial");
    assert_eq!(suite_run["tests"].as_u64(), Some(suite_tests as u64));
    assert!(list
        .iter()
        .filter(|r| r["kind"] == "single")
        .all(|r| r["tests"] == 1 && r["status"] == "complete"));
    assert!(stdout(&ok(sm(&db, &home, &["store", "check"]))).starts_with("ok: 7 runs, "));
}
