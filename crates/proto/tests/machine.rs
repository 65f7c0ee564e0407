//! Drives `proto::machine` with bytes, as a driver would: the header vectors
//! of `protocol/vectors.json`, every mode, refusals and their lingering
//! close, pipelined object requests, the drain rule with made-up times, and
//! a property test that no input sequence makes the machine panic or ask
//! for the same thing forever (sends that keep failing included).

use proptest::prelude::*;
use serde_json::Value;
use stackmeter_proto::control::{self, ClientRecord, ServerRecord};
use stackmeter_proto::header::{Mode, SessionHeader};
use stackmeter_proto::machine::{
    Catalogue, Config, CpuTime, Deadline, Event, Failure, Lookup, Next, Reason, Registry, ReportDue, ReportInputs,
    Service, Session, Source, ANY,
};
use stackmeter_proto::objects::{self as obj, Entry, Response};
use stackmeter_proto::stamps::Block;
use stackmeter_proto::status::{Refusal, StatusPrefix};
use stackmeter_proto::udp;
use std::fmt::Write;

const MS: u64 = 1_000_000;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn vectors() -> Value {
    serde_json::from_str(include_str!("../../../protocol/vectors.json")).unwrap()
}

/// A catalogue of three objects: a pattern object, a file, and one that is
/// listed but cannot be read.
struct Cat {
    list: Vec<u8>,
    objects: Vec<(&'static [u8], Vec<u8>)>,
}

impl Cat {
    fn new() -> Cat {
        let mut pattern = vec![0u8; 4096];
        obj::fill(0, 0, &mut pattern);
        let objects: Vec<(&'static [u8], Vec<u8>)> = vec![
            (b"4K", pattern),
            (b"a.txt", b"hello".to_vec()),
            (b"gone", vec![1, 2, 3]),
        ];
        let mut list = (objects.len() as u32).to_be_bytes().to_vec();
        for (name, content) in &objects {
            let e = Entry {
                size: content.len() as u64,
                crc32: obj::crc32(content),
                flags: 0,
                name,
            };
            let at = list.len();
            list.resize(at + e.encoded_len(), 0);
            e.emit(&mut list[at..]).unwrap();
        }
        Cat { list, objects }
    }

    fn bytes(&self, s: Source) -> &[u8] {
        match s {
            Source::List => &self.list,
            Source::Object(i) => &self.objects[i as usize].1,
            Source::Payload => unreachable!(),
        }
    }
}

impl Catalogue for Cat {
    fn list_len(&self) -> u64 {
        self.list.len() as u64
    }

    fn fetch(&mut self, name: &[u8], why: &mut Reason) -> Lookup {
        match self.objects.iter().position(|(n, _)| *n == name) {
            Some(2) => {
                let _ = write!(why, "it vanished");
                Lookup::Unreadable
            }
            Some(i) => Lookup::Found {
                index: i as u32,
                size: self.objects[i].1.len() as u64,
            },
            None => Lookup::NotFound,
        }
    }
}

/// Why [`Peer::pump`] stopped.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    /// The session wants bytes the client has not sent.
    NeedInput(usize),
    Report(ReportDue),
    Wait(u64),
    Closed,
    /// More output than the test asked for (a source).
    Budget,
}

/// The client's side of one session: what it sends, what it got.
struct Peer<'r> {
    s: Session<&'r Registry>,
    cat: Cat,
    now: u64,
    /// Bytes the client sent that the session has not read yet.
    pending: Vec<u8>,
    /// Largest read the driver makes.
    chunk: usize,
    got: Vec<u8>,
    events: Vec<String>,
    accepted: Option<Service>,
    shut: bool,
    closed: bool,
    /// Every send fails from now on (peer gone: reset or broken pipe).
    broken: Option<bool>,
}

impl<'r> Peer<'r> {
    fn new(reg: &'r Registry, cfg: Config) -> Peer<'r> {
        Peer {
            s: Session::new(reg, cfg, 0),
            cat: Cat::new(),
            now: 0,
            pending: Vec::new(),
            chunk: usize::MAX,
            got: Vec::new(),
            events: Vec::new(),
            accepted: None,
            shut: false,
            closed: false,
            broken: None,
        }
    }

    fn send(&mut self, b: &[u8]) -> &mut Self {
        self.pending.extend_from_slice(b);
        self
    }

    /// Runs the session until it needs what only the test can give.
    fn pump(&mut self, budget: usize) -> Stop {
        for _ in 0..100_000 {
            match self.s.poll() {
                Next::Event(e) => {
                    if let Event::Accepted(s) = e {
                        self.accepted = Some(s);
                    }
                    self.events.push(format!("{e:?}: {}", self.s.reason()));
                }
                Next::Send(body) => {
                    if let Some(gone) = self.broken {
                        self.s.failed(Failure::Send, gone);
                        continue;
                    }
                    if self.got.len() >= budget {
                        return Stop::Budget;
                    }
                    let record = self.s.record();
                    assert!(!record.is_empty() || body.is_some(), "an empty send");
                    let mut n = record.len();
                    self.got.extend_from_slice(record);
                    if let Some(b) = body {
                        // Take a prefix of the body, as a stack would.
                        let k = b.len.min(3000) as usize;
                        match b.source {
                            Source::Payload => self.got.extend(std::iter::repeat_n(b'p', k)),
                            s => {
                                let all = self.cat.bytes(s);
                                self.got.extend_from_slice(&all[b.offset as usize..][..k]);
                            }
                        }
                        n += k;
                    }
                    self.s.sent(n);
                }
                Next::Read(max) => {
                    assert!(max > 0, "a read of nothing");
                    if self.pending.is_empty() {
                        return Stop::NeedInput(max);
                    }
                    let n = max.min(self.chunk).min(self.pending.len());
                    let data: Vec<u8> = self.pending.drain(..n).collect();
                    let took = self.s.input(&data, self.now, &mut self.cat);
                    assert_eq!(took, n, "a read of at most what was asked is taken whole");
                }
                Next::Stamp => {
                    // The driver's stamps: the clock as it stands.
                    self.s.stamp(Block {
                        app: Some((self.now, self.now + 1)),
                        rx_kernel: Some(self.now.saturating_sub(1)),
                        prev_tx: None,
                        hardware: false,
                    });
                }
                Next::Report(due) => return Stop::Report(due),
                Next::Wait(t) => return Stop::Wait(t),
                Next::Shutdown => {
                    self.shut = true;
                    self.s.shut_done();
                }
                Next::Close => {
                    self.closed = true;
                    return Stop::Closed;
                }
            }
        }
        panic!("the session asks for the same thing forever: {:?}", self.s.poll());
    }

    fn run(&mut self) -> Stop {
        self.pump(usize::MAX)
    }

    /// After a refusal: drains what the client sent, then the client
    /// closes, and so does the session.
    fn linger_out(&mut self) -> Stop {
        assert_eq!(self.run(), Stop::NeedInput(ANY), "lingering: {:?}", self.events);
        assert!(self.shut, "half-closed before the linger");
        self.s.eof();
        self.run()
    }

    /// The bytes received so far, emptied.
    fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.got)
    }
}

fn cfg() -> Config {
    Config {
        objects: true,
        stamps: true,
        ..Config::default()
    }
}

fn accepted() -> Vec<u8> {
    let mut b = [0u8; 8];
    stackmeter_proto::status::emit_accepted(&mut b);
    b.to_vec()
}

/// Parses a refusal record; returns its code and reason.
fn refusal(b: &[u8]) -> (u8, String) {
    let p = StatusPrefix::parse(b).unwrap();
    let end = 8 + p.reason_len as usize;
    assert_eq!(b.len(), end, "nothing after a refusal");
    (p.code, String::from_utf8(b[8..end].to_vec()).unwrap())
}

fn header(mode: Mode, req: u32, resp: u32) -> Vec<u8> {
    SessionHeader {
        mode,
        req_size: req,
        resp_size: resp,
        flags: 0,
    }
    .emit()
    .to_vec()
}

#[test]
fn header_vectors_accept_or_refuse_with_their_code_in_any_chunking() {
    for chunk in [1, 3, usize::MAX] {
        for v in vectors()["vectors"].as_array().unwrap() {
            if v["kind"] != "session_header" {
                continue;
            }
            let name = v["name"].as_str().unwrap();
            let bytes = hex(v["hex"].as_str().unwrap());
            let reg = Registry::new();
            // Tests 1 to 5 are open, so the data-session vectors (test 5)
            // find theirs.
            let tests: Vec<_> = (0..5).map(|_| reg.open(0).unwrap()).collect();
            assert_eq!(tests[4].id(), 5);
            let mut p = Peer::new(&reg, cfg());
            p.chunk = chunk;
            p.send(&bytes);
            let mut stop = p.run();
            if v["refusal"].is_u64() {
                assert_eq!(stop, Stop::NeedInput(ANY), "{name}");
                stop = p.linger_out();
            }
            match (v["valid"].as_bool().unwrap(), v["refusal"].as_u64()) {
                (true, _) => {
                    let s = p
                        .accepted
                        .unwrap_or_else(|| panic!("{name}: not accepted: {:?}", p.events));
                    let f = &v["fields"];
                    let want = match f["mode"].as_str().unwrap() {
                        "rr" => Service::Rr {
                            req: f["req_size"].as_u64().unwrap() as u32,
                            resp: f["resp_size"].as_u64().unwrap() as u32,
                            stamps: f["flags"].as_u64().unwrap_or(0) & 1 != 0,
                        },
                        "crr" => Service::Crr { req: 64, resp: 64 },
                        "control" => Service::Control { test: 6 },
                        "sink" => Service::Sink { test: 5, read_hint: 0 },
                        "source" => Service::Source { test: 5, write: 64 },
                        m => panic!("{name}: mode {m}"),
                    };
                    assert_eq!(s, want, "{name}");
                    assert!(p.pending.is_empty(), "{name}: the whole header is read");
                    assert!(matches!(stop, Stop::NeedInput(_) | Stop::Wait(_)), "{name}: {stop:?}");
                }
                (false, Some(code)) => {
                    assert_eq!(stop, Stop::Closed, "{name}: refused with a lingering close");
                    assert_eq!(refusal(&p.got).0 as u64, code, "{name}");
                    assert!(p.events[0].starts_with("Refused"), "{name}: {:?}", p.events);
                }
                (false, None) => {
                    // Truncated: the session waits for the rest until the
                    // header deadline, then refuses HeaderTimeout.
                    assert_eq!(stop, Stop::NeedInput(16 - bytes.len()), "{name}");
                    assert_eq!(p.s.deadline(), Deadline::At(5_000 * MS));
                    p.s.timeout(5_000 * MS);
                    assert_eq!(p.run(), Stop::NeedInput(ANY), "{name}: lingering");
                    assert_eq!(refusal(&p.got).0, 7, "{name}");
                    assert_eq!(p.s.deadline(), Deadline::At(5_500 * MS), "linger 500 ms");
                }
            }
        }
    }
}

#[test]
fn the_version_is_judged_before_the_rest_is_read() {
    let reg = Registry::new();
    let mut p = Peer::new(&reg, cfg());
    let mut h = header(Mode::Rr, 1, 1).clone();
    h[4] = 2;
    h.extend_from_slice(b"more bytes a later version might mean");
    p.send(&h);
    assert_eq!(p.linger_out(), Stop::Closed);
    let (code, reason) = refusal(&p.got);
    assert_eq!(code, 2);
    assert!(reason.contains("version 2 not supported"), "{reason}");
    // The 8-byte prefix, then only what the linger drained.
    assert!(p.pending.is_empty());
    assert!(p.events[0].contains("UnsupportedVersion"));
}

#[test]
fn rr_answers_each_request_and_ends_at_a_close_between_requests() {
    let reg = Registry::new();
    let mut p = Peer::new(&reg, cfg());
    p.send(&header(Mode::Rr, 3, 5000));
    assert_eq!(p.run(), Stop::NeedInput(3));
    assert_eq!(p.take(), accepted());
    assert_eq!(p.s.deadline(), Deadline::Idle(60_000 * MS));
    assert!(!p.s.needs_clock(), "no clock on the measured path");
    for _ in 0..3 {
        p.send(b"ab");
        assert_eq!(p.run(), Stop::NeedInput(1), "the rest of the request");
        p.send(b"c");
        assert_eq!(p.run(), Stop::NeedInput(3));
        assert_eq!(p.take(), vec![b'p'; 5000]);
    }
    p.s.eof();
    assert_eq!(p.run(), Stop::Closed);
    assert_eq!(p.events.len(), 1, "no abort: {:?}", p.events);
}

#[test]
fn stamped_rr_starts_each_response_with_a_block_carrying_the_previous_send_stamp() {
    let reg = Registry::new();
    let mut p = Peer::new(&reg, cfg());
    let mut h = SessionHeader {
        mode: Mode::Rr,
        req_size: 2,
        resp_size: 100,
        flags: stackmeter_proto::header::FLAG_STAMPS,
    };
    p.send(&h.emit());
    assert_eq!(p.run(), Stop::NeedInput(2));
    assert_eq!(
        p.accepted,
        Some(Service::Rr {
            req: 2,
            resp: 100,
            stamps: true
        })
    );
    assert_eq!(p.take(), accepted());
    for i in 0..3u64 {
        p.now = 1000 * (i + 1);
        p.send(b"ab");
        assert_eq!(p.run(), Stop::NeedInput(2));
        let got = p.take();
        assert_eq!(got.len(), 100, "the block is part of the response");
        let b = Block::parse(&got).expect("a block");
        assert_eq!(b.app, Some((p.now, p.now + 1)));
        assert_eq!(b.rx_kernel, Some(p.now - 1));
        // Response i-1 ended at byte 8 + 100 i - 1 of the stream.
        assert_eq!(b.prev_tx, i.checked_sub(1).map(|k| (k, 77 + k)), "response {i}");
        assert!(got[48..].iter().all(|&x| x == b'p'));
        p.s.tx_stamp((8 + 100 * i + 50) as u32, 5); // a mid-response stamp: not the end
        p.s.tx_stamp((8 + 100 * (i + 1) - 1) as u32, 77 + i);
    }
    // Too small for a block, or a driver without stamps: the flag is ignored.
    for (resp, stamps) in [(47, true), (100, false)] {
        let mut p = Peer::new(&reg, Config { stamps, ..cfg() });
        h.resp_size = resp;
        p.send(&h.emit());
        p.run();
        assert_eq!(
            p.accepted,
            Some(Service::Rr {
                req: 2,
                resp,
                stamps: false
            })
        );
        p.take();
        p.send(b"ab");
        p.run();
        assert_eq!(p.take(), vec![b'p'; resp as usize]);
    }
}

#[test]
fn rr_client_vanishing_mid_request_or_mid_response_is_an_abort() {
    let reg = Registry::new();
    let mut p = Peer::new(&reg, cfg());
    p.send(&header(Mode::Rr, 4, 1)).send(b"xy");
    p.run();
    p.s.eof();
    assert_eq!(p.run(), Stop::Closed);
    assert!(
        p.events[1].contains("vanished mid-request (2 of 4 bytes)"),
        "{:?}",
        p.events
    );

    let mut p = Peer::new(&reg, cfg());
    p.send(&header(Mode::Rr, 1, 64 << 20)).send(b"x");
    assert_eq!(p.pump(10_000), Stop::Budget);
    p.s.failed(Failure::Send, true);
    assert_eq!(p.run(), Stop::Closed);
    assert!(p.events[1].contains("vanished mid-response"), "{:?}", p.events);
}

#[test]
fn crr_sends_status_and_response_together_then_waits_for_the_close() {
    let reg = Registry::new();
    let mut p = Peer::new(&reg, cfg());
    p.send(&header(Mode::Crr, 10, 20)).send(&[7; 10]);
    let mut sends = 0;
    loop {
        match p.s.poll() {
            Next::Send(body) => {
                // One send: the record and the payload.
                assert_eq!((p.s.record(), body.map(|b| b.len)), (&accepted()[..], Some(20)));
                sends += 1;
                p.s.sent(28);
            }
            Next::Read(ANY) => break,
            Next::Read(n) => {
                let data: Vec<u8> = p.pending.drain(..n).collect();
                p.s.input(&data, 0, &mut p.cat);
            }
            Next::Event(e) => assert!(matches!(e, Event::Accepted(Service::Crr { req: 10, resp: 20 }))),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(sends, 1);
    // A reset instead of a close is an end too.
    p.s.failed(Failure::Receive, true);
    assert_eq!(p.run(), Stop::Closed);
    assert!(p.events.is_empty(), "no abort: {:?}", p.events);
}

#[test]
fn oversize_and_zero_sizes_are_refused_by_name() {
    let reg = Registry::new();
    let small = Config {
        max_msg: 1 << 20,
        ..cfg()
    };
    for (h, code, needle) in [
        (
            header(Mode::Rr, 100_000_000, 1),
            5,
            "request size 100000000 exceeds limit 1048576",
        ),
        (
            header(Mode::Crr, 1, 2 << 20),
            5,
            "response size 2097152 exceeds limit 1048576",
        ),
        (
            header(Mode::Source, 1, 2 << 20),
            5,
            "write size 2097152 exceeds limit 1048576",
        ),
        (header(Mode::Sink, 9, 0), 9, "no open test 9"),
    ] {
        let mut p = Peer::new(&reg, small);
        // A crr client sends its request with the header: the linger
        // drains it.
        p.send(&h).send(&[0; 5000]);
        assert_eq!(p.linger_out(), Stop::Closed);
        let (c, reason) = refusal(&p.got);
        assert_eq!((c, reason.as_str()), (code, needle));
    }
    // The linger ends at 64 KiB of client bytes, or at its deadline.
    let mut p = Peer::new(&reg, small);
    p.chunk = 4096;
    p.send(b"GET / HTTP/1.1\r\n");
    assert_eq!(p.run(), Stop::NeedInput(ANY), "8 bytes judged, 8 drained");
    p.send(&vec![0; 70_000]);
    assert_eq!(p.run(), Stop::Closed);
    assert_eq!(p.pending.len(), 70_000 - 16 * 4096);
    let mut p = Peer::new(&reg, small);
    p.send(b"GET / HTTP/1.1\r\n");
    p.run();
    assert_eq!(p.s.deadline(), Deadline::At(500 * MS));
    p.s.timeout(500 * MS);
    assert_eq!(p.run(), Stop::Closed);
}

#[test]
fn busy_sessions_and_tests_beyond_the_limit_are_refused_busy() {
    let reg = Registry::new();
    let mut s = Session::busy(&reg, cfg(), 0);
    assert_eq!(s.poll(), Next::Event(Event::Refused(Refusal::Busy)));
    assert_eq!(s.reason(), "1024 sessions running, the limit");
    let mut controls: Vec<Peer> = (0..16).map(|_| Peer::new(&reg, cfg())).collect();
    for c in &mut controls {
        c.send(&SessionHeader::control().emit());
        c.run();
        assert!(c.accepted.is_some());
    }
    let mut p = Peer::new(&reg, cfg());
    p.send(&SessionHeader::control().emit());
    assert_eq!(p.linger_out(), Stop::Closed);
    assert_eq!(refusal(&p.got), (6, "16 throughput tests running, the limit".into()));
    // One control session ends: its slot is free again.
    drop(controls.pop());
    let mut p = Peer::new(&reg, cfg());
    p.send(&SessionHeader::control().emit());
    p.run();
    assert!(matches!(p.accepted, Some(Service::Control { .. })));
}

/// Opens a control session and reads its Welcome: the test id.
fn control<'r>(reg: &'r Registry) -> (Peer<'r>, u32) {
    let mut c = Peer::new(reg, cfg());
    c.send(&SessionHeader::control().emit());
    assert_eq!(c.run(), Stop::NeedInput(8));
    let got = c.take();
    assert_eq!(got[..8], accepted()[..]);
    let Ok((ServerRecord::Welcome(id), 8)) = ServerRecord::parse(&got[8..]) else {
        panic!("no welcome: {got:?}");
    };
    (c, id)
}

fn report_of(b: &[u8]) -> control::Report {
    match ServerRecord::parse(b) {
        Ok((ServerRecord::Report(r), control::REPORT_LEN)) => r,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_throughput_test_counts_sinks_sources_and_udp_and_drains_before_its_final_report() {
    let reg = Registry::new();
    let (mut c, id) = control(&reg);
    assert!(c.s.needs_clock());

    let mut sink = Peer::new(&reg, cfg());
    sink.send(&SessionHeader::data(Mode::Sink, id, 0).emit());
    assert_eq!(sink.run(), Stop::NeedInput(ANY));
    assert_eq!(sink.take(), accepted());
    sink.send(&[1; 1000]);
    sink.run();

    // A source waits for the first Snapshot before it writes.
    let mut src = Peer::new(&reg, cfg());
    src.now = 10 * MS;
    src.s = Session::new(&reg, cfg(), src.now);
    src.send(&SessionHeader::data(Mode::Source, id, 100).emit());
    assert_eq!(src.run(), Stop::Wait(60_010 * MS));
    assert_eq!(src.take(), accepted());

    let d = udp::Header::stream_data(id, 0, 0, 0);
    let t = reg.find(id).unwrap();
    reg.count_udp(t, &d, 200, 40 * MS);

    c.now = 50 * MS;
    c.send(&ClientRecord::Snapshot(1).emit());
    let due = c.run();
    assert_eq!(
        due,
        Stop::Report(ReportDue {
            test: id,
            is_final: false
        })
    );
    c.s.report(c.now, ReportInputs::default());
    assert_eq!(c.run(), Stop::NeedInput(8));
    let r = report_of(&c.take());
    assert_eq!((r.id, r.flags, r.sessions, r.elapsed_ns), (1, 0, 2, 50 * MS));
    assert_eq!((r.tcp_rx_bytes, r.udp_datagrams, r.udp_bytes), (1000, 1, 200));

    // Started: the source writes messages of 100 bytes, counted.
    assert_eq!(src.pump(1000), Stop::Budget);
    let sent = src.take().len() as u64;
    assert!(sent >= 1000);

    // Stop: the source stops and half-closes; the final Report waits for
    // the sink to end and for UDP to stand still 20 ms.
    c.now = 60 * MS;
    c.send(&ClientRecord::Stop(2).emit());
    assert_eq!(c.run(), Stop::Wait(2_060 * MS));
    assert_eq!(src.run(), Stop::Closed);
    assert!(src.shut, "the source half-closes");
    src.s.finish(Some(CpuTime { user_ns: 1, sys_ns: 2 }));
    c.s.tick(61 * MS);
    assert!(matches!(c.run(), Stop::Wait(_)), "the sink is still open");
    sink.s.eof();
    assert_eq!(sink.run(), Stop::Closed);
    drop(sink);
    c.s.tick(62 * MS);
    assert_eq!(
        c.run(),
        Stop::Report(ReportDue {
            test: id,
            is_final: true
        })
    );
    let cpu = CpuTime {
        user_ns: 10,
        sys_ns: 20,
    };
    c.s.report(
        62 * MS,
        ReportInputs {
            tcp: None,
            cpu: Some(cpu),
        },
    );
    c.run();
    let r = report_of(&c.take());
    assert_eq!(r.flags, control::FLAG_FINAL | control::FLAG_CPU);
    assert_eq!((r.tcp_tx_bytes, r.cpu_user_ns, r.cpu_sys_ns), (sent, 11, 22));

    // The control session ends: the id is forgotten.
    c.s.eof();
    assert_eq!(c.run(), Stop::Closed);
    drop(c);
    assert_eq!(reg.find(id), None);
    let mut late = Peer::new(&reg, cfg());
    late.send(&SessionHeader::data(Mode::Sink, id, 0).emit());
    late.linger_out();
    assert_eq!(refusal(&late.got).0, 9);
}

#[test]
fn the_final_report_goes_at_the_drain_deadline_when_sessions_stay_open() {
    let reg = Registry::new();
    let (mut c, id) = control(&reg);
    let mut sink = Peer::new(&reg, cfg());
    sink.send(&SessionHeader::data(Mode::Sink, id, 0).emit());
    sink.run();
    c.send(&ClientRecord::Stop(7).emit());
    let Stop::Wait(deadline) = c.run() else { panic!() };
    c.s.tick(deadline - 1);
    assert!(matches!(c.run(), Stop::Wait(_)));
    c.s.tick(deadline);
    assert!(matches!(c.run(), Stop::Report(ReportDue { is_final: true, .. })));
    c.s.report(deadline, ReportInputs::default());
    c.run();
    let r = report_of(&c.take());
    assert_eq!(r.flags & control::FLAG_DRAIN_TIMEOUT, control::FLAG_DRAIN_TIMEOUT);
    assert_eq!(r.id, 7);
}

#[test]
fn control_records_skip_unknown_types_of_any_length_and_bad_lengths_abort() {
    let reg = Registry::new();
    let (mut c, _) = control(&reg);
    let mut unknown = vec![0x40, 0x00, 0x0b, 0xb8];
    unknown.resize(3000, 0xee);
    c.chunk = 7;
    c.send(&unknown).send(&ClientRecord::Snapshot(3).emit());
    assert!(matches!(c.run(), Stop::Report(_)));
    c.s.report(0, ReportInputs::default());
    c.run();
    assert_eq!(report_of(&c.take()).id, 3);
    c.send(&[0, 1, 0, 4]);
    assert_eq!(c.run(), Stop::Closed);
    assert!(c.events.last().unwrap().contains("bad length 4"), "{:?}", c.events);
}

#[test]
fn a_source_without_a_snapshot_gives_up_at_the_idle_timeout() {
    let reg = Registry::new();
    let (_c, id) = control(&reg);
    let mut src = Peer::new(&reg, cfg());
    src.send(&SessionHeader::data(Mode::Source, id, 64).emit());
    let Stop::Wait(by) = src.run() else { panic!() };
    src.s.tick(by - 1);
    assert!(matches!(src.run(), Stop::Wait(_)));
    src.s.tick(by);
    assert_eq!(src.run(), Stop::Closed);
    assert!(src.events[1].contains("no Snapshot"), "{:?}", src.events);
}

/// Splits object responses: (code, body) each.
fn responses(mut b: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut v = Vec::new();
    while !b.is_empty() {
        let r = Response::parse(b).unwrap();
        let end = obj::RESPONSE_LEN + r.len as usize;
        v.push((r.code, b[obj::RESPONSE_LEN..end].to_vec()));
        b = &b[end..];
    }
    v
}

#[test]
fn object_requests_are_answered_in_order_even_when_pipelined() {
    let reg = Registry::new();
    for chunk in [1, 5, usize::MAX] {
        let mut p = Peer::new(&reg, cfg());
        p.chunk = chunk;
        p.send(&obj::emit_header());
        let mut reqs = Vec::new();
        let mut b = [0u8; 300];
        for (op, name) in [
            (obj::Op::List, &b""[..]),
            (obj::Op::Fetch, b"4K"),
            (obj::Op::Fetch, b"../etc/passwd"),
            (obj::Op::Fetch, b"gone"),
            (obj::Op::Fetch, b"a.txt"),
            (obj::Op::Fetch, b"x\xff"),
        ] {
            let n = obj::emit_request(op, name, &mut b).unwrap();
            reqs.extend_from_slice(&b[..n]);
        }
        // Every request at once: the session reads only what the current
        // one needs and answers before reading the next.
        p.send(&reqs);
        assert_eq!(p.run(), Stop::NeedInput(4));
        let got = p.take();
        assert_eq!(got[..8], accepted()[..]);
        let r = responses(&got[8..]);
        let cat = Cat::new();
        assert_eq!(r.len(), 6);
        assert_eq!(r[0], (0, cat.list.clone()));
        assert_eq!(r[1], (0, cat.objects[0].1.clone()));
        assert_eq!(r[2], (10, b"no object named '../etc/passwd'".to_vec()));
        assert_eq!(r[3], (8, b"cannot read the object: it vanished".to_vec()));
        assert_eq!(r[4], (0, b"hello".to_vec()));
        assert_eq!(r[5], (10, "no object named 'x\u{FFFD}'".as_bytes().to_vec()));
        let served = p.s.objects_served();
        assert_eq!((served.requests, served.bytes), (6, 4096 + 5));
        // BadRequest: answered, then the session closes.
        p.send(&[2, 0, 1, 0]);
        assert_eq!(p.run(), Stop::Closed);
        let r = responses(&p.take());
        assert_eq!(r[0].0, 11);
        assert!(String::from_utf8_lossy(&r[0].1).contains("bad name length 256"));
        assert!(p.events.last().unwrap().contains("after 6 requests"), "{:?}", p.events);
    }
}

#[test]
fn object_mode_without_a_catalogue_is_an_unknown_mode() {
    let reg = Registry::new();
    let mut p = Peer::new(&reg, Config::default());
    p.send(&obj::emit_header());
    assert_eq!(p.linger_out(), Stop::Closed);
    let (code, reason) = refusal(&p.got);
    assert_eq!(code, 3);
    assert!(reason.contains("object mode is not enabled"), "{reason}");
}

#[test]
fn header_timeout_and_idle_timeout() {
    let reg = Registry::new();
    let mut p = Peer::new(&reg, cfg());
    p.send(b"SMT");
    assert_eq!(p.run(), Stop::NeedInput(5));
    p.s.timeout(5_000 * MS);
    p.run();
    let (code, _) = refusal(&p.got);
    assert_eq!(code, 7);
    p.s.timeout(5_500 * MS);
    assert_eq!(p.run(), Stop::Closed);

    let mut p = Peer::new(&reg, cfg());
    p.send(&header(Mode::Rr, 2, 2)).send(b"x");
    p.run();
    p.s.timeout(0);
    assert_eq!(p.run(), Stop::Closed);
    assert!(
        p.events[1].contains("idle timeout mid-request (1 of 2 bytes)"),
        "{:?}",
        p.events
    );
}

#[test]
fn a_peer_gone_while_a_record_waits_ends_the_session_without_sending_it() {
    let reg = Registry::new();
    // A refusal record the stack would not take.
    let mut p = Peer::new(&reg, cfg());
    p.send(b"GET / HTTP/1.1\r\n");
    assert_eq!(p.pump(0), Stop::Budget);
    p.s.failed(Failure::Send, true);
    assert_eq!(p.run(), Stop::Closed);
    assert!(p.got.is_empty());
    // A BadRequest response, then a send timeout.
    let mut p = Peer::new(&reg, cfg());
    p.send(&obj::emit_header()).send(&[9, 0, 0, 0]);
    assert_eq!(p.pump(8), Stop::Budget);
    p.s.timeout(0);
    assert_eq!(p.run(), Stop::Closed);
    assert_eq!(p.got, accepted());
}

/// What a fuzzing driver does next.
#[derive(Clone, Debug)]
enum Act {
    Bytes(Vec<u8>),
    Eof,
    Timeout,
    Fail(bool, bool),
    Tick(u32),
    Udp(u16, u64),
    Snapshot,
    /// The peer stops taking output, or starts again.
    Stall,
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        8 => proptest::collection::vec(any::<u8>(), 0..40).prop_map(Act::Bytes),
        2 => (0u8..6, 1u32..300, 0u32..300).prop_map(|(m, a, b)| {
            let mut h = header(Mode::Rr, 1, 1);
            h[5] = if m == 0 { 16 } else { m };
            h[8..12].copy_from_slice(&(a % 4).to_be_bytes());
            h[12..16].copy_from_slice(&b.to_be_bytes());
            Act::Bytes(h.clone())
        }),
        1 => Just(Act::Eof),
        1 => Just(Act::Timeout),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(a, b)| Act::Fail(a, b)),
        1 => any::<u32>().prop_map(Act::Tick),
        1 => (0u16..40, any::<u64>()).prop_map(|(s, q)| Act::Udp(s, q)),
        1 => Just(Act::Snapshot),
        2 => Just(Act::Stall),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn no_input_sequence_makes_a_session_panic_or_spin(acts in proptest::collection::vec(act(), 0..24)) {
        let reg = Registry::new();
        let (mut c, id) = control(&reg);
        let mut p = Peer::new(&reg, cfg());
        let mut now = 0u64;
        let mut stalled = false;
        for a in acts {
            match a {
                Act::Bytes(b) => { p.send(&b); }
                Act::Eof => p.s.eof(),
                Act::Timeout => p.s.timeout(now),
                Act::Fail(true, gone) => p.broken = Some(gone),
                Act::Fail(false, gone) => p.s.failed(Failure::Receive, gone),
                Act::Tick(t) => { now += t as u64 * 1000; p.s.tick(now); c.s.tick(now); }
                Act::Udp(s, q) => {
                    if let Some(t) = reg.find(id) {
                        reg.count_udp(t, &udp::Header::stream_data(id, s, q, q), 100, now);
                    }
                }
                Act::Snapshot => { c.send(&ClientRecord::Snapshot(1).emit()); }
                Act::Stall => stalled = !stalled,
            }
            p.now = now;
            // A stalled peer takes no output: records stay queued.
            let budget = if stalled { p.got.len() } else { p.got.len() + 100_000 };
            match p.pump(budget) {
                Stop::Report(_) => p.s.report(now, ReportInputs::default()),
                Stop::Closed => break,
                _ => {}
            }
            if let Stop::Report(_) = c.pump(100_000) {
                c.s.report(now, ReportInputs::default());
            }
        }
    }
}
