//! The pure session machine (`proto::machine::Session`) driven as a
//! responder would drive it, but by arbitrary input: bytes in any chunking,
//! end of stream, timeouts, failed socket calls, sends the stack takes only
//! part of, a peer that stops reading, kernel send stamps, UDP datagrams of
//! the test, Snapshot and Stop on a control session beside it, and
//! arbitrary time steps.
//!
//! Invariants checked (those `proto::machine` documents): no panic; no
//! empty send and no read of nothing; a read of at most what was asked is
//! taken whole; a record is never longer than the largest one the machine
//! sends (an object error response, 12 + 255 bytes), a refusal never longer
//! than its status record and followed by no payload; rr and crr send at
//! most one response of the agreed size per complete request; sinks and
//! control sessions send no payload, sources only after the test started
//! and never more than their write size per call; object bodies stay inside
//! the object or LIST body they are cut from; a lingering close reads at
//! most `LINGER_BYTES`; a control session sends at most one Report per
//! request record (plus the final one); and when every session has ended
//! no throughput test slot is left taken.

use stackmeter_proto::control::{ClientRecord, SHORT_LEN};
use stackmeter_proto::header::{Mode, SessionHeader};
use stackmeter_proto::limits;
use stackmeter_proto::machine::{
    Catalogue, Config, Event, Failure, Lookup, Next, Reason, Registry, ReportInputs, Service, Session, Source,
};
use stackmeter_proto::objects::{self as obj, Entry, RESPONSE_LEN};
use stackmeter_proto::stamps::Block;
use stackmeter_proto::status::MAX_STATUS_LEN;
use stackmeter_proto::udp;

/// The largest record a session sends (object error response).
const MAX_RECORD: usize = RESPONSE_LEN + obj::MAX_REASON_LEN;
/// Output one pump may take before the peer is "slow" and the pump stops.
const PUMP_BYTES: u64 = 256 << 10;

/// Three objects: 4 KiB, 100 bytes, and one listed but unreadable.
struct Cat {
    list_len: u64,
}

const OBJECTS: [(&[u8], u64); 3] = [(b"4K", 4096), (b"a.txt", 100), (b"gone", 3)];

impl Cat {
    fn new() -> Cat {
        let entries: u64 = OBJECTS
            .iter()
            .map(|(name, size)| {
                Entry {
                    size: *size,
                    crc32: 0,
                    flags: 0,
                    name,
                }
                .encoded_len() as u64
            })
            .sum();
        Cat { list_len: 4 + entries }
    }

    fn size(&self, s: Source) -> u64 {
        match s {
            Source::List => self.list_len,
            Source::Object(i) => OBJECTS.get(i as usize).map_or(0, |o| o.1),
            Source::Payload => u64::MAX,
        }
    }
}

impl Catalogue for Cat {
    fn list_len(&self) -> u64 {
        self.list_len
    }

    fn fetch(&mut self, name: &[u8], why: &mut Reason) -> Lookup {
        match OBJECTS.iter().position(|(n, _)| *n == name) {
            Some(2) => {
                use core::fmt::Write;
                let _ = write!(why, "it vanished");
                Lookup::Unreadable
            }
            Some(i) => Lookup::Found {
                index: i as u32,
                size: OBJECTS[i].1,
            },
            None => Lookup::NotFound,
        }
    }
}

/// Reads the fuzz input as a stream of numbers (zeros once it is used up).
struct Input<'a> {
    data: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    fn bytes(&mut self, n: usize) -> &[u8] {
        let start = self.at.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.at = start + n;
        &self.data[start..end]
    }
}

/// Why a pump stopped.
#[derive(PartialEq, Eq)]
enum Stop {
    /// It wants bytes the peer has not sent, or time to pass.
    Idle,
    /// The session is over.
    Closed,
}

/// One session with what its driver and its peer know about it.
struct Driven<'r> {
    s: Session<&'r Registry>,
    cat: Cat,
    /// Client bytes not yet read.
    pending: Vec<u8>,
    /// Largest read, and largest send the stack takes.
    chunk: usize,
    send_cap: usize,
    /// The peer takes no output.
    stalled: bool,
    /// Every send fails (with "peer gone" or not).
    broken: Option<bool>,
    service: Option<Service>,
    refused: bool,
    closed: bool,
    /// Bytes taken by the machine after acceptance, and during a linger.
    data_in: u64,
    linger_in: u64,
    /// Payload and record bytes sent after the first record.
    payload_out: u64,
    records_out: u64,
    first_record: bool,
}

impl<'r> Driven<'r> {
    fn new(reg: &'r Registry, cfg: Config, now: u64) -> Driven<'r> {
        Driven {
            s: Session::new(reg, cfg, now),
            cat: Cat::new(),
            pending: Vec::new(),
            chunk: usize::MAX,
            send_cap: usize::MAX,
            stalled: false,
            broken: None,
            service: None,
            refused: false,
            closed: false,
            data_in: 0,
            linger_in: 0,
            payload_out: 0,
            records_out: 0,
            first_record: true,
        }
    }

    fn pump(&mut self, now: u64) -> Stop {
        if self.closed {
            return Stop::Closed;
        }
        let start = self.payload_out + self.records_out;
        // Steps that moved no byte in a row (events, stamps, Reports,
        // half-closes are finite), and sends in this pump: a peer that
        // takes a byte at a time is slow, not a spinning machine.
        let (mut idle_steps, mut sends) = (0, 0);
        loop {
            idle_steps += 1;
            assert!(
                idle_steps < 1000,
                "the session asks for the same thing forever: {:?}",
                self.s.poll()
            );
            match self.s.poll() {
                Next::Event(Event::Accepted(svc)) => {
                    assert!(self.service.is_none() && !self.refused, "accepted twice");
                    self.service = Some(svc);
                }
                Next::Event(Event::Refused(_)) => {
                    assert!(self.service.is_none(), "refused after acceptance");
                    self.refused = true;
                }
                Next::Event(Event::Aborted) => {}
                Next::Send(body) => {
                    if let Some(gone) = self.broken {
                        self.s.failed(Failure::Send, gone);
                        continue;
                    }
                    sends += 1;
                    if self.stalled || sends > 256 || self.payload_out + self.records_out - start > PUMP_BYTES {
                        return Stop::Idle;
                    }
                    self.send(body);
                    idle_steps = 0;
                }
                Next::Read(max) => {
                    assert!(max > 0, "a read of nothing");
                    if self.pending.is_empty() {
                        return Stop::Idle;
                    }
                    let n = max.min(self.chunk).min(self.pending.len());
                    let data: Vec<u8> = self.pending.drain(..n).collect();
                    let was_linger = self.refused;
                    // A lingering close asks for no read once it drained
                    // LINGER_BYTES (it takes the last read whole).
                    assert!(
                        self.linger_in < limits::LINGER_BYTES as u64,
                        "lingered past LINGER_BYTES"
                    );
                    let took = self.s.input(&data, now, &mut self.cat);
                    assert_eq!(took, n, "a read of at most what was asked is taken whole");
                    idle_steps = 0;
                    if was_linger {
                        self.linger_in += took as u64;
                    } else if self.service.is_some() {
                        self.data_in += took as u64;
                    }
                }
                Next::Stamp => self.s.stamp(Block {
                    app: Some((now, now + 1)),
                    rx_kernel: Some(now.saturating_sub(1)),
                    prev_tx: None,
                    hardware: false,
                }),
                Next::Report(_) => self.s.report(now, ReportInputs::default()),
                Next::Wait(_) => return Stop::Idle,
                Next::Shutdown => self.s.shut_done(),
                Next::Close => {
                    self.closed = true;
                    return Stop::Closed;
                }
            }
            self.check();
        }
    }

    /// Sends what the stack takes of the record and the body, and checks
    /// the body against the session's service.
    fn send(&mut self, body: Option<stackmeter_proto::machine::Outgoing>) {
        let record = self.s.record().len();
        assert!(record > 0 || body.is_some(), "an empty send");
        assert!(record <= MAX_RECORD, "a record of {record} bytes");
        if self.refused && self.service.is_none() {
            assert!(body.is_none(), "payload after a refusal");
            assert!(record <= MAX_STATUS_LEN, "a refusal of {record} bytes");
        }
        let blen = body.map_or(0, |b| b.len);
        if let Some(b) = body {
            assert!(b.len > 0, "a body of nothing");
            match (self.service, b.source) {
                (Some(Service::Rr { resp, .. } | Service::Crr { resp, .. }), Source::Payload) => {
                    assert!(b.len <= resp as u64, "a response body of {} for size {resp}", b.len);
                }
                (Some(Service::Source { write, .. }), Source::Payload) => {
                    assert!(b.len <= write as u64, "a source write of {} for size {write}", b.len);
                }
                (Some(Service::Objects), s @ (Source::List | Source::Object(_))) => {
                    let end = b.offset.checked_add(b.len).expect("body end overflows");
                    assert!(end <= self.cat.size(s), "{s:?} body ends at {end}");
                }
                (svc, s) => panic!("a {s:?} body in session {svc:?}"),
            }
        }
        let n = (record as u64 + blen).min(self.send_cap as u64).max(1) as usize;
        let payload = (n as u64).saturating_sub(record as u64);
        if self.first_record {
            self.first_record = false;
        } else {
            self.records_out += (n - payload as usize) as u64;
        }
        self.payload_out += payload;
        self.s.sent(n);
    }

    /// Output never exceeds what the input asked for.
    fn check(&self) {
        match self.service {
            Some(Service::Rr { req, resp, .. } | Service::Crr { req, resp }) => {
                // A response goes only after its whole request; crr has one.
                let mut asked = self.data_in / req as u64;
                if matches!(self.service, Some(Service::Crr { .. })) {
                    asked = asked.min(1);
                }
                assert!(
                    self.payload_out <= asked * resp as u64,
                    "{} payload bytes for {} request bytes ({req}:{resp})",
                    self.payload_out,
                    self.data_in
                );
            }
            Some(Service::Sink { .. }) => assert_eq!(self.payload_out, 0, "a sink sent payload"),
            Some(Service::Control { .. }) => {
                assert_eq!(self.payload_out, 0, "a control session sent payload");
                // Welcome, then one Report per Snapshot or Stop, plus the final.
                let reports = self.data_in / SHORT_LEN as u64 + 1;
                let most = SHORT_LEN as u64 + reports * stackmeter_proto::control::REPORT_LEN as u64;
                assert!(
                    self.records_out <= most,
                    "{} record bytes for {} in",
                    self.records_out,
                    self.data_in
                );
            }
            _ => {}
        }
    }
}

/// The header op: a header of any mode with small sizes, so that the data
/// phases are reached without the fuzzer guessing the magic.
fn header(inp: &mut Input) -> Vec<u8> {
    let modes = [1u8, 2, 3, 4, 5, obj::MODE, 0, 9];
    let mode = modes[inp.byte() as usize % modes.len()];
    let mut h = SessionHeader {
        mode: Mode::Rr,
        req_size: inp.byte() as u32 % 5,
        resp_size: inp.u32() % 70_000,
        flags: inp.byte() as u32 % 3,
    }
    .emit()
    .to_vec();
    h[5] = mode;
    if mode == obj::MODE {
        h.truncate(obj::HEADER_LEN);
        h[6..8].copy_from_slice(&(obj::HEADER_LEN as u16).to_be_bytes());
    }
    h
}

/// The fuzz target: a control session (test open) and one session driven
/// by `data`.
pub fn session(data: &[u8]) {
    let reg = Registry::new();
    let cfg = Config {
        objects: data.first().is_none_or(|b| b & 0x80 == 0),
        stamps: true,
        ..Config::default()
    };
    let mut now: u64 = 1_000;
    let mut c = Driven::new(&reg, cfg, now);
    c.pending.extend_from_slice(&SessionHeader::control().emit());
    c.pump(now);
    let test = match c.service {
        Some(Service::Control { test }) => test,
        _ => panic!("the control session was not accepted"),
    };
    let mut d = Driven::new(&reg, cfg, now);
    if data.first().is_some_and(|b| b & 0x40 != 0) {
        // A connection beyond the driver's session limit.
        d.s = Session::busy(&reg, cfg, now);
    }
    let mut inp = Input { data, at: 1 };
    let mut snapshots = 0u32;
    while !inp.done() && !d.closed {
        match inp.byte() % 16 {
            0..=4 => {
                let n = inp.byte() as usize % 64 + 1;
                let bytes = inp.bytes(n).to_vec();
                d.pending.extend_from_slice(&bytes);
            }
            5 => {
                let h = header(&mut inp);
                d.pending.extend_from_slice(&h);
            }
            6 => d.s.eof(),
            7 => d.s.timeout(now),
            8 => d.s.failed(Failure::Receive, inp.byte() & 1 == 1),
            9 => d.broken = Some(inp.byte() & 1 == 1),
            10 => {
                // An arbitrary step of time, up to 4295 s.
                now = now.saturating_add(inp.u32() as u64 * 1_000);
                d.s.tick(now);
                c.s.tick(now);
            }
            11 => {
                let (stream, seq) = (inp.byte() as u16 % 40, inp.u32() as u64);
                if let Some(t) = reg.find(test) {
                    reg.count_udp(t, &udp::Header::stream_data(test, stream, seq, seq), 100, now);
                }
            }
            12 => {
                snapshots += 1;
                let r = match inp.byte() % 4 {
                    0 => ClientRecord::Stop(snapshots),
                    _ => ClientRecord::Snapshot(snapshots),
                };
                c.pending.extend_from_slice(&r.emit());
            }
            13 => d.stalled = !d.stalled,
            14 => {
                d.chunk = inp.byte() as usize % 64 + 1;
                d.send_cap = (inp.u32() as usize % 100_000).max(1);
            }
            _ => {
                let key = inp.u32();
                d.s.tx_stamp(key, now);
            }
        }
        d.pump(now);
        c.pump(now);
    }
    // The peer goes away: end of stream, then the deadlines pass.
    d.stalled = false;
    d.broken = None;
    d.s.eof();
    d.pump(now);
    now = now.saturating_add(3_600_000_000_000);
    d.s.timeout(now);
    d.pump(now);
    d.s.finish(None);
    c.s.eof();
    c.pump(now);
    c.s.finish(None);
    // Every test slot is free again.
    let slots: Vec<_> = (0..limits::MAX_TESTS).map(|_| reg.open(now)).collect();
    assert!(
        slots.iter().all(std::result::Result::is_ok),
        "a throughput test slot leaked"
    );
}
