//! Results store, suite, compare and report, end to end: the real binary,
//! real responder processes, a real SQLite file, a real browser.

mod charts;
mod compare;
mod concurrency;
mod decide;
mod durability;
mod history;
mod postgres;
mod suite;

use super::{json_of, stderr, BIN};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A fresh store file for one test.
fn db(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("store-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("results.db")
}

fn sm(db: &Path, args: &[&str]) -> Output {
    crate::sandbox(&mut Command::new(BIN))
        .args(args)
        .env("STACKMETER_DB", db)
        .env("STACKMETER_C_RESPONDER", "")
        .output()
        .expect("stackmeter runs")
}

/// Waits until the first run of `db` holds `n` tests or more while `child`
/// still runs (a child that ended first is a failure: it was never
/// interrupted), then sends it SIGINT and waits at most 20 s for it.
fn interrupt_after(db: &Path, n: usize, mut child: std::process::Child) -> (std::process::ExitStatus, Output) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let stored = stackmeter_store::Store::open(db)
            .ok()
            .and_then(|s| s.runs().ok())
            .and_then(|r| r.first().map(|r| r.tests))
            .unwrap_or(0);
        // Whether it still runs is asked after the count, so a child that
        // finished while the count was read is caught here, not mistaken
        // for one that ignored SIGINT.
        if let Some(st) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            panic!("ended ({st}) before it was interrupted: {}", stderr(&out));
        }
        if stored >= n {
            break;
        }
        assert!(Instant::now() < deadline, "{stored} of {n} tests stored within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "did not stop within 20 s of SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, child.wait_with_output().unwrap())
}

fn ok(out: Output) -> Output {
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), stderr(&out));
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn runs(db: &Path) -> Vec<Value> {
    json_of(&ok(sm(db, &["runs", "--json"])))["runs"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_measured_run_is_stored_and_shown_again_exactly() {
    let db = db("show");
    let text = ok(sm(&db, &["rr", "--sizes", "1:1K,1K:1", "-n", "50", "--label", "app"]));
    let json = ok(sm(&db, &["ping", "-c", "50", "--label", "app", "--json"]));
    let list = runs(&db);
    assert_eq!(list.len(), 2, "{list:?}");
    for (r, test) in list.iter().zip(["rr", "ping"]) {
        assert_eq!(
            (r["label"].as_str(), r["test"].as_str(), r["status"].as_str()),
            (Some("app"), Some(test), Some("complete"))
        );
        assert!(r["id"].as_i64().is_some() && r["time"].as_str().is_some());
    }
    let id = |i: usize| list[i]["id"].as_i64().unwrap().to_string();
    assert_eq!(stdout(&ok(sm(&db, &["show", &id(0)]))), stdout(&text));
    assert_eq!(stdout(&ok(sm(&db, &["show", &id(1), "--json"]))), stdout(&json));
    // The full histogram is kept: as many samples as the row reports.
    let store = stackmeter_store::Store::open(&db).unwrap();
    let run = list[0]["id"].as_i64().unwrap();
    let test = &store.tests_of_run(run).unwrap()[0];
    let h = store.histograms(test.id).unwrap();
    assert_eq!(h.len(), 2, "one histogram per rr row");
    let stored = &h[1];
    assert_eq!((stored.metric.as_str(), stored.unit.as_str()), ("rtt_us", "ns"));
    // Decoding the V2 bytes: the sample count sits in the header's counts;
    // checked through the export path instead of linking hdrhistogram here.
    assert!(stored.data.len() > 40, "{} bytes", stored.data.len());
    // CSV export: a header and one line per figure.
    let csv = stdout(&ok(sm(&db, &["export", &id(0), "--format", "csv"])));
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("run,test_id,time,label,test,step,repetition,row,row_label,series,stat,unit,value")
    );
    assert!(csv.contains(",app,rr,,0,1,1 KiB:1 B,rtt,mean,us,"), "{csv}");
    let all = json_of(&ok(sm(&db, &["export", "--format", "json"])));
    assert_eq!(all["runs"].as_array().unwrap().len(), 2);
    assert_eq!(all["runs"][1]["tests"][0]["document"]["test"], "ping");
    // A label holding a comma, a quote, a CR and an LF comes back whole
    // through the CSV (RFC 4180 quoting, read with the csv crate).
    let odd = "board, \"rev B\"\r\nlab";
    ok(sm(&db, &["ping", "-c", "20", "--label", odd]));
    let csv = stdout(&ok(sm(&db, &["export", "--format", "csv", "--label", odd])));
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let labels: Vec<String> = r.records().map(|rec| rec.unwrap()[3].to_string()).collect();
    assert!(
        !labels.is_empty() && labels.iter().all(|l| l == odd),
        "{labels:?} in:\n{csv}"
    );
}

#[test]
fn no_store_and_bad_store_paths() {
    let db = db("nostore");
    ok(sm(&db, &["ping", "-c", "20", "--no-store"]));
    assert!(!db.exists(), "--no-store must not create the store");
    let out = sm(Path::new("/proc/no/such/dir/r.db"), &["ping", "-c", "20"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("stackmeter: error: cannot open results store /proc/no/such/dir/r.db"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing measured with an unusable store");
    let out = sm(&db, &["show", "999"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = sm(&db, &["compare", "nope", "nada"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("'nope' is neither a stored label nor a run id"),
        "{}",
        stderr(&out)
    );
    let out = sm(&db, &["suite", "no-such-plan"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("latency-grid"), "{}", stderr(&out));
    let out = sm(&db, &["suite", "--target", "onlyone=127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// Runs headless Chromium on a local file and returns the DOM after its
/// scripts ran.
fn chromium_dump_dom(page: &Path) -> String {
    chromium(page, &["--dump-dom"])
}

/// Runs headless Chromium on a local file with `args` (`--dump-dom`,
/// `--screenshot=FILE`, `--window-size=W,H`), in a fresh profile with
/// nothing started that would reach the network, and returns its stdout.
fn chromium(page: &Path, args: &[&str]) -> String {
    let browser = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("chromium is installed (.ci/run installs it)");
    let profile = page.with_extension("chromium-profile");
    let _ = std::fs::remove_dir_all(&profile);
    let child = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
        .args([
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--force-device-scale-factor=1",
        ])
        .args(args)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .env("HOME", &profile)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Read stdout while it runs (the DOM is larger than a pipe buffer).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(out) = rx.recv_timeout(Duration::from_secs(90)) else {
        let _ = Command::new("kill").arg(pid.to_string()).status();
        panic!("chromium did not finish within 90 s");
    };
    let out = out.unwrap();
    let _ = std::fs::remove_dir_all(&profile);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_stored_run_shows_its_percentile_spectrum() {
    let db = db("spectrum");
    ok(sm(&db, &["rr", "--sizes", "1:1", "-n", "20000", "--warmup", "10"]));
    let id = runs(&db)[0]["id"].as_i64().unwrap().to_string();
    let v = json_of(&ok(sm(&db, &["show", &id, "--percentiles", "--json"])));
    let row = &v["rows"][0];
    assert_eq!(
        (row["row"].as_str(), row["count"].as_u64()),
        (Some("1 B:1 B"), Some(20000))
    );
    let pts = row["points"].as_array().unwrap();
    let last = pts.last().unwrap();
    assert_eq!(
        (last["percentile"].as_f64(), last["count"].as_u64()),
        (Some(100.0), Some(20000))
    );
    // Deep enough for p99.99: 20,000 samples reach past 99.99% (1/(1-q) > 10,000).
    assert!(pts.iter().any(|p| p["percentile"].as_f64().unwrap() > 99.99), "{pts:?}");
    let values: Vec<f64> = pts.iter().map(|p| p["value_us"].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[0] <= w[1]), "ascending: {values:?}");
    // The document's own p99.99 is there too, with 20,000 samples.
    let doc = json_of(&ok(sm(&db, &["show", &id, "--json"])));
    assert!(doc["results"][0]["rtt_us"]["p9999"].as_f64().is_some());
    let text = stdout(&ok(sm(&db, &["show", &id, "--percentiles"])));
    assert!(text.contains("percentile") && text.contains("1/(1-q)"), "{text}");
}

#[test]
fn an_installed_binary_carries_the_c_responder() {
    // The binary alone, away from the source tree (as after `cargo
    // install`): the default suite still compares Rust against C, with the
    // C responder unpacked from the binary into the user's cache.
    // Not under $TMPDIR: scripts/test points it into target/, inside the
    // source tree, where the binary would find the built C responder.
    let dir = std::path::Path::new("/tmp").join(format!("stackmeter-installed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let bin = dir.join("bin/stackmeter");
    std::fs::copy(BIN, &bin).unwrap();
    let out = Command::new(&bin)
        .args(["suite", "--quick", "--repeat", "1", "--no-store", "--json"])
        .current_dir(&dir)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env_remove("STACKMETER_C_RESPONDER")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json_of(&out);
    let labels = suite_labels(&v);
    assert_eq!(labels, ["rust", "c"], "{}", stderr(&out));
    let cached: Vec<_> = std::fs::read_dir(dir.join("cache/stackmeter")).unwrap().collect();
    assert_eq!(cached.len(), 1, "one unpacked C responder");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The target labels of a suite's JSON document, in order.
fn suite_labels(v: &Value) -> Vec<&str> {
    v["suite"]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["label"].as_str().unwrap())
        .collect()
}
