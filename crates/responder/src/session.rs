//! The blocking driver of a session machine (`proto::machine::Session`):
//! one thread per TCP connection, doing what the machine asks.
//!
//! The machine decides what every byte means; this file owns the socket,
//! the buffers and the clock. It reads at most what the machine asks for,
//! writes its records and the payload cut from the shared page-aligned
//! buffers (record and payload in one `writev`), and turns the machine's
//! deadlines into socket timeouts, set only when they change: once per
//! data phase, since the idle timeout is relative to the last progress.
//! On the measured path of rr and crr that leaves one receive per request
//! chunk and one send per response chunk, as a hand-written loop would:
//! no clock read, lock, allocation or formatting per message.

use crate::objects::Files;
use crate::shared::{cpu, Shared, CHUNK};
use stackmeter_proto::machine::{Deadline, Event, Failure, Figures, Next, Registry, Service, Session};
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
const SMALL: usize = 4096;

/// How long a waiting session sleeps between looks at the registry.
const WAIT_STEP: Duration = Duration::from_millis(1);

/// Serves one accepted connection on the calling thread, start to end.
pub(crate) fn run(stream: TcpStream, peer: SocketAddr, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    let mut s = Session::new(&*shared.registry, shared.machine, monotonic_ns());
    let mut c = Conn::new(&stream, peer, shared);
    c.drive(&mut s, false);
    c.end(&s);
    if !c.judged {
        shared.peers.judged(&shared.cfg, peer.ip(), false);
    }
    if c.test {
        shared.peers.test_ended(peer.ip());
    }
    // Only a throughput test's sessions are charged CPU time, read when
    // they were accepted: rr and crr make no call for it.
    let used = c.cpu0.map(|c0| cpu(thread_cpu().since(c0)));
    s.finish(used);
}

/// One connection's driver state.
pub(crate) struct Conn<'a> {
    stream: &'a TcpStream,
    peer: SocketAddr,
    shared: &'a Shared,
    /// The waits the socket timeouts were set for (`None`: never set).
    read_timeout: Option<Deadline>,
    write_timeout: Option<Deadline>,
    /// The data phase's receive buffer (rr, crr, sink), page-aligned.
    rx: Option<AlignedBuf>,
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
}

impl<'a> Conn<'a> {
    pub(crate) fn new(stream: &'a TcpStream, peer: SocketAddr, shared: &'a Shared) -> Conn<'a> {
        Conn {
            stream,
            peer,
            shared,
            read_timeout: None,
            write_timeout: None,
            rx: None,
            files: Files::new(shared.store.as_ref()),
            source: None,
            error: None,
            cpu0: None,
            stamps: false,
            last_rx: (None, 0),
            judged: false,
            test: false,
        }
    }

    /// Does what the machine asks until it closes the session, or (with
    /// `until_read`) until it first asks to read: how the accept thread
    /// sends a Busy refusal without blocking, leaving the linger to a
    /// thread of its own.
    pub(crate) fn drive<R: Deref<Target = Registry>>(&mut self, s: &mut Session<R>, until_read: bool) {
        let mut small = [0u8; SMALL];
        loop {
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
                    if let Err(now) = arm(self.stream, &mut self.write_timeout, s.deadline(), false) {
                        s.timeout(now);
                        continue;
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
                    let mut stream = self.stream;
                    let r = if record.is_empty() {
                        stream.write(bytes)
                    } else if bytes.is_empty() {
                        stream.write(record)
                    } else {
                        stream.write_vectored(&[IoSlice::new(record), IoSlice::new(bytes)])
                    };
                    match r {
                        Ok(0) => s.failed(Failure::Send, false),
                        Ok(n) => s.sent(n),
                        Err(e) => self.failed(s, Failure::Send, e),
                    }
                }
                Next::Read(_) if until_read => return,
                Next::Read(max) => {
                    if let Err(now) = arm(self.stream, &mut self.read_timeout, s.deadline(), true) {
                        s.timeout(now);
                        continue;
                    }
                    let buf = match self.rx.as_mut() {
                        Some(b) => b.bytes_mut(),
                        None => &mut small[..],
                    };
                    let n = max.min(buf.len());
                    let mut stream = self.stream;
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
                            s.input(&buf[..k], now, &mut self.files);
                        }
                        Err(e) => self.failed(s, Failure::Receive, e),
                    }
                }
                Next::Report(due) => {
                    let figures = Figures {
                        tcp: self.shared.sources.figures(due.test),
                        cpu: match (due.is_final, self.cpu0) {
                            (true, Some(c0)) => Some(cpu(thread_cpu().since(c0))),
                            _ => None,
                        },
                    };
                    s.report(monotonic_ns(), figures);
                }
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
                Next::Close => return,
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
                    Service::Rr { req, stamps, .. } => {
                        self.rx = Some(AlignedBuf::new((req as usize).min(CHUNK)));
                        // Before the status record: send stamp keys count
                        // from its first byte.
                        self.stamps =
                            stamps && tstamp::enable(self.stream.as_raw_fd(), tstamp::Kind::Software, true).is_ok();
                    }
                    Service::Crr { req, .. } => {
                        self.rx = Some(AlignedBuf::new((req as usize).min(CHUNK)));
                    }
                    Service::Sink { read_hint, .. } => {
                        // The client's write size as the read size, so both
                        // ends move the same messages (seed 001's 64-byte
                        // test); capped.
                        let n = match read_hint {
                            0 => SINK_BUF,
                            h => (h as usize).min(CHUNK),
                        };
                        self.rx = Some(AlignedBuf::new(n));
                    }
                    Service::Source { test, write } => {
                        if write < NODELAY_FROM {
                            let _ = self.stream.set_nodelay(false);
                        }
                        self.source = self.shared.sources.add(test, self.stream);
                    }
                    Service::Control { .. } | Service::Objects => {}
                }
                if matches!(
                    service,
                    Service::Control { .. } | Service::Sink { .. } | Service::Source { .. }
                ) {
                    self.cpu0 = Some(thread_cpu());
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

    /// After the close: unlists a source, adds an object session's totals.
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
