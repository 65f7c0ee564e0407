//! Latency under load, assembled from raw probe stamps (rrul): which phase
//! each probe belongs to, how the responder's clock maps onto the
//! client's ([`crate::owd`]), each phase's distributions of round trip and
//! one-way delays, and the latency each phase's load induced over the
//! first idle phase. Pure: the client hands in what it collected, typed
//! results (`stackmeter_results::rrul`) are built from what comes out.

use crate::owd::{self, Clock, Stamps};
use crate::{Recorder, Summary};

/// The phase with no load, the baseline of induced latency.
pub const IDLE: &str = "idle";

/// What the client collected: raw stamps and the load phases' figures.
#[derive(Clone, Debug, Default)]
pub struct RawRrul {
    /// Client clock (ns) when the test began.
    pub origin_ns: u64,
    /// Each UDP probe: send time, and the reply's stamps if it came back.
    pub probes: Vec<RawProbe>,
    /// TCP probes: send time and round trip (ns), `None` if it failed.
    pub tcp_probes: Vec<(u64, Option<u64>)>,
    /// The phases as they ran, in order.
    pub phases: Vec<RawPhase>,
}

/// A UDP probe as sent and answered.
#[derive(Clone, Copy, Debug, Default)]
pub struct RawProbe {
    /// Client send time, ns.
    pub c_tx: u64,
    /// (responder receive, responder send, client receive), ns; `None`
    /// when no reply came within the timeout.
    pub reply: Option<(u64, u64, u64)>,
    /// The responder's count of the test's probes it had received when it
    /// answered this one (docs/protocol.md 4.4), from any reply to it,
    /// late or not; `None` without one.
    pub counted: Option<u64>,
}

impl RawProbe {
    /// The four stamps of an answered probe.
    fn stamps(&self) -> Option<Stamps> {
        self.reply.map(|(s_rx, s_tx, c_rx)| Stamps {
            c_tx: self.c_tx,
            s_rx,
            s_tx,
            c_rx,
        })
    }
}

/// A phase as it ran.
#[derive(Clone, Debug)]
pub struct RawPhase {
    /// Its name: `idle`, `down`, `up` or `bidir`.
    pub name: String,
    /// Client clock at its start, ns.
    pub start_ns: u64,
    /// Client clock at its end, ns.
    pub end_ns: u64,
    /// Receiver-counted rates over the phase's window, Mbit/s.
    pub down_mbps: f64,
    /// Up.
    pub up_mbps: f64,
    /// Interval rows: (end, ns on the client clock; down; up).
    pub intervals: Vec<(u64, f64, f64)>,
}

/// Which probes the clock estimate came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockFrom {
    /// The lowest-RTT probe of the whole test: there was no idle phase, so
    /// the bound is loose.
    WholeTest,
    /// The lowest-RTT probe of the first idle phase: offset only, no drift.
    FirstIdle,
    /// The lowest-RTT probes of the first and the last idle phase, the
    /// drift a straight line between them.
    FirstAndLastIdle,
}

/// How the one-way delays were made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClockUsed {
    /// The two clocks are taken as one (loopback, or PTP on both hosts).
    Synced,
    /// Estimated from the probes.
    Estimated(Clock, ClockFrom),
    /// No probe came back with the responder's stamps: no one-way delays.
    None,
}

impl ClockUsed {
    fn clock(&self) -> Option<Clock> {
        match *self {
            ClockUsed::Synced => Some(Clock::synced()),
            ClockUsed::Estimated(c, _) => Some(c),
            ClockUsed::None => None,
        }
    }
}

/// One phase's distributions, ns.
#[derive(Clone, Debug)]
pub struct PhaseStats {
    /// The phase as it ran.
    pub raw: RawPhase,
    /// UDP probe round trips.
    pub rtt: Recorder,
    /// Client-to-responder one-way delays (a delay the clock's bound
    /// allows below zero counts as zero).
    pub up: Recorder,
    /// Responder-to-client one-way delays.
    pub down: Recorder,
    /// TCP probe round trips.
    pub tcp: Recorder,
    /// UDP probes sent in the phase.
    pub sent: u64,
    /// Of them, unanswered.
    pub lost: u64,
    /// Of the lost, (on the way to the responder, on the way back), where
    /// the responder counted the probes it received.
    pub lost_each_way: Option<(u64, u64)>,
}

/// One probe on the time axis, ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeDelays {
    /// Send time since the test began.
    pub t_ns: u64,
    /// Round trip; `None`: lost.
    pub rtt_ns: Option<u64>,
    /// One-way delays (up, down), where the clock gives them.
    pub one_way_ns: Option<(f64, f64)>,
}

/// The latency a phase's load added over the first idle phase, ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InducedNs {
    /// Index of the phase.
    pub phase: usize,
    /// Round-trip median minus the baseline's.
    pub rtt_p50: f64,
    /// Round-trip 99th percentile minus the baseline's.
    pub rtt_p99: f64,
    /// Upward one-way median minus the baseline's.
    pub up_p50: Option<f64>,
    /// Downward one-way median minus the baseline's.
    pub down_p50: Option<f64>,
}

/// Everything assembled.
#[derive(Clone, Debug)]
pub struct Assembled {
    /// The clock mapping used for the one-way delays.
    pub clock: ClockUsed,
    /// Per phase, in order.
    pub phases: Vec<PhaseStats>,
    /// Every UDP probe, in send order.
    pub probes: Vec<ProbeDelays>,
    /// Each phase against the first idle phase (empty without one, or
    /// when it has no answered probe).
    pub induced: Vec<InducedNs>,
}

/// Assembles the phases from raw stamps: the clock first (from the
/// lowest-RTT probe of the first and the last idle phase), then each
/// phase's distributions, then the induced latency. With `synced` the two
/// clocks are taken as one.
///
/// The phases tile the test: each runs to the next one's start (the
/// moments between two phases belong to the earlier one), the first takes
/// the probes before it and the last every probe after it, so every probe
/// is in exactly one phase.
pub fn assemble(raw: &RawRrul, synced: bool) -> Assembled {
    let phase_of = |t: u64| -> Option<usize> {
        let n = raw.phases.len();
        (0..n).find(|&i| {
            let start = if i == 0 { 0 } else { raw.phases[i].start_ns };
            let end = raw.phases.get(i + 1).map_or(u64::MAX, |p| p.start_ns);
            t >= start && t < end
        })
    };
    let in_phase = |i: usize| raw.probes.iter().filter(move |p| phase_of(p.c_tx) == Some(i));
    let stamps_of = |i: usize| in_phase(i).filter_map(RawProbe::stamps).collect::<Vec<_>>();
    let idle: Vec<usize> = (0..raw.phases.len()).filter(|&i| raw.phases[i].name == IDLE).collect();
    let clock = match synced {
        true => ClockUsed::Synced,
        false => estimate(raw, &idle, &stamps_of),
    };
    let map = clock.clock();
    let one_way = |s: &Stamps| map.map(|c| c.one_way(s));
    let probes = raw
        .probes
        .iter()
        .map(|p| {
            let s = p.stamps();
            ProbeDelays {
                t_ns: p.c_tx.saturating_sub(raw.origin_ns),
                rtt_ns: s.map(|s| s.c_rx.saturating_sub(s.c_tx)),
                one_way_ns: s.as_ref().and_then(one_way),
            }
        })
        .collect();
    let mut phases = Vec::new();
    for (i, ph) in raw.phases.iter().enumerate() {
        let (mut rtt, mut up, mut down, mut tcp) = (Recorder::new(), Recorder::new(), Recorder::new(), Recorder::new());
        let mut sent = 0;
        for p in in_phase(i) {
            sent += 1;
            let Some(s) = p.stamps() else { continue };
            rtt.record(s.c_rx.saturating_sub(s.c_tx));
            if let Some((u, d)) = one_way(&s) {
                up.record(u.max(0.0) as u64);
                down.record(d.max(0.0) as u64);
            }
        }
        for (_, r) in raw.tcp_probes.iter().filter(|(t, _)| phase_of(*t) == Some(i)) {
            if let Some(r) = r {
                tcp.record(*r);
            }
        }
        let lost = sent - rtt.count();
        phases.push(PhaseStats {
            raw: ph.clone(),
            rtt,
            up,
            down,
            tcp,
            sent,
            lost,
            lost_each_way: None,
        });
    }
    split_loss(raw, &phase_of, &mut phases);
    let induced = induced(&phases);
    Assembled {
        clock,
        phases,
        probes,
        induced,
    }
}

/// Loss each way per phase, from the responder's counts: between two
/// probes whose replies carried a count, the probes sent minus the count's
/// growth were lost on the way up, and the count's growth minus the
/// replies back in time on the way back; each such stretch belongs to the
/// phase of its last probe. Probes after the last count are left out.
fn split_loss(raw: &RawRrul, phase_of: &dyn Fn(u64) -> Option<usize>, phases: &mut [PhaseStats]) {
    let (mut from, mut before) = (0usize, 0u64);
    for (k, p) in raw.probes.iter().enumerate() {
        let Some(count) = p.counted else { continue };
        let stretch = &raw.probes[from..=k];
        let sent = stretch.len() as u64;
        let received = count.saturating_sub(before);
        let back = stretch.iter().filter(|q| q.reply.is_some()).count() as u64;
        if let Some(ph) = phase_of(p.c_tx).and_then(|i| phases.get_mut(i)) {
            let (up, down) = ph.lost_each_way.unwrap_or((0, 0));
            ph.lost_each_way = Some((up + sent.saturating_sub(received), down + received.saturating_sub(back)));
        }
        (from, before) = (k + 1, count);
    }
}

/// The clock from the idle phases' probes (or every probe without one).
fn estimate(raw: &RawRrul, idle: &[usize], stamps_of: &dyn Fn(usize) -> Vec<Stamps>) -> ClockUsed {
    let all: Vec<Stamps> = raw.probes.iter().filter_map(RawProbe::stamps).collect();
    let first = idle.first().map(|&i| stamps_of(i)).unwrap_or_else(|| all.clone());
    let last = match idle {
        [_, .., l] => Some(stamps_of(*l)),
        _ => None,
    };
    let Some(start) = owd::offset(&first).or_else(|| owd::offset(&all)) else {
        return ClockUsed::None;
    };
    let end = last.as_deref().and_then(owd::offset);
    let from = match (idle.is_empty(), end.is_some()) {
        (true, _) => ClockFrom::WholeTest,
        (false, false) => ClockFrom::FirstIdle,
        (false, true) => ClockFrom::FirstAndLastIdle,
    };
    ClockUsed::Estimated(Clock::estimated(start, end), from)
}

/// Each phase against the first idle one.
fn induced(phases: &[PhaseStats]) -> Vec<InducedNs> {
    let Some(base) = phases.iter().find(|p| p.raw.name == IDLE) else {
        return Vec::new();
    };
    let Some(b) = Summary::of(&base.rtt) else {
        return Vec::new();
    };
    let p50 = |r: &Recorder| Summary::of(r).map(|s| s.p50);
    phases
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let r = Summary::of(&p.rtt)?;
            Some(InducedNs {
                phase: i,
                rtt_p50: r.p50 - b.p50,
                rtt_p99: r.p99 - b.p99,
                up_p50: p50(&p.up).zip(p50(&base.up)).map(|(a, b)| a - b),
                down_p50: p50(&p.down).zip(p50(&base.down)).map(|(a, b)| a - b),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn phase(name: &str, start: u64, end: u64) -> RawPhase {
        RawPhase {
            name: name.into(),
            start_ns: start,
            end_ns: end,
            down_mbps: 0.0,
            up_mbps: 0.0,
            intervals: Vec::new(),
        }
    }

    /// A probe sent at `t` over paths of `up` and `down` ns through a
    /// responder that holds it 1 us and whose clock reads `offset + (1 +
    /// drift) * client time`.
    fn probe(t: u64, up: u64, down: u64, offset: f64, drift: f64) -> RawProbe {
        let r = |c: u64| (offset + (1.0 + drift) * c as f64) as u64;
        RawProbe {
            c_tx: t,
            reply: Some((r(t + up), r(t + up + 1_000), t + up + 1_000 + down)),
            counted: None,
        }
    }

    /// idle 0-100 ms, down 100-200 ms (the way back 500 us slower), idle
    /// 200-300 ms; probes every ms, every tenth of the loaded phase lost.
    fn run(offset: f64, drift: f64) -> RawRrul {
        let mut probes = Vec::new();
        for k in 0..300u64 {
            let t = k * MS + 10;
            let loaded = (100..200).contains(&k);
            let down = if loaded { 20_000 + 500_000 } else { 20_000 };
            let mut p = probe(t, 20_000 + (k % 7) * 100, down + (k % 5) * 100, offset, drift);
            if loaded && k % 10 == 0 {
                p.reply = None;
            }
            probes.push(p);
        }
        RawRrul {
            origin_ns: 0,
            probes,
            tcp_probes: vec![(50 * MS, Some(30_000)), (150 * MS, None), (160 * MS, Some(90_000))],
            phases: vec![
                phase("idle", 0, 100 * MS),
                phase("down", 100 * MS, 200 * MS),
                phase("idle", 200 * MS, 300 * MS),
            ],
        }
    }

    #[test]
    fn every_probe_lands_in_exactly_one_phase_and_loss_is_counted_there() {
        let mut raw = run(0.0, 0.0);
        // Before the first phase and after the last: the first and last take them.
        raw.probes.insert(0, probe(0, 20_000, 20_000, 0.0, 0.0));
        raw.probes.push(probe(400 * MS, 20_000, 20_000, 0.0, 0.0));
        let a = assemble(&raw, true);
        let sent: Vec<u64> = a.phases.iter().map(|p| p.sent).collect();
        assert_eq!(sent, vec![101, 100, 101]);
        assert_eq!(sent.iter().sum::<u64>(), raw.probes.len() as u64);
        let lost: Vec<u64> = a.phases.iter().map(|p| p.lost).collect();
        assert_eq!(lost, vec![0, 10, 0]);
        assert_eq!(a.probes.len(), raw.probes.len());
        assert_eq!(a.probes.iter().filter(|p| p.rtt_ns.is_none()).count(), 10);
        let tcp: Vec<u64> = a.phases.iter().map(|p| p.tcp.count()).collect();
        assert_eq!(tcp, vec![1, 1, 0], "a failed TCP probe records nothing");
    }

    #[test]
    fn induced_latency_is_the_loaded_phase_minus_the_first_idle_one_and_lands_on_the_way_back() {
        let a = assemble(&run(0.0, 0.0), true);
        assert_eq!(a.clock, ClockUsed::Synced);
        assert_eq!(a.induced.len(), 3);
        let down = a.induced[1];
        assert_eq!(down.phase, 1);
        assert!((down.rtt_p50 - 500_000.0).abs() < 2_000.0, "{down:?}");
        assert!(down.up_p50.unwrap().abs() < 2_000.0, "{down:?}");
        assert!((down.down_p50.unwrap() - 500_000.0).abs() < 2_000.0, "{down:?}");
        assert!(
            a.induced[2].rtt_p50.abs() < 2_000.0,
            "the second idle is like the first"
        );
        assert_eq!(a.induced[0].rtt_p50, 0.0);
    }

    #[test]
    fn the_clock_comes_from_both_idle_phases_and_recovers_offset_and_drift() {
        let (offset, drift) = (3.7e12, 40e-6);
        let a = assemble(&run(offset, drift), false);
        let ClockUsed::Estimated(c, from) = a.clock else {
            panic!("{:?}", a.clock)
        };
        assert_eq!(from, ClockFrom::FirstAndLastIdle);
        assert!((c.drift - drift).abs() < 1e-6, "drift {}", c.drift);
        let truth = offset + drift * c.start.at_ns as f64;
        assert!((c.start.offset_ns - truth).abs() <= c.bound_ns + 1.0);
        // The loaded phase's extra delay is on the way down, not up.
        let down = a.induced[1];
        assert!(
            (down.down_p50.unwrap() - 500_000.0).abs() < 2_000.0 + c.bound_ns,
            "{down:?}"
        );
        assert!(down.up_p50.unwrap().abs() < 2_000.0 + c.bound_ns, "{down:?}");
    }

    #[test]
    fn without_idle_or_stamps_the_clock_says_so() {
        let mut raw = run(1e9, 0.0);
        raw.phases.retain(|p| p.name != IDLE);
        let a = assemble(&raw, false);
        assert!(matches!(a.clock, ClockUsed::Estimated(_, ClockFrom::WholeTest)));
        assert!(a.induced.is_empty(), "no idle baseline");
        let mut raw = run(0.0, 0.0);
        raw.phases.truncate(2);
        assert!(matches!(
            assemble(&raw, false).clock,
            ClockUsed::Estimated(_, ClockFrom::FirstIdle)
        ));
        for p in &mut raw.probes {
            p.reply = None;
        }
        let a = assemble(&raw, false);
        assert_eq!(a.clock, ClockUsed::None);
        assert!(a.probes.iter().all(|p| p.one_way_ns.is_none()));
        assert!(a.induced.is_empty(), "no answered idle probe");
    }

    #[test]
    fn loss_splits_each_way_from_the_responders_counts() {
        let mut raw = run(0.0, 0.0);
        // Count as a responder would: every probe of the loaded phase
        // whose reply was lost (k % 10 == 0) reached it except k = 150,
        // lost on the way up; replies carry the running count.
        let mut received = 0;
        for (k, p) in raw.probes.iter_mut().enumerate() {
            if k == 150 {
                continue;
            }
            received += 1;
            if p.reply.is_some() {
                p.counted = Some(received);
            }
        }
        let a = assemble(&raw, true);
        assert_eq!(a.phases[0].lost_each_way, Some((0, 0)));
        assert_eq!(a.phases[1].lost_each_way, Some((1, 9)));
        assert_eq!(a.phases[1].lost, 10);
        assert_eq!(a.phases[2].lost_each_way, Some((0, 0)));
        // No count from the responder: no split.
        let a = assemble(&run(0.0, 0.0), true);
        assert!(a.phases.iter().all(|p| p.lost_each_way.is_none()));
    }
}
