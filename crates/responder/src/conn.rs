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
use stackmeter_proto::machine::{
    Deadline, Event, Failure, Next, Outgoing, Registry, ReportDue, ReportInputs, Service, Session,
};
use stackmeter_proto::stamps::Block;
use stackmeter_sys::{monotonic_ns, realtime_ns, thread_cpu, tstamp, AlignedBuf};
use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::ops::Deref;
use std::os::fd::AsRawFd;
use std::time::Duration;

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
    /// A throughput test's session asks for a thread of its own (the loop
    /// keeps the sinks and sources past `threads`).
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

/// One connection's driver state: what moves with it to a thread
/// ([`Link`]) and what belongs to the thread or loop driving it.
pub(crate) struct Conn<'a> {
    link: Link,
    shared: &'a Shared,
    drive: Drive,
    /// The waits the socket timeouts were set for.
    timeouts: Timeouts,
    /// The data phase's receive buffer (rr, crr, sink), page-aligned,
    /// allocated at the first read of a blocking drive (`link.rx_len`).
    rx: Option<AlignedBuf>,
    files: Files<'a>,
    /// The socket error behind the last failure, for the log line.
    error: Option<io::Error>,
    cpu: CpuMeter,
    place: Placement,
}

/// What of a connection moves with it when the loop hands it to a thread
/// (an object session's file state is empty between requests, and a
/// thread allocates its own receive buffer).
pub(crate) struct Link {
    stream: TcpStream,
    peer: SocketAddr,
    /// The data phase's receive buffer size.
    rx_len: u32,
    queue: Queue,
    held: Held,
    stamps: Stamps,
    /// A throughput session just accepted: it leaves the loop.
    handoff: bool,
}

/// Requests read ahead and the responses gathered for them.
#[derive(Default)]
struct Queue {
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
}

impl Queue {
    /// Requests read and not yet taken by the machine.
    fn carried(&self) -> bool {
        self.carry_at < self.carry.len()
    }
}

/// An rr session's stamp blocks.
#[derive(Clone, Copy, Default)]
struct Stamps {
    /// Reads go through `recvmsg` for their kernel receive stamp.
    on: bool,
    /// The last read's kernel receive stamp and the wall clock after it.
    last_rx: (Option<u64>, u64),
}

/// The socket timeouts in force, as the waits they were set for (`None`:
/// never set).
#[derive(Default)]
struct Timeouts {
    read: Option<Deadline>,
    write: Option<Deadline>,
}

/// The CPU time a throughput test's session is charged.
#[derive(Default)]
struct CpuMeter {
    /// On a thread of its own: the thread's CPU time when it started.
    thread_start: Option<stackmeter_sys::CpuTime>,
    /// Kept on the loop: the loop thread's CPU time spent driving it,
    /// added up call by call.
    on_loop: Option<stackmeter_sys::CpuTime>,
}

/// What the loop weighs when it places a session on a thread.
#[derive(Clone, Copy, Default)]
struct Placement {
    /// An rr or object session past its header: the loop may give it a
    /// thread when its data starts.
    offer: bool,
    /// A latency session with messages of [`LARGE`] bytes or more (or an
    /// object session): a thread serves it faster even beside others.
    large: bool,
    /// A sink or source session (a throughput test's data).
    bulk: bool,
}

/// Messages this large make a latency session "large" ([`Conn::large`]).
pub(crate) const LARGE: u32 = 64 << 10;

/// What a batching rr session reads at least, and at most beyond its
/// request: room for 256 queued 64-byte requests in one read.
const BATCH_BUF: usize = 16 << 10;

/// The most a batching rr session reads in one call. Request bytes are
/// only counted, so a large request is read through a buffer small
/// enough to stay in the CPU's cache: with 1 MiB requests read into a
/// 1 MiB buffer, rr 1M:1 against this responder was 1.09x the C
/// responder's p50 (which reads 64 KiB at a time); with 128 KiB it is
/// 0.96x. 64 KiB split 100 KiB requests in two reads (100K:1 8% slower);
/// 256 KiB lost the gain (bench/results/2026-11-25-before-after.md).
const RR_READ_MAX: usize = 128 << 10;

/// The most response bytes gathered for one write.
const GATHER_MAX: usize = 64 << 10;

/// What a session holds of its address and of the shared lists, to be
/// given back once when it ends, however it ends.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Held {
    /// The header was judged: the connection no longer counts as waiting
    /// for its address.
    judged: bool,
    /// The session counts as a test of its address.
    test: bool,
    /// This source's entry in the shared TCP_INFO list.
    source: Option<u64>,
}

impl Held {
    /// Nothing held: a connection still to be judged.
    const NEW: Held = Held {
        judged: false,
        test: false,
        source: None,
    };
    /// Nothing held, nothing to judge: what is left once given back.
    const NONE: Held = Held {
        judged: true,
        test: false,
        source: None,
    };

    /// Gives it back: a connection still judging its header, a running
    /// test of `peer`'s address, a source's TCP_INFO entry.
    pub(crate) fn give_back(self, shared: &Shared, peer: SocketAddr) {
        let ip = peer.ip();
        if !self.judged {
            shared.clients.judged(&shared.cfg, ip, false);
        }
        if self.test {
            shared.clients.test_ended(ip);
        }
        if let Some(key) = self.source {
            shared.sources.remove(key);
        }
    }
}

impl Link {
    /// What the session holds (see [`Held`]).
    pub(crate) fn held(&self) -> Held {
        self.held
    }
}

impl<'a> Conn<'a> {
    pub(crate) fn new(stream: TcpStream, peer: SocketAddr, shared: &'a Shared, drive: Drive) -> Conn<'a> {
        let link = Link {
            stream,
            peer,
            rx_len: 0,
            queue: Queue::default(),
            held: Held::NEW,
            stamps: Stamps::default(),
            handoff: false,
        };
        Conn::with_link(link, shared, drive)
    }

    fn with_link(link: Link, shared: &'a Shared, drive: Drive) -> Conn<'a> {
        Conn {
            link,
            shared,
            drive,
            timeouts: Timeouts::default(),
            rx: None,
            files: Files::new(shared.store.as_ref()),
            error: None,
            cpu: CpuMeter::default(),
            place: Placement::default(),
        }
    }

    /// The socket.
    pub(crate) fn stream(&self) -> &TcpStream {
        &self.link.stream
    }

    /// The client's address.
    pub(crate) fn peer(&self) -> SocketAddr {
        self.link.peer
    }

    /// A latency session waiting for its data on the loop: the loop may
    /// move it to a thread of its own before it reads.
    pub(crate) fn offer(&self) -> bool {
        self.place.offer
    }

    /// Large messages (bench/sessions.sh: on a thread 2 to 2.7 times
    /// faster at 1 MiB with one or two sessions at once; small messages
    /// only when alone).
    pub(crate) fn large(&self) -> bool {
        self.place.large
    }

    /// A sink or source session (it may stay on the loop when many run).
    pub(crate) fn bulk(&self) -> bool {
        self.place.bulk
    }

    /// The loop keeps this bulk session: its CPU time is metered per call
    /// ([`Conn::metered`]).
    pub(crate) fn keep_bulk(&mut self) {
        self.link.handoff = false;
        self.cpu.on_loop = Some(stackmeter_sys::CpuTime::default());
    }

    /// The loop meters this session's CPU time ([`Conn::add_cpu`]).
    pub(crate) fn metered(&self) -> bool {
        self.cpu.on_loop.is_some()
    }

    /// Adds CPU time the loop spent driving this metered session.
    pub(crate) fn add_cpu(&mut self, c: stackmeter_sys::CpuTime) {
        if let Some(t) = self.cpu.on_loop.as_mut() {
            t.user_ns += c.user_ns;
            t.sys_ns += c.sys_ns;
        }
    }

    /// The loop keeps this session: stop offering it.
    pub(crate) fn decline(&mut self) {
        self.place.offer = false;
        self.link.handoff = false;
    }

    /// What moves to a thread that goes on driving this connection.
    pub(crate) fn into_link(self) -> Link {
        self.link
    }

    /// Rebuilds a connection moved to a thread, in blocking mode.
    pub(crate) fn from_link(link: Link, shared: &'a Shared) -> io::Result<Conn<'a>> {
        let blocking = link.stream.set_nonblocking(false);
        let mut c = Conn::with_link(link, shared, Drive::Blocking);
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
    /// without a data-phase buffer (on the loop: all of them). Each step
    /// of the machine is a method below; `None` from one means: poll again.
    pub(crate) fn drive<R: Deref<Target = Registry>>(&mut self, s: &mut Session<R>, small: &mut [u8]) -> Stop {
        let blocking = self.drive == Drive::Blocking;
        // On the loop, a read after a send waits for readiness instead:
        // the next request has rarely come yet, and a `recv` that finds
        // nothing cost a third of the loop's calls per rr transaction.
        let mut sent = false;
        loop {
            if !self.link.queue.gather.is_empty()
                && (self.link.queue.flush || self.link.queue.carry_at >= self.link.queue.carry.len())
            {
                // The carried requests are answered (or the next response
                // does not fit): what is gathered goes, in one call.
                if let Some(stop) = self.write_gathered(s, blocking, &mut sent) {
                    return stop;
                }
                continue;
            }
            if self.link.handoff {
                if !blocking {
                    return Stop::Handoff;
                }
                self.link.handoff = false;
                self.cpu.thread_start = Some(thread_cpu());
            }
            if let Some(t) = s.ends_by() {
                let now = monotonic_ns();
                if now >= t {
                    s.expire(now);
                }
            }
            let stop = match s.poll() {
                Next::Event(e) => self.on_event(s, e),
                Next::Send(body) => self.send(s, body, blocking, &mut sent),
                // Requests already read: no call.
                Next::Read(_) if self.link.queue.carried() => self.read_carried(s),
                // Offered to a thread: the loop decides at the readiness of
                // its first data, which the thread then reads. Just sent:
                // the loop reads at readiness (level-triggered, so bytes
                // already there are reported at once).
                Next::Read(_) if !blocking && (self.place.offer || sent) => Some(Stop::Readable),
                Next::Read(max) => self.read(s, max, small, blocking),
                Next::Report(due) => self.report(s, due),
                Next::Wait(until) if !blocking => Some(Stop::Wake(until)),
                Next::Wait(until) => wait(s, until),
                Next::Stamp => self.stamp(s),
                Next::Shutdown => {
                    let _ = self.link.stream.shutdown(Shutdown::Write);
                    s.shut_done();
                    None
                }
                Next::Close => Some(Stop::Closed),
            };
            if let Some(stop) = stop {
                return stop;
            }
        }
    }

    /// Writes the gathered responses in one call.
    #[inline]
    fn write_gathered<R: Deref<Target = Registry>>(
        &mut self,
        s: &mut Session<R>,
        blocking: bool,
        sent: &mut bool,
    ) -> Option<Stop> {
        if blocking {
            if let Err(now) = arm(&self.link.stream, &mut self.timeouts.write, s.deadline(), false) {
                self.link.queue.gather.clear();
                s.timeout(now);
                return None;
            }
        }
        match (&self.link.stream).write(&self.link.queue.gather) {
            Ok(0) => {
                self.link.queue.gather.clear();
                s.failed(Failure::Send, false);
            }
            Ok(n) if n == self.link.queue.gather.len() => {
                // Freed: an idle session holds no buffer.
                self.link.queue.gather = Vec::new();
                *sent = true;
            }
            Ok(n) => {
                self.link.queue.gather.drain(..n);
                *sent = true;
            }
            Err(e) if !blocking && e.kind() == io::ErrorKind::WouldBlock => return Some(Stop::Writable),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                self.link.queue.gather.clear();
                self.failed(s, Failure::Send, e);
            }
        }
        self.link.queue.flush = !self.link.queue.gather.is_empty();
        None
    }

    /// An event of the machine: logged; a test beyond the address' limit
    /// is refused.
    #[inline]
    fn on_event<R: Deref<Target = Registry>>(&mut self, s: &mut Session<R>, e: Event) -> Option<Stop> {
        if !self.event(e, s.reason()) {
            let max = self.shared.cfg.limits.max_tests_per_client;
            s.refuse_limit(
                format_args!("limit: {max} tests at once from one address; wait for one to end"),
                monotonic_ns(),
            );
        }
        None
    }

    /// Sends what the machine asks (a record, payload, an object's bytes),
    /// or gathers it with the responses to requests already read.
    #[inline]
    fn send<R: Deref<Target = Registry>>(
        &mut self,
        s: &mut Session<R>,
        body: Option<Outgoing>,
        blocking: bool,
        sent: &mut bool,
    ) -> Option<Stop> {
        if blocking {
            if let Err(now) = arm(&self.link.stream, &mut self.timeouts.write, s.deadline(), false) {
                s.timeout(now);
                return None;
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
                    return None;
                }
            },
        };
        let record = s.record();
        if self.link.queue.carried() || !self.link.queue.gather.is_empty() {
            let n = record.len() + bytes.len();
            if self.link.queue.gather.len() + n > GATHER_MAX && !self.link.queue.gather.is_empty() {
                // Written first; this response is asked again.
                self.link.queue.flush = true;
                return None;
            }
            if self.link.queue.carried() && n <= GATHER_MAX {
                // More requests already read: answered together.
                self.link.queue.gather.extend_from_slice(record);
                self.link.queue.gather.extend_from_slice(bytes);
                s.sent(n);
                return None;
            }
        }
        let mut stream = &self.link.stream;
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
                *sent = true;
                s.sent(n);
            }
            Err(e) if !blocking && e.kind() == io::ErrorKind::WouldBlock => return Some(Stop::Writable),
            Err(e) => self.failed(s, Failure::Send, e),
        }
        None
    }

    /// Feeds the machine requests read before, with no call.
    #[inline]
    fn read_carried<R: Deref<Target = Registry>>(&mut self, s: &mut Session<R>) -> Option<Stop> {
        let took = s.input(&self.link.queue.carry[self.link.queue.carry_at..], 0, &mut self.files);
        self.link.queue.carry_at += took;
        if took == 0 || self.link.queue.carry_at == self.link.queue.carry.len() {
            // (None taken where a read was asked: cannot happen in rr; the
            // bytes are dropped, not looped on.) Freed: an idle session
            // holds no buffer.
            self.link.queue.carry = Vec::new();
            self.link.queue.carry_at = 0;
        }
        None
    }

    /// Reads at most `max` bytes (a batching session up to `BATCH_BUF`)
    /// and feeds them to the machine; what it does not take yet is
    /// carried.
    #[inline]
    fn read<R: Deref<Target = Registry>>(
        &mut self,
        s: &mut Session<R>,
        max: usize,
        small: &mut [u8],
        blocking: bool,
    ) -> Option<Stop> {
        if blocking {
            if let Err(now) = arm(&self.link.stream, &mut self.timeouts.read, s.deadline(), true) {
                s.timeout(now);
                return None;
            }
            if self.rx.is_none() && self.link.rx_len > 0 {
                self.rx = Some(AlignedBuf::new(self.link.rx_len as usize));
            }
        }
        let buf = match self.rx.as_mut() {
            Some(b) => b.bytes_mut(),
            None => small,
        };
        // A batch read takes up to BATCH_BUF beyond what was asked: what a
        // session holds in `carry` stays small however much a client
        // queues.
        let n = if self.link.queue.batch { max.max(BATCH_BUF) } else { max }.min(buf.len());
        let mut stream = &self.link.stream;
        let got = if self.link.stamps.on {
            // The last response's send stamp, before waiting for the next
            // request (outside this one's time).
            let fd = self.link.stream.as_raw_fd();
            tstamp::drain_tx(fd, |k, ns| s.tx_stamp(k, ns));
            let r = tstamp::recv(fd, &mut buf[..n], false);
            if let Ok((_, k)) = r {
                self.link.stamps.last_rx = (k, realtime_ns());
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
                    // Pipelined requests: answered one by one from here,
                    // with no call until they are.
                    self.link.queue.carry.extend_from_slice(&buf[took..k]);
                }
            }
            Err(e) if !blocking && e.kind() == io::ErrorKind::WouldBlock => return Some(Stop::Readable),
            Err(e) => self.failed(s, Failure::Receive, e),
        }
        None
    }

    /// Completes a due Report with the sources' TCP figures and, for the
    /// final one, this thread's CPU time.
    #[inline]
    fn report<R: Deref<Target = Registry>>(&mut self, s: &mut Session<R>, due: ReportDue) -> Option<Stop> {
        let figures = ReportInputs {
            tcp: self.shared.sources.figures(due.test),
            cpu: match (due.is_final, self.cpu.thread_start) {
                (true, Some(c0)) => Some(cpu(thread_cpu().since(c0))),
                _ => None,
            },
        };
        s.report(monotonic_ns(), figures);
        None
    }

    /// Hands the machine the stamps of the request just read.
    #[inline]
    fn stamp<R: Deref<Target = Registry>>(&mut self, s: &mut Session<R>) -> Option<Stop> {
        let (rx_kernel, app_rx) = self.link.stamps.last_rx;
        s.stamp(Block {
            app: self.link.stamps.on.then(|| (app_rx, realtime_ns())),
            rx_kernel,
            prev_tx: None,
            hardware: false,
        });
        None
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
        let (c, log, peer) = (&self.shared.counters, self.shared.cfg.log, self.link.peer);
        if !self.link.held.judged && !matches!(e, Event::Accepted(_)) {
            self.link.held.judged = true;
            self.shared.clients.judged(&self.shared.cfg, peer.ip(), false);
        }
        match e {
            Event::Accepted(service) => {
                if !self.link.held.judged {
                    self.link.held.judged = true;
                    let test = !matches!(service, Service::Sink { .. } | Service::Source { .. });
                    if !self.shared.clients.judged(&self.shared.cfg, peer.ip(), test) {
                        return false;
                    }
                    self.link.held.test = test;
                }
                Shared::bump(&c.sessions);
                match service {
                    Service::Rr { req, resp, stamps } => {
                        self.place.large = req.max(resp) >= LARGE;
                        // Without stamps (one kernel stamp per read), a
                        // read takes every queued request at once.
                        self.link.queue.batch = !stamps;
                        let len = if stamps {
                            req as usize
                        } else {
                            (req as usize).clamp(BATCH_BUF, RR_READ_MAX)
                        };
                        self.link.rx_len = len.min(CHUNK) as u32;
                        // Before the status record: send stamp keys count
                        // from its first byte.
                        self.link.stamps.on = stamps
                            && tstamp::enable(self.link.stream.as_raw_fd(), tstamp::Kind::Software, true).is_ok();
                    }
                    Service::Crr { req, resp } => {
                        self.place.large = req.max(resp) >= LARGE;
                        self.link.rx_len = (req as usize).min(CHUNK) as u32;
                    }
                    Service::Sink { read_hint, .. } => {
                        // The client's write size as the read size, so both
                        // ends move the same messages (the bps tool's
                        // 64-byte test); capped.
                        let n = match read_hint {
                            0 => SINK_BUF,
                            h => (h as usize).min(CHUNK),
                        };
                        self.link.rx_len = n as u32;
                    }
                    Service::Source { test, write } => {
                        if write < stackmeter_proto::limits::NODELAY_FROM {
                            let _ = self.link.stream.set_nodelay(false);
                        }
                        self.link.held.source = self.shared.sources.add(test, &self.link.stream);
                    }
                    Service::Objects => self.place.large = true,
                    Service::Control { .. } => {}
                }
                self.place.bulk = matches!(service, Service::Sink { .. } | Service::Source { .. });
                if matches!(
                    service,
                    Service::Control { .. } | Service::Sink { .. } | Service::Source { .. }
                ) {
                    // Read on the thread it moves to (CPU time is per thread).
                    self.link.handoff = true;
                } else {
                    // crr stays on the loop: a thread started for its one
                    // transaction cost more than it saved (p50 100-120 us
                    // against 60-92 us on the loop, bench/sessions.sh).
                    self.place.offer = !matches!(service, Service::Crr { .. });
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
        let used = match (self.cpu.thread_start, self.cpu.on_loop) {
            (Some(c0), _) => Some(cpu(thread_cpu().since(c0))),
            (None, Some(t)) => Some(cpu(t)),
            (None, None) => None,
        };
        s.finish(used);
    }

    /// Gives back what the session held of its address (a connection
    /// still judging its header, a running test) and its source entry.
    fn release(&mut self) {
        let held = std::mem::replace(&mut self.link.held, Held::NONE);
        held.give_back(self.shared, self.link.peer);
    }

    /// Unlists a source, adds an object session's totals.
    fn end<R: Deref<Target = Registry>>(&mut self, s: &Session<R>) {
        if let Some(key) = self.link.held.source.take() {
            self.shared.sources.remove(key);
        }
        let stackmeter_proto::machine::Served { requests, bytes } = s.objects_served();
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

/// A blocking session waits a little for its test (or `until`), then ticks.
#[inline]
fn wait<R: Deref<Target = Registry>>(s: &mut Session<R>, until: u64) -> Option<Stop> {
    let now = monotonic_ns();
    if until > now {
        std::thread::sleep(WAIT_STEP.min(Duration::from_nanos(until - now)));
    }
    s.tick(monotonic_ns());
    None
}
