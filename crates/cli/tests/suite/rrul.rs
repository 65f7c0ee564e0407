//! rrul end to end: phases of real TCP load with UDP probes through them,
//! against real responders on loopback, and (as root, run alone) through a
//! tbf-limited router where the queue the tbf allows must show as induced
//! latency, in the direction it was placed and not the other.

use super::throughput::Bottleneck;
use super::{json_of, run, stderr, Server};
use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The phase named `name` at index `i`.
fn phase<'a>(doc: &'a Value, i: usize, name: &str) -> &'a Value {
    let p = &doc["phases"][i];
    assert_eq!(p["name"], name, "{p}");
    p
}

#[test]
fn rrul_runs_every_phase_with_probes_through_them() {
    let srv = Server::start(&[]);
    let out = run(&[
        "rrul",
        &srv.target(),
        "--phase-time",
        "0.6",
        "-P",
        "2",
        "--tcp-probe",
        "--no-store",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json_of(&out);
    assert_eq!(v["test"], "rrul");
    assert_eq!(v["complete"], true);
    let names: Vec<&str> = v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["idle", "down", "up", "bidir", "idle"]);
    // Load only where the phase says, counted at the receivers.
    assert_eq!(f(&phase(&v, 0, "idle")["down_mbps"]), 0.0);
    assert!(f(&phase(&v, 1, "down")["down_mbps"]) > 10.0);
    assert_eq!(f(&phase(&v, 1, "down")["up_mbps"]), 0.0);
    assert!(f(&phase(&v, 2, "up")["up_mbps"]) > 10.0);
    let bidir = phase(&v, 3, "bidir");
    assert!(f(&bidir["down_mbps"]) > 10.0 && f(&bidir["up_mbps"]) > 10.0);
    // Probes every 10 ms through every phase, each one answered on loopback.
    let mut sent = 0;
    for p in v["phases"].as_array().unwrap() {
        let n = p["probes_sent"].as_u64().unwrap();
        assert!((40..=80).contains(&n), "{p}");
        assert_eq!(p["probes_lost"], 0, "{p}");
        assert_eq!(p["rtt_us"]["count"].as_u64().unwrap(), n);
        assert!(p["tcp_rtt_us"]["count"].as_u64().unwrap() > 10, "{p}");
        // Each way is part of the round trip.
        assert!(f(&p["owd_up_us"]["p50"]) + f(&p["owd_down_us"]["p50"]) <= f(&p["rtt_us"]["max"]) + 1.0);
        sent += n;
        // The responder counts the probes it receives: loss splits each way.
        assert_eq!(p["probe_loss_up"], 0.0, "{p}");
        assert_eq!(p["probe_loss_down"], 0.0, "{p}");
    }
    assert_eq!(v["series"].as_array().unwrap().len() as u64, sent);
    // Loopback: the responder stamps this host's clock.
    assert_eq!(v["clock"]["method"], "synced");
    let induced = v["induced"].as_array().unwrap();
    assert_eq!(induced.len(), 5);
    assert_eq!(f(&induced[0]["rtt_p50_us"]), 0.0, "idle against itself");
    assert!(!v["throughput"].as_array().unwrap().is_empty());

    // Text: the phase table and the clock method.
    let out = run(&[
        "rrul",
        &srv.target(),
        "--phase-time",
        "0.3",
        "--phases",
        "idle,down",
        "--no-store",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(" 2 down ") && text.contains("one-way delays:"), "{text}");

    // HTML: the three charts, the time ones with the phases shaded.
    let out = run(&[
        "rrul",
        &srv.target(),
        "--phase-time",
        "0.3",
        "--phases",
        "idle,up",
        "--no-store",
        "--format",
        "html",
    ]);
    let html = String::from_utf8_lossy(&out.stdout);
    for chart in ["rrul-throughput", "rrul-latency", "rrul-percentiles"] {
        assert!(html.contains(&format!("data-chart=\"{chart}\"")), "{chart}");
    }
    assert!(html.contains("class=\"band\""));
}

#[test]
fn report_sets_two_targets_side_by_side_on_induced_latency() {
    let (a, b) = (Server::start(&[]), Server::start(&[]));
    let dir = std::env::temp_dir().join(format!("sm-rrul-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("r.db");
    let db = db.to_str().unwrap();
    for (srv, label) in [(&a, "a"), (&b, "b"), (&a, "a"), (&b, "b")] {
        let out = run(&[
            "rrul",
            &srv.target(),
            "--phases",
            "idle,down,idle",
            "--phase-time",
            "0.3",
            "-P",
            "1",
            "--db",
            db,
            "--label",
            label,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let html = dir.join("r.html");
    let out = run(&["report", "a", "b", "--db", db, "-o", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Latency under load (rrul)"));
    assert_eq!(page.matches("data-chart=\"rrul-induced\"").count(), 1);
    // Each source's latest run against time.
    assert_eq!(page.matches("data-chart=\"rrul-latency\"").count(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rrul_bad_flags_are_exit_2_naming_the_flag() {
    for (args, says) in [
        (
            vec!["--phases", "idle,flood"],
            "--phases 'flood': each phase is idle, down, up or bidir",
        ),
        (vec!["--phase-time", "0"], "--phase-time 0"),
        (vec!["--probe-size", "8"], "--probe-size 8"),
        (vec!["--clock", "atomic"], "--clock"),
    ] {
        let mut all = vec!["rrul", "--no-store"];
        all.extend(args);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
}

/// rrul through a tbf on one side of the router; returns the document.
fn through(net: &Bottleneck, phases: &str) -> Value {
    let _srv = net.serve();
    net.client(&[
        "rrul",
        "198.19.2.2",
        "--phases",
        phases,
        "--phase-time",
        "3",
        "-P",
        "4",
        "--clock",
        "synced",
        "--no-store",
        "--json",
    ])
}

// Runs alone, after every other test (scripts/test): queueing delay and
// throughput through a tbf are timing figures.
#[test]
#[ignore = "run alone by scripts/test, after the other tests"]
fn rrul_through_a_tbf_shows_the_queue_it_allows_in_its_direction() {
    // 50 Mbit/s toward the client only, a queue of at most 20 ms.
    let tbf = "rate 50mbit burst 16kb latency 20ms";
    let Some(net) = Bottleneck::shaped("rd", None, Some(tbf)) else {
        crate::missing("rrul through a tbf", &crate::netns_unusable().unwrap_or_default());
        return;
    };
    let v = through(&net, "idle,down,up,idle");
    let idle = phase(&v, 0, "idle");
    assert!(f(&idle["rtt_us"]["p50"]) < 1000.0, "idle probes under 1 ms: {idle}");
    let down = phase(&v, 1, "down");
    // Goodput of a 50 Mbit/s frame rate: 1448/1514 of it at most.
    let mbps = f(&down["down_mbps"]);
    assert!(
        (42.5..=50.5).contains(&mbps),
        "down {mbps} Mbit/s against a 50 Mbit/s limit"
    );
    let ind = &v["induced"][1];
    let (up, dn) = (f(&ind["owd_up_p50_us"]), f(&ind["owd_down_p50_us"]));
    // The queue is toward the client: down delay grows by milliseconds,
    // bounded by what the tbf holds (20 ms, plus a burst of 16 KB at
    // 50 Mbit/s: 2.6 ms); up stays within a millisecond.
    assert!(dn > 2_000.0 && dn < 25_000.0, "induced down {dn} us: {down}");
    assert!(up.abs() < 1_000.0, "induced up {up} us");
    let p99 = f(&down["rtt_us"]["p99"]);
    assert!(p99 < 30_000.0, "rtt p99 {p99} us beyond the tbf's bound");
    // The up phase is not limited that way: no queue toward the client.
    let up_phase = &v["induced"][2];
    assert!(f(&up_phase["owd_down_p50_us"]).abs() < 1_000.0, "{up_phase}");
    eprintln!("tbf toward the client: down {mbps:.1} Mbit/s, induced one-way delay down {dn:.0} us, up {up:.0} us");
    drop(net);

    // The same limit toward the server: the up phase queues, upward.
    let Some(net) = Bottleneck::shaped("ru", Some(tbf), None) else {
        crate::missing("rrul up through a tbf", &crate::netns_unusable().unwrap_or_default());
        return;
    };
    let v = through(&net, "idle,up,idle");
    let upp = phase(&v, 1, "up");
    let mbps = f(&upp["up_mbps"]);
    assert!((42.5..=50.5).contains(&mbps), "up {mbps} Mbit/s");
    let ind = &v["induced"][1];
    let (up, dn) = (f(&ind["owd_up_p50_us"]), f(&ind["owd_down_p50_us"]));
    assert!(up > 2_000.0 && up < 25_000.0, "induced up {up} us: {upp}");
    assert!(dn.abs() < 1_000.0, "induced down {dn} us");
    eprintln!("tbf toward the server: up {mbps:.1} Mbit/s, induced one-way delay up {up:.0} us, down {dn:.0} us");
}
