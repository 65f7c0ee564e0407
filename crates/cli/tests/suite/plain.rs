//! Plain targets: servers this project did not write. socat as UDP and
//! TCP echo and as a discard server, a 20-line C `recvfrom`/`sendto` loop
//! like the UDP echo scenario's, a fixed-reply C server like the latency
//! grid's io-sock module (it reads the reply size from the first byte),
//! and Debian's `iperf -s` (iperf 2), whose own report the stream figure
//! must match within 3%.

use super::{check_latency, json_of, stackmeter, stderr};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::{TcpStream, UdpSocket};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A server process, killed on drop.
struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` with its stdout piped (for servers that print).
fn spawn(cmd: &mut Command) -> Peer {
    Peer(
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{cmd:?} starts (scripts/deps installs it): {e}")),
    )
}

/// Waits (at most 10 s) until something accepts TCP connections on `port`.
fn wait_tcp(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (at most 10 s) until a datagram to `port` comes back.
fn wait_udp_echo(port: u16) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 16];
    loop {
        let _ = s.send(b"probe");
        if s.recv(&mut buf).is_ok() {
            return;
        }
        assert!(Instant::now() < deadline, "no UDP echo on {port}");
    }
}

/// Lines of a child's stdout, as they come.
fn lines(out: ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    rx
}

/// Compiles one C file (in a folder of this test run) with `cc`, or
/// `None` without a C compiler.
fn build_c(name: &str, src: &str) -> Option<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("plain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join(format!("{name}.c"));
    let bin = dir.join(name);
    std::fs::write(&c, src).unwrap();
    let ok = Command::new("cc")
        .args(["-std=c99", "-O1", "-Wall", "-o"])
        .arg(&bin)
        .arg(&c)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    ok.then_some(bin)
}

/// Starts a compiled server that prints its port on its first line.
fn start_c(bin: &std::path::Path) -> (Peer, u16) {
    let mut peer = spawn(&mut Command::new(bin));
    let rx = lines(peer.0.stdout.take().unwrap());
    let port = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the server prints its port")
        .trim()
        .parse()
        .unwrap();
    (peer, port)
}

/// The UDP echo scenario's server: recvfrom, sendto, forever (port chosen by
/// the kernel).
const UDP_ECHO_C: &str = r#"
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>
int main(void) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {0};
    socklen_t len = sizeof a;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &len)) return 1;
    printf("%d\n", ntohs(a.sin_port));
    fflush(stdout);
    for (;;) {
        static char buf[65536];
        struct sockaddr_in from;
        socklen_t flen = sizeof from;
        ssize_t n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen);
        if (n >= 0) sendto(s, buf, (size_t)n, 0, (struct sockaddr *)&from, flen);
    }
}
"#;

/// The latency grid's io-sock module, in spirit: per request one byte; the
/// reply is that byte times 1024 bytes ('x'), or 1 byte for 0. One connection
/// at a time, until the client closes.
const FIXED_REPLY_C: &str = r#"
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
int main(void) {
    static char tx[255 * 1024];
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {0};
    socklen_t len = sizeof a;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 16) || getsockname(l, (struct sockaddr *)&a, &len)) return 1;
    for (size_t i = 0; i < sizeof tx; i++) tx[i] = 'x';
    printf("%d\n", ntohs(a.sin_port));
    fflush(stdout);
    for (;;) {
        int c = accept(l, NULL, NULL);
        unsigned char cmd;
        while (c >= 0 && read(c, &cmd, 1) == 1) {
            size_t n = cmd ? (size_t)cmd * 1024 : 1, off = 0;
            while (off < n) {
                ssize_t w = write(c, tx + off, n - off);
                if (w <= 0) break;
                off += (size_t)w;
            }
        }
        if (c >= 0) close(c);
    }
}
"#;

fn measure(args: &[&str]) -> Value {
    let out = stackmeter().args(args).arg("--json").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    json_of(&out)
}

/// ping --echo: every datagram back, every byte equal, no server time.
fn check_ping_echo(doc: &Value, count: u64) {
    assert_eq!(doc["target"]["kind"], "echo");
    assert_eq!(doc["params"]["echo"], true);
    let r = &doc["results"][0];
    for (k, want) in [
        ("sent", count),
        ("received", count),
        ("lost", 0),
        ("mismatched", 0),
        ("duplicates", 0),
    ] {
        assert_eq!(r[k].as_u64(), Some(want), "{k}: {r}");
    }
    check_latency(&r["rtt_us"], count);
    assert!(r["server_us"].is_null(), "an echo server writes no timestamps");
    assert_eq!(doc["not_measured"][0]["figure"], "server_us");
}

#[test]
fn ping_echo_against_socat_and_a_c_recvfrom_loop() {
    let port = super::closed_port();
    let _socat =
        spawn(Command::new("socat").args(["-T", "5", &format!("UDP4-RECVFROM:{port},bind=127.0.0.1,fork"), "PIPE"]));
    wait_udp_echo(port);
    let doc = measure(&[
        "ping",
        &format!("127.0.0.1:{port}"),
        "--echo",
        "-c",
        "200",
        "--size",
        "100",
    ]);
    check_ping_echo(&doc, 200);
    let Some(bin) = build_c("udp_echo", UDP_ECHO_C) else {
        crate::missing("the C recvfrom/sendto loop", "no C compiler (cc)");
        return;
    };
    let (_c, port) = start_c(&bin);
    let doc = measure(&["ping", &format!("127.0.0.1:{port}"), "--echo", "-c", "1000"]);
    check_ping_echo(&doc, 1000);
    // Text names the target's kind and what it cannot give.
    let out = stackmeter()
        .args(["ping", &format!("127.0.0.1:{port}"), "--echo", "-c", "20"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(plain echo server)"), "{text}");
    assert!(text.contains("not measured (plain echo server): server_us"), "{text}");
    // A stackmeter responder is no echo server: it drops datagrams that
    // are not its protocol's, so nothing comes back.
    let srv = super::Server::start(&[]);
    let out = stackmeter()
        .args([
            "ping",
            &srv.target(),
            "--echo",
            "-c",
            "5",
            "--warmup",
            "0",
            "--timeout-ms",
            "200",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(5),
        "a responder drops foreign datagrams: {}",
        stderr(&out)
    );
}

#[test]
fn rr_and_crr_echo_against_socat() {
    let port = super::closed_port();
    let _socat = spawn(Command::new("socat").args([
        &format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork,nodelay"),
        "EXEC:cat",
    ]));
    wait_tcp(port);
    let target = format!("127.0.0.1:{port}");
    let doc = measure(&["rr", &target, "--echo", "--sizes", "1:1,100K:100K", "-n", "50"]);
    assert_eq!(doc["target"]["kind"], "echo");
    let rows = doc["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["req_bytes"], 102400);
    for r in rows {
        check_latency(&r["rtt_us"], 50);
    }
    let doc = measure(&["crr", &target, "--echo", "--size", "64:64", "-n", "50"]);
    assert_eq!(doc["params"]["echo"], true);
    check_latency(&doc["results"][0]["transaction_us"], 50);
    let out = stackmeter()
        .args(["rr", &target, "--echo", "--sizes", "1:2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--sizes 1:2: an echo server answers as many bytes as it got"));
}

#[test]
fn rr_and_crr_raw_against_a_fixed_reply_server() {
    let Some(bin) = build_c("fixed_reply", FIXED_REPLY_C) else {
        crate::missing("rr_and_crr_raw_against_a_fixed_reply_server", "no C compiler (cc)");
        return;
    };
    let (_c, port) = start_c(&bin);
    let target = format!("127.0.0.1:{port}");
    let doc = measure(&["rr", &target, "--raw", "1:4K", "--request-prefix", "04", "-n", "100"]);
    assert_eq!(doc["target"]["kind"], "raw");
    assert_eq!(doc["params"]["request_prefix"], "04");
    let r = &doc["results"][0];
    assert_eq!(
        (r["req_bytes"].as_u64(), r["resp_bytes"].as_u64()),
        (Some(1), Some(4096))
    );
    check_latency(&r["rtt_us"], 100);
    let doc = measure(&["crr", &target, "--raw", "1:1K", "--request-prefix", "0x01", "-n", "50"]);
    assert_eq!(doc["target"]["kind"], "raw");
    check_latency(&doc["results"][0]["connect_us"], 50);
    // The server does not echo: the first reply tells, before any timing.
    let out = stackmeter()
        .args(["rr", &target, "--echo", "--sizes", "1:1", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("not an echo server"), "{}", stderr(&out));
    // --raw has no default port.
    let out = stackmeter().args(["rr", "127.0.0.1", "--raw", "1:1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--raw needs TARGET with a port"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn stream_discard_counts_what_the_client_sent_and_the_target_acked() {
    let port = super::closed_port();
    let _socat = spawn(Command::new("socat").args([
        "-u",
        &format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork"),
        "OPEN:/dev/null",
    ]));
    wait_tcp(port);
    let doc = measure(&[
        "stream",
        &format!("127.0.0.1:{port}"),
        "--discard",
        "-t",
        "2",
        "-i",
        "0.5",
    ]);
    assert_eq!(doc["target"]["kind"], "discard");
    let s = &doc["summary"];
    let sent = s["sent_bytes"].as_u64().unwrap();
    let acked = s["acked_bytes"].as_u64().unwrap();
    // Over the window acked can exceed sent by what was in flight at its
    // start (the send buffer's bytes the target had not acknowledged yet,
    // MBs on loopback): 0.15% was seen, under a 1% bound.
    assert!(
        sent > 0 && (acked as f64) <= 1.01 * sent as f64 && acked as f64 >= 0.9 * sent as f64,
        "{s}"
    );
    let drained = s["senders"]["drained_sent_bytes"].as_u64().unwrap();
    // The drain also holds what left between the window's end and the stop.
    assert!(
        drained >= acked && (drained as f64) < 1.01 * sent as f64,
        "what was sent arrived by the end of the drain: {s}"
    );
    assert!(s["cpu"]["responder"].is_null());
    let intervals = doc["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), 4);
    let sum: u64 = intervals.iter().map(|i| i["sent_bytes"].as_u64().unwrap()).sum();
    assert_eq!(sum, sent, "the intervals add up");
    let figures: Vec<&str> = doc["not_measured"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["figure"].as_str().unwrap())
        .collect();
    assert_eq!(figures, ["target-counted bytes", "cpu.responder"]);
}

#[test]
fn stream_iperf2_agrees_with_iperfs_own_server_report() {
    let port = super::closed_port();
    let mut iperf =
        spawn(Command::new("iperf").args(["-s", "-B", "127.0.0.1", "-p", &port.to_string(), "--reportstyle", "C"]));
    let reports = lines(iperf.0.stdout.take().unwrap());
    wait_tcp(port);
    let doc = measure(&["stream", &format!("127.0.0.1:{port}"), "--iperf2", "-t", "3"]);
    assert_eq!(doc["target"]["kind"], "iperf2");
    assert_eq!(doc["params"]["iperf2"], true);
    let ours = doc["summary"]["sent_mbps"].as_f64().unwrap() * 1e6;
    // iperf's CSV line per connection: ...,ID,INTERVAL,BYTES,BITS_PER_S.
    // The readiness probe above was a connection too: take the largest.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut best: Option<(u64, f64)> = None;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Ok(line) = reports.recv_timeout(left.min(Duration::from_millis(500))) else {
            if best.is_some_and(|(b, _)| b > 1_000_000) {
                break;
            }
            continue;
        };
        let f: Vec<&str> = line.trim().split(',').collect();
        if f.len() < 9 {
            continue;
        }
        let (bytes, bps): (u64, f64) = (f[7].parse().unwrap(), f[8].parse().unwrap());
        if best.is_none_or(|(b, _)| bytes > b) {
            best = Some((bytes, bps));
        }
    }
    let (bytes, theirs) = best.expect("iperf -s printed its report");
    assert!(bytes > 1_000_000, "iperf received the stream: {bytes} bytes");
    let ratio = ours / theirs;
    eprintln!(
        "stream --iperf2: ours {:.1} Mbit/s, iperf's server {:.1} Mbit/s",
        ours / 1e6,
        theirs / 1e6
    );
    assert!(
        (0.97..=1.03).contains(&ratio),
        "ours {ours} bit/s, iperf's {theirs} bit/s"
    );
}

#[test]
fn stream_iperf2_udp_reads_the_servers_report() {
    let port = super::closed_port();
    let _iperf = spawn(Command::new("iperf").args(["-s", "-u", "-B", "127.0.0.1", "-p", &port.to_string()]));
    // No probe can tell a UDP iperf server is up without starting a test:
    // wait for its socket in /proc/net/udp (port in hex).
    let hex = format!(":{port:04X} ");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string("/proc/net/udp")
        .unwrap_or_default()
        .contains(&hex)
    {
        assert!(Instant::now() < deadline, "iperf -s -u did not bind {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let doc = measure(&[
        "stream",
        &format!("127.0.0.1:{port}"),
        "--iperf2",
        "--udp",
        "--rate",
        "20M",
        "-t",
        "1",
    ]);
    assert_eq!(doc["target"]["kind"], "iperf2");
    let u = &doc["summary"]["udp"];
    let sent = u["sent_datagrams"].as_u64().unwrap();
    let received = u["received_datagrams"].as_u64().unwrap();
    let lost = u["lost"].as_u64().unwrap();
    assert!(sent > 1000, "{u}");
    assert_eq!(
        received + lost,
        sent,
        "the server's count covers every datagram sent: {u}"
    );
    assert!(lost * 100 <= sent, "loopback at 20 Mbit/s loses (almost) nothing: {u}");
    assert!(
        doc["intervals"][0]["udp"].is_null(),
        "no per-interval loss from an iperf 2 server"
    );
    assert_eq!(doc["not_measured"][0]["figure"], "intervals[].udp");
}

/// A plain server measured as if it were a responder: each test says in
/// one line what it looks like and which flag measures it, exits 8, and
/// stores nothing (not even under the label the valid run would use).
#[test]
fn a_plain_server_measured_as_a_responder_says_which_flag_to_add() {
    let (tcp, udp, discard) = (super::closed_port(), super::closed_port(), super::closed_port());
    let _echo = spawn(Command::new("socat").args([
        &format!("TCP-LISTEN:{tcp},bind=127.0.0.1,reuseaddr,fork,nodelay"),
        "EXEC:cat",
    ]));
    let _uecho =
        spawn(Command::new("socat").args(["-T", "5", &format!("UDP4-RECVFROM:{udp},bind=127.0.0.1,fork"), "PIPE"]));
    let _discard = spawn(Command::new("socat").args([
        "-u",
        &format!("TCP-LISTEN:{discard},bind=127.0.0.1,reuseaddr,fork"),
        "OPEN:/dev/null",
    ]));
    wait_tcp(tcp);
    wait_udp_echo(udp);
    wait_tcp(discard);
    let db = std::env::temp_dir().join(format!("stackmeter-plain-{}.db", std::process::id()));
    let db = db.to_str().unwrap();
    let cases: [(Vec<String>, &str); 5] = [
        (
            vec!["rr".into(), format!("127.0.0.1:{tcp}"), "-n".into(), "5".into()],
            "echo server",
        ),
        (
            vec!["crr".into(), format!("127.0.0.1:{tcp}"), "-n".into(), "5".into()],
            "echo server",
        ),
        (
            vec!["stream".into(), format!("127.0.0.1:{tcp}"), "-t".into(), "1".into()],
            "echo server",
        ),
        (
            vec!["ping".into(), format!("127.0.0.1:{udp}"), "-c".into(), "5".into()],
            "echo server",
        ),
        (
            vec![
                "rr".into(),
                format!("127.0.0.1:{discard}"),
                "-n".into(),
                "5".into(),
                "--timeout-ms".into(),
                "500".into(),
            ],
            "discard server",
        ),
    ];
    for (args, what) in cases {
        let out = stackmeter()
            .args(&args)
            .args(["--db", db, "--label", "plain"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(8), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(&format!("looks like a plain {what}")), "{args:?}: {err}");
        let flag = if what == "echo server" {
            "add --echo"
        } else {
            "add --discard"
        };
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    let runs = stackmeter().args(["runs", "--db", db]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&runs.stdout).contains("no stored runs"),
        "nothing stored"
    );
    let _ = std::fs::remove_file(db);
}
