//! One peer's clock against this agent's, from its recent pings, pure.
//!
//! Each ping comes back with the peer responder's receive and send times
//! on its own clock (`proto::udp`'s server stamps), so the round trip
//! splits into a way up and a way down once the offset between the two
//! clocks is known. `stats::owd` estimates it from a set of probes: the
//! offset of the probe with the least time outside the responder (whose
//! bound is half that time), and a drift from two such estimates. The
//! agent runs for days, so the set is a sliding window of the last
//! [`WINDOW`] probes: its older and newer halves give the two estimates
//! (two NTP-disciplined clocks still drift a few microseconds a minute
//! against each other, as much as a one-way delay on a LAN), and the line
//! through them places each new probe. The bound exported with the
//! offset is the larger of the two halves' bounds: no one-way delay is
//! known better than that.
//!
//! A peer's clock can also jump: its responder restarted after a reboot,
//! or it moved its stamps from the monotonic clock to the wall clock (it
//! does when any client asks it for kernel timestamps). A probe whose
//! stamps cannot be reconciled with the current estimate, its bound and a
//! [`SLACK_NS`] margin empties the window, and the estimate starts again
//! from that probe.

use stackmeter_recorder::owd::{self, Clock, Stamps};
use std::collections::VecDeque;

/// Probes the window holds: about a minute at the default interval.
pub const WINDOW: usize = 64;

/// Margin beyond the estimate's bound before a probe counts as a jump of
/// the peer's clock, ns (drift between two estimates, rounding).
pub const SLACK_NS: f64 = 1_000_000.0;

/// The recent probes of one peer and the clock estimate from them.
#[derive(Clone, Debug, Default)]
pub struct Window {
    probes: VecDeque<Stamps>,
    /// Times the window was emptied by a jump of the peer's clock.
    pub jumps: u64,
}

/// One probe placed on this agent's clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OneWay {
    /// Way up (agent to peer), ns; may be slightly negative within the bound.
    pub up_ns: f64,
    /// Way down (peer to agent), ns.
    pub down_ns: f64,
    /// The peer's clock minus this agent's at the probe, ns.
    pub offset_ns: f64,
    /// The error bound of the offset and of both delays, ns.
    pub bound_ns: f64,
}

impl Window {
    /// An empty window.
    pub fn new() -> Window {
        Window::default()
    }

    /// Probes held.
    pub fn len(&self) -> usize {
        self.probes.len()
    }

    /// True when no probe is held.
    pub fn is_empty(&self) -> bool {
        self.probes.is_empty()
    }

    /// Adds a probe and places it: its one-way delays from the estimate of
    /// the window with it. `None` when its stamps contradict themselves
    /// (the responder's time longer than the round trip): such a probe is
    /// not kept.
    pub fn add(&mut self, p: Stamps) -> Option<OneWay> {
        if p.path_ns() < 0 {
            return None;
        }
        if let Some(clock) = self.clock() {
            if !consistent(&clock, &p) {
                self.probes.clear();
                self.jumps += 1;
            }
        }
        if self.probes.len() == WINDOW {
            self.probes.pop_front();
        }
        self.probes.push_back(p);
        let clock = self.clock()?;
        let (up_ns, down_ns) = clock.one_way(&p);
        Some(OneWay {
            up_ns,
            down_ns,
            offset_ns: clock.offset_at(p.c_tx),
            bound_ns: clock.bound_ns,
        })
    }

    /// The estimate from the probes held: the older half's best probe and
    /// the newer half's, a straight line through them; from one probe, its
    /// offset alone.
    pub fn clock(&self) -> Option<Clock> {
        let all: Vec<Stamps> = self.probes.iter().copied().collect();
        if all.len() < 2 {
            return owd::offset(&all).map(|o| Clock::estimated(o, None));
        }
        let (old, new) = all.split_at(all.len() / 2);
        let start = owd::offset(old)?;
        Some(Clock::estimated(start, owd::offset(new)))
    }
}

/// Whether probe `p` fits `clock`: the offsets `p` allows (its way up and
/// its way down both at least 0) meet the estimate's, widened by its bound
/// and [`SLACK_NS`].
fn consistent(clock: &Clock, p: &Stamps) -> bool {
    // Way up >= 0: offset <= s_rx - c_tx. Way down >= 0: offset >= s_tx - c_rx.
    let hi = p.s_rx as f64 - p.c_tx as f64;
    let lo = p.s_tx as f64 - p.c_rx as f64;
    let est = clock.offset_at(p.c_tx);
    let margin = clock.bound_ns + SLACK_NS;
    est + margin >= lo && est - margin <= hi
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe at agent time `t` over `up` and `down` ns through a peer
    /// that holds it `hold` ns and whose clock reads `offset + (1 + drift)
    /// * agent time`.
    fn probe(t: u64, up: u64, down: u64, hold: u64, offset: f64, drift: f64) -> Stamps {
        let r = |c: u64| (offset + (1.0 + drift) * c as f64) as u64;
        Stamps {
            c_tx: t,
            s_rx: r(t + up),
            s_tx: r(t + up + hold),
            c_rx: t + up + hold + down,
        }
    }

    #[test]
    fn one_way_delays_within_the_bound_as_the_window_slides() {
        let (off, drift) = (3.0e14, 5e-6);
        let mut w = Window::new();
        let mut last = None;
        for i in 0..500u64 {
            // Mostly 40 us up and 60 us down; every 10th probe queued 2 ms
            // on the way down.
            let down = if i % 10 == 9 {
                2_000_000
            } else {
                60_000 + (i * 37) % 5_000
            };
            let p = probe(
                1_000_000_000 + i * 1_000_000_000,
                40_000 + (i * 13) % 3_000,
                down,
                3_000,
                off,
                drift,
            );
            let ow = w.add(p).unwrap();
            assert!(w.len() <= WINDOW);
            last = Some((ow, down));
            if i >= 10 {
                assert!((ow.up_ns - 40_000.0).abs() <= ow.bound_ns + 3_000.0, "{i}: {ow:?}");
                assert!((ow.down_ns - down as f64).abs() <= ow.bound_ns + 5_000.0, "{i}: {ow:?}");
            }
        }
        let (ow, down) = last.unwrap();
        // The best probes took about 100 us outside the peer: a bound of
        // about 50 us.
        assert!(ow.bound_ns >= 50_000.0 && ow.bound_ns <= 55_000.0, "{ow:?}");
        // The last probe was one of the queued ones: it shows on the way down.
        assert_eq!(down, 2_000_000);
        assert!(ow.down_ns > 1_900_000.0 && ow.up_ns < 100_000.0, "{ow:?}");
        assert_eq!(w.jumps, 0);
        let c = w.clock().unwrap();
        assert!((c.drift - drift).abs() < 1e-6, "drift {}", c.drift);
    }

    #[test]
    fn a_jump_of_the_peers_clock_empties_the_window() {
        let mut w = Window::new();
        for i in 0..20 {
            w.add(probe(i * 1_000_000_000, 50_000, 50_000, 1_000, 1.0e14, 0.0));
        }
        assert_eq!(w.len(), 20);
        // The peer moves to the wall clock: 1.7e18 ns ahead.
        let ow = w
            .add(probe(21_000_000_000, 50_000, 80_000, 1_000, 1.7e18, 0.0))
            .unwrap();
        assert_eq!((w.len(), w.jumps), (1, 1));
        // From one probe the two ways come out equal, and the bound says so.
        assert!((ow.up_ns - ow.down_ns).abs() < 512.0, "{ow:?}");
        assert!((ow.bound_ns - 65_000.0).abs() < 512.0, "{ow:?}");
        // Queueing within the bound is no jump.
        w.add(probe(22_000_000_000, 50_000, 900_000, 1_000, 1.7e18, 0.0));
        assert_eq!((w.len(), w.jumps), (2, 1));
    }

    #[test]
    fn contradictory_stamps_are_not_kept() {
        let mut w = Window::new();
        let bad = Stamps {
            c_tx: 1_000,
            s_rx: 0,
            s_tx: 5_000,
            c_rx: 2_000,
        };
        assert_eq!(w.add(bad), None);
        assert!(w.is_empty());
        assert!(w.clock().is_none());
    }
}
