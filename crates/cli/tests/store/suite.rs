//! `suite` and its store: two labelled targets compared, stored and
//! reported (the HTML report read back through Chromium), the default
//! suite's own responders, an interrupted suite kept as partial, a stream
//! suite's intervals, a suite run compared with a single run.

use super::super::{json_of, stderr, Server, BIN};
use super::{chromium_dump_dom, db, interrupt_after, ok, runs, sm, stdout, suite_labels};
use std::process::{Command, Stdio};

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
        "Request:response",
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
    assert!(md.contains("| Request:response | A: one (run "), "{md}");
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
