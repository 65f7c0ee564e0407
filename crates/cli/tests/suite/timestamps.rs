//! Kernel timestamps (`ping --timestamps`, `rr --timestamps`): against the
//! Rust and the C responder, on loopback and between two network
//! namespaces joined by veth, every part of every exchange is non-negative
//! and the five parts add up to its round trip (the JSON counts the
//! exchanges that do not: `negative` and `unbalanced`, both 0); a responder
//! that does not know the flag gives mode `none` and no split.

use super::c_responder::{asan_binary, CServer};
use super::{json_of, run, stderr, Server, BIN};
use serde_json::Value;
use stackmeter_proto::udp;
use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::process::Command;

const PARTS: [&str; 5] = [
    "client_send_stack",
    "out_path",
    "responder_app",
    "back_path",
    "client_recv_stack",
];

/// Checks one row's split: software stamps, every timed exchange split,
/// none negative, none off its RTT by more than 1%, and the part means
/// adding up to the RTT mean.
fn check_split(row: &Value, samples: u64, clock: &str, what: &str) {
    assert_eq!(row["timestamps"]["mode"], "software", "{what}: {row}");
    assert_eq!(row["timestamps"]["clock"], clock, "{what}");
    let s = &row["split_us"];
    for (k, want) in [
        ("samples", samples),
        ("incomplete", 0),
        ("negative", 0),
        ("unbalanced", 0),
    ] {
        assert_eq!(s[k].as_u64(), Some(want), "{what}: split_us.{k}: {s}");
    }
    let sum: f64 = PARTS.iter().map(|p| s[p]["mean"].as_f64().unwrap()).sum();
    let rtt = row["rtt_us"]["mean"].as_f64().unwrap();
    assert!((sum - rtt).abs() <= 0.01 * rtt, "{what}: parts {sum} vs rtt {rtt}");
    for p in PARTS {
        assert!(s[p]["min"].as_f64().unwrap() >= 0.0, "{what}: {p}");
    }
    let share = s["responder_app_share"]["median"].as_f64().unwrap();
    assert!(share > 0.0 && share < 1.0, "{what}: share {share}");
    // The responder's own stacks: every exchange in, all but the last out.
    assert_eq!(s["responder_stack_in"]["count"].as_u64(), Some(samples), "{what}");
    assert_eq!(s["responder_stack_out"]["count"].as_u64(), Some(samples - 1), "{what}");
}

/// ping and rr with stamps against `target`, run by `cmd` (a prefix such
/// as `ip netns exec NS`), every check on both.
fn both(prefix: &[&str], target: &str, clock: &str, what: &str) {
    let runs: [(&[&str], u64); 2] = [
        (&["ping", target, "--timestamps", "-c", "300", "--clock", clock], 300),
        (
            &[
                "rr",
                target,
                "--timestamps",
                "--sizes",
                "1:64,1K:4K",
                "-n",
                "200",
                "--clock",
                clock,
            ],
            200,
        ),
    ];
    for (args, n) in runs {
        let mut cmd = Command::new(prefix.first().copied().unwrap_or(BIN));
        super::sandbox(&mut cmd)
            .args(prefix.iter().skip(1))
            .args(if prefix.is_empty() { &[][..] } else { &[BIN][..] })
            .args(args)
            .args(["--json", "--no-store"]);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{what} {args:?}: {}", stderr(&out));
        let doc = json_of(&out);
        for (i, row) in doc["results"].as_array().unwrap().iter().enumerate() {
            check_split(row, n, clock, &format!("{what} {} row {i}", args[0]));
        }
        let warned = doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("negative part"));
        assert!(!warned, "{what}: {}", doc["warnings"]);
    }
}

#[test]
fn split_adds_up_on_loopback_rust_and_c_responders() {
    let srv = Server::start(&[]);
    both(&[], &srv.target(), "same", "rust loopback");
    let c = CServer::start(&[]);
    both(&[], &c.target(), "same", "c loopback");
    c.finish();
    // Without --clock, a loopback target shares the client's clock.
    let out = run(&[
        "ping",
        &srv.target(),
        "--timestamps",
        "-c",
        "50",
        "--json",
        "--no-store",
    ]);
    let doc = json_of(&out);
    assert_eq!(doc["params"]["timestamps"]["clock"], "same");
    assert_eq!(doc["results"][0]["timestamps"]["clock"], "same");
}

#[test]
fn text_output_shows_the_split_table() {
    let srv = Server::start(&[]);
    let out = run(&[
        "rr",
        &srv.target(),
        "--timestamps",
        "--sizes",
        "1:64",
        "-n",
        "50",
        "--no-store",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    for needle in [
        "round trip split from software kernel timestamps",
        "client send stack",
        "responder app share",
    ] {
        assert!(text.contains(needle), "no '{needle}' in:\n{text}");
    }
}

#[test]
fn estimated_clock_offset_is_stated_with_its_bound() {
    let srv = Server::start(&[]);
    let out = run(&[
        "ping",
        &srv.target(),
        "--timestamps",
        "-c",
        "200",
        "--clock",
        "estimate",
        "--json",
        "--no-store",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    let ts = &doc["results"][0]["timestamps"];
    assert_eq!(ts["clock"], "estimate");
    // One clock: the estimate is within its bound of the truth, 0.
    let (o, b) = (
        ts["offset_us"].as_f64().unwrap(),
        ts["offset_bound_us"].as_f64().unwrap(),
    );
    assert!(o.abs() <= b + 0.01, "offset {o} us, bound {b} us");
}

/// A v1 responder from before stamps: the UDP echo rule without the flag,
/// and rr that reads any header length and sends plain payload.
fn old_responder() -> (String, String) {
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    let t = TcpListener::bind("127.0.0.1:0").unwrap();
    let (ua, ta) = (u.local_addr().unwrap().to_string(), t.local_addr().unwrap().to_string());
    std::thread::spawn(move || {
        let mut b = [0u8; 2048];
        while let Ok((n, peer)) = u.recv_from(&mut b) {
            if let udp::Answer::Reply(len) = udp::answer(&mut b[..n], 1) {
                let _ = u.send_to(&b[..len], peer);
            }
        }
    });
    std::thread::spawn(move || {
        for s in t.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut h = [0u8; 256];
                s.read_exact(&mut h[..8]).unwrap();
                let len = u16::from_be_bytes([h[6], h[7]]) as usize;
                s.read_exact(&mut h[8..len]).unwrap();
                let req = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
                let resp = vec![0x5a; u32::from_be_bytes([h[12], h[13], h[14], h[15]]) as usize];
                s.write_all(b"SMTR\x01\x00\x00\x00").unwrap();
                let mut r = vec![0u8; req];
                while s.read_exact(&mut r).is_ok() {
                    if s.write_all(&resp).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (ua, ta)
}

#[test]
fn a_responder_without_stamps_gives_mode_none() {
    let (u, t) = old_responder();
    for args in [
        vec!["ping", &u, "--timestamps", "-c", "50"],
        vec!["rr", &t, "--timestamps", "--sizes", "1:64", "-n", "50"],
    ] {
        let out = run(&[&args[..], &["--json", "--no-store"]].concat());
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let doc = json_of(&out);
        let row = &doc["results"][0];
        assert_eq!(row["timestamps"]["mode"], "none", "{args:?}");
        assert!(row.get("split_us").is_none(), "{args:?}");
        assert_eq!(
            row["mismatched"].as_u64().unwrap_or(0),
            0,
            "payload checked whole: {row}"
        );
        let warned = doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("mode none"));
        assert!(warned, "{}", doc["warnings"]);
    }
}

#[test]
fn timestamp_flags_are_checked_by_name() {
    for (args, needle) in [
        (
            vec!["rr", "--timestamps"],
            "--sizes 1024:1: --timestamps needs responses of at least 48 bytes",
        ),
        (
            vec!["ping", "--timestamps", "--size", "64"],
            "--size 64: --timestamps needs datagrams of at least 88",
        ),
        (vec!["ping", "--clock", "same"], "--clock belongs to --timestamps"),
        (
            vec!["rr", "--timestamps", "--sizes", "1:64", "--rate", "100"],
            "--timestamps splits closed-loop",
        ),
    ] {
        let out = run(&[&args[..], &["--no-store"]].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(needle) && err.lines().count() == 1, "{args:?}: {err}");
    }
    // Loopback has no hardware clock: one line naming the interface.
    let out = run(&["ping", "--timestamps", "hw", "--no-store"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("interface lo has no hardware clock"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn split_adds_up_across_a_veth_pair_between_namespaces() {
    let Some(net) = crate::VethPair::new("s", 7) else {
        crate::missing(
            "split_adds_up_across_a_veth_pair_between_namespaces",
            &crate::netns_unusable().unwrap_or_default(),
        );
        return;
    };
    let [c, s] = &net.names;
    let mut rust = Command::new("ip");
    rust.args(["netns", "exec", s, BIN, "serve", "--listen", "198.19.7.2:24680"]);
    let rust = Server::spawn(rust);
    let mut cr = Command::new("ip");
    cr.args(["netns", "exec", s])
        .arg(asan_binary())
        .args(["--listen", "198.19.7.2:24681"]);
    let cr = Server::spawn(cr);
    let prefix = ["ip", "netns", "exec", c.as_str()];
    // Two namespaces of one kernel read one clock: synced.
    both(&prefix, "198.19.7.2:24680", "synced", "rust veth");
    both(&prefix, "198.19.7.2:24681", "synced", "c veth");
    drop((rust, cr));
}
