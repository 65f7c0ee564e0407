//! `rr` and `crr` against `stackmeter serve` and the embedded responder:
//! the full grid, the text table, connect and transaction times, many
//! clients at once, what a document records, Ctrl-C keeping what finished.

use super::{check_latency, interrupted, json_of, run, spawn_json, stderr, Server, TEST_DB};
use std::time::Duration;

#[test]
fn rr_full_grid_against_serve() {
    let srv = Server::start(&[]);
    let sizes = "1:1K,1:10K,1:100K,1:1M,1K:1,10K:1,100K:1,1M:1,1M:1M";
    let out = run(&[
        "rr",
        &srv.target(),
        "--sizes",
        sizes,
        "-n",
        "20",
        "--warmup",
        "2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["schema"], "stackmeter/1");
    assert_eq!(doc["test"], "rr");
    assert_eq!(doc["complete"], true);
    assert_eq!(doc["target"]["embedded"], false);
    assert_eq!(doc["params"]["iterations"], 20);
    let rows = doc["results"].as_array().unwrap();
    let want = [
        (1, 1024),
        (1, 10240),
        (1, 102400),
        (1, 1 << 20),
        (1024, 1),
        (10240, 1),
        (102400, 1),
        (1 << 20, 1),
        (1 << 20, 1 << 20),
    ];
    assert_eq!(rows.len(), want.len());
    for (row, (req, resp)) in rows.iter().zip(want) {
        assert_eq!(row["req_bytes"], req);
        assert_eq!(row["resp_bytes"], resp);
        assert_eq!(row["samples"], 20);
        assert_eq!(row["warmup"], 2);
        check_latency(&row["rtt_us"], 20);
        assert!(row["tps"].as_f64().unwrap() > 0.0);
    }
    // Moving 1 MiB both ways cannot be faster than moving 1 byte both ways.
    let p50 = |i: usize| rows[i]["rtt_us"]["p50"].as_f64().unwrap();
    assert!(p50(8) > p50(0), "1M:1M {} vs 1:1K {}", p50(8), p50(0));
}

#[test]
fn rr_text_table_has_one_row_per_size() {
    let out = run(&["rr", "--sizes", "1:1K,1K:1", "-n", "5", "--warmup", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(t.contains("embedded responder"), "{t}");
    assert!(
        t.lines().any(|l| l.trim_start().starts_with("1 B     1 KiB        5")),
        "{t}"
    );
    assert!(
        t.lines()
            .any(|l| l.trim_start().starts_with("1 KiB       1 B        5")),
        "{t}"
    );
    assert!(t.contains("p99.9 is the largest sample"), "tail caveat: {t}");
}

#[test]
fn crr_times_connect_and_transaction() {
    let srv = Server::start(&[]);
    let out = run(&[
        "crr",
        &srv.target(),
        "-n",
        "200",
        "--warmup",
        "5",
        "--size",
        "64:1K",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["test"], "crr");
    let r = &doc["results"][0];
    assert_eq!(r["samples"], 200);
    assert_eq!(
        (r["req_bytes"].as_u64(), r["resp_bytes"].as_u64()),
        (Some(64), Some(1024))
    );
    check_latency(&r["connect_us"], 200);
    check_latency(&r["transaction_us"], 200);
    let connect = r["connect_us"]["p50"].as_f64().unwrap();
    let whole = r["transaction_us"]["p50"].as_f64().unwrap();
    assert!(connect < whole, "connect {connect} within transaction {whole}");
    assert!(r["cps"].as_f64().unwrap() > 0.0);
}

#[test]
fn embedded_default_and_placement_are_recorded() {
    let out = run(&[
        "rr",
        "--sizes",
        "1:1",
        "-n",
        "10",
        "--affinity",
        "0",
        "--responder-affinity",
        "0",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["target"]["embedded"], true);
    assert_eq!(doc["placement"]["client_cpu"], 0);
    assert_eq!(doc["placement"]["responder_cpu"], 0);
    assert!(doc["env"]["kernel"].as_str().unwrap().starts_with("Linux"));
    assert_eq!(doc["env"]["command"][1], "rr");
    let out = run(&["rr", "127.0.0.1:1", "--responder-affinity", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn many_clients_at_once_each_get_their_own_session() {
    let srv = Server::start(&[]);
    let target = srv.target();
    let clients: Vec<_> = (0..12)
        .map(|i| {
            let (test, args): (&str, Vec<&str>) = match i % 3 {
                0 => ("rr", vec!["--sizes", "1:64K,64K:1", "-n", "200"]),
                1 => ("crr", vec!["-n", "100"]),
                _ => ("ping", vec!["-c", "300"]),
            };
            spawn_json(test, &target, &args)
        })
        .collect();
    for c in clients {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let doc = json_of(&out);
        assert_eq!(doc["complete"], true);
        if doc["test"] == "ping" {
            assert_eq!(doc["results"][0]["mismatched"], 0);
        }
    }
}

#[test]
fn ctrl_c_during_rr_prints_and_stores_what_finished() {
    let srv = Server::start(&[]);
    let label = format!("ctrlc-rr-{}", std::process::id());
    let out = interrupted(
        &[
            "rr",
            &srv.target(),
            "--sizes",
            "1:1,1:2",
            "-n",
            "100000000",
            "--json",
            "--label",
            &label,
        ],
        |_| {
            std::thread::sleep(Duration::from_millis(700));
            true
        },
    );
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["complete"], false);
    assert!(doc["error"].as_str().unwrap().contains("interrupted"));
    let rows = doc["results"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "the pair in progress is kept, the next one not started");
    let n = rows[0]["samples"].as_u64().unwrap();
    assert!(n > 0 && n < 100_000_000, "{n}");
    let stored = stackmeter_store::Store::open(std::path::Path::new(TEST_DB)).unwrap();
    let tests = stored.tests_with_label(&label).unwrap();
    assert_eq!(tests.len(), 1);
    assert!(!tests[0].doc.complete);
}

#[test]
fn ctrl_c_during_open_loop_rr_keeps_the_requests_that_were_answered() {
    let srv = Server::start(&[]);
    let out = interrupted(
        &[
            "rr",
            &srv.target(),
            "--sizes",
            "64:64",
            "--rate",
            "2000",
            "--connections",
            "2",
            "--time",
            "60",
            "--json",
            "--no-store",
        ],
        |_| {
            std::thread::sleep(Duration::from_millis(1500));
            true
        },
    );
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["complete"], false);
    let row = &doc["results"][0];
    let n = row["samples"].as_u64().unwrap();
    assert!(n > 0 && n < 120_000, "stopped early, kept what was answered: {n}");
    // The achieved rate is over the time that ran, not the planned 60 s.
    let achieved = row["achieved_rate"].as_f64().unwrap();
    assert!(achieved > 200.0, "{achieved}/s from {n} samples");
}
