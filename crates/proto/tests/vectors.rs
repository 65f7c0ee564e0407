//! Checks the Rust protocol code against the shared, language-neutral test
//! vectors in `protocol/vectors.json`, and checks that no byte string can
//! make a parser panic.

use proptest::prelude::*;
use serde_json::Value;
use stackmeter_proto::{
    control::{self, ClientRecord, RecordError, ServerRecord},
    header::{HeaderError, Mode, SessionHeader},
    pattern,
    status::{Refusal, StatusPrefix},
    stream::UdpRx,
    udp::{self, Answer, DropReason, Header},
};

fn vectors() -> Value {
    serde_json::from_str(include_str!("../../../protocol/vectors.json")).expect("vectors.json parses")
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn of_kind(kind: &str) -> Vec<Value> {
    let v = vectors();
    let all = v["vectors"].as_array().unwrap().clone();
    let some: Vec<Value> = all.into_iter().filter(|x| x["kind"] == kind).collect();
    assert!(!some.is_empty(), "no vectors of kind {kind}");
    some
}

fn header_error_name(e: HeaderError) -> &'static str {
    match e {
        HeaderError::Truncated => "truncated",
        HeaderError::BadMagic => "bad_magic",
        HeaderError::UnsupportedVersion(_) => "unsupported_version",
        HeaderError::UnknownMode(_) => "unknown_mode",
        HeaderError::BadLength(_) => "bad_length",
        HeaderError::ZeroSize => "zero_size",
    }
}

#[test]
fn session_header_vectors() {
    for v in of_kind("session_header") {
        let bytes = hex(v["hex"].as_str().unwrap());
        let name = v["name"].as_str().unwrap();
        match SessionHeader::parse(&bytes) {
            Ok(h) => {
                assert_eq!(v["valid"], true, "{name}: parsed but should not");
                let f = &v["fields"];
                let mode = match h.mode {
                    Mode::Rr => "rr",
                    Mode::Crr => "crr",
                    Mode::Control => "control",
                    Mode::Sink => "sink",
                    Mode::Source => "source",
                };
                assert_eq!(f["mode"], mode, "{name}");
                assert_eq!(f["req_size"], h.req_size, "{name}");
                assert_eq!(f["resp_size"], h.resp_size, "{name}");
                assert_eq!(f["flags"].as_u64().unwrap_or(0), h.flags as u64, "{name}: flags");
                if bytes.len() == 16 || (bytes.len() == 24 && h.flags != 0) {
                    assert_eq!(h.emit().to_vec(), bytes, "{name}: emit differs");
                }
            }
            Err(e) => {
                assert_eq!(v["valid"], false, "{name}: {e}");
                assert_eq!(v["error"], header_error_name(e), "{name}");
                let code = e.refusal().map(|r| r as u8 as u64);
                assert_eq!(v["refusal"].as_u64(), code, "{name}: refusal code");
            }
        }
    }
}

#[test]
fn status_vectors() {
    for v in of_kind("status") {
        let bytes = hex(v["hex"].as_str().unwrap());
        let name = v["name"].as_str().unwrap();
        match StatusPrefix::parse(&bytes) {
            Ok(p) => {
                assert_eq!(v["valid"], true, "{name}");
                let f = &v["fields"];
                assert_eq!(f["version"], p.version, "{name}");
                assert_eq!(f["code"], p.code, "{name}");
                let reason = std::str::from_utf8(&bytes[8..8 + p.reason_len as usize]).unwrap();
                assert_eq!(f["reason"], reason, "{name}");
                let mut out = [0u8; stackmeter_proto::status::MAX_STATUS_LEN];
                let n = match Refusal::from_u8(p.code) {
                    Some(r) => stackmeter_proto::status::emit_refusal(r, reason, &mut out),
                    None => stackmeter_proto::status::emit_accepted((&mut out[..8]).try_into().unwrap()),
                };
                assert_eq!(&out[..n], &bytes[..], "{name}: emit differs");
            }
            Err(_) => assert_eq!(v["valid"], false, "{name}"),
        }
    }
}

#[test]
fn datagram_vectors() {
    for v in of_kind("datagram") {
        let mut bytes = hex(v["hex"].as_str().unwrap());
        let name = v["name"].as_str().unwrap();
        if let Ok(h) = Header::parse(&bytes) {
            assert_eq!(v["valid"], true, "{name}");
            let f = &v["fields"];
            for (k, got) in [
                ("version", h.version as u64),
                ("kind", h.kind as u64),
                ("code", h.code as u64),
                ("flags", h.flags as u64),
                ("seq", h.seq),
                ("client_ts", h.client_ts),
                ("server_rx", h.server_rx),
                ("server_tx", h.server_tx),
            ] {
                assert_eq!(f[k].as_u64(), Some(got), "{name}: field {k}");
            }
            if h.kind == udp::Kind::StreamData as u8 {
                assert_eq!(f["test_id"].as_u64(), Some(h.test_id() as u64), "{name}: test id");
                assert_eq!(f["stream"].as_u64(), Some(h.stream() as u64), "{name}: stream");
            }
        } else {
            assert_eq!(v["valid"], false, "{name}");
        }
        let a = &v["answer"];
        if a.is_null() {
            continue;
        }
        // A responder that counts (4.4) reads the block before the rule
        // rewrites the request into its reply.
        let ask = udp::count_ask(&bytes);
        // A responder that writes stamp blocks keeps the stamps flag;
        // `answer` is the rule of one that does not.
        let got = if a["stamps"].as_bool() == Some(false) {
            udp::answer(&mut bytes, a["rx_ns"].as_u64().unwrap())
        } else {
            udp::answer_stamped(&mut bytes, a["rx_ns"].as_u64().unwrap())
        };
        match a["action"].as_str().unwrap() {
            "reply" => {
                let want = hex(a["reply_hex"].as_str().unwrap());
                match (ask, a["count_received"].as_u64()) {
                    (Some(ask), Some(n)) => udp::put_count(&mut bytes, ask, n),
                    (None, None) => {}
                    (ask, n) => panic!("{name}: count block {ask:?}, vector's count {n:?}"),
                }
                assert_eq!(got, Answer::Reply(want.len()), "{name}");
                assert_eq!(&bytes[..want.len()], &want[..], "{name}: reply bytes");
            }
            "drop" => {
                let reason = match a["reason"].as_str().unwrap() {
                    "too_short" => DropReason::TooShort,
                    "bad_magic" => DropReason::BadMagic,
                    _ => DropReason::NotARequest,
                };
                assert_eq!(got, Answer::Drop(reason), "{name}");
            }
            other => panic!("{name}: unknown action {other}"),
        }
    }
}

#[test]
fn stamp_block_vectors() {
    use stackmeter_proto::stamps::Block;
    for v in of_kind("stamp_block") {
        let bytes = hex(v["hex"].as_str().unwrap());
        let name = v["name"].as_str().unwrap();
        let f = &v["fields"];
        let pair = |a: &str, b: &str| f[a].as_u64().zip(f[b].as_u64());
        let want = Block {
            app: pair("app_rx", "app_tx"),
            rx_kernel: f["rx_kernel"].as_u64(),
            prev_tx: pair("prev_id", "prev_tx_kernel"),
            hardware: f["hardware"].as_bool().unwrap_or(false),
        };
        match v["valid"].as_bool().unwrap() {
            true => {
                assert_eq!(Block::parse(&bytes), Some(want), "{name}: parse");
                assert_eq!(want.emit().to_vec(), bytes, "{name}: emit");
            }
            false => assert_eq!(Block::parse(&bytes), None, "{name}"),
        }
    }
}

#[test]
fn control_record_vectors() {
    let v = vectors();
    let all = v["control_records"].as_array().expect("control_records");
    assert!(all.len() >= 6);
    for r in all {
        let bytes = hex(r["hex"].as_str().unwrap());
        let name = r["name"].as_str().unwrap();
        let f = &r["fields"];
        if r["direction"] == "client" {
            match ClientRecord::parse(&bytes) {
                Ok((rec, len)) => {
                    assert_eq!(len, bytes.len(), "{name}: length");
                    match rec {
                        ClientRecord::Snapshot(id) | ClientRecord::Stop(id) => {
                            let t = if matches!(rec, ClientRecord::Snapshot(_)) {
                                "snapshot"
                            } else {
                                "stop"
                            };
                            assert_eq!(f["type"], t, "{name}");
                            assert_eq!(f["id"].as_u64(), Some(id as u64), "{name}");
                            assert_eq!(rec.emit().to_vec(), bytes, "{name}: emit differs");
                        }
                        ClientRecord::Unknown(_) => assert_eq!(f["type"], "unknown", "{name}"),
                    }
                }
                Err(e) => {
                    assert_eq!(r["error"], "bad_length", "{name}: {e:?}");
                    assert!(matches!(e, RecordError::BadLength(_)), "{name}");
                }
            }
            continue;
        }
        let (rec, len) = ServerRecord::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(len, bytes.len(), "{name}: length");
        match rec {
            ServerRecord::Welcome(id) => {
                assert_eq!(f["type"], "welcome", "{name}");
                assert_eq!(f["id"].as_u64(), Some(id as u64), "{name}");
                assert_eq!(control::welcome(id).to_vec(), bytes, "{name}: emit differs");
            }
            ServerRecord::Report(rep) => {
                assert_eq!(f["type"], "report", "{name}");
                for (k, got) in [
                    ("id", rep.id as u64),
                    ("flags", rep.flags as u64),
                    ("sessions", rep.sessions as u64),
                    ("elapsed_ns", rep.elapsed_ns),
                    ("tcp_rx_bytes", rep.tcp_rx_bytes),
                    ("tcp_tx_bytes", rep.tcp_tx_bytes),
                    ("udp_datagrams", rep.udp_datagrams),
                    ("udp_bytes", rep.udp_bytes),
                    ("udp_expected", rep.udp_expected),
                    ("udp_duplicates", rep.udp_duplicates),
                    ("udp_reordered", rep.udp_reordered),
                    ("udp_jitter_ns", rep.udp_jitter_ns),
                    ("tcp_retransmits", rep.tcp_retransmits as u64),
                    ("tcp_cwnd_bytes", rep.tcp_cwnd_bytes as u64),
                    ("tcp_rtt_us", rep.tcp_rtt_us as u64),
                    ("cpu_user_ns", rep.cpu_user_ns),
                    ("cpu_sys_ns", rep.cpu_sys_ns),
                ] {
                    assert_eq!(f[k].as_u64(), Some(got), "{name}: field {k}");
                }
                assert_eq!(rep.emit().to_vec(), bytes, "{name}: emit differs");
            }
            ServerRecord::Unknown(t) => panic!("{name}: unknown type {t}"),
        }
    }
}

#[test]
fn udp_rx_vectors() {
    let v = vectors();
    for case in v["udp_rx"].as_array().expect("udp_rx") {
        let name = case["name"].as_str().unwrap();
        let mut rx = UdpRx::default();
        for e in case["events"].as_array().unwrap() {
            let n: Vec<u64> = e.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
            rx.record(n[0], n[1] as usize, n[2], n[3]);
        }
        let x = &case["expect"];
        for (k, got) in [
            ("received", rx.received),
            ("bytes", rx.bytes),
            ("expected", rx.expected),
            ("lost", rx.lost()),
            ("duplicates", rx.duplicates),
            ("reordered", rx.reordered),
            ("jitter_ns", rx.jitter_ns()),
        ] {
            assert_eq!(x[k].as_u64(), Some(got), "{name}: {k}");
        }
    }
}

#[test]
fn pattern_vector() {
    let v = vectors();
    let p = &v["pattern"];
    let mut b = [0u8; 8];
    pattern::fill(p["seq"].as_u64().unwrap(), &mut b);
    assert_eq!(b.to_vec(), hex(p["first_8_hex"].as_str().unwrap()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn control_parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = ClientRecord::parse(&bytes);
        let _ = ServerRecord::parse(&bytes);
    }

    #[test]
    fn session_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = SessionHeader::parse(&bytes);
        let _ = stackmeter_proto::header::Prefix::parse(&bytes);
    }

    #[test]
    fn magic_prefixed_headers_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut bytes = b"SMTR".to_vec();
        bytes.extend(tail);
        let _ = SessionHeader::parse(&bytes);
        let _ = StatusPrefix::parse(&bytes);
    }

    #[test]
    fn echo_rule_never_panics_or_amplifies(tail in proptest::collection::vec(any::<u8>(), 0..200), magic in any::<bool>()) {
        let mut d = if magic { b"SMTU".to_vec() } else { Vec::new() };
        d.extend(tail);
        let len = d.len();
        if let Answer::Reply(n) = udp::answer(&mut d, 42) {
            prop_assert!(n <= len);
            udp::stamp_tx(&mut d, 43);
        }
    }

    #[test]
    fn session_round_trip(req in 1u32.., resp in 1u32.., crr in any::<bool>()) {
        let h = SessionHeader { mode: if crr { Mode::Crr } else { Mode::Rr }, req_size: req, resp_size: resp, flags: 0 };
        prop_assert_eq!(SessionHeader::parse(&h.emit()), Ok(h));
    }
}

#[test]
fn object_mode_vectors() {
    use stackmeter_proto::objects::{self as obj, Catalogue, Op, Request, Response};
    let v = vectors();
    let o = &v["objects"];
    let h = hex(o["header_hex"].as_str().unwrap());
    assert_eq!(obj::emit_header().to_vec(), h);
    assert_eq!(obj::parse_header(&h), Ok(()));
    for r in o["requests"].as_array().unwrap() {
        let b = hex(r["hex"].as_str().unwrap());
        let name = r["name"].as_str().unwrap();
        match Request::parse(&b) {
            Ok(q) => {
                assert_eq!(r["valid"], true, "{name}");
                let op = if q.op == Op::List { "list" } else { "fetch" };
                assert_eq!(r["op"], op, "{name}");
                assert_eq!(r["name_len"], q.name_len, "{name}");
                let mut out = [0u8; 300];
                let n = obj::emit_request(q.op, &b[4..], &mut out).unwrap();
                assert_eq!(out[..n].to_vec(), b, "{name}");
            }
            Err(_) => {
                assert_eq!(r["valid"], false, "{name}");
                assert_eq!(r["code"], obj::CODE_BAD_REQUEST, "{name}");
            }
        }
    }
    let resps = o["responses"].as_array().unwrap();
    let b = hex(resps[0]["hex"].as_str().unwrap());
    let head = Response::parse(&b).unwrap();
    assert_eq!((head.code, head.len as usize), (0, b.len() - 12));
    assert_eq!(head.emit().to_vec(), b[..12].to_vec());
    let c = Catalogue::parse(&b[12..]).unwrap();
    for (e, want) in c.entries().zip(resps[0]["entries"].as_array().unwrap()) {
        assert_eq!(want["name"], String::from_utf8_lossy(e.name).as_ref());
        assert_eq!(want["size"], e.size);
        assert_eq!(want["crc32"], e.crc32);
        assert_eq!(want["pattern"], e.is_pattern());
    }
    let nf = hex(resps[1]["hex"].as_str().unwrap());
    assert_eq!(Response::parse(&nf).unwrap().code, obj::CODE_NOT_FOUND);
    for s in o["pattern"]["samples"].as_array().unwrap() {
        let want = hex(s["hex"].as_str().unwrap());
        let mut got = vec![0u8; want.len()];
        obj::fill(s["k"].as_u64().unwrap(), s["offset"].as_u64().unwrap(), &mut got);
        assert_eq!(got, want);
    }
    for s in o["crc32"]["samples"].as_array().unwrap() {
        assert_eq!(obj::crc32(s["ascii"].as_str().unwrap().as_bytes()), s["crc32"]);
    }
}

proptest! {
    #[test]
    fn object_parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = stackmeter_proto::objects::Request::parse(&bytes);
        let _ = stackmeter_proto::objects::Response::parse(&bytes);
        if let Ok(c) = stackmeter_proto::objects::Catalogue::parse(&bytes) {
            prop_assert_eq!(c.entries().count(), c.len());
        }
        let _ = stackmeter_proto::objects::parse_header(&bytes);
    }
}

#[test]
fn limits_match_the_table() {
    let v = vectors();
    let table = v["limits"].as_object().expect("vectors.json has limits");
    for (name, value) in stackmeter_proto::limits::TABLE {
        assert_eq!(table[name].as_u64(), Some(value), "limit {name}");
    }
    let named = table.keys().filter(|k| *k != "about").count();
    assert_eq!(
        named,
        stackmeter_proto::limits::TABLE.len(),
        "every limit of the table is in TABLE"
    );
}

/// docs/protocol.md section 10: HMAC-SHA256 over fixed inputs, the TCP
/// proof, and a sealed echo request answered, replayed and tampered with.
#[test]
fn auth_vectors() {
    use stackmeter_proto::auth::{Key, MAC_LEN};
    use stackmeter_proto::udp::{answer_sealed, stamp_tx, Answer, DropReason};
    use stackmeter_proto::udp::{open, seal, ReplayWindow};
    let v = vectors();
    let a = &v["auth"];
    for h in a["hmac"].as_array().unwrap() {
        let k = Key::new(&hex(h["key_hex"].as_str().unwrap())).unwrap();
        let m = k.mac(&[&hex(h["data_hex"].as_str().unwrap())]);
        assert_eq!(m.to_vec(), hex(h["mac_hex"].as_str().unwrap()), "{}", h["name"]);
    }
    let p = &a["proof"];
    let k = Key::new(&hex(p["secret_hex"].as_str().unwrap())).unwrap();
    let ch: [u8; 24] = hex(p["challenge_hex"].as_str().unwrap()).try_into().unwrap();
    let header = hex(p["header_hex"].as_str().unwrap());
    let proof = hex(p["proof_hex"].as_str().unwrap());
    assert_eq!(k.proof(&ch, &header).to_vec(), proof);
    assert!(k.check_proof(&ch, &header, &proof));
    assert!(!k.check_proof(&ch, &header[..16], &proof), "the flags word is covered");

    let d = &a["datagram"];
    let k = Key::new(&hex(d["secret_hex"].as_str().unwrap())).unwrap();
    let mut b = hex(d["request_hex"].as_str().unwrap());
    let copy = b.clone();
    let mut w = ReplayWindow::new();
    let body = open(&k, &b).expect("a valid trailer");
    let got = answer_sealed(&mut b, body, d["rx_ns"].as_u64().unwrap(), false, &mut w);
    assert_eq!(got, Answer::Reply(body));
    stamp_tx(&mut b[..body], d["tx_ns"].as_u64().unwrap());
    seal(&k, &mut b[..body + MAC_LEN]);
    assert_eq!(b, hex(d["reply_hex"].as_str().unwrap()), "the sealed reply");
    let mut again = copy.clone();
    assert_eq!(
        answer_sealed(&mut again, body, 1, false, &mut w),
        Answer::Drop(DropReason::Replayed)
    );
    assert_eq!(open(&k, &hex(d["tampered_hex"].as_str().unwrap())), None);
    assert_eq!(open(&Key::new(b"not it").unwrap(), &copy), None);
}
