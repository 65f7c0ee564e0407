//! Results store, suite, compare and report, end to end: the real binary,
//! real responder processes, a real SQLite file, a real browser.

mod charts;
mod concurrency;
mod decide;
mod durability;
mod history;
mod postgres;

use super::{json_of, stderr, Server, BIN};
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

/// The suite over loopback with two labelled targets, then everything that
/// reads its results: runs, show, compare in every format, report in a
/// real browser.
#[test]
fn suite_with_two_labelled_targets_compares_stores_and_reports() {
    let db = db("suite");
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let ta = format!("one={}", a.target());
    let tb = format!("two={}", b.target());
    let plan = db.with_file_name("plan.toml");
    std::fs::write(
        &plan,
        "[[step]]\ntest = \"crr\"\niterations = 30\n\n[[step]]\ntest = \"rr\"\nsizes = \"1:1,1K:1\"\niterations = 30\n\n[[step]]\ntest = \"ping\"\ncount = 50\n",
    )
    .unwrap();
    let plan = plan.to_str().unwrap();
    let out = ok(sm(
        &db,
        &["suite", plan, "--repeat", "4", "--target", &ta, "--target", &tb],
    ));
    let text = stdout(&out);
    for want in [
        &format!("stackmeter suite {plan}: one="),
        "Size",
        "A: one (us)",
        "B: two (us)",
        "B vs A",
        "95% CI of B/A",
        "p-value",
        "4/4",
        "geometric mean of the per-row ratios",
        "Arithmetic mean of the percentages",
        "Mann-Whitney U",
        "crr: connect mean",
        "ping: rtt mean",
        "rr: rtt mean",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    assert!(!text.contains('\r'), "no progress bar when stderr is not a terminal");
    let list = runs(&db);
    let run = &list[0];
    assert_eq!(
        (run["test"].as_str(), run["status"].as_str(), run["tests"].as_u64()),
        (Some(format!("suite {plan}").as_str()), Some("complete"), Some(24))
    );
    let id = run["id"].as_i64().unwrap().to_string();
    assert_eq!(stdout(&ok(sm(&db, &["show", &id]))), text);
    // Interleaved: one, two, one, two ... for every step.
    let store = stackmeter_store::Store::open(&db).unwrap();
    let labels: Vec<String> = store
        .tests_of_run(run["id"].as_i64().unwrap())
        .unwrap()
        .into_iter()
        .map(|t| t.label)
        .collect();
    assert!(labels.chunks(2).all(|c| c == ["one", "two"]), "{labels:?}");

    let c = json_of(&ok(sm(&db, &["compare", "one", "two", "--format", "json"])));
    assert_eq!((c["a"].as_str(), c["b"].as_str()), (Some("one"), Some("two")));
    let row = &c["sections"][0]["rows"][0];
    for k in ["median_a", "median_b", "ratio", "p_value", "percent"] {
        assert!(row[k].as_f64().is_some(), "{k} in {row}");
    }
    assert!(c["summary"]["geomean_ratio"].as_f64().is_some());
    let md = stdout(&ok(sm(
        &db,
        &["compare", &format!("{id}:one"), &format!("{id}:two"), "--format", "md"],
    )));
    assert!(md.contains("| Size | A: one (run "), "{md}");
    let html = stdout(&ok(sm(&db, &["compare", "one", "two", "--format", "html"])));
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("data-chart=\"comparison\""));

    let report = db.with_file_name("report.html");
    ok(sm(&db, &["report", "one", "two", "-o", report.to_str().unwrap()]));
    let page = std::fs::read_to_string(&report).unwrap();
    assert!(
        !page.contains("http://") || !page.contains("src=\"http"),
        "no network fetches"
    );
    assert!(
        !page.contains("<script src") && !page.contains("<link"),
        "self-contained"
    );
    let charts = page.matches("<svg ").count();
    for kind in ["percentiles", "histogram", "comparison", "repetitions"] {
        assert!(page.contains(&format!("data-chart=\"{kind}\"")), "no {kind} chart");
    }
    let dom = chromium_dump_dom(&report);
    let drawn = dom
        .split("data-charts-drawn=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| {
            panic!(
                "the page's script did not run in the browser:\n{}",
                &dom[..dom.len().min(2000)]
            )
        });
    assert_eq!(
        drawn, charts,
        "every chart laid out with a non-empty box in the browser"
    );
    assert_eq!(dom.matches("data-drawn=\"yes\"").count(), charts);
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
fn the_default_suite_starts_its_own_responders() {
    let db = db("default");
    let out = ok(sm(&db, &["suite", "udp-echo", "--quick", "--repeat", "4", "--json"]));
    let v = json_of(&out);
    let labels = suite_labels(&v);
    assert!(labels == ["rust-a", "rust-b"] || labels == ["rust", "c"], "{labels:?}");
    assert_eq!(v["comparisons"][0]["sections"][0]["rows"][0]["n_a"], 4);
    assert_eq!(v["tests"], 8);
}

#[test]
fn an_interrupted_suite_keeps_its_finished_tests_and_is_partial() {
    let db = db("sigint");
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let child = crate::sandbox(&mut Command::new(BIN))
        // 600 tests: long enough that it is still running when the poll
        // below sees two stored, however fast or slow the machine.
        .args(["suite", "udp-echo", "--repeat", "300", "--target"])
        .arg(format!("a={}", a.target()))
        .arg("--target")
        .arg(format!("b={}", b.target()))
        .env("STACKMETER_DB", &db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (status, out) = interrupt_after(&db, 2, child);
    assert_eq!(status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("marked partial"), "{}", stderr(&out));
    let list = runs(&db);
    assert_eq!(list[0]["status"], "partial");
    let n = list[0]["tests"].as_u64().unwrap();
    assert!((2..600).contains(&n), "{n} tests kept");
    // What finished is intact and comparable.
    let store = stackmeter_store::Store::open(&db).unwrap();
    assert!(store
        .tests_of_run(list[0]["id"].as_i64().unwrap())
        .unwrap()
        .iter()
        .all(|t| t.doc.complete));
}

#[test]
fn a_stream_suite_keeps_its_intervals_and_reports_them() {
    let db = db("bps");
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let ta = format!("x={}", a.target());
    let tb = format!("y={}", b.target());
    let out = ok(sm(
        &db,
        &[
            "suite", "bps", "--quick", "--repeat", "1", "--target", &ta, "--target", &tb,
        ],
    ));
    assert!(
        stdout(&out).contains("stream [bps]: total per repetition, Mbit/s (higher is better)"),
        "{}",
        stdout(&out)
    );
    let store = stackmeter_store::Store::open(&db).unwrap();
    let run = store.runs().unwrap()[0].id;
    let tests = store.tests_of_run(run).unwrap();
    assert_eq!(tests.len(), 2);
    let iv = store.intervals(tests[0].id).unwrap();
    assert!(iv.iter().any(|i| i.series == "total" && i.value > 0.0), "{iv:?}");
    let report = db.with_file_name("bps.html");
    ok(sm(&db, &["report", "x", "y", "-o", report.to_str().unwrap()]));
    let page = std::fs::read_to_string(&report).unwrap();
    assert!(page.contains("data-chart=\"intervals\""), "per-interval chart");
}

#[test]
fn compare_fails_the_gate_when_b_is_slower() {
    // B is the same responder behind a real proxy (socat): a real, large
    // slowdown (socat copies every byte of 256 KiB replies through user
    // space, several times the direct round trip even when other tests
    // load both CPUs). Six repetitions per side give a verdict.
    let db = db("gate");
    let srv = Server::start(&[]);
    let (_proxy, port) = super::load::Proxy::start(srv.addr);
    let via = format!("127.0.0.1:{port}");
    for _ in 0..6 {
        for (target, label) in [(srv.target(), "direct"), (via.clone(), "proxied")] {
            ok(sm(
                &db,
                &["rr", &target, "--sizes", "1:256K", "-n", "20", "--label", label],
            ));
        }
    }
    let gate = |a: &str, b: &str, extra: &[&str]| {
        let mut args = vec!["compare", a, b, "--metric", "p50", "--fail-on"];
        args.extend_from_slice(extra);
        sm(&db, &args)
    };
    let out = gate("direct", "proxied", &["slower"]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("stackmeter: regression: rr rtt 1 B:256 KiB:"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("slower"), "the comparison is printed too");
    // Faster is not a regression; `change` counts either way; a tolerance
    // above the difference passes.
    assert_eq!(gate("proxied", "direct", &["slower"]).status.code(), Some(0));
    assert_eq!(gate("proxied", "direct", &["change"]).status.code(), Some(6));
    assert_eq!(
        gate("direct", "proxied", &["slower", "--tolerance", "1000000"])
            .status
            .code(),
        Some(0)
    );
    let out = sm(&db, &["compare", "direct", "proxied", "--tolerance", "5"]);
    assert_eq!(out.status.code(), Some(2), "--tolerance needs --fail-on");
    // Two single runs give no verdict: a gate that judged nothing fails.
    let ids: Vec<String> = runs(&db).iter().take(2).map(|r| r["id"].to_string()).collect();
    let out = gate(&ids[0], &ids[1], &["slower"]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("no row could be judged"), "{}", stderr(&out));
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
    let dir = std::env::temp_dir().join(format!("stackmeter-installed-{}", std::process::id()));
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

/// One run a side earns no verdict, in the rows or overall, and no
/// interval; two runs of different tests have nothing to compare, which is
/// an error of its own (exit 7), said in one line.
#[test]
fn compare_of_single_runs_gives_no_verdict_and_of_different_tests_an_error() {
    let db = db("single-compare");
    let srv = Server::start(&[]);
    for label in ["a", "b"] {
        ok(sm(
            &db,
            &["rr", &srv.target(), "--sizes", "1:1,1:1K", "-n", "50", "--label", label],
        ));
    }
    let text = stdout(&ok(sm(&db, &["compare", "a", "b"])));
    assert!(
        text.contains("Overall, B (b) vs A (a): no verdict (no row has 5 or more repetitions a side)"),
        "{text}"
    );
    assert!(!text.contains("95% CI 0."), "no interval from one run: {text}");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("1 B:1 B"))
        .expect("a row");
    assert!(row.contains("(no verdict: n < 5)") && row.contains(" - "), "{row}");
    ok(sm(&db, &["ping", &srv.target(), "-c", "20", "--label", "p"]));
    let out = sm(&db, &["compare", "a", "p"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("A (a: rr) and B (p: ping) have no test and figure in common"),
        "{err}"
    );
}

/// A suite's run and a single command's run of the same test over the same
/// rows compare once the suite's side names its target (RUN:LABEL); the
/// suite's whole run, which holds two targets, is refused with the way to
/// name one, each label once.
#[test]
fn a_suite_run_compares_with_a_single_run_of_the_same_test() {
    let db = db("suite-vs-single");
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let plan = db.with_file_name("plan.toml");
    std::fs::write(
        &plan,
        "[[step]]\nname = \"grid\"\ntest = \"rr\"\nsizes = \"1:1,1:1K\"\niterations = 50\n",
    )
    .unwrap();
    ok(sm(
        &db,
        &[
            "suite",
            plan.to_str().unwrap(),
            "--repeat",
            "2",
            "--target",
            &format!("rust={}", a.target()),
            "--target",
            &format!("c={}", b.target()),
        ],
    ));
    ok(sm(
        &db,
        &[
            "rr",
            &b.target(),
            "--sizes",
            "1:1,1:1K",
            "-n",
            "50",
            "--label",
            "single",
        ],
    ));
    let out = sm(&db, &["compare", "1", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim_end(),
        "stackmeter: error: run 1 (rust,c) holds the tests of 2 targets (rust, c): name one as RUN:LABEL, e.g. 1:rust"
    );
    for (a, b) in [("1:rust", "2"), ("1:c", "single")] {
        let text = stdout(&ok(sm(&db, &["compare", a, b])));
        assert!(
            text.contains("1 B:1 KiB") && text.contains("1 B:1 B"),
            "{a} {b}: {text}"
        );
        assert!(
            text.contains("different plan steps (or a suite and a single command): compared test by test"),
            "{text}"
        );
    }
}
