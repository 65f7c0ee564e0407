//! The pairs this agent measures now, shared by its threads: the peer list
//! from `discover.rs` becomes one [`Pair`] per peer (label, address, where
//! its probes sit in a round, the period's tallies, the clock window), and
//! a peer that leaves takes its series out of the metrics. Probers look at
//! the [`Mesh`]'s generation and pick up a new list between probes.
//!
//! A pair's metric updates and its removal take the pair's `live` lock,
//! so a probe that ends while its peer is being removed cannot bring the
//! removed series back.

use crate::metrics::Metrics;
use crate::peers::{self, Peer};
use crate::schedule;
use crate::summary::{PingTally, RrTally};
use crate::window::Window;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// A probe kind's name, as in the `probe` label and the stored documents.
pub const PING: &str = "ping";
/// See [`PING`].
pub const RR: &str = "rr";

/// Which periodic probes run, and how often.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// UDP echo.
    pub ping: bool,
    /// 1:1 request/response on a kept connection.
    pub rr: bool,
    /// Round length, ns.
    pub interval_ns: u64,
}

impl Plan {
    /// The periodic kinds, in slot order.
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut k = Vec::new();
        if self.ping {
            k.push(PING);
        }
        if self.rr {
            k.push(RR);
        }
        k
    }
}

/// One peer, as every thread sees it.
#[derive(Debug)]
pub struct Pair {
    /// Its `target` label.
    pub label: String,
    /// Its responder.
    pub addr: SocketAddr,
    /// Offsets of its ping and rr in a round, ns.
    ping_offset: AtomicU64,
    rr_offset: AtomicU64,
    /// False once the peer left; nothing is recorded for it after that.
    live: Mutex<bool>,
    /// This summary period's pings and rr rounds.
    pub ping: Mutex<PingTally>,
    /// See `ping`.
    pub rr: Mutex<RrTally>,
    /// The recent pings' stamps and the clock estimate.
    pub window: Mutex<Window>,
    /// Pings sent to it so far (their index among its pings).
    pub pings: AtomicU64,
    /// Per kind: 0 not known yet, 1 answering, 2 not answering.
    health: [AtomicU8; 2],
}

/// Locks `m`, taking the data of a thread that panicked with it held (the
/// tallies stay usable: at worst one probe is half counted).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Pair {
    fn new(label: String, addr: SocketAddr) -> Pair {
        Pair {
            label,
            addr,
            ping_offset: AtomicU64::new(0),
            rr_offset: AtomicU64::new(0),
            live: Mutex::new(true),
            ping: Mutex::default(),
            rr: Mutex::default(),
            window: Mutex::default(),
            pings: AtomicU64::new(0),
            health: [AtomicU8::new(0), AtomicU8::new(0)],
        }
    }

    /// Where its probe of `kind` sits in a round, ns.
    pub fn offset(&self, kind: &str) -> u64 {
        let a = if kind == PING {
            &self.ping_offset
        } else {
            &self.rr_offset
        };
        a.load(Ordering::Relaxed)
    }

    /// Whether it is still probed.
    pub fn is_live(&self) -> bool {
        *lock(&self.live)
    }

    /// Runs `f` (metric and tally updates) unless the peer left.
    pub fn record(&self, f: impl FnOnce()) {
        let live = lock(&self.live);
        if *live {
            f();
        }
    }

    /// Notes whether a probe of `kind` was answered; the first failure
    /// after answers (or at the start) and the first answer after failures
    /// are one log line each, `why` saying what failed.
    pub fn health(&self, kind: &str, answered: bool, why: impl FnOnce() -> String) {
        let h = &self.health[usize::from(kind != PING)];
        let now = if answered { 1 } else { 2 };
        let was = h.swap(now, Ordering::Relaxed);
        if was == now || !self.is_live() {
            return;
        }
        match (was, answered) {
            (_, false) => crate::log::warn(&format!(
                "peer {} ({}): {kind}: {}; counted as lost until it answers",
                self.label,
                self.addr,
                why()
            )),
            (2, true) => crate::log::info(&format!("peer {} ({}): {kind} answers again", self.label, self.addr)),
            _ => {}
        }
    }
}

/// The pairs, and which list they came from.
#[derive(Debug, Default)]
pub struct Mesh {
    inner: Mutex<Inner>,
    generation: AtomicU64,
}

#[derive(Debug, Default)]
struct Inner {
    pairs: Vec<Arc<Pair>>,
    /// Pairs that left since the store last looked (their last tallies).
    retired: Vec<Arc<Pair>>,
}

impl Mesh {
    /// An empty mesh.
    pub fn new() -> Mesh {
        Mesh::default()
    }

    /// Makes `peers` the pairs: new ones get their series at zero, gone
    /// ones lose theirs, and every pair's probes are placed in the round
    /// anew. Returns the labels added and removed.
    pub fn set(&self, peers: &[Peer], plan: &Plan, metrics: &Metrics) -> (Vec<String>, Vec<String>) {
        let labels = peers::labels(peers);
        let mut inner = lock(&self.inner);
        let mut next = Vec::with_capacity(peers.len());
        let mut added = Vec::new();
        for (p, label) in peers.iter().zip(labels) {
            let found = inner
                .pairs
                .iter()
                .find(|q| q.addr == p.addr && q.label == label)
                .cloned();
            next.push(found.unwrap_or_else(|| {
                metrics.add_pair(&label, &plan.kinds());
                added.push(label.clone());
                Arc::new(Pair::new(label, p.addr))
            }));
        }
        let mut removed = Vec::new();
        for old in std::mem::take(&mut inner.pairs) {
            if !next.iter().any(|q| Arc::ptr_eq(q, &old)) {
                *lock(&old.live) = false;
                // A pair whose label passed to a new pair keeps its series.
                if !next.iter().any(|q| q.label == old.label) {
                    metrics.remove_pair(&old.label);
                }
                removed.push(old.label.clone());
                inner.retired.push(old);
            }
        }
        let kinds = plan.kinds();
        for (k, pair) in next.iter().enumerate() {
            for (j, kind) in kinds.iter().enumerate() {
                let off = schedule::offset(k, next.len(), j, kinds.len(), plan.interval_ns);
                let a = if *kind == PING {
                    &pair.ping_offset
                } else {
                    &pair.rr_offset
                };
                a.store(off, Ordering::Relaxed);
            }
        }
        metrics.set_peers(next.len());
        inner.pairs = next;
        self.generation.fetch_add(1, Ordering::Release);
        (added, removed)
    }

    /// The current generation: it changes with every [`Mesh::set`].
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The pairs now.
    pub fn pairs(&self) -> Vec<Arc<Pair>> {
        lock(&self.inner).pairs.clone()
    }

    /// The pairs that left since the last call.
    pub fn take_retired(&self) -> Vec<Arc<Pair>> {
        std::mem::take(&mut lock(&self.inner).retired)
    }
}

/// The agent's stop signal, which every thread's waits end on.
#[derive(Debug, Default)]
pub struct Stop {
    flag: Mutex<bool>,
    cv: Condvar,
}

impl Stop {
    /// Not stopped.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Stops every thread at its next wait.
    pub fn stop(&self) {
        *lock(&self.flag) = true;
        self.cv.notify_all();
    }

    /// Whether the agent is stopping.
    pub fn is_set(&self) -> bool {
        *lock(&self.flag)
    }

    /// Sleeps `d` or until the stop; true when stopping.
    pub fn sleep(&self, d: Duration) -> bool {
        let g = lock(&self.flag);
        let (g, _) = self
            .cv
            .wait_timeout_while(g, d, |stopped| !*stopped)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peers(text: &str) -> Vec<Peer> {
        crate::peers::parse(text).unwrap()
    }

    #[test]
    fn pairs_come_and_go_with_their_series_and_are_spread_over_the_round() {
        let m = Metrics::new("a", "n", "v", false);
        let mesh = Mesh::new();
        let plan = Plan {
            ping: true,
            rr: true,
            interval_ns: 1_000_000_000,
        };
        let (added, removed) = mesh.set(&peers("b 127.0.0.1:2\nc 127.0.0.1:3\n"), &plan, &m);
        assert_eq!((added.len(), removed.len()), (2, 0));
        let g = mesh.generation();
        let pairs = mesh.pairs();
        let offs: Vec<u64> = pairs.iter().flat_map(|p| [p.offset(PING), p.offset(RR)]).collect();
        assert_eq!(offs, [0, 250_000_000, 500_000_000, 750_000_000]);
        let b = pairs[0].clone();
        b.record(|| m.sent("b", PING));
        // c leaves, d comes: c's series go, b keeps its pair and counts.
        let (added, removed) = mesh.set(&peers("b 127.0.0.1:2\nd 127.0.0.1:4\n"), &plan, &m);
        assert_eq!((added, removed), (vec!["d".to_string()], vec!["c".to_string()]));
        assert!(mesh.generation() > g);
        assert!(Arc::ptr_eq(&mesh.pairs()[0], &b));
        let text = m.encode(crate::exposition::Format::Text);
        assert!(!text.contains("target=\"c\""));
        assert!(text.contains("stackmeter_probes_sent_total{source=\"a\",target=\"b\",probe=\"ping\"} 1"));
        assert!(text.contains("target=\"d\""));
        let gone = mesh.take_retired();
        assert_eq!(gone.len(), 1);
        assert!(!gone[0].is_live());
        // Nothing recorded for a peer that left brings its series back.
        gone[0].record(|| m.sent("c", PING));
        assert!(!m.encode(crate::exposition::Format::Text).contains("target=\"c\""));
        assert!(mesh.take_retired().is_empty());
    }

    #[test]
    fn stop_ends_a_sleep() {
        let s = Arc::new(Stop::new());
        let s2 = s.clone();
        let t = std::thread::spawn(move || s2.sleep(Duration::from_secs(30)));
        std::thread::sleep(Duration::from_millis(20));
        s.stop();
        assert!(t.join().unwrap());
        assert!(s.is_set() && s.sleep(Duration::from_secs(30)));
    }
}
