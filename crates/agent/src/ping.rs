//! The ping prober: every peer's UDP echo from one socket on one thread.
//!
//! A ping is stackmeter's echo request (`proto::udp`, 64 bytes, sealed
//! with the shared secret when there is one); the peer's responder answers
//! with its receive and send times on its own clock, which give the
//! one-way delays (`window.rs`). `stackmeter ping` runs a test (its own
//! socket, a count of datagrams, a summary at the end); the agent needs
//! each datagram's four stamps and one socket for every peer, so it
//! speaks the echo itself with the same header and sealing.
//!
//! One socket and one thread for all peers: probes leave at their slots
//! (`schedule.rs`) and the thread waits for replies in between (`ppoll`,
//! nanosecond timeouts), so a peer that does not answer costs nothing but
//! its entry in the outstanding table and never holds another peer's
//! probe back. The clock is read right before `sendto` and right after
//! `recvfrom`; the table look-up, the tallies and the metrics come after.
//! A ping with no answer within the timeout is lost; an answer after it
//! is counted late (and stays lost).

use crate::ctx::Ctx;
use crate::mesh::{lock, Pair, PING};
use crate::summary::Answer;
use crate::window::OneWay;
use stackmeter_proto::auth::MAC_LEN;
use stackmeter_proto::pattern;
use stackmeter_proto::udp::{self, Header, Kind, FLAG_SERVER_TS, HEADER_LEN};
use stackmeter_recorder::owd::Stamps;
use stackmeter_sys::monotonic_ns;
use std::collections::{BTreeMap, VecDeque};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

/// Ping datagram size, bytes (the header and 24 bytes of pattern; the
/// MAC trailer comes on top).
pub const SIZE: usize = 64;

/// Answered or expired pings remembered, to tell a duplicate or a late
/// answer from a stray datagram.
const RECENT: usize = 4096;

/// The longest the thread sleeps without looking at the stop flag and
/// the peer list.
const NAP_NS: u64 = 100_000_000;

struct Out {
    pair: Arc<Pair>,
    index: u64,
    c_tx: u64,
}

struct Slot {
    pair: Arc<Pair>,
    due: u64,
}

/// Runs until the stop: pings every pair once per interval at its slot.
pub(crate) fn run(sock: UdpSocket, ctx: Arc<Ctx>) {
    if let Err(e) = sock.set_nonblocking(true) {
        crate::log::warn(&format!("ping: cannot set up the socket: {e}; no pings"));
        return;
    }
    let mut p = Prober {
        key: ctx.secret,
        tx: Vec::new(),
        rx: vec![0u8; 2048],
        base: stackmeter_sys::wall_ns(),
        next: 0,
        outstanding: BTreeMap::new(),
        recent: VecDeque::new(),
        timeout_ns: ctx.timeout.as_nanos() as u64,
        sock,
        ctx,
    };
    p.tx = vec![0u8; SIZE + if p.key.is_some() { MAC_LEN } else { 0 }];
    p.run();
}

struct Prober {
    sock: UdpSocket,
    ctx: Arc<Ctx>,
    key: Option<stackmeter_proto::auth::Key>,
    tx: Vec<u8>,
    rx: Vec<u8>,
    /// Sequence numbers on the wire start here (the wall clock at start,
    /// so a restarted agent is ahead of every peer's replay window).
    base: u64,
    next: u64,
    outstanding: BTreeMap<u64, Out>,
    /// (sequence, pair, answered) of recent pings no longer outstanding.
    recent: VecDeque<(u64, Arc<Pair>, bool)>,
    timeout_ns: u64,
}

impl Prober {
    fn run(&mut self) {
        let interval = self.ctx.plan.interval_ns;
        let mut generation = None;
        let mut slots: Vec<Slot> = Vec::new();
        let mut wait_failed = false;
        while !self.ctx.stop.is_set() {
            let g = self.ctx.mesh.generation();
            if generation != Some(g) {
                generation = Some(g);
                let now = monotonic_ns();
                slots = self
                    .ctx
                    .mesh
                    .pairs()
                    .into_iter()
                    .map(|pair| Slot {
                        due: crate::schedule::next_due(self.ctx.epoch_ns, pair.offset(PING), interval, now),
                        pair,
                    })
                    .collect();
            }
            let now = monotonic_ns();
            self.expire(now);
            for s in &mut slots {
                if s.due <= now {
                    self.send(&s.pair, now - s.due);
                    s.due = crate::schedule::after(s.due, interval, monotonic_ns());
                }
            }
            let mut until = now + NAP_NS;
            if let Some(d) = slots.iter().map(|s| s.due).min() {
                until = until.min(d);
            }
            if let Some(o) = self.outstanding.values().next() {
                until = until.min(o.c_tx + self.timeout_ns);
            }
            let wait = Duration::from_nanos(until.saturating_sub(monotonic_ns()));
            match stackmeter_sys::wait_readable(self.sock.as_raw_fd(), wait) {
                Ok(true) => self.receive(),
                Ok(false) => {}
                Err(e) => {
                    if !wait_failed {
                        crate::log::warn(&format!("ping: waiting for answers failed: {e}"));
                        wait_failed = true;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }

    /// Sends the next ping to `pair`, `lag_ns` after its due time.
    fn send(&mut self, pair: &Arc<Pair>, lag_ns: u64) {
        let index = pair.pings.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let seq = self.base.wrapping_add(self.next);
        self.next += 1;
        // Cannot fail: the buffer holds the header.
        let _ = Header::request(seq, index).emit(&mut self.tx);
        pattern::fill(seq, &mut self.tx[HEADER_LEN..SIZE]);
        if let Some(k) = &self.key {
            udp::seal(k, &mut self.tx);
        }
        let c_tx = monotonic_ns();
        let sent = self.sock.send_to(&self.tx, pair.addr);
        let m = &self.ctx.metrics;
        pair.record(|| {
            m.sent(&pair.label, PING);
            lock(&pair.ping).sent(lag_ns);
        });
        match sent {
            Ok(_) => {
                self.outstanding.insert(
                    seq,
                    Out {
                        pair: pair.clone(),
                        index,
                        c_tx,
                    },
                );
            }
            Err(e) => {
                pair.record(|| m.lost(&pair.label, PING));
                pair.health(PING, false, || format!("cannot send: {e}"));
            }
        }
    }

    /// Counts every ping older than the timeout as lost.
    fn expire(&mut self, now: u64) {
        while let Some(entry) = self.outstanding.first_entry() {
            if entry.get().c_tx + self.timeout_ns > now {
                break;
            }
            let (seq, o) = entry.remove_entry();
            let m = &self.ctx.metrics;
            o.pair.record(|| m.lost(&o.pair.label, PING));
            let ms = self.timeout_ns / 1_000_000;
            o.pair.health(PING, false, || format!("no answer within {ms} ms"));
            self.remember(seq, o.pair, false);
        }
    }

    fn remember(&mut self, seq: u64, pair: Arc<Pair>, answered: bool) {
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((seq, pair, answered));
    }

    /// Takes every datagram that has arrived.
    fn receive(&mut self) {
        loop {
            let (n, src) = match self.sock.recv_from(&mut self.rx) {
                Ok(r) => r,
                // Nothing more; or an ICMP error for an earlier send,
                // which the timeout accounts for.
                Err(_) => return,
            };
            let c_rx = monotonic_ns();
            self.answer(n, src, c_rx);
        }
    }

    fn answer(&mut self, n: usize, src: SocketAddr, c_rx: u64) {
        let body = match &self.key {
            Some(k) => match udp::open(k, &self.rx[..n]) {
                Some(b) => b,
                None => {
                    if udp::is_unsealed(&self.rx[..n]) {
                        self.about(src, "answers without a MAC: it has no secret (--secret-file)");
                    }
                    return;
                }
            },
            None => n,
        };
        let Ok(h) = Header::parse(&self.rx[..body]) else {
            return;
        };
        if h.kind == Kind::Refused as u8 {
            let v = h.version;
            self.about(src, &format!("refused the echo: it speaks protocol v{v}"));
            return;
        }
        if h.kind != Kind::EchoReply as u8 {
            return;
        }
        let Some(o) = self.outstanding.remove(&h.seq) else {
            if let Some((_, pair, answered)) = self.recent.iter().find(|r| r.0 == h.seq && r.1.addr == src) {
                let pair = pair.clone();
                let answered = *answered;
                pair.record(|| {
                    let mut t = lock(&pair.ping);
                    if answered {
                        t.duplicate();
                    } else {
                        t.late();
                    }
                });
            }
            return;
        };
        if o.pair.addr != src {
            // Not from the peer it went to: not its answer.
            self.outstanding.insert(h.seq, o);
            return;
        }
        let rtt_ns = c_rx.saturating_sub(o.c_tx);
        if rtt_ns > self.timeout_ns {
            // Read after its deadline: as lost as one that never came.
            let m = &self.ctx.metrics;
            o.pair.record(|| {
                m.lost(&o.pair.label, PING);
                lock(&o.pair.ping).late();
            });
            self.remember(h.seq, o.pair, false);
            return;
        }
        let intact = body == SIZE && pattern::matches(h.seq, &self.rx[HEADER_LEN..body]);
        let stamped = h.flags & FLAG_SERVER_TS != 0 && h.server_tx >= h.server_rx;
        let pair = o.pair.clone();
        self.remember(h.seq, o.pair, true);
        let m = &self.ctx.metrics;
        let slow_us = self.ctx.probing.slow_us;
        pair.record(|| {
            m.answered(&pair.label, PING, rtt_ns);
            lock(&pair.ping).answered(
                Answer {
                    index: o.index,
                    rtt_ns,
                    server_ns: stamped.then(|| h.server_tx - h.server_rx),
                    intact,
                },
                slow_us,
            );
            if stamped {
                let placed: Option<OneWay> = lock(&pair.window).add(Stamps {
                    c_tx: o.c_tx,
                    s_rx: h.server_rx,
                    s_tx: h.server_tx,
                    c_rx,
                });
                if let Some(ow) = placed {
                    m.one_way(&pair.label, &ow);
                }
            }
        });
        pair.health(PING, true, String::new);
    }

    /// A line about the peer at `src`, once per change of its health.
    fn about(&self, src: SocketAddr, what: &str) {
        if let Some(pair) = self.ctx.mesh.pairs().into_iter().find(|p| p.addr == src) {
            pair.health(PING, false, || what.to_string());
        }
    }
}
