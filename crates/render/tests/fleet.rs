//! Fleet reports and comparisons from made-up rr documents: one slow
//! node must top the worst pairs and be the only one a comparison flags,
//! and every format shows it.

use stackmeter_render::{render, Format, Style};
use stackmeter_results::fleet::{FleetComparison, FleetReport, PairTest, Role};
use stackmeter_results::Document;

/// An rr document whose round trip p50 is `p50` us (p99 twice that).
fn rr(p50: f64) -> Document {
    let text = r#"{
  "schema": "stackmeter/1",
  "target": { "name": "t", "address": "10.0.0.1:24680", "embedded": false },
  "test": "rr",
  "params": { "sizes": [{ "req": 1, "resp": 1024 }], "iterations": 100, "warmup": 10, "nodelay": true, "timeout_ms": 5000 },
  "results": [
    { "req_bytes": 1, "resp_bytes": 1024, "samples": 100, "warmup": 10,
      "rtt_us": { "count": 100, "min": P50, "mean": P50, "p50": P50, "p90": P50, "p99": P99, "p999": P99, "max": P99, "stddev": 1.0 },
      "tps": 1000.0, "levels": null }
  ],
  "placement": { "client_cpu": null, "responder_cpu": null },
  "env": { "tool": "stackmeter", "version": "0", "time": "2026-11-25T00:00:00Z", "hostname": "h", "kernel": "Linux", "cpu_model": "c", "cpus": 2, "command": [] },
  "complete": true,
  "error": null,
  "warnings": []
}"#;
    serde_json::from_str(
        &text
            .replace("P50", &p50.to_string())
            .replace("P99", &(2.0 * p50).to_string()),
    )
    .unwrap()
}

/// A full mesh of `n` nodes, `reps` repetitions; pairs touching node
/// `slow` (if any) take 50 times longer; `jitter` spreads repetitions.
fn run(n: usize, reps: usize, slow: Option<usize>) -> Vec<PairTest> {
    let mut out = Vec::new();
    for r in 0..reps {
        for a in 0..n {
            for b in 0..n {
                if a == b {
                    continue;
                }
                let base = 20.0 + (a * 7 + b * 3 + r * 5) as f64 % 6.0;
                let p50 = if slow.is_some_and(|s| s == a || s == b) {
                    base * 50.0
                } else {
                    base
                };
                out.push(PairTest {
                    client: format!("n{a}"),
                    target: format!("n{b}"),
                    step: "latency".into(),
                    repetition: r,
                    doc: rr(p50),
                });
            }
        }
    }
    out
}

#[test]
fn a_slow_node_tops_the_worst_pairs() {
    let r = FleetReport::build("with", &run(8, 3, Some(5)));
    assert_eq!(r.nodes.len(), 8);
    assert_eq!(r.tests, 8 * 7 * 3);
    // rr gives p50 and p99 of its compared series (rtt).
    assert_eq!(
        r.matrices.len(),
        2,
        "{:?}",
        r.matrices.iter().map(|m| m.key.title()).collect::<Vec<_>>()
    );
    let m = &r.matrices[0];
    assert_eq!(m.cells.len(), 56);
    assert!(!r.worst.is_empty());
    assert!(
        r.worst.iter().all(|w| w.client == "n5" || w.target == "n5"),
        "{:?}",
        r.worst
    );
    for f in [Format::Text, Format::Md, Format::Html, Format::Json] {
        let s = render(&r, f, &Style::default());
        assert!(s.contains("n5"), "{f:?}");
    }
    let html = render(&r, Format::Html, &Style::default());
    assert_eq!(html.matches("data-chart=\"heatmap\"").count(), 2);
    // The slow node is named, as a client and as a target, and no other.
    assert!(!r.suspects.is_empty());
    assert!(r.suspects.iter().all(|e| e.node == "n5"), "{:?}", r.suspects);
    assert!(r.suspects.iter().any(|e| e.role == Role::Client));
    assert!(r.suspects.iter().any(|e| e.role == Role::Target));
    // Its row and column are outlined in the heatmaps.
    assert!(html.contains("data-suspect=\"client\"") && html.contains("data-suspect=\"target\""));
}

/// A mesh of 8 nodes, 8 repetitions: pair (a, b) in repetition r takes
/// `p50(a, b, r)` us.
fn mesh(p50: impl Fn(usize, usize, usize) -> f64) -> Vec<PairTest> {
    let mut out = Vec::new();
    for r in 0..8 {
        for a in 0..8 {
            for b in (0..8).filter(|&b| b != a) {
                out.push(PairTest {
                    client: format!("n{a}"),
                    target: format!("n{b}"),
                    step: "latency".into(),
                    repetition: r,
                    doc: rr(p50(a, b, r)),
                });
            }
        }
    }
    out
}

#[test]
fn a_node_is_named_when_it_stands_out_from_the_others_not_only_from_zero() {
    let wobble = |a: usize, b: usize, r: usize| 1.0 + ((a * 7 + b * 13 + r * 5) % 9) as f64 * 0.005;
    // Load that spreads the clients from 0.65x to 1.8x (n3 the slowest:
    // significantly, and 1.6x the median client), and a broken node 7
    // whose way out makes every pair it answers 100x slower: only node 7 is
    // named, n3 being no outlier in that spread.
    let load = [1.0, 1.5, 0.7, 1.8, 1.2, 0.65, 1.4, 0.9];
    let loaded = mesh(|a, b, r| 20.0 * load[a] * wobble(a, b, r) * if b == 7 { 100.0 } else { 1.0 });
    let r = FleetReport::build("loaded", &loaded);
    assert!(
        !r.suspects.is_empty() && r.suspects.iter().all(|e| e.node == "n7" && e.role == Role::Target),
        "{:?}",
        r.suspects
    );
    // On a quiet fleet one client 1.6x slower stands out, and is named.
    let quiet = mesh(|a, b, r| 20.0 * if a == 3 { 1.6 } else { 1.0 } * wobble(a, b, r));
    let r = FleetReport::build("quiet", &quiet);
    assert!(
        r.suspects.iter().any(|e| e.node == "n3" && e.role == Role::Client),
        "{:?}",
        r.suspects
    );
}

#[test]
fn a_comparison_flags_the_slowed_pairs_and_no_others() {
    let a = run(6, 5, None);
    let b = run(6, 5, Some(2));
    let c = FleetComparison::build("a", &a, "b", &b, 10.0);
    let flagged = c.flagged_pairs();
    assert_eq!(flagged.len(), 10, "{flagged:?}");
    assert!(flagged.iter().all(|(x, y)| x == "n2" || y == "n2"));
    assert!(c.flagged.iter().all(|p| p.stats.percent < 0.0), "slower, not faster");
    assert_eq!(c.too_few, 0);
    // The same run against itself flags nothing.
    let same = FleetComparison::build("a", &a, "a", &a, 10.0);
    assert!(same.flagged.is_empty());
    // One repetition a side: no verdict, nothing flagged.
    let one = FleetComparison::build("a", &run(4, 1, None), "b", &run(4, 1, Some(1)), 10.0);
    assert!(one.flagged.is_empty() && one.too_few > 0);
    // Two a side are enough for a 50x change (the moderated t uses its
    // size, where a rank test of 2 against 2 could never pass): the
    // slowed node's pairs and no others.
    let two = FleetComparison::build("a", &run(4, 2, None), "b", &run(4, 2, Some(1)), 10.0);
    let flagged = two.flagged_pairs();
    assert_eq!(flagged.len(), 6, "{flagged:?}");
    assert!(flagged.iter().all(|(x, y)| x == "n1" || y == "n1"));
    let text = render(&c, Format::Text, &Style::default());
    assert!(text.contains("n2"), "{text}");
    // The node is named, not only its pairs; the correction is said.
    assert!(
        !c.nodes.is_empty() && c.nodes.iter().all(|e| e.node == "n2"),
        "{:?}",
        c.nodes
    );
    assert!(c.correction.as_ref().is_some_and(|k| k.tests == c.compared));
    assert!(text.contains("Benjamini-Hochberg"), "{text}");
    // The same run against itself names no node.
    assert!(same.nodes.is_empty());
}

#[test]
fn labels_split_into_pairs() {
    assert_eq!(PairTest::pair("a->b"), Some(("a", "b")));
    assert_eq!(PairTest::pair("a->"), None);
    assert_eq!(PairTest::pair("ab"), None);
}
