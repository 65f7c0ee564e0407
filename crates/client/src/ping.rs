//! ping: UDP echo round trips with loss, order, payload and slow-answer
//! accounting (the UDP-echo scenario, docs/scenarios.md).
//!
//! Back to back (`interval` 0): one datagram outstanding; the clock is read
//! right before `send` and right after the matching `recv`. With an
//! interval, datagrams leave on a fixed schedule whatever the replies do,
//! and each RTT runs from that datagram's own send time, so a slow reply
//! never delays the next send.

use crate::endpoint::Endpoint;
use crate::error::is_timeout;
use crate::error::ClientError;
use crate::outcome::{levels, summary_us, Outcome, RowHistogram};
use crate::stamps::Collector;
use stackmeter_proto::pattern;
use stackmeter_proto::udp::{self, Header, Kind, FLAG_SERVER_TS, FLAG_STAMPS, HEADER_LEN, STAMPED_MIN};
use stackmeter_recorder::Recorder;
use stackmeter_results::{PingParams, PingResult, Slow};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// How many slow answers are listed one by one.
pub const SLOW_LISTED: usize = 10;

/// Runs the echo test (`--layers` is the crate root's: crate::layers runs
/// it twice). A test with no reply at all ends with an error next to its
/// (complete) row.
pub fn ping(endpoint: &Endpoint, spec: &PingParams) -> Outcome<PingResult> {
    run_once(endpoint, spec, false).0
}

/// One run that keeps every timed datagram's sequence number on the wire
/// and its two clock reads (for the tracer's waterfall).
pub(crate) fn run_timed(endpoint: &Endpoint, spec: &PingParams) -> (Outcome<PingResult>, Vec<(u64, Instant, Instant)>) {
    run_once(endpoint, spec, true)
}

/// One run of the echo test; with `keep`, also each timed datagram's
/// wire sequence number and clock reads.
fn run_once(endpoint: &Endpoint, spec: &PingParams, keep: bool) -> (Outcome<PingResult>, Vec<(u64, Instant, Instant)>) {
    let mut st = match State::new(endpoint, spec) {
        Ok(s) => s,
        Err(e) => return (Outcome::failed(e), Vec::new()),
    };
    if keep {
        st.times = Some(Vec::with_capacity(spec.count as usize));
    }
    let run = if spec.interval_us == 0 {
        st.back_to_back()
    } else {
        st.scheduled()
    };
    let row = st.row();
    let error = match run {
        Err(e) => Some(e),
        Ok(()) if row.received == 0 && row.sent > 0 => Some(ClientError::Lost {
            addr: endpoint.addr,
            what: format!(
                "no reply to any of {} datagrams within {} ms{}",
                row.sent,
                spec.timeout_ms,
                if spec.echo {
                    String::new()
                } else {
                    crate::control::why_silent(endpoint, Duration::from_millis(spec.timeout_ms))
                }
            ),
        }),
        Ok(()) => None,
    };
    let mut histograms = Vec::new();
    for (metric, rec) in [("rtt_us", &st.rtt), ("server_us", &st.server)] {
        if rec.count() > 0 {
            histograms.push(RowHistogram {
                row: 0,
                metric,
                ns: rec.clone(),
            });
        }
    }
    let out = Outcome {
        rows: vec![row],
        error,
        histograms,
    };
    (out, st.times.take().unwrap_or_default())
}

/// Two count ids for a test's warm-up and timed datagrams, when they are
/// counted: not to a plain echo server, and only when the datagrams hold
/// the count block at its place.
fn count_ids(spec: &PingParams) -> Option<(u32, u32)> {
    let at = if spec.timestamps.is_some() {
        STAMPED_MIN
    } else {
        HEADER_LEN
    };
    if spec.echo || spec.size < at + udp::COUNT_LEN {
        return None;
    }
    // Different for every test from this host: the clock and the process.
    let t = stackmeter_sys::wall_ns() ^ (u64::from(std::process::id()) << 32);
    let id = (t ^ (t >> 29)) as u32;
    Some((id, id.wrapping_add(1)))
}

struct State<'a> {
    endpoint: Endpoint,
    spec: &'a PingParams,
    timeout: Duration,
    slow: Duration,
    interval: Duration,
    sock: UdpSocket,
    tx: Vec<u8>,
    rx: stackmeter_sys::AlignedBuf,
    sent_at: Vec<Option<Instant>>,
    seen: Vec<bool>,
    outstanding: u64,
    wait: Duration,
    paced: bool,
    max_send_lag: Duration,
    highest: Option<u64>,
    origin: Instant,
    first_send: Option<Instant>,
    last_reply: Option<Instant>,
    rtt: Recorder,
    server: Recorder,
    r: PingResult,
    /// A plain echo server (`--echo`): the client's own framing.
    echo: Option<crate::plain::EchoFrames>,
    /// With `--timestamps`: every datagram's stamps.
    stamps: Option<Collector>,
    /// With a secret: datagrams carry a MAC trailer, and sequence numbers
    /// on the wire start here (the wall clock at the start, so a later run
    /// from a reused port is ahead of the responder's replay window).
    sealed: bool,
    base: u64,
    /// The count ids of the warm-up and the timed datagrams
    /// (docs/protocol.md 4.4); `None`: not counted (an echo target, or
    /// datagrams too short for the count block).
    count_ids: Option<(u32, u32)>,
    /// The highest timed datagram whose reply carried a count, and the
    /// count.
    counted: Option<(u64, u64)>,
    /// The timed datagrams whose reply came after the timeout.
    late_seqs: Vec<u64>,
    /// With `--layers`: each timed reply's wire sequence number and the
    /// clock reads around it (kept after the second read).
    times: Option<Vec<(u64, Instant, Instant)>>,
}

impl<'a> State<'a> {
    fn new(endpoint: &Endpoint, spec: &'a PingParams) -> Result<State<'a>, ClientError> {
        let addr = endpoint.addr;
        let timeout = Duration::from_millis(spec.timeout_ms);
        let local: SocketAddr = if addr.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            ([0u16; 8], 0).into()
        };
        let sock = UdpSocket::bind(local)?;
        crate::tune::socket(std::os::fd::AsRawFd::as_raw_fd(&sock))?;
        sock.connect(addr)?;
        sock.set_read_timeout(Some(timeout))?;
        let total = (spec.warmup + spec.count) as usize;
        // A plain echo target speaks no protocol: no secret there.
        let sealed = endpoint.secret.is_some() && !spec.echo;
        let stamps = match &spec.timestamps {
            Some(p) => {
                use std::os::fd::AsRawFd;
                crate::stamps::enable(sock.as_raw_fd(), p, sock.local_addr()?)?;
                std::thread::sleep(crate::stamps::SETTLE);
                Some(Collector::new(p, total, spec.warmup as usize))
            }
            None => None,
        };
        Ok(State {
            endpoint: *endpoint,
            spec,
            timeout,
            slow: Duration::from_micros(spec.slow_us),
            interval: Duration::from_micros(spec.interval_us),
            sock,
            tx: vec![0u8; spec.size + if sealed { endpoint.trailer() } else { 0 }],
            rx: stackmeter_sys::AlignedBuf::new(65536),
            sent_at: vec![None; total],
            seen: vec![false; total],
            outstanding: 0,
            wait: timeout,
            paced: false,
            max_send_lag: Duration::ZERO,
            highest: None,
            origin: Instant::now(),
            first_send: None,
            last_reply: None,
            rtt: Recorder::new(),
            server: Recorder::new(),
            r: PingResult::empty(spec.size),
            echo: spec.echo.then(|| crate::plain::EchoFrames::new(total)),
            stamps,
            sealed,
            base: if sealed { stackmeter_sys::wall_ns() } else { 0 },
            count_ids: count_ids(spec),
            counted: None,
            late_seqs: Vec::new(),
            times: None,
        })
    }

    fn total(&self) -> u64 {
        self.spec.warmup + self.spec.count
    }

    /// Builds datagram `seq` in the send buffer (before the clock read).
    fn build(&mut self, seq: u64) {
        let ts = self.origin.elapsed().as_nanos() as u64;
        if let Some(e) = &mut self.echo {
            e.build(seq, ts, &mut self.tx);
            return;
        }
        let wire = seq.wrapping_add(self.base);
        let mut h = Header::request(wire, ts);
        if self.stamps.is_some() {
            h.flags = FLAG_STAMPS;
        }
        let body = self.spec.size;
        // Cannot fail: the size was checked to be >= HEADER_LEN.
        let _ = h.emit(&mut self.tx);
        pattern::fill(wire, &mut self.tx[HEADER_LEN..body]);
        if let Some((warm, timed)) = self.count_ids {
            let id = if seq < self.spec.warmup { warm } else { timed };
            udp::ask_count(&mut self.tx[..body], id);
        }
        if self.sealed {
            self.endpoint.seal(&mut self.tx);
        }
    }

    /// Sends the built datagram, noting its send time.
    fn send(&mut self, seq: u64) -> Result<(), ClientError> {
        let t0 = Instant::now();
        let r = self.sock.send(&self.tx);
        self.sent_at[seq as usize] = Some(t0);
        self.outstanding += 1;
        if seq >= self.spec.warmup {
            self.r.sent += 1;
            self.first_send.get_or_insert(t0);
        }
        r.map(|_| ()).map_err(|e| self.io_error(&e))
    }

    fn back_to_back(&mut self) -> Result<(), ClientError> {
        for seq in 0..self.total() {
            crate::error::check_interrupt()?;
            // The full timeout is in force before the send, so the common
            // case makes no socket-option call between send and receive.
            self.set_wait(self.timeout)?;
            self.build(seq);
            self.send(seq)?;
            let deadline = self.sent_at[seq as usize].unwrap_or_else(Instant::now) + self.timeout;
            // Wait for this datagram's reply; earlier ones may still come.
            while !self.seen[seq as usize] {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() || !self.receive_one(left)? {
                    break;
                }
            }
        }
        Ok(())
    }

    fn scheduled(&mut self) -> Result<(), ClientError> {
        self.paced = true;
        stackmeter_sys::tight_timers();
        let start = Instant::now();
        for seq in 0..self.total() {
            if stackmeter_sys::interrupt::interrupted() {
                // Replies to what was sent still count.
                let last = self.sent_at.iter().rev().find_map(|t| *t).unwrap_or_else(Instant::now);
                self.drain_until(last + self.timeout)?;
                return Err(ClientError::Interrupted);
            }
            let due = start + Duration::from_nanos((self.interval.as_nanos() as u64).saturating_mul(seq));
            loop {
                let left = due.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                self.receive_one(left)?;
            }
            let late = Instant::now().saturating_duration_since(due);
            self.max_send_lag = self.max_send_lag.max(late);
            self.build(seq);
            self.send(seq)?;
        }
        let last = self.sent_at.last().copied().flatten().unwrap_or_else(Instant::now);
        self.drain_until(last + self.timeout)
    }

    /// Takes replies until `until`, and until nothing is outstanding.
    fn drain_until(&mut self, until: Instant) -> Result<(), ClientError> {
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if self.outstanding == 0 || left.is_zero() || !self.receive_one(left)? {
                return Ok(());
            }
        }
    }

    /// Waits up to `wait` for one datagram and accounts for it. Returns
    /// false when the wait ran out. On a schedule the wait is a `ppoll`
    /// (nanosecond timeout); back to back it is the socket's own timeout,
    /// which makes no extra call between send and receive.
    fn receive_one(&mut self, wait: Duration) -> Result<bool, ClientError> {
        if self.paced {
            use std::os::fd::AsRawFd;
            if !stackmeter_sys::wait_readable(self.sock.as_raw_fd(), wait)? {
                return Ok(false);
            }
        } else {
            self.set_wait(wait)?;
        }
        if self.stamps.is_some() {
            return self.receive_stamped();
        }
        let n = match self.sock.recv(self.rx.bytes_mut()) {
            Ok(n) => n,
            Err(e) if is_timeout(&e) => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(true),
            Err(e) => return Err(self.io_error(&e)),
        };
        let t1 = Instant::now();
        self.account(n, t1, None)?;
        Ok(true)
    }

    /// [`State::receive_one`] with `--timestamps`: `recvmsg` with the
    /// kernel's receive stamp; then, after the clock read, the send stamps
    /// waiting on the error queue. On a schedule the receive does not block
    /// (`ppoll` also wakes for the error queue).
    fn receive_stamped(&mut self) -> Result<bool, ClientError> {
        use std::os::fd::AsRawFd;
        let fd = self.sock.as_raw_fd();
        let got = stackmeter_sys::tstamp::recv(fd, self.rx.bytes_mut(), self.paced);
        let t1 = Instant::now();
        let r = match got {
            Ok((n, c_rx)) => self.account(n, t1, c_rx).map(|()| true),
            Err(e) if is_timeout(&e) => Ok(self.paced),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(true),
            Err(e) => Err(self.io_error(&e)),
        };
        if let Some(c) = self.stamps.as_mut() {
            // Key k is the k-th datagram sent: sequence number k.
            stackmeter_sys::tstamp::drain_tx(fd, |k, ns| c.sent_stamp(k as u64, ns));
        }
        r
    }

    /// Sets the receive timeout, calling into the kernel only on a change.
    /// Timeouts within 50 us of the one in force are taken as equal.
    fn set_wait(&mut self, wait: Duration) -> Result<(), ClientError> {
        let wait = wait.max(Duration::from_micros(1));
        if wait.abs_diff(self.wait) > Duration::from_micros(50) {
            self.sock.set_read_timeout(Some(wait))?;
            self.wait = wait;
        }
        Ok(())
    }

    fn account(&mut self, n: usize, t1: Instant, c_rx: Option<u64>) -> Result<(), ClientError> {
        if let Some(e) = &self.echo {
            return match e.check(&self.rx.bytes()[..n], self.spec.size) {
                Some((seq, intact)) => self.tally(seq, intact, None, t1, None),
                None => {
                    self.r.mismatched += 1;
                    Ok(())
                }
            };
        }
        let rx = self.rx.bytes_mut();
        let n = match self.sealed {
            false => n,
            true => match self.endpoint.open(&rx[..n]) {
                Ok(body) => body,
                Err(true) => return Err(self.endpoint.unsealed_reply()),
                Err(false) => {
                    self.r.mismatched += 1;
                    return Ok(());
                }
            },
        };
        let Ok(mut h) = Header::parse(&rx[..n]) else {
            self.r.mismatched += 1;
            return Ok(());
        };
        // A request came back (an echo server: a responder never sends
        // one), or a refusal.
        if let Some(e) = crate::error::echo_reply_kind(self.endpoint.addr, &h) {
            return Err(e);
        }
        // A stamp block replaces the first 48 payload bytes, and a count
        // block the 16 after it (or the first 16).
        let mut block = self.stamps.as_ref().and_then(|_| udp::reply_block(&rx[..n]));
        let asked_stamps = self.stamps.is_some();
        let count = self.count_ids.and_then(|_| udp::reply_count(&rx[..n], asked_stamps));
        let skip = if self.count_ids.is_some() { udp::COUNT_LEN } else { 0 };
        let from = if asked_stamps { STAMPED_MIN } else { HEADER_LEN } + skip;
        // The stamps flag and the block agree, and every payload byte after
        // the blocks' places is the pattern.
        let payload = block.is_some() == (h.flags & FLAG_STAMPS != 0)
            && from <= n
            && pattern::matches_from(h.seq, from - HEADER_LEN, &rx[from..n]);
        // Sequence numbers from here on are the datagrams' indexes.
        h.seq = h.seq.wrapping_sub(self.base);
        if let Some(b) = block.as_mut() {
            b.prev_tx = b.prev_tx.map(|(id, ns)| (id.wrapping_sub(self.base), ns));
        }
        let intact = n == self.spec.size && h.kind == Kind::EchoReply as u8 && payload;
        if let (Some((_, timed)), Some(udp::ReplyCount { id, received })) = (self.count_ids, count) {
            let later = self.counted.is_none_or(|(s, _)| h.seq > s);
            if id == timed && h.seq >= self.spec.warmup && later {
                self.counted = Some((h.seq, received));
            }
        }
        let server = (h.flags & FLAG_SERVER_TS != 0 && h.server_tx >= h.server_rx).then(|| h.server_tx - h.server_rx);
        self.tally(h.seq, intact, server, t1, Some((c_rx, block)))
    }

    /// Counts the reply to datagram `seq` that came at `t1`: duplicate,
    /// late, reordered, mismatched (`intact` false), slow; its RTT and the
    /// responder's own time (`server_ns`) go to the histograms, and with
    /// `--timestamps` its kernel receive stamp and stamp block (`stamped`)
    /// to the collector.
    fn tally(
        &mut self,
        seq: u64,
        intact: bool,
        server_ns: Option<u64>,
        t1: Instant,
        stamped: Option<(Option<u64>, Option<stackmeter_proto::stamps::Block>)>,
    ) -> Result<(), ClientError> {
        let i = seq as usize;
        let Some(sent) = self.sent_at.get(i).copied().flatten() else {
            self.r.mismatched += 1;
            return Ok(());
        };
        if self.seen[i] {
            if seq >= self.spec.warmup {
                self.r.duplicates += 1;
            }
            return Ok(());
        }
        self.seen[i] = true;
        self.outstanding -= 1;
        if seq < self.spec.warmup {
            return Ok(());
        }
        let rtt = t1.duration_since(sent);
        if rtt > self.timeout {
            self.r.late += 1;
            self.late_seqs.push(seq);
            return Ok(());
        }
        self.r.received += 1;
        self.last_reply = Some(t1);
        match self.highest {
            Some(hi) if seq < hi => self.r.reordered += 1,
            _ => self.highest = Some(seq),
        }
        if let (Some(c), Some((c_rx, block))) = (self.stamps.as_mut(), stamped) {
            c.timed(seq, sent, t1, c_rx);
            if let Some(b) = block {
                c.block(seq, &b);
            }
        }
        if !intact {
            self.r.mismatched += 1;
        }
        let ns = rtt.as_nanos() as u64;
        self.rtt.record(ns);
        if let Some(t) = self.times.as_mut() {
            t.push((seq.wrapping_add(self.base), sent, t1));
        }
        if let Some(ns) = server_ns {
            self.server.record(ns);
        }
        if rtt > self.slow {
            self.r.slow += 1;
            if self.r.slow_first.len() < SLOW_LISTED {
                self.r.slow_first.push(Slow {
                    seq: seq - self.spec.warmup,
                    rtt_us: ns as f64 / 1000.0,
                });
            }
        }
        Ok(())
    }

    fn io_error(&self, e: &io::Error) -> ClientError {
        crate::error::udp_io_error(self.endpoint.addr, e, self.r.received > 0)
    }

    fn row(&mut self) -> PingResult {
        let mut r = self.r.clone();
        r.lost = r.sent.saturating_sub(r.received);
        r.rtt_us = summary_us(&self.rtt);
        r.server_us = summary_us(&self.server);
        r.levels = levels(&self.rtt);
        r.max_send_lag_us = self.max_send_lag.as_nanos() as f64 / 1000.0;
        let wall = match (self.first_send, self.last_reply) {
            (Some(a), Some(b)) if b > a => b.duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        r.pps = if wall > 0.0 { r.received as f64 / wall } else { 0.0 };
        if let Some(c) = &self.stamps {
            let (ts, split) = c.finish();
            r.timestamps = Some(ts);
            r.split_us = split;
        }
        r.loss_split = self.counted.map(|(hi, received)| self.split(hi, received));
        r
    }

    /// Loss each way from the count in the reply to timed datagram `hi`
    /// (docs/protocol.md 4.4): of the timed datagrams up to it, the
    /// responder received `received`; the replies back on time and late
    /// say the rest.
    fn split(&self, hi: u64, received: u64) -> stackmeter_results::LossSplit {
        let w = self.spec.warmup as usize;
        let upto = hi as usize + 1;
        let sent = (upto - w) as u64;
        let back = self.seen[w..upto].iter().filter(|s| **s).count() as u64;
        let late = self.late_upto(upto);
        let on_time = back - late;
        let after_sent = self.r.sent - sent;
        let after_back = self.seen[upto..].iter().filter(|s| **s).count() as u64 - (self.r.late - late);
        stackmeter_results::LossSplit {
            up: sent.saturating_sub(received),
            down: received.saturating_sub(on_time),
            down_late: late.min(received),
            unknown: after_sent.saturating_sub(after_back),
        }
    }

    /// Late replies among the timed datagrams before index `upto`.
    fn late_upto(&self, upto: usize) -> u64 {
        self.late_seqs.iter().filter(|&&s| (s as usize) < upto).count() as u64
    }
}
