//! `stackmeter serve` refusing and surviving what clients do wrong: bad
//! magic, another version, too large, silence, too many sessions, a client
//! vanishing mid-reply; its UDP rules; IPv6; its log lines.

use super::{header, json_of, read_refusal, run, stderr, Server};
use std::io::Read;
use std::io::Write;
use std::net::TcpStream;
use std::net::UdpSocket;
use std::time::Duration;

#[test]
fn garbage_header_gets_bad_magic_and_a_log_line() {
    let srv = Server::start(&[]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (version, code, reason) = read_refusal(&mut s);
    assert_eq!((version, code), (1, 1));
    assert!(reason.contains("bad magic"), "{reason}");
    srv.expect_log(&["refused", "bad magic"]);
}

#[test]
fn other_version_is_refused_by_name() {
    let srv = Server::start(&[]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(&header(2, 1, 1, 1)).unwrap();
    let (version, code, reason) = read_refusal(&mut s);
    assert_eq!((version, code), (1, 2));
    assert!(reason.contains("version 2 not supported"), "{reason}");
}

#[test]
fn oversize_is_refused_and_the_client_says_so() {
    let srv = Server::start(&["--max-msg", "1M"]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(&header(1, 1, 100_000_000, 1)).unwrap();
    let (_, code, reason) = read_refusal(&mut s);
    assert_eq!(code, 5);
    assert!(reason.contains("100000000") && reason.contains("1048576"), "{reason}");
    srv.expect_log(&["refused", "too large"]);

    let out = run(&["rr", &srv.target(), "--sizes", "1:2M", "-n", "2"]);
    assert_eq!(out.status.code(), Some(4));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(&srv.target()) && err.contains("too large"), "{err}");

    // crr sends header and request together, so the refused connection
    // still holds unread bytes: the responder must drain them before it
    // closes, or the reset can destroy the refusal. Repeat to catch a race.
    for _ in 0..20 {
        let out = run(&["crr", &srv.target(), "--size", "1K:2M", "-n", "1", "--warmup", "0"]);
        assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    }
}

#[test]
fn silent_connection_times_out_with_a_status() {
    let srv = Server::start(&["--header-timeout-ms", "300"]);
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.write_all(b"SMT").unwrap(); // a partial header, then silence
    let (_, code, _) = read_refusal(&mut s);
    assert_eq!(code, 7);
    srv.expect_log(&["header timeout"]);
}

#[test]
fn busy_responder_refuses_beyond_max_sessions() {
    let srv = Server::start(&["--max-sessions", "1"]);
    let mut first = TcpStream::connect(srv.addr).unwrap();
    first.write_all(&header(1, 1, 1, 1)).unwrap();
    let mut acc = [0u8; 8];
    first.read_exact(&mut acc).unwrap();
    assert_eq!(acc[5], 0, "first session accepted");
    let mut second = TcpStream::connect(srv.addr).unwrap();
    let (_, code, _) = read_refusal(&mut second);
    assert_eq!(code, 6);
    drop(first);
    // The slot is freed when the first client goes.
    let mut ok = false;
    for _ in 0..50 {
        if run(&["rr", &srv.target(), "--sizes", "1:1", "-n", "3"])
            .status
            .success()
        {
            ok = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ok, "session slot freed after the client left");
}

#[test]
fn client_vanishing_mid_reply_frees_its_session() {
    let srv = Server::start(&["--max-sessions", "1"]);
    {
        let mut s = TcpStream::connect(srv.addr).unwrap();
        s.write_all(&header(1, 1, 1, 64 << 20)).unwrap();
        let mut acc = [0u8; 8];
        s.read_exact(&mut acc).unwrap();
        s.write_all(b"x").unwrap();
        let mut some = [0u8; 4096];
        s.read_exact(&mut some).unwrap();
    } // closed with 64 MiB still to come
    srv.expect_log(&["vanished mid-response"]);
    let out = run(&["rr", &srv.target(), "--sizes", "1:1K", "-n", "5", "--json"]);
    assert!(
        out.status.success(),
        "the only session slot is free again: {}",
        stderr(&out)
    );
}

#[test]
fn udp_rules_no_answer_to_foreign_or_short_and_no_amplification() {
    let srv = Server::start(&[]);
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut buf = [0u8; 2048];
    for junk in [&b"hello"[..], &[0u8; 100][..]] {
        s.send(junk).unwrap();
        assert!(s.recv(&mut buf).is_err(), "no answer to junk");
    }
    // A version 2 request of 1000 bytes is refused in 40.
    let mut d = vec![0u8; 1000];
    d[..4].copy_from_slice(b"SMTU");
    d[4] = 2;
    d[5] = 1;
    s.send(&d).unwrap();
    let n = s.recv(&mut buf).expect("refusal");
    assert_eq!(n, 40);
    assert_eq!((buf[4], buf[5], buf[6]), (1, 3, 2));
    // A reply is never answered (no loops between two responders).
    d[4] = 1;
    d[5] = 2;
    s.send(&d).unwrap();
    assert!(s.recv(&mut buf).is_err());
}

#[test]
fn ipv6_loopback_serves_tcp_and_udp() {
    if UdpSocket::bind("[::1]:0").is_err() {
        crate::missing("ipv6_loopback_serves_tcp_and_udp", "no IPv6 loopback on this host");
        return;
    }
    let srv = Server::start_on("[::1]:0", &[]);
    assert!(srv.addr.is_ipv6());
    let out = run(&["rr", &srv.target(), "--sizes", "64:64", "-n", "10", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&["ping", &srv.target(), "-c", "10", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_of(&out)["results"][0]["received"], 10);
}

#[test]
fn responder_log_lines_carry_a_time_and_a_level() {
    let srv = Server::start(&[]);
    let _ = std::net::TcpStream::connect(srv.addr).map(|mut s| s.write_all(b"XXXXXXXXXXXXXXXX"));
    let line = srv.expect_log(&["refused", "bad magic"]);
    // "stackmeter serve: 2026-11-23T00:27:58.336Z warn: refused ..."
    let rest = line.strip_prefix("stackmeter serve: ").expect("prefix");
    let (time, level) = rest.split_once(' ').unwrap();
    assert!(
        time.len() == 24 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
        "{line}"
    );
    assert!(level.starts_with("warn: refused"), "{line}");
}
