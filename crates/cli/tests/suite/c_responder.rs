//! The client's test set against the C99 responder (`c-responder/`), built
//! with AddressSanitizer and UndefinedBehaviorSanitizer: the same rr grid,
//! crr, ping and `load` (object mode) checks that run against
//! `stackmeter serve`, plus the refusals. Any sanitizer report in the
//! responder's stderr fails the test.

use super::load::{check_run, names, object_session, request};
use super::{check_latency, connect_from, header, json_of, read_refusal, run, stderr, Server};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// `c-responder/` in the repository this test was built from.
fn responder_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../c-responder")
}

/// Builds `stackmeter-responder-asan` once per test run (tests run in
/// parallel threads; one `make` at a time).
pub(crate) fn asan_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = responder_dir();
            let out = Command::new("make")
                .arg("-C")
                .arg(&dir)
                .arg("asan")
                .output()
                .expect("make runs (install make and a C compiler)");
            assert!(
                out.status.success(),
                "building the C responder failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            dir.join("stackmeter-responder-asan")
        })
        .clone()
}

/// A running sanitized C responder on 127.0.0.1 with a kernel-chosen port.
pub(crate) struct CServer {
    srv: Server,
    addr_s: String,
}

impl CServer {
    pub(crate) fn start(extra: &[&str]) -> CServer {
        let mut cmd = Command::new(asan_binary());
        cmd.args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .env("ASAN_OPTIONS", "detect_leaks=1")
            .env("UBSAN_OPTIONS", "print_stacktrace=1");
        let srv = Server::spawn(cmd);
        CServer {
            addr_s: srv.addr.to_string(),
            srv,
        }
    }

    pub(crate) fn target(&self) -> String {
        self.addr_s.clone()
    }

    /// Stops the responder and returns every log line it wrote; fails on
    /// any sanitizer report (or if it died on its own).
    pub(crate) fn finish(mut self) -> Vec<String> {
        let alive = self.srv.child.try_wait().expect("wait works").is_none();
        let _ = self.srv.child.kill();
        let _ = self.srv.child.wait();
        let rx = &self.srv.log;
        let lines: Vec<String> = std::iter::from_fn(|| rx.recv_timeout(Duration::from_millis(500)).ok()).collect();
        let bad = lines
            .iter()
            .any(|l| l.contains("Sanitizer") || l.contains("runtime error") || l.contains("==ERROR"));
        assert!(!bad, "sanitizer report from the C responder:\n{}", lines.join("\n"));
        assert!(alive, "the C responder exited during the test:\n{}", lines.join("\n"));
        lines
    }
}

#[test]
fn c_responder_rr_full_grid() {
    let srv = CServer::start(&[]);
    let sizes = "1:1K,1:10K,1:100K,1:1M,1K:1,10K:1,100K:1,1M:1,1M:1M";
    let out = run(&[
        "rr",
        &srv.target(),
        "--sizes",
        sizes,
        "-n",
        "10",
        "--warmup",
        "2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    assert_eq!(doc["complete"], true);
    let rows = doc["results"].as_array().unwrap();
    assert_eq!(rows.len(), 9);
    for row in rows {
        assert_eq!(row["samples"], 10);
        check_latency(&row["rtt_us"], 10);
    }
    assert_eq!(
        (rows[8]["req_bytes"].as_u64(), rows[8]["resp_bytes"].as_u64()),
        (Some(1 << 20), Some(1 << 20))
    );
    srv.finish();
}

#[test]
fn c_responder_crr_and_ping_payloads() {
    let srv = CServer::start(&[]);
    let out = run(&[
        "crr",
        &srv.target(),
        "-n",
        "100",
        "--warmup",
        "5",
        "--size",
        "64:1K",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &json_of(&out)["results"][0];
    assert_eq!(r["samples"], 100);
    check_latency(&r["transaction_us"], 100);
    for size in ["40", "64", "1400"] {
        let out = run(&["ping", &srv.target(), "--size", size, "-c", "300", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let r = &json_of(&out)["results"][0];
        assert_eq!((r["sent"].as_u64(), r["received"].as_u64()), (Some(300), Some(300)));
        for k in ["lost", "late", "duplicates", "reordered", "mismatched"] {
            assert_eq!(r[k], 0, "{k} at size {size}");
        }
        check_latency(&r["server_us"], 300);
    }
    srv.finish();
}

#[test]
fn c_responder_refuses_by_name_and_logs_one_line_each() {
    let srv = CServer::start(&["--max-msg", "1M", "--header-timeout-ms", "300"]);
    let cases: [(Vec<u8>, u8, &str); 4] = [
        (b"GET / HTTP/1.1\r\n".to_vec(), 1, "bad magic"),
        (header(2, 1, 1, 1), 2, "version 2"),
        (header(1, 200, 1, 1), 3, "mode 200"),
        (header(1, 1, 2 << 20, 1), 5, "exceeds limit 1048576"),
    ];
    for (bytes, code, reason) in &cases {
        let mut s = TcpStream::connect(srv.srv.addr).unwrap();
        s.write_all(bytes).unwrap();
        let (version, got, text) = read_refusal(&mut s);
        assert_eq!((version, got), (1, *code), "{text}");
        assert!(text.contains(reason.split(' ').next_back().unwrap()), "{text}");
    }
    // Half a header, then silence: HeaderTimeout.
    let mut s = TcpStream::connect(srv.srv.addr).unwrap();
    s.write_all(&header(1, 1, 1, 1)[..5]).unwrap();
    assert_eq!(read_refusal(&mut s).1, 7);
    std::thread::sleep(Duration::from_millis(100));
    let lines = srv.finish();
    let refusals = lines.iter().filter(|l| l.contains(": refused 127.0.0.1:")).count();
    assert_eq!(refusals, 5, "{lines:#?}");
}

/// An rr session (1:1) from `from`, accepted: its status record read.
fn session_from(from: &str, to: SocketAddr) -> TcpStream {
    let mut s = connect_from(from, to).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(&header(1, 1, 1, 1)).unwrap();
    let mut st = [0u8; 8];
    s.read_exact(&mut st).unwrap();
    assert_eq!((&st[..4], st[5]), (&b"SMTR"[..], 0), "accepted");
    s
}

#[test]
fn c_responder_refuses_beyond_max_sessions() {
    // Two sessions past their header, from two addresses (one address
    // holds one of two): nothing to give up, so the third is Busy.
    let srv = CServer::start(&["--max-sessions", "2"]);
    let a = session_from("127.0.0.2", srv.srv.addr);
    let b = session_from("127.0.0.3", srv.srv.addr);
    let mut c = TcpStream::connect(srv.srv.addr).unwrap();
    c.write_all(&header(1, 1, 1, 1)).unwrap();
    let (_, code, text) = read_refusal(&mut c);
    assert_eq!(code, 6, "{text}");
    assert!(text.contains("2 sessions running, the limit"), "{text}");
    drop((a, b));
    srv.finish();
}

/// Fair slots (docs/protocol.md 5.2) with 4 sessions: one address holds 2
/// at most and is refused past that, naming the share; connections still
/// sending their header give way to a new one when all are taken.
#[test]
fn c_responder_shares_its_slots_and_gives_way() {
    let srv = CServer::start(&["--max-sessions", "4"]);
    srv.srv
        .expect_log(&["info: limits: 4 sessions, 2 from one address at most; header within 5000 ms"]);
    let held = [
        session_from("127.0.0.2", srv.srv.addr),
        session_from("127.0.0.2", srv.srv.addr),
    ];
    let mut third = connect_from("127.0.0.2", srv.srv.addr).unwrap();
    third.write_all(&header(1, 1, 1, 1)).unwrap();
    let (_, code, text) = read_refusal(&mut third);
    assert_eq!(code, 6, "{text}");
    assert!(
        text.contains("2 sessions from this address, the most one address may hold"),
        "{text}"
    );
    // Two more from 127.0.0.3 that send nothing fill the table; an rr from
    // 127.0.0.1 takes the place of the older one, which is told why.
    let mut idle: Vec<TcpStream> = (0..2).filter_map(|_| connect_from("127.0.0.3", srv.srv.addr)).collect();
    assert_eq!(idle.len(), 2);
    let out = run(&["rr", &srv.target(), "--sizes", "1:1", "-n", "20", "--json"]);
    assert!(out.status.success(), "rr into a full table: {}", stderr(&out));
    assert_eq!(json_of(&out)["results"][0]["samples"], 20);
    let (_, code, text) = read_refusal(&mut idle[0]);
    assert_eq!(code, 6, "{text}");
    assert!(
        text.starts_with("evicted: this connection had not finished its header"),
        "{text}"
    );
    drop((held, idle));
    let lines = srv.finish();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("warn: refused 127.0.0.3:") && l.contains(": busy: evicted: ")),
        "{lines:#?}"
    );
}

fn stream(srv: &CServer, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["stream", &srv.addr_s, "--json"];
    args.extend(extra);
    let out = run(&args);
    assert!(out.status.success(), "stream {extra:?}: {}", stderr(&out));
    json_of(&out)
}

#[test]
fn c_responder_stream_tcp_up_down_bidir() {
    let srv = CServer::start(&[]);
    let up = stream(&srv, &["--time", "0.5", "--interval", "0.25", "--length", "64K"]);
    let s = &up["summary"];
    assert!(s["sent_bytes"].as_u64().unwrap() > 0);
    assert!(s["senders"]["drained_sent_bytes"].as_u64() >= s["sent_bytes"].as_u64());
    assert!(
        s["cpu"]["responder"]["percent_of_core"].as_f64().is_some(),
        "CPU fields from getrusage"
    );
    let down = stream(&srv, &["--time", "0.5", "--direction", "down", "--parallel", "2"]);
    let s = &down["summary"];
    assert!(s["recv_bytes"].as_u64().unwrap() > 0);
    assert!(s["senders"]["target_sent_bytes"].as_u64().unwrap() > 0);
    let bi = stream(&srv, &["--time", "0.5", "--direction", "bidir", "--length", "64"]);
    let s = &bi["summary"];
    assert!(s["sent_bytes"].as_u64().unwrap() > 0 && s["recv_bytes"].as_u64().unwrap() > 0);
    srv.finish();
}

#[test]
fn c_responder_stream_carries_1000_flows() {
    let srv = CServer::start(&[]);
    let doc = stream(&srv, &["--parallel", "1000", "--time", "1", "--length", "16K"]);
    assert_eq!(doc["params"]["parallel"], 1000);
    let s = &doc["summary"];
    assert!(s["sent_bytes"].as_u64().unwrap() > 0);
    assert!(s["senders"]["drained_sent_bytes"].as_u64() >= s["sent_bytes"].as_u64());
    srv.finish();
}

#[test]
fn c_responder_open_loop_rr_counts_add_up() {
    let srv = CServer::start(&[]);
    let out = run(&[
        "rr",
        &srv.target(),
        "--sizes",
        "64:64",
        "--rate",
        "5000",
        "--connections",
        "3",
        "--time",
        "0.5",
        "--arrival",
        "poisson",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &json_of(&out)["results"][0];
    assert_eq!(r["samples"], 2500);
    check_latency(&r["rtt_us"], 2500);
    assert_eq!(r["send_lag_us"]["count"], 2500);
    srv.finish();
}

#[test]
fn c_responder_stream_udp_counts_at_the_target() {
    let srv = CServer::start(&[]);
    let doc = stream(&srv, &["--udp", "--rate", "2M", "--length", "500", "--time", "1"]);
    let udp = &doc["summary"]["udp"];
    let sent = udp["sent_datagrams"].as_u64().unwrap();
    assert!(sent > 400, "sent {sent}");
    assert_eq!(
        udp["lost"].as_u64(),
        Some(sent - udp["received_datagrams"].as_u64().unwrap())
    );
    assert_eq!(udp["lost"], 0, "{udp}");
    assert_eq!(udp["duplicates"], 0);
    srv.finish();
}

#[test]
fn c_responder_serves_objects_to_load_every_byte_verified() {
    // The default catalogue, generated on the fly: 4K, 64K, 1M, 8800K.
    let srv = CServer::start(&[]);
    let out = run(&[
        "load",
        &srv.target(),
        "--clients",
        "4",
        "--fetch-each",
        "2",
        "--repeat",
        "1",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json_of(&out);
    let objs = doc["params"]["objects"].as_array().unwrap();
    let listed: Vec<&str> = objs.iter().map(|o| o["name"].as_str().unwrap()).collect();
    assert_eq!(listed, ["4K", "64K", "1M", "8800K"]);
    assert!(objs.iter().all(|o| o["verify"] == "pattern"), "{objs:?}");
    let r = &doc["results"][0];
    // 4 clients x (1 LIST + 2 x 4 FETCH), every byte checked by the client.
    check_run(r, 4 * 2 * (4 + 64 + 1024 + 8800) * 1024, 4 * 9, 4);
    assert_eq!(r["clients_completed"], 4);
    srv.finish();
}

#[test]
fn c_responder_object_requests_not_found_and_bad() {
    let srv = CServer::start(&["--objects", "64,64,4K"]);
    let mut s = object_session(&srv.srv);
    let (code, body) = request(&mut s, 1, b"");
    assert_eq!(code, 0);
    let listed = names(&body);
    let only: Vec<(&str, u64, u32)> = listed.iter().map(|x| (x.0.as_str(), x.1, x.2)).collect();
    assert_eq!(only, [("64", 64, 0), ("64-2", 64, 0), ("4K", 4096, 0)]);
    // A 255-byte name is read whole and not found; the session goes on.
    let (code, reason) = request(&mut s, 2, &[b'a'; 255]);
    assert_eq!(code, 10);
    assert!(String::from_utf8_lossy(&reason).contains("no object named"));
    let (code, body) = request(&mut s, 2, b"4K");
    assert_eq!((code, body.len()), (0, 4096));
    // Object 2, word 0: (0 ^ 2 << 40) * 0x9E3779B97F4A7C15, then x ^= x >> 29.
    let x = (2u64 << 40).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    assert_eq!(body[..8], (x ^ (x >> 29)).to_be_bytes());
    // A name longer than 255 bytes: BadRequest (11), then the close.
    let mut r = vec![2u8, 0];
    r.extend(300u16.to_be_bytes());
    r.extend([b'b'; 300]);
    s.write_all(&r).unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    assert_eq!(rest[0], 11, "bad request");
    assert!(String::from_utf8_lossy(&rest[12..]).contains("bad name length 300"));
    let mut s = object_session(&srv.srv);
    s.write_all(&[9, 0, 0, 0]).unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    assert_eq!(rest[0], 11);
    assert!(String::from_utf8_lossy(&rest[12..]).contains("unknown object request op 9"));
    srv.finish();
    // Object mode switched off: mode 16 is an unknown mode.
    let off = CServer::start(&["--no-objects"]);
    let mut s = TcpStream::connect(off.srv.addr).unwrap();
    s.write_all(&header(1, 16, 0, 0)).unwrap();
    let (_, code, text) = read_refusal(&mut s);
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("object mode is not enabled"), "{text}");
    off.finish();
}

#[test]
fn c_responder_names_its_version_and_stamps_its_log() {
    let out = Command::new(asan_binary()).arg("--version").output().unwrap();
    assert!(out.status.success());
    let v = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        v.starts_with(&format!("stackmeter-responder {} ", env!("CARGO_PKG_VERSION"))),
        "the workspace's version: {v}"
    );
    let c = CServer::start(&[]);
    let _ = TcpStream::connect(c.srv.addr).map(|mut s| s.write_all(b"XXXXXXXXXXXXXXXX"));
    let line = c.srv.expect_log(&["refused", "bad magic"]);
    let rest = line.strip_prefix("stackmeter-responder: ").expect("prefix");
    let (time, level) = rest.split_once(' ').unwrap();
    assert!(time.len() == 24 && time.ends_with('Z'), "{line}");
    assert!(level.starts_with("warn: refused"), "{line}");
    c.finish();
}

#[test]
fn c_responder_takes_the_real_time_knobs_or_refuses_them() {
    if !super::is_root() {
        return;
    }
    let c = CServer::start(&["--priority", "fifo:4", "--busy-poll", "15"]);
    let pid = c.srv.child.id();
    assert_eq!(super::knobs::sched_of(pid, pid), Some((1, 4)));
    let out = run(&["ping", &c.addr_s, "-c", "50", "--no-store"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = Command::new("setpriv")
        .args([
            "--bounding-set=-sys_nice",
            "--inh-caps=-sys_nice",
            "prlimit",
            "--rtprio=0:0",
        ])
        .arg(asan_binary())
        .args(["--listen", "127.0.0.1:0", "--priority", "fifo:3"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error: --priority: not permitted"), "{err}");
}
