//! A suite of two targets run until decided: pairs of blocks in random
//! order, a confidence sequence per row, stopped per row when it is
//! outside or inside the band. A target behind a real proxy (socat) is
//! decided slower, the run is shown again as printed, the gate fails on
//! it, Ctrl-C keeps and prints what was decided, and bad input is one line.

use super::{db, ok, runs, sm, stdout};
use crate::load::Proxy;
use crate::{json_of, stderr, Server, BIN};
use std::path::Path;
use std::process::{Command, Stdio};

fn plan(dir: &Path) -> String {
    let plan = dir.join("decide-plan.toml");
    std::fs::write(
        &plan,
        "[[step]]\nname = \"lat\"\ntest = \"rr\"\nsizes = \"1:1,1:16K\"\niterations = 200\n",
    )
    .unwrap();
    plan.to_str().unwrap().to_string()
}

#[test]
fn a_target_behind_a_proxy_is_decided_slower_and_the_run_shows_again_as_printed() {
    let db = db("decide-proxy");
    let srv = Server::start(&[]);
    let (_proxy, port) = Proxy::start(srv.addr);
    let plan = plan(db.parent().unwrap());
    let args = [
        "suite",
        &plan,
        "--target",
        &format!("direct={}", srv.target()),
        "--target",
        &format!("proxied=127.0.0.1:{port}"),
        "--budget",
        "60",
        "--seed",
        "7",
    ];
    let out = ok(sm(&db, &args));
    let text = stdout(&out);
    let err = stderr(&out);
    // Every row decided slower (a proxy adds two hops), each on its own
    // line as it was decided, and the stop said.
    assert_eq!(err.matches("stackmeter: decided: lat ").count(), 2, "{err}");
    assert!(err.contains("stackmeter: stopped: every row decided after "), "{err}");
    assert!(text.contains("; until decided: "), "{text}");
    assert!(
        text.contains("Decided, B (proxied) vs A (direct): 0 faster, 2 slower, 0 equivalent within +/-2%, 0 inconclusive; stopped: every row decided"),
        "{text}"
    );
    assert!(
        text.contains("Correction: alpha 0.05 split evenly over 2 row(s) (Bonferroni: 0.0250 each)"),
        "{text}"
    );
    // Stored as printed: `show` renders the same from the stored blocks.
    let id = runs(&db)[0]["id"].as_i64().unwrap().to_string();
    assert_eq!(stdout(&ok(sm(&db, &["show", &id]))), text);
    // JSON: every pair with its order and ratios, each row's verdict.
    let v = json_of(&ok(sm(&db, &["show", &id, "--json"])));
    let d = &v["decision"];
    let rows = d["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["verdict"] == "slower"), "{rows:?}");
    for r in rows {
        let at = r["decided_at"].as_u64().unwrap();
        assert!(at >= 8, "no call before 8 pairs: {r}");
        let (lo, ratio) = (r["interval"][0].as_f64().unwrap(), r["ratio"].as_f64().unwrap());
        assert!(lo > 1.02 && ratio > lo, "{r}");
    }
    let history = d["history"].as_array().unwrap();
    assert_eq!(history.len() as u64, d["pairs"].as_u64().unwrap());
    assert!(history.iter().all(|p| p["first"] == "A" || p["first"] == "B"));
    assert!(history.iter().any(|p| p["first"] == "A") && history.iter().any(|p| p["first"] == "B"));
    assert_eq!(v["tests"].as_u64(), Some(2 * history.len() as u64), "two blocks a pair");
    assert_eq!(v["suite"]["decide"]["seed"], 7);
    // One run, one answer: `compare` of its two targets is its decision,
    // row for row (verdicts, intervals, pairs), not a fresh test over
    // every block; named the other way round, it mirrors.
    let c = json_of(&ok(sm(
        &db,
        &[
            "compare",
            &format!("{id}:direct"),
            &format!("{id}:proxied"),
            "--format",
            "json",
        ],
    )));
    let (crows, srows) = (c["rows"].as_array().unwrap(), d["rows"].as_array().unwrap());
    assert_eq!(crows.len(), srows.len());
    for (a, b) in crows.iter().zip(srows) {
        for key in ["label", "verdict", "interval", "pairs", "ratio", "decided_at"] {
            assert_eq!(a[key], b[key], "{key}: {a} against {b}");
        }
    }
    assert!(
        c["method"]
            .as_str()
            .unwrap()
            .starts_with(&format!("run {id} was made until decided")),
        "{c}"
    );
    let text = stdout(&ok(sm(
        &db,
        &["compare", &format!("{id}:direct"), &format!("{id}:proxied")],
    )));
    assert!(text.contains("proxied is slower than direct on 2 of 2 sizes"), "{text}");
    let back = json_of(&ok(sm(
        &db,
        &[
            "compare",
            &format!("{id}:proxied"),
            &format!("{id}:direct"),
            "--format",
            "json",
        ],
    )));
    assert!(
        back["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["verdict"] == "faster"),
        "{back}"
    );
    // `report RUN`: a source per target, and the run's decision.
    let file = db.with_file_name("decide-report.json");
    ok(sm(
        &db,
        &["report", &id, "-o", file.to_str().unwrap(), "--format", "json"],
    ));
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let names: Vec<&str> = r["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [format!("direct (run {id})"), format!("proxied (run {id})")]);
    assert_eq!(r["decisions"].as_array().map(Vec::len), Some(1), "{r}");
    // The gate: a row decided slower fails it (exit 6).
    let mut gated: Vec<&str> = args.to_vec();
    gated.extend(["--fail-on", "slower", "--no-store"]);
    let out = sm(&db, &gated);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
}

/// One run, one answer: `report RUN` of a run until decided names the
/// run's own baseline A, and puts A's curve first, whichever target's
/// block the store holds first (each pair starts with A or B at random:
/// one run is stored starting with B's block, another with A's).
#[test]
fn the_report_of_a_decided_run_keeps_its_baseline_whichever_block_is_stored_first() {
    let db = db("decide-order");
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let plan = db.with_file_name("decide-order-plan.toml");
    std::fs::write(
        &plan,
        "[[step]]\nname = \"lat\"\ntest = \"rr\"\nsizes = \"1:1\"\niterations = 20\n",
    )
    .unwrap();
    // Runs with seeds 1, 2, ... until one has stored B's block first and
    // one A's (each pair's order is drawn from the seed).
    let mut seen = [false, false];
    for seed in 1..=12 {
        if seen == [true, true] {
            break;
        }
        let seed = seed.to_string();
        let args = [
            "suite",
            plan.to_str().unwrap(),
            "--target",
            &format!("base={}", a.target()),
            "--target",
            &format!("other={}", b.target()),
            "--budget",
            "3",
            "--seed",
            &seed,
        ];
        let text = stdout(&ok(sm(&db, &args)));
        assert!(text.contains("A = base (baseline), B = other"), "{text}");
        let id = runs(&db).iter().filter_map(|r| r["id"].as_i64()).max().unwrap();
        let first =
            json_of(&ok(sm(&db, &["show", &id.to_string(), "--json"])))["decision"]["history"][0]["first"].clone();
        seen[usize::from(first == "B")] = true;
        let file = db.with_file_name(format!("decide-order-{id}.json"));
        ok(sm(
            &db,
            &[
                "report",
                &id.to_string(),
                "-o",
                file.to_str().unwrap(),
                "--format",
                "json",
            ],
        ));
        let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            r["sources"][0]["name"],
            format!("base (run {id})"),
            "seed {seed}, {first} first"
        );
        assert_eq!(r["decisions"][0]["a"], "base", "seed {seed}, {first} first");
        let text = stdout(&ok(sm(&db, &["report", &id.to_string(), "--format", "text"])));
        assert!(text.contains("A = base (baseline), B = other"), "seed {seed}: {text}");
    }
    assert_eq!(seen, [true, true], "twelve seeds, and the store never held both orders");
}

/// A run until decided says at once, on stderr, what it does and for how
/// long at most; with stderr not a terminal, a plain line of its progress
/// after its first pair (and again whenever nothing was said for 3 s);
/// and why it stopped.
#[test]
fn a_run_until_decided_says_what_it_does_and_how_far_it_is() {
    let db = db("decide-says");
    let out = ok(sm(&db, &["suite", "--quick", "--budget", "3", "--no-store"]));
    let err = stderr(&out);
    let first = err.lines().next().unwrap_or("");
    assert!(
        first.starts_with(
            "stackmeter suite latency-grid: measuring rust (A, the baseline) and c (B) in pairs of blocks"
        ) && first.ends_with("at most 3"),
        "{err}"
    );
    assert!(err.contains("\nstackmeter: pair 1: 0 of 8 row(s) decided, "), "{err}");
    assert!(
        err.contains("stackmeter: stopped: budget of 3 spent after 3 pair(s)"),
        "{err}"
    );
}

#[test]
fn ctrl_c_keeps_and_prints_what_was_decided() {
    let db = db("decide-sigint");
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let plan = plan(db.parent().unwrap());
    let child = crate::sandbox(&mut Command::new(BIN))
        .args(["suite", &plan, "--budget", "10m", "--tolerance", "0.01", "--target"])
        .arg(format!("a={}", a.target()))
        .arg("--target")
        .arg(format!("b={}", b.target()))
        .env("STACKMETER_DB", &db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (status, out) = super::interrupt_after(&db, 20, child);
    assert_eq!(status.code(), Some(130), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("stopped: interrupted after "), "{text}");
    assert!(
        stderr(&out).contains("stackmeter: stopped: interrupted after "),
        "{}",
        stderr(&out)
    );
    let list = runs(&db);
    assert_eq!(list[0]["status"], "partial");
    let id = list[0]["id"].as_i64().unwrap().to_string();
    assert_eq!(stdout(&ok(sm(&db, &["show", &id]))), text);
}

#[test]
fn bad_input_for_a_run_until_decided_is_one_line_and_exit_2() {
    let db = db("decide-bad");
    let t = "a=127.0.0.1:1";
    let u = "b=127.0.0.1:2";
    let cases: [(&[&str], &str); 8] = [
        (
            &["suite", "--target", t, "--target", u, "--budget", "0"],
            "--budget '0': must be above zero",
        ),
        (
            &["suite", "--target", t, "--target", u, "--budget", "soon"],
            "--budget 'soon': expected a time",
        ),
        (
            &["suite", "--target", t, "--target", u, "--tolerance", "0"],
            "--tolerance 0: the band must be above 0",
        ),
        (
            &["suite", "--target", t, "--target", u, "--tolerance", "150"],
            "--tolerance 150: the band must be above 0 and at most 100",
        ),
        (&["suite", "--until", "decided", "--target", t], "two or more"),
        (
            &[
                "suite",
                "--until",
                "decided",
                "--target",
                t,
                "--target",
                u,
                "--target",
                "c=127.0.0.1:3",
            ],
            "this suite has 3",
        ),
        (
            &[
                "suite", "--until", "decided", "--repeat", "5", "--target", t, "--target", u,
            ],
            "--repeat is the fixed design",
        ),
        (
            &["suite", "--confidence", "99,5", "--target", t, "--target", u],
            "--confidence was removed",
        ),
    ];
    for (args, says) in cases {
        let out = sm(&db, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
