//! The event loop: every TCP session of one listener starts here, and an
//! idle one stays here at the cost of its `Conn` and `Session` (no thread,
//! no buffer), so a responder holds as many as it has descriptors for.
//!
//! One thread per listener accepts (non-blocking), turns away what its
//! address may not open now (`--allow`, `--max-connects-per-second`,
//! `--max-idle-per-client`: closed before a byte is read or written),
//! refuses beyond `--max-sessions` with `Busy` (record and lingering close
//! driven here, no thread), and drives every session's machine with
//! non-blocking calls (`conn.rs`, `Drive::Loop`) as far as its socket
//! lets it. Readiness comes from epoll (level-triggered, `stackmeter_sys::
//! epoll`); deadlines from one array of wake times swept every
//! [`SWEEP`], so a timeout costs no timer per session.
//!
//! Where a session runs is measured, not assumed (docs/decisions.md,
//! "Sessions start on the event loop"): a thread blocked in `recv` answers
//! one rr session faster than the loop's readiness call and extra read, and
//! moves large messages much faster; the loop answers several small-message
//! sessions faster than as many threads. So a latency session (rr,
//! objects) moves to a thread of its own when its first data arrives: one
//! with messages of 64 KiB or more (or objects) while fewer than
//! `--threads` have one, a small-message one only when none has; the rest
//! run on the loop.
//! Throughput sessions move to a thread at acceptance: control sessions
//! always (their waits), sinks and sources while fewer than `--threads`
//! have one. Past that they share the loop, which meters the CPU time it
//! spends on each (a thread reads its own once): `stream -P 1000` on
//! 1,000 threads of one CPU moved less than on a few.
//!
//! With `--spin-us`, the loop looks for events without sleeping for that
//! long after its last one, so a request that comes within it costs no
//! wake-up (on this VM a wake-up is about 5 us of a 17 us round trip), and
//! small-message sessions never get a thread (a blocked thread pays the
//! wake-up the loop no longer does).

use crate::conn::{finish, Conn, Drive, Stop};
use crate::shared::{spawn, Shared, CHUNK};
use stackmeter_proto::machine::{Deadline, Registry, Session};
use stackmeter_sys::epoll::{Epoll, Events, Interest};
use stackmeter_sys::{monotonic_ns, thread_cpu, AlignedBuf};
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How often the loop looks for sessions past their deadline: the
/// precision of header and idle timeouts on the loop.
const SWEEP: Duration = Duration::from_millis(50);

/// How often a session waiting on the registry is ticked (as a thread's
/// sleep step).
const TICK: Duration = Duration::from_millis(1);

/// Events taken per wait.
const BATCH: usize = 256;

/// The token of the listener (sessions are numbered from 0).
const LISTENER: u64 = u64::MAX;

/// A wake time meaning none.
const NEVER: u64 = u64::MAX;

/// Which count of threads a session's thread was taken from.
#[derive(Clone, Copy)]
enum ThreadSlot {
    /// A control session: not counted.
    Uncounted,
    /// `threaded`: rr and object sessions.
    Latency,
    /// `bulk`: sinks and sources.
    Bulk,
}

impl ThreadSlot {
    fn give_back(self, sh: &Shared) {
        let c = match self {
            ThreadSlot::Uncounted => return,
            ThreadSlot::Latency => &sh.counters.threaded,
            ThreadSlot::Bulk => &sh.counters.bulk,
        };
        c.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One session on the loop.
struct Slot<'a> {
    conn: Conn<'a>,
    s: Session<Arc<Registry>>,
    /// What epoll watches its socket for now.
    interest: Interest,
    /// Counted in `active` (a busy refusal is not).
    counted: bool,
    /// In the list of sessions waiting on the registry.
    ticking: bool,
}

/// The loop's sessions: slots reused through a free list, with their wake
/// times beside them in one flat array the sweep reads.
struct Loop<'a> {
    shared: &'a Shared,
    /// The same, for the threads sessions move to.
    owner: Arc<Shared>,
    ep: Epoll,
    /// The ready descriptors of the last wait.
    events: Events,
    slots: Vec<Option<Box<Slot<'a>>>>,
    wake: Vec<u64>,
    free: Vec<usize>,
    /// Sessions waiting on the registry (`Stop::Wake`).
    ticking: Vec<usize>,
    /// The one receive buffer of every session on the loop.
    rx: AlignedBuf,
}

/// Runs the loop for one listener, forever. Fails only when epoll cannot
/// be set up.
pub(crate) fn run(listener: TcpListener, shared: Arc<Shared>) -> io::Result<()> {
    shared.pin();
    listener.set_nonblocking(true)?;
    let mut l = Loop {
        shared: &shared,
        owner: shared.clone(),
        ep: Epoll::new()?,
        events: Events::with_capacity(BATCH),
        slots: Vec::new(),
        wake: Vec::new(),
        free: Vec::new(),
        ticking: Vec::new(),
        rx: AlignedBuf::new(CHUNK),
    };
    l.ep.add(listener.as_raw_fd(), LISTENER, Interest::Read)?;
    shared.cfg.log.line(format_args!(
        "listening on tcp {}",
        listener.local_addr().map(|a| a.to_string()).unwrap_or_default()
    ));
    let mut ready: Vec<u64> = Vec::with_capacity(BATCH);
    let mut next_sweep = monotonic_ns() + SWEEP.as_nanos() as u64;
    let spin = shared.cfg.spin.as_nanos() as u64;
    // Until when the loop spins: its last event plus `spin`.
    let mut spin_until = 0u64;
    loop {
        let wait = if spin > 0 && monotonic_ns() < spin_until {
            Duration::ZERO
        } else if l.ticking.is_empty() {
            SWEEP
        } else {
            TICK
        };
        ready.clear();
        match l.ep.wait(&mut l.events, Some(wait)) {
            Ok(n) => {
                if n > 0 && spin > 0 {
                    spin_until = monotonic_ns() + spin;
                }
                ready.extend(l.events.iter().map(|r| r.token));
            }
            Err(e) => {
                shared.cfg.log.line(format_args!("epoll wait failed: {e}"));
                std::thread::sleep(TICK);
            }
        }
        for &token in &ready {
            if token == LISTENER {
                l.accept_all(&listener);
            } else {
                l.ready(token as usize);
            }
        }
        if !l.ticking.is_empty() {
            l.tick();
        }
        let now = monotonic_ns();
        if now >= next_sweep {
            l.sweep(now);
            next_sweep = now + SWEEP.as_nanos() as u64;
        }
    }
}

impl<'a> Loop<'a> {
    /// Accepts every connection waiting.
    fn accept_all(&mut self, listener: &TcpListener) {
        loop {
            match listener.accept() {
                Ok((stream, peer)) => self.admit(stream, peer),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // Out of descriptors or memory: say so, let sessions
                    // end, and accept again on the next round.
                    self.shared.cfg.log.line(format_args!("accept failed: {e}"));
                    std::thread::sleep(Duration::from_millis(10));
                    return;
                }
            }
        }
    }

    /// Starts a session for a new connection, or turns it away.
    fn admit(&mut self, stream: TcpStream, peer: SocketAddr) {
        let sh = self.shared;
        let now = monotonic_ns();
        // Turned away before any byte is read or written: no log line (a
        // flood would fill the log), a counter.
        if sh.clients.admit(&sh.cfg, peer.ip(), now).is_err() {
            Shared::bump(&sh.counters.turned_away);
            return;
        }
        let active = sh.counters.active.fetch_add(1, Ordering::AcqRel);
        let (s, counted) = if active >= sh.cfg.max_sessions {
            sh.counters.active.fetch_sub(1, Ordering::AcqRel);
            (Session::busy(sh.registry.clone(), sh.machine, now), false)
        } else {
            sh.counters.peak.fetch_max(active + 1, Ordering::Relaxed);
            (Session::new(sh.registry.clone(), sh.machine, now), true)
        };
        let _ = stream.set_nodelay(true);
        if let Err(e) = stream.set_nonblocking(true) {
            sh.cfg.log.line(format_args!("cannot serve {peer}: {e}"));
        }
        let fd = stream.as_raw_fd();
        let slot = Box::new(Slot {
            conn: Conn::new(stream, peer, sh, Drive::Loop),
            s,
            interest: Interest::Read,
            counted,
            ticking: false,
        });
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(slot);
                i
            }
            None => {
                self.slots.push(Some(slot));
                self.wake.push(NEVER);
                self.slots.len() - 1
            }
        };
        if let Err(e) = self.ep.add(fd, i as u64, Interest::Read) {
            sh.cfg.log.line(format_args!("cannot watch {peer}: {e}"));
            self.close(i);
            return;
        }
        self.drive(i);
    }

    /// A session's socket is ready: drive it, or give it a thread.
    fn ready(&mut self, i: usize) {
        let Some(slot) = self.slots.get_mut(i).and_then(|s| s.as_mut()) else {
            // Closed earlier in this batch.
            return;
        };
        if slot.conn.offer() {
            // Small messages: a thread only for a session on its own (one
            // session: 5% faster on a thread; two to eight at once: 10-14%
            // faster on the loop). Large ones: while fewer than --threads.
            let cfg = &self.shared.cfg;
            let cap = match (slot.conn.large(), cfg.spin.is_zero()) {
                (true, _) => cfg.threads,
                (false, true) => cfg.threads.min(1),
                // A spinning loop answers faster than a waking thread.
                (false, false) => 0,
            };
            let threads = &self.shared.counters.threaded;
            if threads.fetch_add(1, Ordering::AcqRel) < cap {
                self.handoff(i, ThreadSlot::Latency);
                return;
            }
            threads.fetch_sub(1, Ordering::AcqRel);
            slot.conn.decline();
        }
        self.drive(i);
    }

    /// Drives session `i` as far as its socket allows and records what it
    /// waits for next.
    fn drive(&mut self, i: usize) {
        let Some(slot) = self.slots[i].as_mut() else {
            return;
        };
        let t0 = slot.conn.metered().then(thread_cpu);
        let stop = slot.conn.drive(&mut slot.s, self.rx.bytes_mut());
        if let Some(t0) = t0 {
            slot.conn.add_cpu(thread_cpu().since(t0));
        }
        let want = match stop {
            Stop::Closed => return self.close(i),
            Stop::Handoff if slot.conn.bulk() => {
                // Past --threads sink and source threads, the rest share
                // the loop: 1,000 flows on 1,000 threads of one CPU moved
                // less than on a few (bench/openloop.sh, -P 1000).
                let bulk = &self.shared.counters.bulk;
                if bulk.fetch_add(1, Ordering::AcqRel) < self.shared.cfg.threads {
                    return self.handoff(i, ThreadSlot::Bulk);
                }
                bulk.fetch_sub(1, Ordering::AcqRel);
                slot.conn.keep_bulk();
                return self.drive(i);
            }
            Stop::Handoff => return self.handoff(i, ThreadSlot::Uncounted),
            Stop::Readable => Interest::Read,
            Stop::Writable => Interest::Write,
            Stop::Wake(_) => Interest::Nothing,
        };
        let wake = match stop {
            Stop::Wake(t) => {
                if !slot.ticking {
                    slot.ticking = true;
                    self.ticking.push(i);
                }
                t
            }
            _ => {
                let now = monotonic_ns();
                let d = match slot.s.deadline() {
                    Deadline::At(t) => t,
                    Deadline::Idle(ns) => now.saturating_add(ns),
                };
                slot.s.ends_by().map_or(d, |t| t.min(d))
            }
        };
        self.wake[i] = wake;
        if slot.interest != want {
            slot.interest = want;
            if let Err(e) = self.ep.modify(slot.conn.stream().as_raw_fd(), i as u64, want) {
                self.shared.cfg.log.line(format_args!("cannot watch a session: {e}"));
                slot.s.abort(format_args!("epoll: {e}"));
                self.drive(i);
            }
        }
    }

    /// Ticks the sessions waiting on the registry.
    fn tick(&mut self) {
        let now = monotonic_ns();
        for i in std::mem::take(&mut self.ticking) {
            if let Some(slot) = self.slots[i].as_mut() {
                slot.ticking = false;
                slot.s.tick(now);
                self.drive(i);
            }
        }
    }

    /// Times out every session past its deadline.
    fn sweep(&mut self, now: u64) {
        for i in 0..self.wake.len() {
            if self.wake[i] > now {
                continue;
            }
            self.wake[i] = NEVER;
            let Some(slot) = self.slots[i].as_mut() else {
                continue;
            };
            if slot.interest == Interest::Nothing {
                // Ticking: its wake time is the machine's, checked there.
                continue;
            }
            // Past the end of its test the drive expires it; otherwise the
            // wait itself timed out.
            if slot.s.ends_by().is_none_or(|t| t > now) {
                slot.s.timeout(now);
            }
            self.drive(i);
        }
    }

    /// Moves session `i` to a thread of its own; `slot_of` names the
    /// thread count it was counted in (taken before the call), given back
    /// when the thread ends.
    fn handoff(&mut self, i: usize, slot_of: ThreadSlot) {
        let Some(slot) = self.slots[i].take() else {
            return;
        };
        self.release(i);
        let sh = self.shared;
        let _ = self.ep.delete(slot.conn.stream().as_raw_fd());
        let Slot { conn, s, counted, .. } = *slot;
        let peer = conn.peer();
        let link = conn.into_link();
        // What the session holds of its address, given back here if no
        // thread starts (the closure, with the connection, is then gone).
        let held = link.held();
        let shared = self.owner.clone();
        let spawned = spawn("session", move || {
            shared.pin();
            match Conn::from_link(link, &shared) {
                Ok(c) => finish(c, s),
                Err(e) => shared.cfg.log.line(format_args!("warning: {peer}: cannot block: {e}")),
            }
            if counted {
                shared.counters.active.fetch_sub(1, Ordering::AcqRel);
            }
            slot_of.give_back(&shared);
        });
        if let Err(e) = spawned {
            // The closure, with the connection and its session, is gone:
            // the socket closed, the session left its test.
            sh.cfg
                .log
                .line(format_args!("warning: {peer}: cannot start a session thread: {e}"));
            held.give_back(sh, peer);
            if counted {
                sh.counters.active.fetch_sub(1, Ordering::AcqRel);
            }
            slot_of.give_back(sh);
        }
    }

    /// Ends session `i` on the loop.
    fn close(&mut self, i: usize) {
        let Some(slot) = self.slots[i].take() else {
            return;
        };
        self.release(i);
        let Slot { conn, s, counted, .. } = *slot;
        conn.close(s);
        if counted {
            self.shared.counters.active.fetch_sub(1, Ordering::AcqRel);
        }
    }

    fn release(&mut self, i: usize) {
        self.wake[i] = NEVER;
        self.free.push(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_session_is_small() {
        // What the loop holds per idle session besides the kernel's socket:
        // the boxed slot, its pointer and its wake time. Measured on
        // x86_64: printed by `cargo test -- --nocapture`.
        let slot = std::mem::size_of::<Slot<'static>>();
        let session = std::mem::size_of::<Session<Arc<Registry>>>();
        let conn = std::mem::size_of::<Conn<'static>>();
        println!("slot {slot} B = session {session} B + conn {conn} B + 16");
        assert!(slot + 16 <= 1536, "an idle session holds {slot} bytes");
    }
}
