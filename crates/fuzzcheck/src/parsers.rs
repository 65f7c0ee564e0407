//! The wire parsers of `stackmeter-proto`: each input is parsed, and what
//! parses is emitted again and must parse to the same value (the round
//! trip the vectors rely on); the UDP echo rule must never answer with more
//! bytes than it was given.

use stackmeter_proto::control::{ClientRecord, Report, ServerRecord, HEAD_LEN};
use stackmeter_proto::header::{Prefix, SessionHeader};
use stackmeter_proto::objects::{self as obj, Catalogue, Request, Response};
use stackmeter_proto::stamps::Block;
use stackmeter_proto::status::{self, Refusal, StatusPrefix, MAX_REASON_LEN, MAX_STATUS_LEN, STATUS_PREFIX_LEN};
use stackmeter_proto::stream::{UdpRx, STATE_WORDS};
use stackmeter_proto::udp::{self as wire, Answer, Header};

/// The session header a client sends first (and its prefix).
pub fn session_header(data: &[u8]) {
    let prefix = Prefix::parse(data);
    match SessionHeader::parse(data) {
        Ok(h) => {
            let p = prefix.expect("a header parses only with a good prefix");
            assert!(data.len() >= p.header_len as usize, "parsed past the bytes given");
            let bytes = h.emit();
            assert_eq!(SessionHeader::parse(&bytes), Ok(h), "emit and parse disagree");
        }
        Err(e) => {
            // Truncated means "read more"; every other error is a refusal.
            assert_eq!(
                e.refusal().is_none(),
                e == stackmeter_proto::header::HeaderError::Truncated
            );
        }
    }
}

/// The status record a responder answers with.
pub fn status(data: &[u8]) {
    if let Ok(p) = StatusPrefix::parse(data) {
        assert!(p.reason_len as usize <= MAX_REASON_LEN);
        let reason = String::from_utf8_lossy(&data[STATUS_PREFIX_LEN.min(data.len())..]);
        if let Some(r) = Refusal::from_u8(p.code) {
            let mut out = [0u8; MAX_STATUS_LEN];
            let n = status::emit_refusal(r, &reason, &mut out);
            assert!(n <= MAX_STATUS_LEN);
            let back = StatusPrefix::parse(&out[..n]).expect("an emitted refusal parses");
            assert_eq!((back.code, back.reason_len as usize), (p.code, n - STATUS_PREFIX_LEN));
            assert!(
                std::str::from_utf8(&out[STATUS_PREFIX_LEN..n]).is_ok(),
                "reason cut inside a character"
            );
        }
    }
}

/// A UDP datagram: the header, the echo rule (plain and stamped), the stamp
/// block of a reply.
pub fn udp(data: &[u8]) {
    if let Ok(h) = Header::parse(data) {
        let mut d = data.to_vec();
        h.emit(&mut d).expect("room for the header it came from");
        assert_eq!(d, data, "emit and parse disagree");
    }
    for stamped in [false, true] {
        let mut d = data.to_vec();
        let rx = 0x0102_0304_0506_0708;
        let a = if stamped {
            wire::answer_stamped(&mut d, rx)
        } else {
            wire::answer(&mut d, rx)
        };
        if let Answer::Reply(n) = a {
            // The echo rule: never more bytes out than in (no amplifier).
            assert!(n <= data.len(), "a reply of {n} bytes to {}", data.len());
            assert!(Header::parse(&d[..n]).is_ok(), "a reply that does not parse");
            wire::stamp_tx(&mut d, rx + 1);
            wire::put_block(&mut d, &Block::default());
            let _ = wire::reply_block(&d);
        }
    }
    if let Some(b) = wire::reply_block(data) {
        assert_eq!(Block::parse(&b.emit()), Some(b), "stamp block round trip");
    }
    if let Some(b) = Block::parse(data) {
        assert_eq!(Block::parse(&b.emit()), Some(b), "stamp block round trip");
    }
}

/// Control records, read one after another as a control session does, in
/// both directions.
pub fn control(data: &[u8]) {
    let mut at = 0;
    while at < data.len() {
        match ClientRecord::parse(&data[at..]) {
            Ok((r, len)) => {
                assert!(len >= HEAD_LEN && at + len <= data.len(), "length {len} at {at}");
                if !matches!(r, ClientRecord::Unknown(_)) {
                    assert_eq!(ClientRecord::parse(&r.emit()).map(|x| x.0), Ok(r));
                }
                at += len;
            }
            Err(_) => break,
        }
    }
    let mut at = 0;
    while at < data.len() {
        match ServerRecord::parse(&data[at..]) {
            Ok((r, len)) => {
                assert!(len >= HEAD_LEN && at + len <= data.len(), "length {len} at {at}");
                if let ServerRecord::Report(rep) = r {
                    let again = ServerRecord::parse(&Report::emit(&rep)).map(|x| x.0);
                    assert_eq!(again, Ok(ServerRecord::Report(rep)), "report round trip");
                }
                at += len;
            }
            Err(_) => break,
        }
    }
}

/// Object mode: the header, requests, responses, and a LIST body.
pub fn objects(data: &[u8]) {
    let _ = obj::parse_header(data);
    if let Ok(r) = Request::parse(data) {
        let name = &data[obj::REQUEST_LEN.min(data.len())..];
        let name = &name[..(r.name_len as usize).min(name.len())];
        let mut out = [0u8; obj::REQUEST_LEN + obj::MAX_NAME_LEN];
        if name.len() == r.name_len as usize {
            let n = obj::emit_request(r.op, name, &mut out).expect("a parsed request emits");
            assert_eq!(Request::parse(&out[..n]), Ok(r));
        }
    }
    if let Some(r) = Response::parse(data) {
        assert_eq!(Response::parse(&r.emit()), Some(r));
    }
    if let Ok(c) = Catalogue::parse(data) {
        let mut total = 4;
        let mut body = (c.len() as u32).to_be_bytes().to_vec();
        for e in c.entries() {
            assert!(!e.name.is_empty() && e.name.len() <= obj::MAX_NAME_LEN);
            total += e.encoded_len();
            let at = body.len();
            body.resize(at + e.encoded_len(), 0);
            e.emit(&mut body[at..]).expect("an entry that parsed emits");
        }
        assert_eq!(total, data.len(), "entries do not cover the body");
        assert_eq!(body, data, "catalogue round trip");
    }
}

/// The receive counters of a UDP stream, fed arbitrary sequence numbers,
/// lengths and times (all three come from the network or its timing).
pub fn udp_stream(data: &[u8]) {
    let mut rx = UdpRx::default();
    let mut calls = 0u64;
    for c in data.chunks_exact(24) {
        let w = |i: usize| u64::from_be_bytes(c[i..i + 8].try_into().expect("8 bytes"));
        let (seq, sent, arrival) = (w(0), w(8), w(16));
        rx.record(seq, (sent & 0xffff) as usize, sent, arrival);
        calls += 1;
        assert!(
            rx.received + rx.duplicates <= calls,
            "counted more datagrams than arrived"
        );
        assert!(rx.lost() <= rx.expected, "lost more than expected");
    }
    let words: [u64; STATE_WORDS] = rx.to_words();
    assert_eq!(UdpRx::from_words(&words).to_words(), words, "state words round trip");
}
