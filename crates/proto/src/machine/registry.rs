//! The open throughput tests, shared by every session thread without a lock.
//!
//! A control session opens a test and owns it until it ends; sink and
//! source sessions join it by id and leave when they end; the UDP thread
//! counts stream datagrams into it. Everything is a fixed array of atomics
//! sized by [`TESTS`] and [`STREAMS`] ([`limits::MAX_TESTS`] and
//! [`limits::MAX_UDP_STREAMS`] unless a small target's build lowers them),
//! so the registry allocates nothing and is `Sync` on its own (a responder
//! may keep it in a `static`). The 64-bit counters are `portable-atomic`'s:
//! the host's own atomics where it has them, and on a single core without
//! 64-bit atomics (a Cortex-M3) interrupts masked around each access (this
//! crate's `single-core` feature).
//!
//! Slot life: each slot has one `state` word, `id << 32 | open`, where
//! `open` counts the data sessions joined and not yet left. A free slot is
//! 0. [`Registry::open`] takes a free slot (0 -> 1, id 0: nobody can join
//! it), clears its counters and publishes the id; [`Registry::join`] adds 1
//! only while the id still matches (compare-and-swap); [`Registry::close`]
//! clears the id and keeps `open`, so the slot is free again once the last
//! data session has left, and never reused while one could still count
//! into it.
//!
//! UDP streams: each stream's [`UdpRx`] lives in atomic words behind a
//! one-word claim flag. The UDP thread claims the stream (one
//! compare-and-swap, always free in practice), checks that the slot still
//! holds its test, loads the words, counts, stores them and releases
//! (relaxed loads and stores: plain moves). A Report claims each stream the
//! same way to read a consistent copy, and [`Registry::open`] to clear it.
//! No lock, no allocation, and safe code: the flag only orders who touches
//! the words, each of which is an atomic. The claim is held for a few dozen
//! instructions, so a thread that finds it taken (a Report being built, or
//! a second UDP socket counting the same stream) spins for that long.

use crate::control::{Report, FLAG_CPU, FLAG_DRAIN_TIMEOUT, FLAG_FINAL, FLAG_TCP_INFO};
use crate::limits::{self, MAX_TESTS, MAX_UDP_STREAMS};
use crate::stream::{UdpRx, STATE_WORDS};
use crate::udp;
use core::sync::atomic::Ordering;
use portable_atomic::{AtomicBool, AtomicU32, AtomicU64};

/// Throughput tests the registry holds: [`MAX_TESTS`], or fewer when the
/// build sets `STACKMETER_REGISTRY_TESTS` (the firmware's 64 KiB of SRAM
/// hold 2, as the C engine's `SMR_MAX_TESTS` does on the same board).
pub const TESTS: usize = build_knob(option_env!("STACKMETER_REGISTRY_TESTS"), MAX_TESTS);
/// UDP streams counted per test: [`MAX_UDP_STREAMS`], or fewer when the
/// build sets `STACKMETER_REGISTRY_STREAMS`.
pub const STREAMS: usize = build_knob(option_env!("STACKMETER_REGISTRY_STREAMS"), MAX_UDP_STREAMS);

/// A build setting: a decimal from 1 up to `max`, or `max` when unset; any
/// other value stops the build with the message below.
const fn build_knob(v: Option<&str>, max: usize) -> usize {
    let Some(v) = v else { return max };
    let b = v.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "STACKMETER_REGISTRY_* must be a decimal number");
        n = n * 10 + (b[i] - b'0') as usize;
        i += 1;
    }
    assert!(
        n >= 1 && n <= max,
        "STACKMETER_REGISTRY_* must be from 1 up to the protocol's limit"
    );
    n
}

const OPEN_MASK: u64 = 0xFFFF_FFFF;
/// A slot being set up: id 0 (no join matches), open 1 (no open takes it).
const RESERVED: u64 = 1;
const DRAIN_NS: u64 = limits::DRAIN_MS * 1_000_000;
const UDP_QUIET_NS: u64 = limits::UDP_QUIET_MS * 1_000_000;

/// CPU time spent on a test, as the driver measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// User-mode CPU time, ns.
    pub user_ns: u64,
    /// Kernel CPU time, ns.
    pub sys_ns: u64,
}

/// TCP_INFO figures over a test's source sessions, as the driver read them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpFigures {
    /// Retransmitted segments, summed.
    pub retransmits: u32,
    /// Congestion windows in bytes, summed.
    pub cwnd_bytes: u32,
    /// Smoothed RTT in us, averaged.
    pub rtt_us: u32,
}

/// What a Report carries that the machine cannot measure: the driver
/// passes it to [`crate::machine::Session::report`] (`None` where it cannot
/// read a figure; the Report's flag bit then stays clear).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReportInputs {
    /// TCP_INFO of the test's source sessions open now.
    pub tcp: Option<TcpFigures>,
    /// The control session's own CPU time (final Report only; the data
    /// sessions add theirs when they end).
    pub cpu: Option<CpuTime>,
}

/// A handle on one open test: its slot and id. Copy it freely; every call
/// that could meet a reused slot checks the id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestRef {
    slot: u8,
    id: u32,
}

impl TestRef {
    /// The test id data sessions and datagrams name.
    pub fn id(&self) -> u32 {
        self.id
    }
}

/// [`Registry::open`] found every slot taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

/// What became of a UDP stream datagram ([`Registry::count_udp`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdpCount {
    /// Counted in its stream.
    Counted,
    /// A stream index at or above [`STREAMS`]: ignored.
    StreamIgnored,
    /// The test has closed since the handle was taken: look the id up again.
    Gone,
}

/// One UDP stream's counters as atomic words, behind a claim flag.
struct StreamCell {
    claimed: AtomicBool,
    words: [AtomicU64; STATE_WORDS],
}

/// The claim on a [`StreamCell`]; released when dropped.
struct Claim<'a>(&'a StreamCell);

impl StreamCell {
    const fn new() -> StreamCell {
        StreamCell {
            claimed: AtomicBool::new(false),
            words: [const { AtomicU64::new(0) }; STATE_WORDS],
        }
    }

    fn claim(&self) -> Claim<'_> {
        while self
            .claimed
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            core::hint::spin_loop();
        }
        Claim(self)
    }
}

impl Claim<'_> {
    fn load(&self) -> UdpRx {
        let w: [u64; STATE_WORDS] = core::array::from_fn(|i| self.0.words[i].load(Ordering::Relaxed));
        UdpRx::from_words(&w)
    }

    fn store(&self, rx: &UdpRx) {
        for (cell, v) in self.0.words.iter().zip(rx.to_words()) {
            cell.store(v, Ordering::Relaxed);
        }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.0.claimed.store(false, Ordering::Release);
    }
}

/// One test's slot.
struct Slot {
    /// `id << 32 | open data sessions`; 0 when free.
    state: AtomicU64,
    /// Data sessions that ever joined.
    sessions: AtomicU32,
    start_ns: AtomicU64,
    /// The first Snapshot came: sources write.
    started: AtomicBool,
    /// Stop came, or the control session ended: sources stop.
    stopped: AtomicBool,
    rx_bytes: AtomicU64,
    tx_bytes: AtomicU64,
    cpu_user_ns: AtomicU64,
    cpu_sys_ns: AtomicU64,
    /// Arrival time of the latest stream datagram, 0 before the first.
    udp_last_ns: AtomicU64,
    streams: [StreamCell; STREAMS],
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            state: AtomicU64::new(0),
            sessions: AtomicU32::new(0),
            start_ns: AtomicU64::new(0),
            started: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            rx_bytes: AtomicU64::new(0),
            tx_bytes: AtomicU64::new(0),
            cpu_user_ns: AtomicU64::new(0),
            cpu_sys_ns: AtomicU64::new(0),
            udp_last_ns: AtomicU64::new(0),
            streams: [const { StreamCell::new() }; STREAMS],
        }
    }

    fn id(&self) -> u32 {
        (self.state.load(Ordering::Acquire) >> 32) as u32
    }

    fn open_sessions(&self) -> u64 {
        self.state.load(Ordering::Acquire) & OPEN_MASK
    }

    /// Clears a reserved slot for a new test. Streams first, each under its
    /// claim, so a datagram counted for the slot's previous test either
    /// finished before (and is wiped) or sees the changed id (and is
    /// ignored); its arrival time, stored under the same claim, is then
    /// cleared after it.
    fn reset(&self, now_ns: u64) {
        let zero = UdpRx::default();
        for s in &self.streams {
            s.claim().store(&zero);
        }
        for c in [
            &self.rx_bytes,
            &self.tx_bytes,
            &self.cpu_user_ns,
            &self.cpu_sys_ns,
            &self.udp_last_ns,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        self.start_ns.store(now_ns, Ordering::Relaxed);
        self.sessions.store(0, Ordering::Relaxed);
        self.started.store(false, Ordering::Relaxed);
        self.stopped.store(false, Ordering::Relaxed);
    }
}

/// The throughput tests open at once, at most [`TESTS`].
pub struct Registry {
    /// The last id given; ids come from here, skipping 0 and any id an
    /// open test still holds after the counter wrapped.
    next_id: AtomicU32,
    /// Challenges given (each nonce's counter).
    challenges: AtomicU32,
    slots: [Slot; TESTS],
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl core::fmt::Debug for Registry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let open = self.slots.iter().filter(|s| s.id() != 0).count();
        f.debug_struct("Registry").field("open_tests", &open).finish()
    }
}

impl Registry {
    /// An empty registry (`const`, so it can be a `static`).
    pub const fn new() -> Registry {
        Registry {
            next_id: AtomicU32::new(0),
            challenges: AtomicU32::new(0),
            slots: [const { Slot::new() }; TESTS],
        }
    }

    /// A fresh number for the nonce of a challenge.
    pub fn challenge_counter(&self) -> u32 {
        self.challenges.fetch_add(1, Ordering::Relaxed)
    }

    /// Opens a test for a control session: a fresh id, never 0, unique
    /// among the open tests; its clock starts at `now_ns`.
    pub fn open(&self, now_ns: u64) -> Result<TestRef, Full> {
        for (i, slot) in self.slots.iter().enumerate() {
            if slot
                .state
                .compare_exchange(0, RESERVED, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            slot.reset(now_ns);
            let id = self.fresh_id();
            slot.state.store((id as u64) << 32, Ordering::Release);
            return Ok(TestRef { slot: i as u8, id });
        }
        Err(Full)
    }

    /// The next id from the counter that is not 0 and that no open test
    /// holds. Concurrent callers get distinct ids from the counter, so only
    /// a test open across 2^32 later ones can collide, and is skipped.
    fn fresh_id(&self) -> u32 {
        loop {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
            if id != 0 && self.slots.iter().all(|s| s.id() != id) {
                return id;
            }
        }
    }

    /// Ends a test (its control session ended): sources stop, the id is
    /// forgotten at once (later joins and datagrams naming it are refused or
    /// ignored), and the slot is free once its last data session has left.
    pub fn close(&self, t: TestRef) {
        let slot = &self.slots[t.slot as usize];
        slot.stopped.store(true, Ordering::Release);
        let _ = slot.state.fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
            ((s >> 32) as u32 == t.id).then_some(s & OPEN_MASK)
        });
    }

    /// The open test with this id, without joining it (the UDP thread).
    pub fn find(&self, id: u32) -> Option<TestRef> {
        if id == 0 {
            return None;
        }
        let i = self.slots.iter().position(|s| s.id() == id)?;
        Some(TestRef { slot: i as u8, id })
    }

    /// A data session joins the open test `id`; `None` when no open test
    /// has it. Pair with [`Registry::leave`].
    pub fn join(&self, id: u32) -> Option<TestRef> {
        let t = self.find(id)?;
        let slot = &self.slots[t.slot as usize];
        slot.state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                ((s >> 32) as u32 == id).then_some(s + 1)
            })
            .ok()?;
        slot.sessions.fetch_add(1, Ordering::Relaxed);
        Some(t)
    }

    /// A data session that joined has ended.
    pub fn leave(&self, t: TestRef) {
        self.slots[t.slot as usize].state.fetch_sub(1, Ordering::AcqRel);
    }

    /// The first Snapshot: sources may write from now on.
    pub fn start(&self, t: TestRef) {
        self.slots[t.slot as usize].started.store(true, Ordering::Release);
    }

    /// Whether sources may write.
    #[inline]
    pub fn started(&self, t: TestRef) -> bool {
        self.slots[t.slot as usize].started.load(Ordering::Acquire)
    }

    /// Bytes the test's sources sent, and when the test opened (for the
    /// pacing of a responder with a highest rate).
    pub fn sent_since(&self, t: TestRef) -> (u64, u64) {
        let slot = &self.slots[t.slot as usize];
        (
            slot.tx_bytes.load(Ordering::Relaxed),
            slot.start_ns.load(Ordering::Relaxed),
        )
    }

    /// Stop: sources stop writing.
    pub fn stop(&self, t: TestRef) {
        self.slots[t.slot as usize].stopped.store(true, Ordering::Release);
    }

    /// Whether the test was stopped or closed.
    #[inline]
    pub fn stopped(&self, t: TestRef) -> bool {
        self.slots[t.slot as usize].stopped.load(Ordering::Relaxed)
    }

    /// Bytes a sink received (relaxed: one add per receive call).
    #[inline]
    pub fn add_rx(&self, t: TestRef, n: u64) {
        self.slots[t.slot as usize].rx_bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// Bytes a source handed to the stack.
    #[inline]
    pub fn add_tx(&self, t: TestRef, n: u64) {
        self.slots[t.slot as usize].tx_bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// CPU time a thread spent on the test; dropped when the test has
    /// closed in the meantime.
    pub fn add_cpu(&self, t: TestRef, c: CpuTime) {
        let slot = &self.slots[t.slot as usize];
        if slot.id() == t.id {
            slot.cpu_user_ns.fetch_add(c.user_ns, Ordering::Relaxed);
            slot.cpu_sys_ns.fetch_add(c.sys_ns, Ordering::Relaxed);
        }
    }

    /// Counts a UDP stream datagram (kind 4) of `len` bytes with header `h`,
    /// received at `rx_ns`, in its stream of test `t`.
    pub fn count_udp(&self, t: TestRef, h: &udp::Header, len: usize, rx_ns: u64) -> UdpCount {
        let slot = &self.slots[t.slot as usize];
        let Some(cell) = slot.streams.get(h.stream() as usize) else {
            return if slot.id() == t.id {
                UdpCount::StreamIgnored
            } else {
                UdpCount::Gone
            };
        };
        let claim = cell.claim();
        if slot.id() != t.id {
            return UdpCount::Gone;
        }
        let mut rx = claim.load();
        rx.record(h.seq, len, h.client_ts, rx_ns);
        claim.store(&rx);
        slot.udp_last_ns.store(rx_ns, Ordering::Relaxed);
        UdpCount::Counted
    }

    /// When the final Report of a stopped test may go, by the drain rule
    /// (docs/protocol.md 8.2 and section 5): once every data session has
    /// ended and the UDP counts have stood still for `UDP_QUIET_MS`, or at
    /// `deadline_ns` whatever is open. Returns the Report flags then, `None`
    /// while it must wait.
    pub fn final_flags(&self, t: TestRef, now_ns: u64, deadline_ns: u64) -> Option<u8> {
        let slot = &self.slots[t.slot as usize];
        if slot.open_sessions() > 0 {
            return (now_ns >= deadline_ns).then_some(FLAG_FINAL | FLAG_DRAIN_TIMEOUT);
        }
        let last = slot.udp_last_ns.load(Ordering::Relaxed);
        let quiet_at = if last == 0 {
            0
        } else {
            last.saturating_add(UDP_QUIET_NS)
        };
        (now_ns >= quiet_at.min(deadline_ns)).then_some(FLAG_FINAL)
    }

    /// The drain deadline of a test stopped at `now_ns`.
    pub fn drain_deadline(now_ns: u64) -> u64 {
        now_ns.saturating_add(DRAIN_NS)
    }

    /// The Report answering request `id` with `flags` (a final one also
    /// carries the test's CPU time), at `now_ns`.
    pub fn report(&self, t: TestRef, id: u32, flags: u8, now_ns: u64, tcp: Option<TcpFigures>) -> Report {
        let slot = &self.slots[t.slot as usize];
        let mut r = Report {
            id,
            flags,
            sessions: slot.sessions.load(Ordering::Relaxed),
            elapsed_ns: now_ns.saturating_sub(slot.start_ns.load(Ordering::Relaxed)),
            tcp_rx_bytes: slot.rx_bytes.load(Ordering::Relaxed),
            tcp_tx_bytes: slot.tx_bytes.load(Ordering::Relaxed),
            ..Report::default()
        };
        for cell in &slot.streams {
            let u = cell.claim().load();
            r.udp_datagrams += u.received;
            r.udp_bytes += u.bytes;
            r.udp_expected = r.udp_expected.saturating_add(u.expected);
            r.udp_duplicates += u.duplicates;
            r.udp_reordered += u.reordered;
            r.udp_jitter_ns = r.udp_jitter_ns.max(u.jitter_ns());
        }
        if let Some(tcp) = tcp {
            r.flags |= FLAG_TCP_INFO;
            r.tcp_retransmits = tcp.retransmits;
            r.tcp_cwnd_bytes = tcp.cwnd_bytes;
            r.tcp_rtt_us = tcp.rtt_us;
        }
        if flags & FLAG_FINAL != 0 {
            // Complete only once every data session has ended and added
            // its time, so only the final Report carries it.
            r.flags |= FLAG_CPU;
            r.cpu_user_ns = slot.cpu_user_ns.load(Ordering::Relaxed);
            r.cpu_sys_ns = slot.cpu_sys_ns.load(Ordering::Relaxed);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datagram(test: u32, stream: u16, seq: u64) -> udp::Header {
        udp::Header::stream_data(test, stream, seq, seq * 1000)
    }

    #[test]
    fn ids_are_unique_never_zero_and_the_registry_fills_up() {
        let r = Registry::new();
        r.next_id.store(u32::MAX - 1, Ordering::Relaxed);
        let a = r.open(0).unwrap();
        let b = r.open(0).unwrap();
        assert_eq!((a.id(), b.id()), (u32::MAX, 1), "0 is skipped");
        let mut held = [a; TESTS];
        held[1] = b;
        for h in held.iter_mut().skip(2) {
            *h = r.open(0).unwrap();
        }
        assert_eq!(r.open(0), Err(Full));
        // After a wrap, an id an open test holds is not given again.
        r.close(held[5]);
        r.next_id.store(u32::MAX - 1, Ordering::Relaxed);
        let c = r.open(0).unwrap();
        assert_eq!(c.id(), held[5].id(), "u32::MAX and 1 to 4 are still open");
    }

    #[test]
    fn a_closed_slot_is_reused_only_after_its_last_data_session_left() {
        let r = Registry::new();
        let tests: [TestRef; TESTS] = core::array::from_fn(|_| r.open(0).unwrap());
        let t = tests[3];
        let d = r.join(t.id()).unwrap();
        r.add_rx(d, 10);
        r.close(t);
        assert!(r.stopped(d), "closing stops the sources");
        assert_eq!(r.join(t.id()), None, "the id is forgotten");
        assert_eq!(r.open(0), Err(Full), "a data session still counts into the slot");
        r.leave(d);
        let n = r.open(7).unwrap();
        assert_eq!(n.slot, t.slot);
        let rep = r.report(n, 1, 0, 10, None);
        assert_eq!((rep.tcp_rx_bytes, rep.sessions, rep.elapsed_ns), (0, 0, 3));
    }

    #[test]
    fn udp_streams_are_counted_per_stream_and_high_indexes_ignored() {
        let r = Registry::new();
        let t = r.open(0).unwrap();
        for s in 0..3 {
            assert_eq!(
                r.count_udp(t, &datagram(t.id(), 0, s), 100, s * 1000),
                UdpCount::Counted
            );
        }
        assert_eq!(r.count_udp(t, &datagram(t.id(), 31, 5), 100, 1), UdpCount::Counted);
        assert_eq!(
            r.count_udp(t, &datagram(t.id(), 32, 0), 100, 1),
            UdpCount::StreamIgnored
        );
        let rep = r.report(t, 9, 0, 5, None);
        assert_eq!(
            (rep.udp_datagrams, rep.udp_bytes, rep.udp_expected, rep.udp_lost()),
            (4, 400, 9, 5)
        );
        r.close(t);
        assert_eq!(r.count_udp(t, &datagram(t.id(), 0, 3), 100, 1), UdpCount::Gone);
        assert_eq!(r.find(t.id()), None);
    }

    #[test]
    fn drain_rule_waits_for_sessions_then_for_quiet_udp() {
        let ms = 1_000_000;
        let r = Registry::new();
        let t = r.open(0).unwrap();
        let d = r.join(t.id()).unwrap();
        r.stop(t);
        let deadline = Registry::drain_deadline(100 * ms);
        assert_eq!(r.final_flags(t, 150 * ms, deadline), None, "a sink is open");
        assert_eq!(
            r.final_flags(t, deadline, deadline),
            Some(FLAG_FINAL | FLAG_DRAIN_TIMEOUT)
        );
        r.leave(d);
        assert_eq!(
            r.final_flags(t, 150 * ms, deadline),
            Some(FLAG_FINAL),
            "no UDP: at once"
        );
        r.count_udp(t, &datagram(t.id(), 0, 0), 64, 140 * ms);
        assert_eq!(r.final_flags(t, 150 * ms, deadline), None, "UDP moved 10 ms ago");
        assert_eq!(r.final_flags(t, 160 * ms, deadline), Some(FLAG_FINAL));
        // A UDP stream that never stands still ends at the deadline.
        r.count_udp(t, &datagram(t.id(), 0, 1), 64, deadline - ms);
        assert_eq!(r.final_flags(t, deadline, deadline), Some(FLAG_FINAL));
    }

    #[test]
    fn the_final_report_carries_cpu_and_tcp_figures() {
        let r = Registry::new();
        let t = r.open(0).unwrap();
        r.add_cpu(t, CpuTime { user_ns: 5, sys_ns: 7 });
        let tcp = TcpFigures {
            retransmits: 1,
            cwnd_bytes: 2,
            rtt_us: 3,
        };
        let snap = r.report(t, 1, 0, 1, Some(tcp));
        assert_eq!(snap.flags, FLAG_TCP_INFO);
        assert_eq!((snap.cpu_user_ns, snap.tcp_rtt_us), (0, 3));
        let fin = r.report(t, 2, FLAG_FINAL, 1, None);
        assert_eq!(fin.flags, FLAG_FINAL | FLAG_CPU);
        assert_eq!((fin.cpu_user_ns, fin.cpu_sys_ns), (5, 7));
    }
}
