//! The driver of a session machine (`proto::machine::Session`): the one
//! piece of code that does what the machine asks, run in two ways.
//!
//! Blocking, on a thread of the session's own (`Drive::Blocking`): the
//! shortest path a reply can take, no readiness call between data and
//! reply. Non-blocking, from the event loop (`Drive::Loop`, `events.rs`):
//! the driver goes as far as the socket lets it and says what it waits for
//! ([`Stop`]); the loop owns the deadlines. The loop starts every session
//! and hands a busy one to a thread (`Stop::Handoff`, [`Conn::offer`]), so
//! an idle session costs its `Conn` and `Session` and nothing else.
//!
//! The machine decides what every byte means; this file owns the socket,
//! the buffers and the clock. It reads what the machine asks for (an rr
//! session without stamps: whatever has come, up to its buffer), writes
//! its records and the payload cut from the shared page-aligned buffers
//! (record and payload in one `writev`), and, on a thread, turns the
//! machine's deadlines into socket timeouts, set only when they change:
//! once per data phase, since the idle timeout is relative to the last
//! progress. On the measured path of rr and crr that leaves one receive per
//! request chunk and one send per response chunk, as a hand-written loop
//! would: no clock read, lock, allocation or formatting per message. A
//! session's receive buffer is allocated at its first data-phase read on a
//! thread; on the loop every session reads into the loop's one buffer.
//!
//! Requests that queued up (a client behind its schedule, or one that
//! pipelines) are read in one call, kept in `carry`, and their responses
//! gathered and written in one call once all are answered (at most
//! [`GATHER_MAX`] at a time): a responder that fell behind then catches
//! up at a fraction of two calls per request. Reading one request per call
//! instead left hundreds of 64-byte segments in the socket's receive
//! queue: the kernel pruned and collapsed it, advertised a zero window and
//! dropped segments (nstat `TcpExtPruneCalled`, `TCPWantZeroWindowAdv`,
//! retransmissions: bench/openloop.sh at 100,000/s), and the responder
//! stayed behind for seconds. On the loop a read right after a response is
//! left to the next readiness: the next request has rarely come yet, and a
//! `recv` that finds nothing was a third of the loop's calls per request.

use crate::objects::Files;
use crate::shared::{cpu, Shared, CHUNK};
use stackmeter_proto::machine::{Deadline, Event, Failure, Next, Registry, ReportInputs, Service, Session};
use stackmeter_proto::stamps::Block;
use stackmeter_sys::{monotonic_ns, realtime_ns, thread_cpu, tstamp, AlignedBuf};
use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::ops::Deref;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Sources writing less than this per call run with Nagle on (their small
/// writes are meant to be coalesced, as a bulk sender's are).
const NODELAY_FROM: u32 = 16 << 10;

/// A sink reads in pieces of this size (iperf3's default TCP length) when
/// the client names none.
const SINK_BUF: usize = 128 << 10;

/// Reads before the data phase (header, control records, object requests,
/// the linger) go to a buffer of this size on the thread's stack.
pub(crate) const SMALL: usize = 4096;

/// How long a waiting session sleeps between looks at the registry.
const WAIT_STEP: Duration = Duration::from_millis(1);

/// How the driver waits for its socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Drive {
    /// Blocking calls with socket timeouts, on the session's own thread.
    Blocking,
    /// Non-blocking calls from the event loop: stop where the socket would block.
    Loop,
}

/// Why a non-blocking drive stopped (a blocking one only ever `Closed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The machine closed the session.
    Closed,
    /// Waiting for bytes (or the peer's close).
    Readable,
    /// Waiting for room in the send buffer.
    Writable,
    /// Waiting for the registry or this time (ns): call again then.
    Wake(u64),
    /// A throughput test's session: it runs on a thread of its own.
    Handoff,
}

/// Serves one accepted connection on the calling thread, start to end.
#[cfg(not(target_os = "linux"))]
pub(crate) fn run(stream: TcpStream, peer: SocketAddr, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    let s = Session::new(&*shared.registry, shared.machine, monotonic_ns());
    finish(Conn::new(stream, peer, shared, Drive::Blocking), s);
}

/// Drives a session on the calling thread to its end, then does what every
/// session's end needs: its address's counts, its totals, its CPU time.
pub(crate) fn finish<R: Deref<Target = Registry>>(mut c: Conn<'_>, mut s: Session<R>) {
    let mut small = [0u8; SMALL];
    c.drive(&mut s, &mut small);
    c.close(s);
}

/// One connection's driver state.
pub(crate) struct Conn<'a> {
    pub(crate) stream: TcpStream,
    peer: SocketAddr,
    shared: &'a Shared,
    mode: Drive,
    /// The waits the socket timeouts were set for (`None`: never set).
    read_timeout: Option<Deadline>,
    write_timeout: Option<Deadline>,
    /// The data phase's receive buffer (rr, crr, sink), page-aligned,
    /// allocated at the first read of a blocking drive; `rx_len` its size.
    rx: Option<AlignedBuf>,
    rx_len: u32,
    files: Files<'a>,
    /// This source's entry in the shared TCP_INFO list.
    source: Option<u64>,
    /// The socket error behind the last failure, for the log line.
    error: Option<io::Error>,
    /// The thread's CPU time when a throughput test's session was accepted.
    cpu0: Option<stackmeter_sys::CpuTime>,
    /// An rr session with stamp blocks: reads go through `recvmsg`.
    stamps: bool,
    /// The last read's kernel receive stamp and the wall clock after it.
    last_rx: (Option<u64>, u64),
    /// The header was judged: the connection no longer counts as waiting
    /// for its address.
    judged: bool,
    /// The session counts as a test of its address.
    test: bool,
    /// An rr or object session past its header: the loop may
    /// give it a thread when its data starts.
    offer: bool,
    /// A throughput session just accepted: it leaves the loop.
    handoff: bool,
    /// A sink or source session (a throughput test's data).
    bulk: bool,
    /// A bulk session kept on the loop: the loop thread's CPU time spent
    /// driving it, added up call by call (a thread of its own reads its
    /// total once, from `cpu0`).
    loop_cpu: Option<stackmeter_sys::CpuTime>,
    /// An rr session without stamps: a read takes whatever has come, up
    /// to the buffer, and requests beyond the first wait in `carry`.
    batch: bool,
    /// Bytes read but not yet taken by the machine (pipelined requests),
    /// from `carry_at` on, at most [`BATCH_BUF`] (one read); no allocation
    /// unless requests queued.
    carry: Vec<u8>,
    carry_at: usize,
    /// Responses to carried requests, written in one call once the carry
    /// is answered (or when the next would not fit in [`GATHER_MAX`]):
    /// the machine counts them sent when they are put here.
    gather: Vec<u8>,
    /// Write `gather` before anything else.
    flush: bool,
    /// A latency session with messages of [`LARGE`] bytes or more (or an
    /// object session): a thread serves it faster even beside others.
    large: bool,
}

/// Messages this large make a latency session "large" ([`Conn::large`]).
pub(crate) const LARGE: u32 = 64 << 10;

/// What a batching rr session reads at least, and at most beyond its
/// request: room for 256 queued 64-byte requests in one read.
const BATCH_BUF: usize = 16 << 10;

/// The most response bytes gathered for one write.
const GATHER_MAX: usize = 64 << 10;

/// What a session holds of its address and of the shared lists, to be
/// given back once when it ends, however it ends.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Held {
    judged: bool,
    test: bool,
    source: Option<u64>,
}

impl Held {
    /// Gives it back: a connection still judging its header, a running
    /// test of `peer`'s address, a source's TCP_INFO entry.
    pub(crate) fn give_back(self, shared: &Shared, peer: SocketAddr) {
        let ip = peer.ip();
        if !self.judged {
            shared.peers.judged(&shared.cfg, ip, false);
        }
        if self.test {
            shared.peers.test_ended(ip);
        }
        if let Some(key) = self.source {
            shared.sources.remove(key);
        }
    }
}

/// What of a connection's driver state moves with it to a thread.
pub(crate) struct Parts {
    stream: TcpStream,
    peer: SocketAddr,
    rx_len: u32,
    batch: bool,
    carry: Vec<u8>,
    carry_at: usize,
    gather: Vec<u8>,
    source: Option<u64>,
    stamps: bool,
    last_rx: (Option<u64>, u64),
    judged: bool,
    test: bool,
    handoff: bool,
}

impl Parts {
    /// What the session holds (see [`Held`]).
    pub(crate) fn held(&self) -> Held {
        Held {
            judged: self.judged,
            test: self.test,
            source: self.source,
        }
    }
}

impl<'a> Conn<'a> {
    pub(crate) fn new(stream: TcpStream, peer: SocketAddr, shared: &'a Shared, mode: Drive) -> Conn<'a> {
        Conn {
            stream,
            peer,
            shared,
            mode,
            read_timeout: None,
            write_timeout: None,
            rx: None,
            rx_len: 0,
            files: Files::new(shared.store.as_ref()),
            source: None,
            error: None,
            cpu0: None,
            stamps: false,
            last_rx: (None, 0),
            judged: false,
            test: false,
            offer: false,
            handoff: false,
            large: false,
            batch: false,
            carry: Vec::new(),
            carry_at: 0,
            gather: Vec::new(),
            flush: false,
            bulk: false,
            loop_cpu: None,
        }
    }

    /// The client's address.
    pub(crate) fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// A latency session waiting for its data on the loop: the loop may
    /// move it to a thread of its own before it reads.
    pub(crate) fn offer(&self) -> bool {
        self.offer
    }

    /// Large messages (bench/sessions.sh: on a thread 2 to 2.7 times
    /// faster at 1 MiB with one or two sessions at once; small messages
    /// only when alone).
    pub(crate) fn large(&self) -> bool {
        self.large
    }

    /// A sink or source session (it may stay on the loop when many run).
    pub(crate) fn bulk(&self) -> bool {
        self.bulk
    }

    /// The loop keeps this bulk session: its CPU time is metered per call
    /// ([`Conn::metered`]).
    pub(crate) fn keep_bulk(&mut self) {
        self.handoff = false;
        self.loop_cpu = Some(stackmeter_sys::CpuTime::default());
    }

    /// The loop meters this session's CPU time ([`Conn::add_cpu`]).
    pub(crate) fn metered(&self) -> bool {
        self.loop_cpu.is_some()
    }

    /// Adds CPU time the loop spent driving this metered session.
    pub(crate) fn add_cpu(&mut self, c: stackmeter_sys::CpuTime) {
        if let Some(t) = self.loop_cpu.as_mut() {
            t.user_ns += c.user_ns;
            t.sys_ns += c.sys_ns;
        }
    }

    /// The loop keeps this session: stop offering it.
    pub(crate) fn decline(&mut self) {
        self.offer = false;
        self.handoff = false;
    }

    /// The state a thread needs to go on driving this connection (an
    /// object session's file state is empty between requests).
    pub(crate) fn into_parts(self) -> Parts {
        Parts {
            stream: self.stream,
            peer: self.peer,
            rx_len: self.rx_len,
            batch: self.batch,
            carry: self.carry,
            carry_at: self.carry_at,
            gather: self.gather,
            source: self.source,
            stamps: self.stamps,
            last_rx: self.last_rx,
            judged: self.judged,
            test: self.test,
            handoff: self.handoff,
        }
    }

    /// Rebuilds a connection moved to a thread, in blocking mode.
    pub(crate) fn from_parts(p: Parts, shared: &'a Shared) -> io::Result<Conn<'a>> {
        let blocking = p.stream.set_nonblocking(false);
        let mut c = Conn::new(p.stream, p.peer, shared, Drive::Blocking);
        c.rx_len = p.rx_len;
        c.batch = p.batch;
        c.carry = p.carry;
        c.carry_at = p.carry_at;
        c.gather = p.gather;
        c.source = p.source;
        c.stamps = p.stamps;
        c.last_rx = p.last_rx;
        c.judged = p.judged;
        c.test = p.test;
        c.handoff = p.handoff;
        match blocking {
            Ok(()) => Ok(c),
            Err(e) => {
                // Nothing of the session is lost without a word: its
                // address's counts and its source entry are given back.
                c.release();
                Err(e)
            }
        }
    }

    /// Does what the machine asks until it closes the session (`Blocking`)
    /// or until the socket would block (`Loop`). `small` holds reads
    /// without a data-phase buffer (on the loop: all of them).
    pub(crate) fn drive<R: Deref<Target = Registry>>(&mut self, s: &mut Session<R>, small: &mut [u8]) -> Stop {
        let blocking = self.mode == Drive::Blocking;
        // On the loop, a read after a send waits for readiness instead:
        // the next request has rarely come yet, and a `recv` that finds
        // nothing cost a third of the loop's calls per rr transaction.
        let mut sent = false;
        loop {
            if !self.gather.is_empty() && (self.flush || self.carry_at >= self.carry.len()) {
                // The carried requests are answered (or the next response
                // does not fit): what is gathered goes, in one call.
                if blocking {
                    if let Err(now) = arm(&self.stream, &mut self.write_timeout, s.deadline(), false) {
                        self.gather.clear();
                        s.timeout(now);
                        continue;
                    }
                }
                match (&self.stream).write(&self.gather) {
                    Ok(0) => {
                        self.gather.clear();
                        s.failed(Failure::Send, false);
                    }
                    Ok(n) if n == self.gather.len() => {
                        // Freed: an idle session holds no buffer.
                        self.gather = Vec::new();
                        sent = true;
                    }
                    Ok(n) => {
                        self.gather.drain(..n);
                        sent = true;
                    }
                    Err(e) if !blocking && e.kind() == io::ErrorKind::WouldBlock => return Stop::Writable,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.gather.clear();
                        self.failed(s, Failure::Send, e);
                    }
                }
                self.flush = !self.gather.is_empty();
                continue;
            }
            if self.handoff {
                if !blocking {
                    return Stop::Handoff;
                }
                self.handoff = false;
                self.cpu0 = Some(thread_cpu());
            }
            if let Some(t) = s.ends_by() {
                let now = monotonic_ns();
                if now >= t {
                    s.expire(now);
                }
            }
            match s.poll() {
                Next::Event(e) => {
                    if !self.event(e, s.reason()) {
                        let max = self.shared.cfg.limits.max_tests_per_client;
                        s.refuse_limit(
                            format_args!("limit: {max} tests at once from one address; wait for one to end"),
                            monotonic_ns(),
                        );
                    }
                }
                Next::Send(body) => {
                    if blocking {
                        if let Err(now) = arm(&self.stream, &mut self.write_timeout, s.deadline(), false) {
                            s.timeout(now);
                            continue;
                        }
                    }
                    let bytes = match body {
                        None => &[][..],
                        Some(b) if b.source == stackmeter_proto::machine::Source::Payload => {
                            &self.shared.tx.bytes()[..b.len.min(CHUNK as u64) as usize]
                        }
                        Some(b) => match self.files.bytes(b) {
                            Ok(bytes) => bytes,
                            Err(why) => {
                                s.abort(format_args!("{why}"));
                                continue;
                            }
                        },
                    };
                    let record = s.record();
                    if self.carry_at < self.carry.len() || !self.gather.is_empty() {
                        let n = record.len() + bytes.len();
                        if self.gather.len() + n > GATHER_MAX && !self.gather.is_empty() {
                            // Written first; this response is asked again.
                            self.flush = true;
                            continue;
                        }
                        if self.carry_at < self.carry.len() && n <= GATHER_MAX {
                            // More requests already read: answered together.
                            self.gather.extend_from_slice(record);
                            self.gather.extend_from_slice(bytes);
                            s.sent(n);
                            continue;
                        }
                    }
                    let mut stream = &self.stream;
                    let r = if record.is_empty() {
                        stream.write(bytes)
                    } else if bytes.is_empty() {
                        stream.write(record)
                    } else {
                        stream.write_vectored(&[IoSlice::new(record), IoSlice::new(bytes)])
                    };
                    match r {
                        Ok(0) => s.failed(Failure::Send, false),
                        Ok(n) => {
                            sent = true;
                            s.sent(n);
                        }
                        Err(e) if !blocking && e.kind() == io::ErrorKind::WouldBlock => return Stop::Writable,
                        Err(e) => self.failed(s, Failure::Send, e),
                    }
                }
                // Requests already read: no call.
                Next::Read(_) if self.carry_at < self.carry.len() => {
                    let took = s.input(&self.carry[self.carry_at..], 0, &mut self.files);
                    self.carry_at += took;
                    if took == 0 || self.carry_at == self.carry.len() {
                        // (None taken where a read was asked: cannot
                        // happen in rr; the bytes are dropped, not looped on.)
                        // Freed: an idle session holds no buffer.
                        self.carry = Vec::new();
                        self.carry_at = 0;
                    }
                }
                // Offered to a thread: the loop decides at the readiness of
                // its first data, which the thread then reads. Just sent:
                // the loop reads at readiness (level-triggered, so bytes
                // already there are reported at once).
                Next::Read(_) if !blocking && (self.offer || sent) => return Stop::Readable,
                Next::Read(max) => {
                    if blocking {
                        if let Err(now) = arm(&self.stream, &mut self.read_timeout, s.deadline(), true) {
                            s.timeout(now);
                            continue;
                        }
                        if self.rx.is_none() && self.rx_len > 0 {
                            self.rx = Some(AlignedBuf::new(self.rx_len as usize));
                        }
                    }
                    let buf = match self.rx.as_mut() {
                        Some(b) => b.bytes_mut(),
                        None => &mut small[..],
                    };
                    // A batch read takes up to BATCH_BUF beyond what was
                    // asked: what a session holds in `carry` stays small
                    // however much a client queues.
                    let n = if self.batch { max.max(BATCH_BUF) } else { max }.min(buf.len());
                    let mut stream = &self.stream;
                    let got = if self.stamps {
                        // The last response's send stamp, before waiting
                        // for the next request (outside this one's time).
                        let fd = self.stream.as_raw_fd();
                        tstamp::drain_tx(fd, |k, ns| s.tx_stamp(k, ns));
                        let r = tstamp::recv(fd, &mut buf[..n], false);
                        if let Ok((_, k)) = r {
                            self.last_rx = (k, realtime_ns());
                        }
                        r.map(|(k, _)| k)
                    } else {
                        stream.read(&mut buf[..n])
                    };
                    match got {
                        Ok(0) => s.eof(),
                        Ok(k) => {
                            let now = if s.needs_clock() { monotonic_ns() } else { 0 };
                            let took = s.input(&buf[..k], now, &mut self.files);
                            if took < k {
                                // Pipelined requests: answered one by one
                                // from here, with no call until they are.
                                self.carry.extend_from_slice(&buf[took..k]);
                            }
                        }
                        Err(e) if !blocking && e.kind() == io::ErrorKind::WouldBlock => return Stop::Readable,
                        Err(e) => self.failed(s, Failure::Receive, e),
                    }
                }
                Next::Report(due) => {
                    let figures = ReportInputs {
                        tcp: self.shared.sources.figures(due.test),
                        cpu: match (due.is_final, self.cpu0) {
                            (true, Some(c0)) => Some(cpu(thread_cpu().since(c0))),
                            _ => None,
                        },
                    };
                    s.report(monotonic_ns(), figures);
                }
                Next::Wait(until) if !blocking => return Stop::Wake(until),
                Next::Wait(until) => {
                    let now = monotonic_ns();
                    if until > now {
                        std::thread::sleep(WAIT_STEP.min(Duration::from_nanos(until - now)));
                    }
                    s.tick(monotonic_ns());
                }
                Next::Stamp => {
                    let (rx_kernel, app_rx) = self.last_rx;
                    s.stamp(Block {
                        app: self.stamps.then(|| (app_rx, realtime_ns())),
                        rx_kernel,
                        prev_tx: None,
                        hardware: false,
                    });
                }
                Next::Shutdown => {
                    let _ = self.stream.shutdown(Shutdown::Write);
                    s.shut_done();
                }
                Next::Close => return Stop::Closed,
            }
        }
    }

    fn failed<R: Deref<Target = Registry>>(&mut self, s: &mut Session<R>, call: Failure, e: io::Error) {
        use io::ErrorKind as K;
        match e.kind() {
            K::Interrupted => {}
            K::WouldBlock | K::TimedOut => s.timeout(monotonic_ns()),
            k => {
                let gone = matches!(k, K::ConnectionReset | K::BrokenPipe | K::ConnectionAborted);
                self.error = Some(e);
                s.failed(call, gone);
            }
        }
    }

    /// Logs and counts what the machine reports; sets a session up once
    /// its header is accepted. False: the session is over its address's
    /// tests; refuse it.
    fn event(&mut self, e: Event, reason: &str) -> bool {
        let (c, log, peer) = (&self.shared.counters, self.shared.cfg.log, self.peer);
        if !self.judged && !matches!(e, Event::Accepted(_)) {
            self.judged = true;
            self.shared.peers.judged(&self.shared.cfg, peer.ip(), false);
        }
        match e {
            Event::Accepted(service) => {
                if !self.judged {
                    self.judged = true;
                    let test = !matches!(service, Service::Sink { .. } | Service::Source { .. });
                    if !self.shared.peers.judged(&self.shared.cfg, peer.ip(), test) {
                        return false;
                    }
                    self.test = test;
                }
                Shared::bump(&c.sessions);
                match service {
                    Service::Rr { req, resp, stamps } => {
                        self.large = req.max(resp) >= LARGE;
                        // Without stamps (one kernel stamp per read), a
                        // read takes every queued request at once.
                        self.batch = !stamps;
                        let len = if stamps {
                            req as usize
                        } else {
                            (req as usize).max(BATCH_BUF)
                        };
                        self.rx_len = len.min(CHUNK) as u32;
                        // Before the status record: send stamp keys count
                        // from its first byte.
                        self.stamps =
                            stamps && tstamp::enable(self.stream.as_raw_fd(), tstamp::Kind::Software, true).is_ok();
                    }
                    Service::Crr { req, resp } => {
                        self.large = req.max(resp) >= LARGE;
                        self.rx_len = (req as usize).min(CHUNK) as u32;
                    }
                    Service::Sink { read_hint, .. } => {
                        // The client's write size as the read size, so both
                        // ends move the same messages (seed 001's 64-byte
                        // test); capped.
                        let n = match read_hint {
                            0 => SINK_BUF,
                            h => (h as usize).min(CHUNK),
                        };
                        self.rx_len = n as u32;
                    }
                    Service::Source { test, write } => {
                        if write < NODELAY_FROM {
                            let _ = self.stream.set_nodelay(false);
                        }
                        self.source = self.shared.sources.add(test, &self.stream);
                    }
                    Service::Objects => self.large = true,
                    Service::Control { .. } => {}
                }
                self.bulk = matches!(service, Service::Sink { .. } | Service::Source { .. });
                if matches!(
                    service,
                    Service::Control { .. } | Service::Sink { .. } | Service::Source { .. }
                ) {
                    // Read on the thread it moves to (CPU time is per thread).
                    self.handoff = true;
                } else {
                    // crr stays on the loop: a thread started for its one
                    // transaction cost more than it saved (p50 100-120 us
                    // against 60-92 us on the loop, bench/sessions.sh).
                    self.offer = !matches!(service, Service::Crr { .. });
                }
            }
            Event::Refused(r) => {
                Shared::bump(&c.refused);
                log.line(format_args!("warning: refused {peer}: {}: {reason}", r.name()));
            }
            Event::Aborted => {
                Shared::bump(&c.aborted);
                match self.error.take() {
                    Some(e) => log.line(format_args!("warning: {peer}: session ended: {reason}: {e}")),
                    None => log.line(format_args!("warning: {peer}: session ended: {reason}")),
                }
            }
        }
        true
    }

    /// After the close: its address's counts, the session's totals, its
    /// CPU time; then the socket is closed.
    pub(crate) fn close<R: Deref<Target = Registry>>(mut self, s: Session<R>) {
        self.end(&s);
        self.release();
        // Only a throughput test's sessions are charged CPU time: read when
        // they started on their thread, or added up by the loop call by
        // call; rr and crr make no call for it.
        let used = match (self.cpu0, self.loop_cpu) {
            (Some(c0), _) => Some(cpu(thread_cpu().since(c0))),
            (None, Some(t)) => Some(cpu(t)),
            (None, None) => None,
        };
        s.finish(used);
    }

    /// Gives back what the session held of its address (a connection
    /// still judging its header, a running test) and its source entry.
    fn release(&mut self) {
        let held = Held {
            judged: std::mem::replace(&mut self.judged, true),
            test: std::mem::take(&mut self.test),
            source: self.source.take(),
        };
        held.give_back(self.shared, self.peer);
    }

    /// Unlists a source, adds an object session's totals.
    fn end<R: Deref<Target = Registry>>(&mut self, s: &Session<R>) {
        if let Some(key) = self.source.take() {
            self.shared.sources.remove(key);
        }
        let (requests, bytes) = s.objects_served();
        if requests > 0 {
            let c = &self.shared.counters;
            c.object_requests
                .fetch_add(requests, std::sync::atomic::Ordering::Relaxed);
            c.object_bytes.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Sets the socket's receive (`read`) or send timeout for `d`, unless it
/// is the idle wait already set (`current`): the data phases set it once.
/// An absolute deadline is set anew each time, for the time left;
/// `Err(now)` when it has passed.
#[inline]
fn arm(stream: &TcpStream, current: &mut Option<Deadline>, d: Deadline, read: bool) -> Result<(), u64> {
    if *current == Some(d) && matches!(d, Deadline::Idle(_)) {
        return Ok(());
    }
    let wait = match d {
        Deadline::Idle(ns) => Duration::from_nanos(ns),
        Deadline::At(t) => {
            let now = monotonic_ns();
            if now >= t {
                return Err(now);
            }
            Duration::from_nanos(t - now)
        }
    };
    // A timeout the socket refuses (0: the configuration's) leaves the old
    // one; the session still ends at its next wait.
    let _ = if read {
        stream.set_read_timeout(Some(wait))
    } else {
        stream.set_write_timeout(Some(wait))
    };
    *current = Some(d);
    Ok(())
}
