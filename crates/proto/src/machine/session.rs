//! One TCP connection of a responder, from the first header byte to the
//! close, as a state machine: bytes and times in, [`Next`] steps out.
//!
//! Phases: the header (read and judged, then accepted or refused); after a
//! refusal the status record, a half-close and a lingering read (so no reset
//! destroys the record); after acceptance the data phase of the mode: rr,
//! crr, control, sink, source or objects. A session that joined or owns a
//! throughput test leaves it or closes it when dropped.

use super::config::Config;
use super::header_reader::{HeaderReader, Parsed};
use super::objects::{Asked, Catalogue, Lookup, RequestReader};
use super::record_reader::{Record, RecordReader};
use super::registry::{CpuTime, Registry, ReportInputs, TestRef};
use super::step::{Deadline, Event, Failure, Next, Outgoing, ReportDue, Service, Source, ANY};
use super::text::Reason;
use crate::auth::{self, CHALLENGE_LEN, PROOF_LEN};
use crate::control::{self, FLAG_FINAL};
use crate::header::{Mode, SessionHeader, EXT_HEADER_LEN, FLAG_AUTH, FLAG_STAMPS};
use crate::limits;
use crate::objects::{self as obj, Response};
use crate::stamps::{Block, BLOCK_LEN};
use crate::status::{self, Refusal, MAX_STATUS_LEN, STATUS_PREFIX_LEN};
use core::fmt::{self, Write};
use core::ops::Deref;

/// Room for the largest record the machine sends: an object error response
/// (12 + 255), which is longer than a refusal (8 + 255) or a Report (128).
const OUT_LEN: usize = obj::RESPONSE_LEN + obj::MAX_REASON_LEN;
const LINGER_NS: u64 = limits::LINGER_MS * 1_000_000;
/// Seconds a session may outlive the longest test (set up, drain).
const TEST_GRACE_S: u64 = 5;

/// Record bytes built and not yet sent.
struct Out {
    buf: [u8; OUT_LEN],
    off: u16,
    len: u16,
}

impl Out {
    const fn new() -> Out {
        Out {
            buf: [0; OUT_LEN],
            off: 0,
            len: 0,
        }
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.off == self.len
    }

    #[inline]
    fn pending(&self) -> &[u8] {
        &self.buf[self.off as usize..self.len as usize]
    }

    /// Replaces what is pending with `bytes` (at most [`OUT_LEN`]).
    fn set(&mut self, bytes: &[u8]) {
        self.off = 0;
        self.len = 0;
        self.push(bytes);
    }

    fn push(&mut self, bytes: &[u8]) {
        let at = self.len as usize;
        let n = bytes.len().min(OUT_LEN - at);
        self.buf[at..at + n].copy_from_slice(&bytes[..n]);
        self.len += n as u16;
    }

    fn clear(&mut self) {
        self.off = 0;
        self.len = 0;
    }

    /// `n` bytes went out: consumes them from the record; returns how many
    /// of them were payload after it.
    #[inline]
    fn sent(&mut self, n: usize) -> usize {
        let k = n.min((self.len - self.off) as usize);
        self.off += k as u16;
        n - k
    }
}

/// rr and crr: the current transaction.
#[derive(Clone, Copy)]
struct Exchange {
    req: u32,
    resp: u32,
    /// Bytes of the current request received.
    got: u32,
    /// Bytes of the current response not yet sent.
    left: u64,
    /// crr: the one transaction is complete; only the client's close may
    /// follow.
    answered: bool,
    /// rr with stamps: every response starts with a stamp block.
    stamps: bool,
    /// A request is complete and its stamp block not yet built.
    stamp_due: bool,
    /// A response is being sent (stamped sessions).
    open: bool,
    /// Responses completely handed to the stack (stamped sessions).
    served: u64,
    /// The latest response whose kernel send stamp is known: its
    /// transaction number and the stamp.
    prev_tx: Option<(u64, u64)>,
}

impl Exchange {
    fn new(h: &SessionHeader) -> Exchange {
        Exchange {
            req: h.req_size,
            resp: h.resp_size,
            got: 0,
            left: 0,
            answered: false,
            stamps: false,
            stamp_due: false,
            open: false,
            served: 0,
            prev_tx: None,
        }
    }

    #[inline]
    fn body(&self) -> Option<Outgoing> {
        (self.left > 0).then_some(Outgoing {
            source: Source::Payload,
            offset: self.resp as u64 - self.left,
            len: self.left,
        })
    }
}

/// The control session's state between records.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reports {
    /// Reading records.
    Idle,
    /// A Report answering `id` waits for the driver's figures.
    Due { id: u32, flags: u8 },
    /// Stop came: the final Report waits for the drain rule.
    Draining { id: u32, deadline: u64 },
}

/// A source's writes.
#[derive(Clone, Copy)]
struct Writer {
    /// Bytes per send call.
    size: u32,
    /// Bytes of the current message already sent.
    off: u32,
    /// Abort if no Snapshot started the test by then.
    start_by: u64,
    /// The latest time `tick` gave (paced sources wait for their rate).
    now: u64,
}

/// A header waiting for its proof (the responder has a secret).
#[derive(Clone, Copy)]
struct Auth {
    parsed: Parsed,
    header: [u8; EXT_HEADER_LEN],
    challenge: [u8; CHALLENGE_LEN],
    proof: [u8; PROOF_LEN],
    got: u8,
}

/// The lingering close after a refusal.
#[derive(Clone, Copy)]
struct Linger {
    got: usize,
    shut: bool,
    until: u64,
}

// No allocation here: a session is one fixed-size value whatever its
// phase, and the phase changes a few times per connection, never per message.
#[allow(clippy::large_enum_variant)]
enum Phase {
    Header(HeaderReader),
    Auth(Auth),
    Rr(Exchange),
    Crr(Exchange),
    Control(RecordReader, Reports),
    Sink,
    Source(Writer),
    Objects(RequestReader, Option<Outgoing>),
    Linger(Linger),
    /// Send what is queued, half-close if `shut`, then close.
    Ending {
        shut: bool,
    },
}

/// One TCP session of a responder. See the module documentation of
/// [`crate::machine`] for the call order.
///
/// `R` is how the session reaches the shared [`Registry`]: `&Registry`,
/// `&'static Registry`, an `Arc<Registry>`: anything that derefs to it.
pub struct Session<R: Deref<Target = Registry>> {
    registry: R,
    cfg: Config,
    phase: Phase,
    out: Out,
    /// The test this session owns (control) or joined (sink, source).
    test: Option<TestRef>,
    owner: bool,
    event: Option<Event>,
    /// The reason of the last refusal or abort.
    note: Reason,
    header_by: u64,
    /// Object requests answered and object bytes sent.
    requests: u64,
    object_bytes: u64,
    /// When the session must end (the longest test), once accepted.
    ends_by: Option<u64>,
}

impl<R: Deref<Target = Registry>> Session<R> {
    /// A new connection at `now_ns`: the header must be complete by
    /// `now_ns + cfg.header_timeout_ns`.
    pub fn new(registry: R, cfg: Config, now_ns: u64) -> Session<R> {
        Session {
            registry,
            cfg,
            phase: Phase::Header(HeaderReader::new()),
            out: Out::new(),
            test: None,
            owner: false,
            event: None,
            note: Reason::new(),
            header_by: now_ns.saturating_add(cfg.header_timeout_ns),
            requests: 0,
            object_bytes: 0,
            ends_by: None,
        }
    }

    /// A connection the driver has no room for (it runs
    /// `cfg.max_sessions`): refused `Busy` at once, then the lingering close.
    pub fn busy(registry: R, cfg: Config, now_ns: u64) -> Session<R> {
        let mut s = Session::new(registry, cfg, now_ns);
        let max = cfg.max_sessions;
        s.refuse(Refusal::Busy, format_args!("{max} sessions running, the limit"), now_ns);
        s
    }

    /// What the driver should do next.
    pub fn poll(&mut self) -> Next {
        if let Some(e) = self.event.take() {
            return Next::Event(e);
        }
        self.step()
    }

    /// The record bytes to send before the body of a [`Next::Send`] (a
    /// status record, Welcome, Report, object response head); may be empty.
    pub fn record(&self) -> &[u8] {
        self.out.pending()
    }

    /// The reason of the last refusal or abort ([`Event::Refused`],
    /// [`Event::Aborted`]).
    pub fn reason(&self) -> &str {
        self.note.as_str()
    }

    fn step(&mut self) -> Next {
        let out = !self.out.is_empty();
        match &mut self.phase {
            Phase::Rr(x) => {
                if x.stamp_due {
                    Next::Stamp
                } else if out || x.left > 0 {
                    Next::Send(x.body())
                } else {
                    Next::Read((x.req - x.got) as usize)
                }
            }
            Phase::Crr(x) => {
                if out || x.left > 0 {
                    Next::Send(x.body())
                } else if x.answered {
                    Next::Read(ANY)
                } else {
                    Next::Read((x.req - x.got) as usize)
                }
            }
            Phase::Header(h) => Next::Read(h.want()),
            Phase::Auth(_) if out => Next::Send(None),
            Phase::Auth(a) => Next::Read(PROOF_LEN - a.got as usize),
            Phase::Sink if out => Next::Send(None),
            Phase::Sink => Next::Read(ANY),
            Phase::Control(..) if out => Next::Send(None),
            Phase::Control(rec, reports) => match *reports {
                Reports::Idle => Next::Read(rec.want()),
                Reports::Due { flags, .. } => Next::Report(ReportDue {
                    test: self.test.map_or(0, |t| t.id()),
                    is_final: flags & FLAG_FINAL != 0,
                }),
                Reports::Draining { deadline, .. } => Next::Wait(deadline),
            },
            Phase::Source(_) if out => Next::Send(None),
            Phase::Source(w) => {
                let Some(t) = self.test else {
                    return Next::Close;
                };
                let w = *w;
                if self.registry.stopped(t) {
                    self.phase = Phase::Ending { shut: true };
                    Next::Shutdown
                } else if !self.registry.started(t) {
                    Next::Wait(w.start_by)
                } else if let Some(due) = paced(&self.registry, &self.cfg, t, w.now) {
                    // The test is ahead of the highest rate: wait until
                    // its bytes so far are due.
                    Next::Wait(due)
                } else {
                    Next::Send(Some(Outgoing {
                        source: Source::Payload,
                        offset: w.off as u64,
                        len: (w.size - w.off) as u64,
                    }))
                }
            }
            Phase::Objects(req, body) => {
                if out || body.is_some() {
                    Next::Send(*body)
                } else {
                    Next::Read(req.want())
                }
            }
            Phase::Linger(_) if out => Next::Send(None),
            Phase::Linger(l) if !l.shut => Next::Shutdown,
            Phase::Linger(_) => Next::Read(ANY),
            Phase::Ending { .. } if out => Next::Send(None),
            Phase::Ending { shut: true } => Next::Shutdown,
            Phase::Ending { shut: false } => Next::Close,
        }
    }

    /// How long the driver may wait for the peer in the current phase.
    pub fn deadline(&self) -> Deadline {
        match &self.phase {
            Phase::Header(_) | Phase::Auth(_) => Deadline::At(self.header_by),
            Phase::Linger(l) => Deadline::At(l.until),
            _ => Deadline::Idle(self.cfg.idle_timeout_ns),
        }
    }

    /// Whether [`Session::input`] reads its `now_ns` in the current phase:
    /// in the header and control phases. In the data phases of rr, crr,
    /// sink, source and objects the only deadline is the idle timeout
    /// ([`Deadline::Idle`], relative to the last progress), so a driver on
    /// the measured path may skip reading its clock and pass 0.
    pub fn needs_clock(&self) -> bool {
        matches!(self.phase, Phase::Header(_) | Phase::Auth(_) | Phase::Control(..))
    }

    /// Bytes received: at most what the last [`Next::Read`] asked for (more
    /// is allowed; the machine takes what it can). Returns how many bytes it
    /// took; a driver that read at most what was asked always gets them all
    /// taken. `objects` serves object sessions (any value otherwise).
    pub fn input<C: Catalogue + ?Sized>(&mut self, data: &[u8], now_ns: u64, objects: &mut C) -> usize {
        let mut done = 0;
        while done < data.len() && self.event.is_none() {
            let k = self.input_one(&data[done..], now_ns, objects);
            if k == 0 {
                break;
            }
            done += k;
        }
        done
    }

    fn input_one<C: Catalogue + ?Sized>(&mut self, data: &[u8], now_ns: u64, objects: &mut C) -> usize {
        let out = !self.out.is_empty();
        match &mut self.phase {
            Phase::Rr(x) | Phase::Crr(x) if !x.answered => {
                if out || x.left > 0 {
                    return 0;
                }
                let take = data.len().min((x.req - x.got) as usize);
                x.got += take as u32;
                if x.got == x.req {
                    x.got = 0;
                    x.left = x.resp as u64;
                    if x.stamps {
                        // The block is the response's first bytes.
                        x.left -= BLOCK_LEN as u64;
                        x.stamp_due = true;
                        x.open = true;
                    }
                    if let Phase::Crr(x) = &mut self.phase {
                        // crr: the status record rides with the response.
                        x.answered = true;
                        self.out.set(&accepted());
                    }
                }
                take
            }
            Phase::Crr(_) => {
                self.abort(format_args!("data after the crr transaction"));
                data.len()
            }
            Phase::Rr(_) => 0,
            Phase::Header(h) => {
                let (take, verdict) = h.input(data);
                if let Some(p) = verdict {
                    let (flags, mut header) = (h.flags(), [0u8; EXT_HEADER_LEN]);
                    let b = h.bytes();
                    header[..b.len()].copy_from_slice(b);
                    self.judged(p, flags, header, now_ns);
                }
                take
            }
            Phase::Auth(_) if out => 0,
            Phase::Auth(a) => {
                let at = a.got as usize;
                let take = data.len().min(PROOF_LEN - at);
                a.proof[at..at + take].copy_from_slice(&data[..take]);
                a.got += take as u8;
                if a.got as usize == PROOF_LEN {
                    let a = *a;
                    let right = self
                        .cfg
                        .key
                        .is_some_and(|k| k.check_proof(&a.challenge, &a.header, &a.proof));
                    if right {
                        self.begin(a.parsed, now_ns);
                    } else {
                        self.refuse(
                            Refusal::Auth,
                            format_args!("failed: the proof does not match this responder's secret"),
                            now_ns,
                        );
                    }
                }
                take
            }
            Phase::Sink => {
                if let Some(t) = self.test {
                    self.registry.add_rx(t, data.len() as u64);
                }
                data.len()
            }
            Phase::Control(rec, Reports::Idle) if !out => {
                let (take, record) = rec.input(data);
                match record {
                    None => {}
                    Some(Record::BadLength(l)) => self.abort(format_args!("control record with bad length {l}")),
                    Some(Record::Snapshot(id)) => self.snapshot(id),
                    Some(Record::Stop(id)) => self.stop(id, now_ns),
                }
                take
            }
            Phase::Control(..) => 0,
            Phase::Objects(req, body) if !out && body.is_none() => {
                let (take, asked) = req.input(data);
                if let Some(a) = asked {
                    self.answer(a, objects);
                }
                take
            }
            Phase::Objects(..) => 0,
            Phase::Linger(l) => {
                l.got += data.len();
                if l.got >= limits::LINGER_BYTES {
                    self.phase = Phase::Ending { shut: false };
                }
                data.len()
            }
            // Nothing is expected from a source's client; after the end,
            // nothing matters.
            Phase::Source(_) | Phase::Ending { .. } => data.len(),
        }
    }

    /// The whole header is in: with a secret, a valid header is
    /// challenged first (or refused when it does not ask to authenticate).
    fn judged(&mut self, p: Parsed, flags: u32, header: [u8; EXT_HEADER_LEN], now_ns: u64) {
        let Some(key) = self.cfg.key else {
            return self.begin(p, now_ns);
        };
        if matches!(p, Parsed::Refuse(_)) {
            return self.begin(p, now_ns);
        }
        if flags & FLAG_AUTH == 0 {
            return self.refuse(
                Refusal::Auth,
                format_args!("required: this responder needs the shared secret (client --secret-file)"),
                now_ns,
            );
        }
        let counter = self.registry.challenge_counter();
        let challenge = auth::challenge(&key.nonce(&self.cfg.seed, now_ns, counter));
        self.out.set(&challenge);
        self.phase = Phase::Auth(Auth {
            parsed: p,
            header,
            challenge,
            proof: [0; PROOF_LEN],
            got: 0,
        });
    }

    /// The whole header is in (and authenticated): refuse it, or start the
    /// data phase.
    fn begin(&mut self, p: Parsed, now_ns: u64) {
        let h = match p {
            Parsed::Refuse(e) => {
                let r = e.refusal().unwrap_or(Refusal::BadHeader);
                return self.refuse(r, format_args!("{e}"), now_ns);
            }
            Parsed::Objects if !self.cfg.objects => {
                return self.refuse(
                    Refusal::UnknownMode,
                    format_args!("object mode is not enabled on this responder"),
                    now_ns,
                );
            }
            Parsed::Objects => {
                self.out.set(&accepted());
                return self.accept(Service::Objects, Phase::Objects(RequestReader::new(), None), now_ns);
            }
            Parsed::Session(h) => h,
        };
        let max = self.cfg.max_msg;
        let sizes = match h.mode {
            Mode::Rr | Mode::Crr => [("request", h.req_size), ("response", h.resp_size)],
            Mode::Source => [("write", h.resp_size), ("write", 0)],
            Mode::Sink | Mode::Control => [("", 0), ("", 0)],
        };
        if let Some((what, size)) = sizes.into_iter().find(|&(_, s)| s > max) {
            return self.refuse(
                Refusal::TooLarge,
                format_args!("{what} size {size} exceeds limit {max}"),
                now_ns,
            );
        }
        let (req, resp) = (h.req_size, h.resp_size);
        match h.mode {
            Mode::Rr => {
                self.out.set(&accepted());
                let mut x = Exchange::new(&h);
                // A response too short for the block: the flag is ignored.
                x.stamps = h.flags & FLAG_STAMPS != 0 && resp as usize >= BLOCK_LEN && self.cfg.stamps;
                let stamps = x.stamps;
                self.accept(Service::Rr { req, resp, stamps }, Phase::Rr(x), now_ns);
            }
            Mode::Crr => self.accept(Service::Crr { req, resp }, Phase::Crr(Exchange::new(&h)), now_ns),
            Mode::Control => match self.registry.open(now_ns) {
                Err(_) => {
                    let n = limits::MAX_TESTS;
                    self.refuse(
                        Refusal::Busy,
                        format_args!("{n} throughput tests running, the limit"),
                        now_ns,
                    );
                }
                Ok(t) => {
                    self.test = Some(t);
                    self.owner = true;
                    self.out.set(&accepted());
                    match self.cfg.limits.any() {
                        true => self.out.push(&control::welcome_limits(t.id(), &self.cfg.limits)),
                        false => self.out.push(&control::welcome(t.id())),
                    }
                    let service = Service::Control { test: t.id() };
                    self.accept(service, Phase::Control(RecordReader::new(), Reports::Idle), now_ns);
                }
            },
            Mode::Sink | Mode::Source => {
                let id = h.test_id();
                let Some(t) = self.registry.join(id) else {
                    return self.refuse(Refusal::UnknownTest, format_args!("no open test {id}"), now_ns);
                };
                self.test = Some(t);
                self.out.set(&accepted());
                if h.mode == Mode::Sink {
                    self.accept(
                        Service::Sink {
                            test: id,
                            read_hint: resp,
                        },
                        Phase::Sink,
                        now_ns,
                    );
                } else {
                    let w = Writer {
                        size: resp,
                        off: 0,
                        start_by: now_ns.saturating_add(self.cfg.idle_timeout_ns),
                        now: now_ns,
                    };
                    self.accept(Service::Source { test: id, write: resp }, Phase::Source(w), now_ns);
                }
            }
        }
    }

    fn accept(&mut self, service: Service, phase: Phase, now_ns: u64) {
        self.event = Some(Event::Accepted(service));
        self.phase = phase;
        let max = self.cfg.limits.max_test_s as u64;
        if max > 0 {
            self.ends_by = Some(now_ns.saturating_add((max + TEST_GRACE_S) * 1_000_000_000));
        }
    }

    /// When the session must end at the latest (accepted sessions of a
    /// responder with a longest test: that many seconds plus 5 for the set
    /// up and the drain after accept), or `None`. A driver that gets a time
    /// here reads its clock while it serves the session and calls
    /// [`Session::expire`] once it is reached.
    pub fn ends_by(&self) -> Option<u64> {
        self.ends_by
    }

    /// The longest test has passed ([`Session::ends_by`]): a source stops
    /// as after Stop (FIN, so its client reads to the end); any other
    /// session is aborted with the limit as the reason.
    pub fn expire(&mut self, now_ns: u64) {
        if self.ends_by.is_none_or(|t| now_ns < t) || matches!(self.phase, Phase::Linger(_) | Phase::Ending { .. }) {
            return;
        }
        self.ends_by = None;
        let max = self.cfg.limits.max_test_s;
        if let (Phase::Source(_), Some(t)) = (&self.phase, self.test) {
            self.registry.stop(t);
            return;
        }
        self.abort(format_args!("the responder allows at most {max} s per test"));
    }

    /// Refuses a session the machine has just accepted ([`Event::Accepted`]
    /// was the last step, its status record not yet sent) because of a
    /// limit only the driver can count (tests per client address): the
    /// status record becomes a `Limit` refusal with `reason`.
    pub fn refuse_limit(&mut self, reason: fmt::Arguments<'_>, now_ns: u64) {
        let ok = match &self.phase {
            Phase::Rr(_) | Phase::Control(..) | Phase::Sink | Phase::Source(_) | Phase::Objects(..) => true,
            Phase::Crr(x) => !x.answered,
            _ => false,
        };
        if !ok {
            return;
        }
        self.release();
        self.ends_by = None;
        self.refuse(Refusal::Limit, reason, now_ns);
    }

    /// Queues a refusal record and moves to the lingering close.
    fn refuse(&mut self, r: Refusal, reason: fmt::Arguments<'_>, now_ns: u64) {
        self.note = Reason::of(reason);
        let mut rec = [0u8; MAX_STATUS_LEN];
        let n = status::emit_refusal(r, self.note.as_str(), &mut rec);
        self.out.set(&rec[..n]);
        self.event = Some(Event::Refused(r));
        self.phase = Phase::Linger(Linger {
            got: 0,
            shut: false,
            until: now_ns.saturating_add(LINGER_NS),
        });
    }

    /// Ends the session early for a reason of the driver's (a file that
    /// shrank while it was sent): one [`Event::Aborted`], then the close.
    /// Drops what was queued.
    pub fn abort(&mut self, reason: fmt::Arguments<'_>) {
        self.note = Reason::of(reason);
        if matches!(self.phase, Phase::Objects(..)) {
            let (n, b) = (self.requests, self.object_bytes);
            let _ = write!(self.note, " (after {n} requests, {b} object bytes sent)");
        }
        self.event = Some(Event::Aborted);
        self.out.clear();
        self.phase = Phase::Ending { shut: false };
    }

    /// Closes without sending what is still queued (the peer is gone or
    /// too slow), without a log line.
    fn close_now(&mut self) {
        self.out.clear();
        self.phase = Phase::Ending { shut: false };
    }

    /// The normal end: the client closed where it may.
    fn end(&mut self) {
        self.phase = Phase::Ending { shut: false };
    }

    fn snapshot(&mut self, id: u32) {
        if let (Some(t), Phase::Control(_, reports)) = (self.test, &mut self.phase) {
            self.registry.start(t);
            *reports = Reports::Due { id, flags: 0 };
        }
    }

    fn stop(&mut self, id: u32, now_ns: u64) {
        if let (Some(t), Phase::Control(_, reports)) = (self.test, &mut self.phase) {
            self.registry.stop(t);
            let deadline = Registry::drain_deadline(now_ns);
            *reports = Reports::Draining { id, deadline };
            self.tick(now_ns);
        }
    }

    /// Answers a complete object request.
    fn answer<C: Catalogue + ?Sized>(&mut self, asked: Asked, objects: &mut C) {
        let Phase::Objects(req, body) = &mut self.phase else {
            return;
        };
        let e = match asked {
            Asked::Bad(e) => e,
            Asked::List => {
                self.requests += 1;
                let len = objects.list_len();
                self.out.set(&Response { code: 0, len }.emit());
                *body = (len > 0).then_some(Outgoing {
                    source: Source::List,
                    offset: 0,
                    len,
                });
                return;
            }
            Asked::Fetch => {
                self.requests += 1;
                let mut why = Reason::new();
                let (code, text) = match objects.fetch(req.name(), &mut why) {
                    Lookup::Found { index, size } => {
                        self.out.set(&Response { code: 0, len: size }.emit());
                        *body = (size > 0).then_some(Outgoing {
                            source: Source::Object(index),
                            offset: 0,
                            len: size,
                        });
                        return;
                    }
                    Lookup::NotFound => {
                        let mut r = Reason::of(format_args!("no object named '"));
                        r.push_lossy(req.name());
                        let _ = r.write_str("'");
                        (obj::CODE_NOT_FOUND, r)
                    }
                    Lookup::Unreadable => (
                        obj::CODE_INTERNAL,
                        Reason::of(format_args!("cannot read the object: {why}")),
                    ),
                };
                self.error_response(code, &text);
                return;
            }
        };
        // The framing is lost: answer, then close.
        let text = Reason::of(format_args!("{e}"));
        self.abort(format_args!("bad request: {e}"));
        self.error_response(obj::CODE_BAD_REQUEST, &text);
    }

    fn error_response(&mut self, code: u8, text: &Reason) {
        let t = text.as_str().as_bytes();
        self.out.set(
            &Response {
                code,
                len: t.len() as u64,
            }
            .emit(),
        );
        self.out.push(t);
    }

    /// The stamps of the exchange a [`Next::Stamp`] asked for: the driver's
    /// kernel receive stamp and application receive time of the read that
    /// completed the request, and the application send time it read just
    /// now (all on its wall clock, ns). The machine adds the latest earlier
    /// send stamp it was given ([`Session::tx_stamp`]) and queues the block.
    pub fn stamp(&mut self, mut block: Block) {
        if let Phase::Rr(x) = &mut self.phase {
            if x.stamp_due {
                x.stamp_due = false;
                block.prev_tx = x.prev_tx;
                self.out.set(&block.emit());
            }
        }
    }

    /// A kernel send stamp from the socket's error queue: `key` is the
    /// kernel's id for it (with `SOF_TIMESTAMPING_OPT_ID` on a TCP socket,
    /// the offset of the last byte of the send call, counted from the first
    /// byte sent after the option was set: the status record's first).
    /// Kept when it is the last byte of the latest complete response.
    pub fn tx_stamp(&mut self, key: u32, ns: u64) {
        if let Phase::Rr(x) = &mut self.phase {
            if x.stamps && x.served > 0 {
                let end = (STATUS_PREFIX_LEN as u64)
                    .wrapping_add(x.served.wrapping_mul(x.resp as u64))
                    .wrapping_sub(1);
                if key == end as u32 {
                    x.prev_tx = Some((x.served - 1, ns));
                }
            }
        }
    }

    /// `n` bytes of what the last [`Next::Send`] offered were taken by the
    /// stack (record first, then body).
    pub fn sent(&mut self, n: usize) {
        let n = self.out.sent(n) as u64;
        if let Phase::Rr(x) = &mut self.phase {
            x.left = x.left.saturating_sub(n);
            if x.open && x.left == 0 && self.out.is_empty() {
                x.open = false;
                x.served += 1;
            }
            return;
        }
        if n == 0 {
            return;
        }
        match &mut self.phase {
            Phase::Crr(x) => x.left = x.left.saturating_sub(n),
            Phase::Source(w) => {
                if let Some(t) = self.test {
                    self.registry.add_tx(t, n);
                }
                w.off = ((w.off as u64 + n) % w.size as u64) as u32;
            }
            Phase::Objects(_, Some(b)) => {
                let n = n.min(b.len);
                b.offset += n;
                b.len -= n;
                if b.len == 0 {
                    if let Source::Object(_) = b.source {
                        self.object_bytes += b.offset;
                    }
                    if let Phase::Objects(_, body) = &mut self.phase {
                        *body = None;
                    }
                }
            }
            _ => {}
        }
    }

    /// The peer closed its side (a receive returned 0 bytes).
    pub fn eof(&mut self) {
        match &self.phase {
            Phase::Header(h) => {
                let got = h.got();
                self.abort(format_args!(
                    "client closed after {got} header bytes, before the session header was complete"
                ));
            }
            Phase::Auth(a) => {
                let got = a.got;
                self.abort(format_args!("client closed after {got} of {PROOF_LEN} proof bytes"));
            }
            Phase::Rr(x) if x.got == 0 => self.end(),
            Phase::Crr(x) if x.answered => self.end(),
            Phase::Crr(x) if x.got == 0 => self.abort(format_args!("client closed before its request")),
            Phase::Rr(x) | Phase::Crr(x) => {
                let (got, req) = (x.got, x.req);
                self.abort(format_args!("client vanished mid-request ({got} of {req} bytes)"));
            }
            Phase::Control(rec, _) if !rec.idle() => self.abort(format_args!("client closed mid-record")),
            Phase::Objects(req, _) if req.got() > 0 => {
                let (got, want) = (req.got(), req.got() + req.want());
                self.abort(format_args!("client vanished mid-request ({got} of {want} bytes)"));
            }
            Phase::Ending { .. } => {}
            _ => self.end(),
        }
    }

    /// The wait [`Session::deadline`] allowed has passed (a receive or send
    /// timed out, or an [`Deadline::At`] time is reached).
    pub fn timeout(&mut self, now_ns: u64) {
        match &self.phase {
            Phase::Header(_) => self.refuse(
                Refusal::HeaderTimeout,
                format_args!("session header not complete in time"),
                now_ns,
            ),
            Phase::Auth(_) => self.refuse(
                Refusal::Auth,
                format_args!("failed: no proof within the header timeout"),
                now_ns,
            ),
            Phase::Linger(_) | Phase::Ending { .. } => self.close_now(),
            Phase::Rr(x) | Phase::Crr(x) if x.left > 0 => {
                let (sent, resp) = (x.resp as u64 - x.left, x.resp);
                self.abort(format_args!("idle timeout mid-response ({sent} of {resp} bytes sent)"));
            }
            Phase::Crr(x) if x.answered => self.abort(format_args!("idle timeout waiting for the client to close")),
            Phase::Rr(x) | Phase::Crr(x) => {
                let (got, req) = (x.got, x.req);
                self.abort(format_args!("idle timeout mid-request ({got} of {req} bytes)"));
            }
            Phase::Control(..) => self.abort(format_args!("idle timeout on the control session")),
            Phase::Sink => self.abort(format_args!("idle timeout in a sink session")),
            Phase::Source(_) => self.abort(format_args!("idle timeout in a source session")),
            Phase::Objects(..) => self.abort(format_args!("idle timeout in an object session")),
        }
    }

    /// A socket call failed (not a timeout, not a receive of 0 bytes);
    /// `peer_gone` when the error says the peer reset or closed
    /// (`ECONNRESET`, `EPIPE`).
    pub fn failed(&mut self, call: Failure, peer_gone: bool) {
        let what = match call {
            Failure::Receive => "receive",
            Failure::Send => "send",
        };
        match &self.phase {
            // A client that closes a source early, or resets a finished crr
            // instead of closing it, ends the session normally.
            Phase::Source(_) if peer_gone => self.end(),
            Phase::Crr(x) if x.answered && x.left == 0 && peer_gone => self.end(),
            Phase::Linger(_) | Phase::Ending { .. } => self.close_now(),
            Phase::Rr(x) | Phase::Crr(x) if call == Failure::Send => {
                let (sent, resp) = (x.resp as u64 - x.left, x.resp);
                self.abort(format_args!(
                    "client vanished mid-response ({sent} of {resp} bytes sent)"
                ));
            }
            Phase::Header(h) => {
                let got = h.got();
                self.abort(format_args!(
                    "connection failed after {got} header bytes, before the session header was complete"
                ));
            }
            Phase::Auth(_) => self.abort(format_args!("connection failed during authentication")),
            Phase::Rr(_) | Phase::Crr(_) => self.abort(format_args!("rr {what} failed")),
            Phase::Control(..) => self.abort(format_args!("control session {what} failed")),
            Phase::Sink => self.abort(format_args!("sink {what} failed")),
            Phase::Source(_) => self.abort(format_args!("source {what} failed")),
            Phase::Objects(..) => self.abort(format_args!("object session {what} failed")),
        }
    }

    /// Time passed while the session waited ([`Next::Wait`]): re-checks the
    /// drain rule of a stopped test, and a source's start deadline.
    pub fn tick(&mut self, now_ns: u64) {
        let Some(t) = self.test else {
            return;
        };
        match &mut self.phase {
            Phase::Control(_, reports) => {
                if let Reports::Draining { id, deadline } = *reports {
                    if let Some(flags) = self.registry.final_flags(t, now_ns, deadline) {
                        *reports = Reports::Due { id, flags };
                    }
                }
            }
            Phase::Source(w) => {
                w.now = now_ns;
                let r = &self.registry;
                if now_ns >= w.start_by && !r.started(t) && !r.stopped(t) {
                    self.abort(format_args!("no Snapshot started the test within the idle timeout"));
                }
            }
            _ => {}
        }
    }

    /// Completes the Report [`Next::Report`] asked for, with what the
    /// driver measured.
    pub fn report(&mut self, now_ns: u64, figures: ReportInputs) {
        let (Some(t), Phase::Control(_, reports)) = (self.test, &mut self.phase) else {
            return;
        };
        let Reports::Due { id, flags } = *reports else {
            return;
        };
        *reports = Reports::Idle;
        if flags & FLAG_FINAL != 0 {
            if let Some(cpu) = figures.cpu {
                self.registry.add_cpu(t, cpu);
            }
        }
        let r = self.registry.report(t, id, flags, now_ns, figures.tcp);
        self.out.set(&r.emit());
    }

    /// The half-close [`Next::Shutdown`] asked for is done.
    pub fn shut_done(&mut self) {
        match &mut self.phase {
            Phase::Linger(l) => l.shut = true,
            Phase::Ending { shut } => *shut = false,
            _ => {}
        }
    }

    /// The test this session owns or joined.
    pub fn test_id(&self) -> Option<u32> {
        self.test.map(|t| t.id())
    }

    /// Object requests answered and object bytes sent so far.
    pub fn objects_served(&self) -> (u64, u64) {
        (self.requests, self.object_bytes)
    }

    /// Ends the session: a data session adds the CPU time its thread spent
    /// (`cpu`, if the driver measures it) to its test, then leaves it; a
    /// control session closes its test. Dropping a session does the same
    /// without the CPU time.
    pub fn finish(mut self, cpu: Option<CpuTime>) {
        if let (Some(t), Some(c), false) = (self.test, cpu, self.owner) {
            self.registry.add_cpu(t, c);
        }
        self.release();
    }

    fn release(&mut self) {
        if let Some(t) = self.test.take() {
            if self.owner {
                self.registry.close(t);
            } else {
                self.registry.leave(t);
            }
        }
    }
}

impl<R: Deref<Target = Registry>> Drop for Session<R> {
    fn drop(&mut self) {
        self.release();
    }
}

impl<R: Deref<Target = Registry>> fmt::Debug for Session<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("test", &self.test_id())
            .field("pending_record", &self.out.pending().len())
            .finish()
    }
}

/// With a highest rate, the time test `t`'s sources may write again if
/// that is after `now` (its bytes so far at the rate since it opened).
fn paced(registry: &Registry, cfg: &Config, t: TestRef, now: u64) -> Option<u64> {
    let rate = cfg.limits.max_rate_bps;
    if rate == 0 {
        return None;
    }
    let (sent, opened) = registry.sent_since(t);
    let due = opened as u128 + sent as u128 * 8 * 1_000_000_000 / rate as u128;
    let due = due.min(u64::MAX as u128) as u64;
    (due > now).then_some(due)
}

/// The status record "accepted".
fn accepted() -> [u8; STATUS_PREFIX_LEN] {
    let mut b = [0u8; STATUS_PREFIX_LEN];
    status::emit_accepted(&mut b);
    b
}
