//! Object mode, `stackmeter load`, open-loop rr, many idle sessions, and a
//! real proxy (socat) between client and responder.

use super::{check_latency, header, json_of, run, stderr, Server};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A raw object session: header sent, status "accepted" read.
pub(super) fn object_session(srv: &Server) -> TcpStream {
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut h = b"SMTR".to_vec();
    h.extend([1u8, 16, 0, 16]);
    h.extend([0u8; 8]);
    s.write_all(&h).unwrap();
    let mut st = [0u8; 8];
    s.read_exact(&mut st).unwrap();
    assert_eq!(st, [b'S', b'M', b'T', b'R', 1, 0, 0, 0], "accepted");
    s
}

/// Sends one request and reads the response: (code, body).
pub(super) fn request(s: &mut TcpStream, op: u8, name: &[u8]) -> (u8, Vec<u8>) {
    let mut r = vec![op, 0];
    r.extend((name.len() as u16).to_be_bytes());
    r.extend(name);
    s.write_all(&r).unwrap();
    let mut h = [0u8; 12];
    s.read_exact(&mut h).unwrap();
    let len = u64::from_be_bytes(h[4..12].try_into().unwrap());
    let mut body = vec![0u8; len as usize];
    s.read_exact(&mut body).unwrap();
    (h[0], body)
}

/// Names in a LIST body, with their size and CRC-32.
pub(super) fn names(body: &[u8]) -> Vec<(String, u64, u32)> {
    let n = u32::from_be_bytes(body[0..4].try_into().unwrap());
    let mut at = 4;
    let mut v = Vec::new();
    for _ in 0..n {
        let size = u64::from_be_bytes(body[at..at + 8].try_into().unwrap());
        let crc = u32::from_be_bytes(body[at + 8..at + 12].try_into().unwrap());
        let l = body[at + 13] as usize;
        v.push((
            String::from_utf8_lossy(&body[at + 14..at + 14 + l]).into_owned(),
            size,
            crc,
        ));
        at += 14 + l;
    }
    assert_eq!(at, body.len());
    v
}

pub(super) fn check_run(r: &Value, per_run_bytes: u64, requests: u64, clients: u64) {
    for k in [
        "wall_s",
        "bytes",
        "verified_bytes",
        "errors",
        "requests",
        "rate_kBps",
        "rate_mbps",
    ] {
        assert!(r[k].is_number(), "missing {k} in {r}");
    }
    assert_eq!(r["bytes"].as_u64(), Some(per_run_bytes), "{r}");
    assert_eq!(r["verified_bytes"].as_u64(), Some(per_run_bytes), "{r}");
    assert_eq!(r["errors"], 0, "{r}");
    assert_eq!(r["requests"].as_u64(), Some(requests), "{r}");
    let wall = r["wall_s"].as_f64().unwrap();
    let kbps = r["rate_kBps"].as_f64().unwrap();
    assert!((kbps - per_run_bytes as f64 / 1024.0 / wall).abs() / kbps < 1e-6);
    let fetches = requests - clients;
    check_latency(&r["latency_us"], fetches);
}

#[test]
fn load_against_serve_checks_every_byte_of_every_run() {
    let srv = Server::start(&["--objects", "4K,64K,100K"]);
    let out = run(&[
        "load",
        &srv.target(),
        "--clients",
        "8",
        "--fetch-each",
        "2",
        "--repeat",
        "2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["test"], "load");
    let objs = doc["params"]["objects"].as_array().unwrap();
    assert_eq!(objs.len(), 3);
    assert_eq!(objs[2]["name"], "100K");
    assert_eq!(objs[2]["verify"], "pattern");
    let per_run = 8 * 2 * (4 + 64 + 100) * 1024;
    let runs = doc["results"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        // 8 clients x (1 LIST + 2 x 3 FETCH)
        check_run(r, per_run, 8 * 7, 8);
        assert_eq!(r["clients_completed"], 8);
        assert_eq!(r["by_object"][0]["latency_us"]["count"], 16);
    }
    assert_eq!(doc["summary"]["wall_s"]["n"], 2);
    assert_eq!(doc["summary"]["by_object"][1]["latency_us"]["count"], 32);
    // The document reads back into the typed value.
    let d: stackmeter_results::Document = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d.body.test_name(), "load");
}

#[test]
fn objects_dir_serves_only_its_own_regular_files() {
    let dir = std::env::temp_dir().join(format!("stackmeter-objects-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("a.txt"), b"hello objects\n").unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(dir.join("b.bin"), &big).unwrap();
    std::fs::write(dir.join("sub").join("inner"), b"not listed").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("link-out")).unwrap();
    std::os::unix::fs::symlink(dir.join("a.txt"), dir.join("link-in")).unwrap();
    let srv = Server::start(&["--objects-dir", dir.to_str().unwrap()]);
    let mut s = object_session(&srv);
    let (code, body) = request(&mut s, 1, b"");
    assert_eq!(code, 0);
    let listed = names(&body);
    let only: Vec<&str> = listed.iter().map(|x| x.0.as_str()).collect();
    assert_eq!(only, ["a.txt", "b.bin"], "no symlink, no directory, nothing below");
    assert_eq!(listed[0].1, 14);
    let (code, got) = request(&mut s, 2, b"a.txt");
    assert_eq!((code, got.as_slice()), (0, &b"hello objects\n"[..]));
    let long = vec![b'a'; 255];
    let escapes: [&[u8]; 9] = [
        b"../etc/passwd",
        b"/etc/passwd",
        b"link-out",
        b"link-in",
        b"sub/inner",
        b"sub",
        b"./a.txt",
        b"a.txt\0",
        &long,
    ];
    for name in escapes {
        let (code, reason) = request(&mut s, 2, name);
        assert_eq!(code, 10, "{:?} must be not found", String::from_utf8_lossy(name));
        assert!(String::from_utf8_lossy(&reason).contains("no object named"));
    }
    // The session survived every not-found; a name longer than 255 bytes
    // breaks the framing: bad request, then the responder closes.
    assert_eq!(request(&mut s, 2, b"b.bin").1, big);
    let mut r = vec![2u8, 0];
    r.extend(300u16.to_be_bytes());
    s.write_all(&r).unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    assert_eq!(rest[0], 11, "bad request");
    // The load client verifies real files through their CRC-32.
    let out = run(&["load", &srv.target(), "--clients", "3", "--repeat", "1", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["params"]["objects"][1]["verify"], "crc32");
    check_run(&doc["results"][0], 3 * 2 * (14 + 300_000), 3 * 5, 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_object_requests_and_bad_flags() {
    let srv = Server::start(&["--objects", "1K"]);
    let mut s = object_session(&srv);
    s.write_all(&[9, 0, 0, 0]).unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    assert_eq!(rest[0], 11);
    assert!(String::from_utf8_lossy(&rest[12..]).contains("unknown object request op 9"));
    for (args, needle) in [
        (&["load", "--clients", "0"][..], "--clients"),
        (&["load", "--objects", "4K,zz"], "bad size list item"),
        (&["load", "127.0.0.1:1", "--objects", "4K"], "embedded responder"),
        (&["rr", "--time", "1"], "give --rate too"),
        (&["rr", "--rate", "0"], "--rate 0"),
        (&["rr", "--rate", "100", "--arrival", "bursty"], "--arrival"),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn open_loop_rr_reports_requested_and_achieved_rates() {
    for arrival in ["fixed", "poisson"] {
        let out = run(&[
            "rr",
            "--sizes",
            "64:64",
            "--rate",
            "2000",
            "--connections",
            "4",
            "--time",
            "0.5",
            "--arrival",
            arrival,
            "--json",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let doc = json_of(&out);
        assert_eq!(doc["params"]["open_loop"]["arrival"], arrival);
        let r = &doc["results"][0];
        assert_eq!(r["requested_rate"], 2000.0);
        // 2000/s x 0.5 s over 4 connections: 250 each, every one answered.
        assert_eq!(r["samples"], 1000);
        check_latency(&r["rtt_us"], 1000);
        assert_eq!(r["send_lag_us"]["count"], 1000);
        let got = r["achieved_rate"].as_f64().unwrap();
        assert!(got > 0.0 && got <= 2000.0 * 1.001, "{got}");
    }
}

#[test]
fn open_loop_rr_counts_add_up_over_uneven_connections() {
    let srv = Server::start(&[]);
    // 3000/s for 0.4 s: 1200 requests dealt round-robin over 7 connections
    // (172 on five, 171 on two), every response matched to its request.
    let out = run(&[
        "rr",
        &srv.target(),
        "--sizes",
        "64:64,100:3000",
        "--rate",
        "3000",
        "--connections",
        "7",
        "--time",
        "0.4",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    for r in doc["results"].as_array().unwrap() {
        assert_eq!(r["samples"], 1200);
        check_latency(&r["rtt_us"], 1200);
        assert_eq!(r["send_lag_us"]["count"], 1200);
        assert!(r["late_sends"].as_u64().unwrap() <= 1200);
        let got = r["achieved_rate"].as_f64().unwrap();
        // 1200 responses over at least the planned 0.4 s.
        assert!(got > 100.0 && got <= 3000.0 * 1.001, "{got}");
        assert_eq!(r["tps"], r["achieved_rate"]);
    }
}

#[test]
fn open_loop_rr_far_beyond_what_the_pair_can_do_still_reads_every_connection() {
    let srv = Server::start(&[]);
    // 1,000,000/s for 0.1 s: no client here keeps that schedule, so it is
    // behind from the first request to the last. It must still read while
    // it catches up: a client that only sent while behind left connection 0
    // unread for longer than this 300 ms timeout and failed with "no data
    // for the whole timeout" against a responder that had answered.
    let out = run(&[
        "rr",
        &srv.target(),
        "--sizes",
        "64:64",
        "--rate",
        "1000000",
        "--connections",
        "16",
        "--time",
        "0.1",
        "--timeout-ms",
        "300",
        "--json",
        "--no-store",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &json_of(&out)["results"][0];
    assert_eq!(r["samples"], 100_000);
    assert_eq!(r["send_lag_us"]["count"], 100_000);
    assert!(r["late_sends"].as_u64().unwrap() > 0, "the schedule was not kept: {r}");
    let got = r["achieved_rate"].as_f64().unwrap();
    assert!(got < 1_000_000.0, "{got}");
}

#[test]
fn a_stalled_responder_is_in_the_latencies_and_the_lag_is_flagged() {
    let srv = Server::start(&[]);
    let pid = srv.child.id().to_string();
    let target = srv.target();
    // 64 KiB requests, 1000/s: while the responder is stopped its socket
    // buffers fill within tens of milliseconds, so sends are held back and
    // leave late; every request's latency still counts from its intended
    // send time, so the stall shows in full.
    let client = std::thread::spawn(move || {
        run(&[
            "rr",
            &target,
            "--sizes",
            "64K:1",
            "--rate",
            "1000",
            "--connections",
            "1",
            "--time",
            "2.5",
            "--json",
        ])
    });
    std::thread::sleep(Duration::from_millis(800));
    let signal = |sig: &str| {
        let st = Command::new("kill").args([sig, &pid]).status().unwrap();
        assert!(st.success(), "kill {sig}");
    };
    signal("-STOP");
    std::thread::sleep(Duration::from_millis(400));
    signal("-CONT");
    let out = client.join().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    let r = &doc["results"][0];
    assert_eq!(r["samples"], 2500);
    let max = r["rtt_us"]["max"].as_f64().unwrap();
    assert!(
        max >= 350_000.0,
        "the 400 ms stall is missing from the latencies: max {max} us"
    );
    assert!(r["late_sends"].as_u64().unwrap() > 0, "{r}");
    assert!(r["send_lag_us"]["max"].as_f64().unwrap() >= 100_000.0, "{r}");
    let warned = doc["warnings"].to_string();
    assert!(warned.contains("fell behind its schedule"), "{warned}");
}

#[test]
fn stream_carries_1000_flows_and_the_responder_counts_every_session() {
    let srv = Server::start(&[]);
    let out = run(&[
        "stream",
        &srv.target(),
        "--parallel",
        "1000",
        "--time",
        "1",
        "--length",
        "16K",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["params"]["parallel"], 1000);
    assert!(doc["error"].is_null(), "{}", doc["error"]);
    let s = &doc["summary"];
    assert!(s["sent_bytes"].as_u64().unwrap() > 0);
    assert!(s["senders"]["drained_sent_bytes"].as_u64() >= s["sent_bytes"].as_u64());
    // 1000 data sessions and the control session, all at once, none aborted.
    srv.expect_log(&[
        "sessions: 0 active (peak 1001)",
        "1001 accepted",
        "0 refused",
        "0 aborted",
    ]);
}

/// Opens `n` rr sessions and leaves them idle.
fn idle_sessions(srv: &Server, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(srv.addr).unwrap();
            s.write_all(&header(1, 1, 1, 1)).unwrap();
            s
        })
        .map(|mut s| {
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut st = [0u8; 8];
            s.read_exact(&mut st).unwrap();
            assert_eq!(st[5], 0, "accepted");
            s
        })
        .collect()
}

#[test]
fn idle_sessions_are_held_and_counted_while_others_measure() {
    let srv = Server::start(&["--max-sessions", "2000", "--objects", "4K,64K"]);
    let idle = idle_sessions(&srv, 500);
    srv.expect_log(&["sessions: 500 active"]);
    let target = srv.target();
    let rr = run(&[
        "rr",
        &target,
        "--sizes",
        "64:64",
        "--rate",
        "1000",
        "--connections",
        "8",
        "--time",
        "0.5",
        "--json",
    ]);
    assert!(rr.status.success(), "{}", stderr(&rr));
    assert_eq!(json_of(&rr)["results"][0]["samples"], 500);
    let load = run(&["load", &target, "--clients", "20", "--repeat", "1", "--json"]);
    assert!(load.status.success(), "{}", stderr(&load));
    check_run(&json_of(&load)["results"][0], 20 * 2 * 68 * 1024, 20 * 5, 20);
    drop(idle);
    let line = srv.expect_log(&["sessions: 0 active"]);
    assert!(line.contains("peak 5"), "{line}");
}

/// socat forwarding a free port on 127.0.0.1 to a target, one process
/// per connection: a real proxy. Killed on drop.
pub(super) struct Proxy(Child);

impl Proxy {
    /// Starts socat towards `to` and waits until it listens; returns it
    /// and its port.
    pub(super) fn start(to: std::net::SocketAddr) -> (Proxy, u16) {
        let port = super::closed_port();
        let child = Command::new("socat")
            .arg(format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork,backlog=128"))
            .arg(format!("TCP:{to}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("socat is installed (scripts/deps installs it)");
        let proxy = Proxy(child);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "socat did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        (proxy, port)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn load_through_a_real_proxy_arrives_verified() {
    let srv = Server::start(&["--objects", "4K,64K,1M"]);
    let (_proxy, port) = Proxy::start(srv.addr);
    let out = super::stackmeter()
        .args([
            "load",
            &format!("127.0.0.1:{port}"),
            "--clients",
            "10",
            "--repeat",
            "2",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    for r in doc["results"].as_array().unwrap() {
        check_run(r, 10 * 2 * (4 + 64 + 1024) * 1024, 10 * 7, 10);
    }
}
