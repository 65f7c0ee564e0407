//! `ping` (UDP echo): every payload checked, a schedule kept, and the
//! counts against the kernel's own UDP counters in a network namespace of
//! its own.

use super::{check_latency, in_private_netns, json_of, run, stderr, Server};

#[test]
fn ping_checks_every_payload() {
    let srv = Server::start(&[]);
    for size in ["64", "1400"] {
        let out = run(&[
            "ping",
            &srv.target(),
            "--size",
            size,
            "-c",
            "500",
            "--slow-us",
            "1",
            "--json",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let r = &json_of(&out)["results"][0];
        assert_eq!(r["bytes"].as_u64(), size.parse().ok());
        assert_eq!((r["sent"].as_u64(), r["received"].as_u64()), (Some(500), Some(500)));
        for k in ["lost", "late", "duplicates", "reordered", "mismatched"] {
            assert_eq!(r[k], 0, "{k}");
        }
        check_latency(&r["rtt_us"], 500);
        check_latency(&r["server_us"], 500);
        // A 1 us threshold makes every answer slow; ten are listed.
        assert_eq!(r["slow"], 500);
        assert_eq!(r["slow_first"].as_array().unwrap().len(), 10);
        assert_eq!(r["slow_first"][0]["seq"], 0);
    }
}

#[test]
fn ping_on_a_schedule() {
    let out = run(&["ping", "-c", "200", "--interval-us", "500", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &json_of(&out)["results"][0];
    assert_eq!(r["received"], 200);
    // 200 sends 500 us apart take at least 99.5 ms: about 2000/s at most,
    // unless the client fell behind (a loaded machine), which it must then
    // report. Back-to-back sending would show ~10x the rate and no lag.
    let lag = r["max_send_lag_us"].as_f64().unwrap();
    assert!(r["pps"].as_f64().unwrap() < 2100.0 || lag > 500.0, "{r}");
}

#[test]
fn ping_counts_agree_with_the_kernels_udp_counters() {
    // A private network namespace, so no other test's traffic is counted.
    let Some((doc, in_d, out_d)) = in_private_netns("ping-snmp", "ping -c 1000 --warmup 10") else {
        return;
    };
    let r = &doc["results"][0];
    let (sent, received) = (r["sent"].as_i64().unwrap(), r["received"].as_i64().unwrap());
    let warmup = doc["params"]["warmup"].as_i64().unwrap();
    // Client and embedded responder share the namespace: every datagram is
    // sent once by each side and received once by each side.
    assert_eq!(out_d, 2 * (sent + warmup), "kernel OutDatagrams vs stackmeter sent");
    assert_eq!(
        in_d,
        (sent + warmup) + (received + warmup),
        "kernel InDatagrams vs stackmeter received"
    );
}
