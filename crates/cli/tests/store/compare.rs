//! `compare` on stored runs: the `--fail-on` gate when B is slower (exit
//! 6), no verdict between single runs, an error between different tests.

use super::super::{stderr, Server};
use super::{db, ok, runs, sm, stdout};

#[test]
fn compare_fails_the_gate_when_b_is_slower() {
    // B is the same responder behind a real proxy (socat): a real, large
    // slowdown (socat copies every byte of 256 KiB replies through user
    // space, several times the direct round trip even when other tests
    // load both CPUs). Six repetitions per side give a verdict.
    let db = db("gate");
    let srv = Server::start(&[]);
    let (_proxy, port) = super::super::load::Proxy::start(srv.addr);
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
