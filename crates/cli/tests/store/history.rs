//! `stackmeter history` end to end: a store filled by real measuring runs
//! with a shift made for real part way (the target takes 4 ms to answer
//! from run 13 on instead of 1 ms, as a slower build of it would), read
//! back as series in
//! every format; the CI gate's exit code; `--by` an attribute; `--save`;
//! the CSV path; and bad input.

use super::{db, ok, sm, stderr, stdout};
use crate::json_of;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A plain TCP target (rr --raw 1:1K: 1 byte in, 1 KiB out) that waits
/// `delay` microseconds before each answer: the series' shift.
///
/// Why not a placement change (the client moved onto the responder's
/// CPU), as this test once had: that makes a round trip slower only while
/// the other CPU is idle (the cost is its wake-up from idle), so a load
/// that came part way took the shift away again, and the method rightly
/// called the change a passing episode. A delay in the target holds
/// whatever else the machine runs; both halves have one (1 ms, then 4 ms),
/// so that what load does to a loopback round trip (15 us idle, 40 us
/// busy here: a change of its own, which the method finds too) is a few
/// percent of either, well inside the test's tolerance.
fn slow_target(delay: Arc<AtomicU64>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let delay = delay.clone();
            std::thread::spawn(move || answer(c, &delay));
        }
    });
    addr
}

fn answer(mut c: TcpStream, delay: &AtomicU64) {
    let reply = [b'x'; 1024];
    let mut one = [0u8; 1];
    let _ = c.set_nodelay(true);
    while matches!(c.read(&mut one), Ok(1)) {
        let us = delay.load(Ordering::Relaxed);
        if us > 0 {
            std::thread::sleep(Duration::from_micros(us));
        }
        if c.write_all(&reply).is_err() {
            return;
        }
    }
}

/// The p50 of one rr run of 1 B:1 KiB against the plain target at
/// `addr`, stored as `label`.
fn rr_p50(db: &Path, addr: &str, label: &str, attrs: &[String]) -> f64 {
    let mut args = vec!["rr", addr, "--raw", "1:1K", "-n", "200", "--label", label, "--json"];
    for a in attrs {
        args.extend(["--attr", a.as_str()]);
    }
    let v = json_of(&ok(sm(db, &args)));
    v["results"][0]["rtt_us"]["p50"]
        .as_f64()
        .unwrap_or_else(|| panic!("no rtt p50: {v:#}"))
}

/// 24 rr runs of label `board`: runs 1-12 against the target answering
/// after 1 ms, 13-24 after 4 ms (a regression). Run N has
/// `commit=cN` and `firmware=1.(25-N)`, so ordered by firmware the series
/// runs backwards. Two pilot runs (label `pilot`) first, as a store has
/// other labels too.
fn shifted_store(name: &str) -> std::path::PathBuf {
    let db = db(name);
    let delay = Arc::new(AtomicU64::new(1000));
    let addr = slow_target(delay.clone());
    let pilot = (rr_p50(&db, &addr, "pilot", &[]), rr_p50(&db, &addr, "pilot", &[]));
    eprintln!("pilot p50: {} us, {} us", pilot.0, pilot.1);
    for n in 1..=24 {
        let attrs = [format!("commit=c{n}"), format!("firmware=1.{}", 25 - n)];
        delay.store(if n <= 12 { 1000 } else { 4000 }, Ordering::Relaxed);
        rr_p50(&db, &addr, "board", &attrs);
    }
    db
}

fn history(db: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec![
        "history",
        "board",
        "--test",
        "rr",
        "--figure",
        "rtt p50",
        "--tolerance",
        "50",
    ];
    all.extend_from_slice(args);
    sm(db, &all)
}

#[test]
fn a_real_shift_is_found_at_its_run_with_what_changed_in_every_format() {
    let db = shifted_store("history");
    let v = json_of(&ok(history(&db, &["--json"])));
    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{v}");
    let s = &series[0];
    assert_eq!(
        (s["figure"].as_str(), s["unit"].as_str()),
        (Some("rtt p50"), Some("us"))
    );
    assert_eq!(s["runs"].as_array().unwrap().len(), 24);
    // The shift is several times over; the tolerance of 50% keeps a
    // run-to-run wobble of a busy machine (which the method may find too,
    // about once in a hundred runs) from counting as a regression.
    let changes = s["changes"].as_array().unwrap();
    let regressions: Vec<&Value> = changes.iter().filter(|c| c["regression"] == true).collect();
    assert_eq!(regressions.len(), 1, "one regression: {changes:#?}");
    let c = regressions[0];
    assert_eq!(c["attrs"]["commit"], "c13", "{c:#}");
    assert!(c["ratio"].as_f64().unwrap() > 1.5, "{c:#}");
    let changed: Vec<(Value, Value)> = c["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["before"].clone(), a["after"].clone()))
        .collect();
    assert!(changed.contains(&("c12".into(), "c13".into())), "{changed:?}");

    let text = stdout(&ok(history(&db, &[])));
    assert!(text.contains("REGRESSION board rr 1 B:1 KiB rtt p50"), "{text}");
    assert!(text.contains("commit c12 -> c13"), "{text}");
    let md = stdout(&ok(history(&db, &["--format", "md"])));
    assert!(md.contains("| run") && md.contains("REGRESSION"), "{md}");
    let html = stdout(&ok(history(&db, &["--format", "html"])));
    assert!(
        html.contains("data-chart=\"history\"") && html.contains("<svg"),
        "{html}"
    );

    // The CI gate: the change lies in the last 12 runs, not in the last 5.
    let gated = history(&db, &["--fail-on-regression", "--last", "12"]);
    assert_eq!(gated.status.code(), Some(9), "{}", stderr(&gated));
    assert!(
        stderr(&gated).contains("1 regression(s) in the window"),
        "{}",
        stderr(&gated)
    );
    let quiet = history(&db, &["--fail-on-regression", "--last", "5"]);
    assert_eq!(quiet.status.code(), Some(0), "{}", stderr(&quiet));
    // Ordered by firmware the series runs backwards: the same change is an
    // improvement at firmware 1.13 (run 12), and the gate stays quiet.
    let by = history(&db, &["--by", "firmware", "--json", "--fail-on-regression"]);
    assert_eq!(by.status.code(), Some(0), "{}", stderr(&by));
    let by = json_of(&by);
    let c = by["series"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["attrs"]["firmware"] == "1.13")
        .unwrap_or_else(|| panic!("a change at firmware 1.13: {by:#}"))
        .clone();
    assert_eq!(
        (c["improvement"].as_bool(), c["regression"].as_bool()),
        (Some(true), Some(false)),
        "{c:#}"
    );

    // --save writes the change points the dashboard reads; saving again
    // replaces them rather than adding.
    let count = || stackmeter_store::Store::open(&db).unwrap().change_points().unwrap();
    ok(history(&db, &["--save"]));
    let first = count();
    ok(history(&db, &["--save"]));
    let saved = count();
    assert_eq!(saved.len(), first.len(), "{saved:?}");
    assert!(
        saved.iter().any(|c| c.regression && c.ratio > 1.5),
        "the regression saved: {saved:?}"
    );

    // The attributes are shown with the runs.
    let runs = json_of(&ok(sm(&db, &["runs", "--json"])));
    // Two pilot runs, then commits c1.. in order: c13 is the 15th run.
    assert_eq!(runs["runs"][0]["attrs"], serde_json::json!({}));
    assert_eq!(runs["runs"][14]["attrs"]["commit"], "c13");
    let list = stdout(&ok(sm(&db, &["runs"])));
    assert!(list.contains("commit=c13 firmware=1.12"), "{list}");
    let id = runs["runs"][14]["id"].as_i64().unwrap().to_string();
    let shown = stdout(&ok(sm(&db, &["show", &id])));
    assert!(
        shown.starts_with(&format!("run {id}: commit=c13 firmware=1.12")),
        "{shown}"
    );
    let export = stdout(&ok(sm(&db, &["export", &id, "--format", "json"])));
    let export: Value = serde_json::from_str(&export).unwrap();
    assert_eq!(export["runs"][0]["attrs"]["firmware"], "1.12");
}

#[test]
fn history_reads_a_csv_in_otavas_shape() {
    let dir = db("history-csv");
    let csv = dir.with_file_name("series.csv");
    let mut text = String::from("time,commit,latency,throughput\n");
    // Noise of +-2% from a fixed-seed generator (PCG's multiplier).
    let mut x: u64 = 12345;
    let mut noise = move || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        1.0 + ((x >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * 0.04
    };
    for i in 0..40 {
        // Latency steps up 30% at row 25 and throughput down 30% at row 15.
        let lat = if i >= 25 { 130.0 } else { 100.0 } * noise();
        let tput = if i >= 15 { 700.0 } else { 1000.0 } * noise();
        text += &format!(
            "2026-11-{:02}T00:{:02}:00Z,c{i},{lat:.2},{tput:.1}\n",
            1 + i / 30,
            i % 30
        );
    }
    std::fs::write(&csv, text).unwrap();
    let csv = csv.to_str().unwrap();
    let csv_history = |more: &[&str]| {
        let mut args = vec![
            "history",
            "--csv",
            csv,
            "--higher-is-better",
            "throughput",
            "--lower-is-better",
            "latency",
        ];
        args.extend_from_slice(more);
        sm(&dir, &args)
    };
    let out = ok(csv_history(&["--json", "--fail-on-regression", "--last", "3"]));
    let v = json_of(&out);
    let by_figure = |f: &str| -> Value {
        let s = v["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["figure"] == f)
            .unwrap_or_else(|| panic!("no series {f}: {v:#}"))
            .clone();
        assert_eq!(s["changes"].as_array().unwrap().len(), 1, "{s:#}");
        s["changes"][0].clone()
    };
    let lat = by_figure("latency");
    assert_eq!(
        (lat["attrs"]["commit"].as_str(), lat["regression"].as_bool()),
        (Some("c25"), Some(true))
    );
    let tput = by_figure("throughput");
    assert_eq!(
        (tput["attrs"]["commit"].as_str(), tput["regression"].as_bool()),
        (Some("c15"), Some(true))
    );
    // Both regressions are older than the last 3 rows: exit 0 above; with
    // the whole series in the window, exit 9.
    let all = csv_history(&["--fail-on-regression"]);
    assert_eq!(all.status.code(), Some(9), "{}", stderr(&all));
}

#[test]
fn bad_history_input_is_one_line_and_a_nonzero_exit() {
    let dir = db("history-bad");
    let csv = dir.with_file_name("no-time.csv");
    std::fs::write(&csv, "when,latency\n2026-11-01,1\n").unwrap();
    let short = dir.with_file_name("short.csv");
    std::fs::write(&short, "time,latency\n2026-11-01,1\n2026-11-02,2\n2026-11-03,1\n").unwrap();
    let (csv, short) = (csv.to_str().unwrap(), short.to_str().unwrap());
    ok(sm(&dir, &["rr", "--sizes", "1:1", "-n", "20", "--label", "few"]));
    let cases: [(&[&str], i32, &str); 6] = [
        (
            &["history", "few", "--tolerance", "150"],
            2,
            "--tolerance 150: expected a percentage from 0 to below 100",
        ),
        (
            &["rr", "--attr", "commit", "-n", "5"],
            2,
            "--attr 'commit': expected KEY=VALUE",
        ),
        (&["history", "--csv", csv], 2, "no time column \"time\""),
        (
            &["history", "--csv", short],
            10,
            "no series can be judged yet: 1 series, the longest with 3 run(s), and each needs at least 10 (store more: ",
        ),
        (
            &["history", "few", "--figure", "rtt p42"],
            2,
            "no figure 'rtt p42' in the stored runs",
        ),
        (&["history", "few"], 10, "no series can be judged yet: "),
    ];
    for (args, code, says) in cases {
        let out = sm(&dir, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.len() < 200, "{args:?}: a short line: {err}");
    }
}

/// `--relative-to`: 12 suite runs, each measuring a reference `ref` and the
/// target `b` interleaved, both plain targets that wait 1 ms before each
/// answer; from run 7 on, `b` waits 3 ms (as a slower build would).
/// Divided run by run by the same job's `ref`, the series `b / ref`
/// changes at run 7 and the reference itself is no series of its own.
///
/// A delay, not a proxy in front of `b` (as this test once had): under
/// load a loopback round trip through a proxy is the scheduler's, and came
/// out from 0.9x to 5x of the reference run by run. A delay holds whatever
/// else the machine runs (see `slow_target`).
#[test]
#[ignore = "run alone by scripts/test, after the other tests: a real shift of about 3x must stand out of loopback noise"]
fn history_relative_to_a_reference_divides_each_run_by_its_jobs_reference() {
    let db = db("history-relative");
    let b_delay = Arc::new(AtomicU64::new(1000));
    let (r, b) = (
        slow_target(Arc::new(AtomicU64::new(1000))),
        slow_target(b_delay.clone()),
    );
    let plan = db.with_file_name("plan.toml");
    std::fs::write(
        &plan,
        "[[step]]\nname = \"lat\"\ntest = \"rr\"\nraw = \"1:1K\"\niterations = 100\n",
    )
    .unwrap();
    for n in 1..=12 {
        b_delay.store(if n < 7 { 1000 } else { 3000 }, Ordering::Relaxed);
        ok(sm(
            &db,
            &[
                "suite",
                plan.to_str().unwrap(),
                "--repeat",
                "5",
                "--target",
                &format!("ref={r}"),
                "--target",
                &format!("b={b}"),
            ],
        ));
    }
    let v = json_of(&ok(sm(
        &db,
        &["history", "b", "--relative-to", "ref", "--figure", "rtt p50", "--json"],
    )));
    assert_eq!(v["settings"]["relative_to"], "ref");
    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{series:?}");
    let s = &series[0];
    assert_eq!(s["label"], "b / ref");
    assert_eq!(s["runs"].as_array().unwrap().len(), 12);
    let changes = s["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?} in {s}");
    assert_eq!(changes[0]["run_id"], 7, "{changes:?} in {s}");
    assert!(changes[0]["ratio"].as_f64().unwrap() > 2.0, "{changes:?}");
    // Bad reference: one line, exit 2.
    let out = sm(&db, &["history", "b", "--relative-to", "nobody"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--relative-to nobody: no stored run of that label"),
        "{}",
        stderr(&out)
    );
    let text = stdout(&ok(sm(
        &db,
        &["history", "b", "--relative-to", "ref", "--figure", "rtt p50"],
    )));
    assert!(text.contains("each run divided by its job's run of ref"), "{text}");
}
