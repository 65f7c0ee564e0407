//! `ping --layers`: the ping run twice, untraced and then with the kernel's
//! tracepoints recording each datagram's path (stackmeter_bpf::layers),
//! and the records turned into a waterfall per round trip.
//!
//! The records of one round trip are found by the datagram's sequence
//! number and kind (1 the request, 2 the reply), which the tracer reads
//! from the packet at every layer that has it, and by thread and time for
//! the system calls: the client's are this thread's; the responder's are
//! the first receive returned by another thread after the request reached
//! its socket, and the last send entered by another thread before the
//! reply was queued. A round trip's points, in the path's order:
//!
//! ```text
//! client send call -> request queued -> request at the driver -> request received
//! -> request to the stack -> request on the socket -> responder has it
//! -> responder sends -> reply queued -> reply at the driver -> reply received
//! -> reply to the stack -> reply on the socket -> client has it
//! ```
//!
//! A segment runs from each point seen to the next one seen, so a path
//! without some points (an XDP responder has no socket and no calls; a
//! responder on another host shows none of its own) has fewer, longer
//! segments, and the segments of every round trip add up to its traced
//! time, client send call to client has it. [`waterfall`] is pure.

use stackmeter_bpf::layers::{Event, Point};
use stackmeter_results::layers::{LayerSegment, Layers};

/// The points of a round trip, in order.
const POINTS: [&str; 14] = [
    "client send call",
    "request queued",
    "request at the driver",
    "request received",
    "request to the stack",
    "request on the socket",
    "responder has it",
    "responder sends",
    "reply queued",
    "reply at the driver",
    "reply received",
    "reply to the stack",
    "reply on the socket",
    "client has it",
];

/// The first record at `point` of the datagram `seq` of `kind`.
fn packet(events: &[&Event], point: &[Point], seq: u64, kind: u8) -> Option<u64> {
    events
        .iter()
        .filter(|e| point.contains(&e.point) && e.seq == Some(seq) && e.kind == kind)
        .map(|e| e.ts_ns)
        .min()
}

/// One round trip's points (ns, CLOCK_MONOTONIC), `None` where not seen.
fn points(events: &[&Event], seq: u64, client: u32) -> [Option<u64>; 14] {
    let call = |p: Point, kind: u8| {
        events
            .iter()
            .filter(|e| e.point == p && e.tid == client && e.seq == Some(seq) && e.kind == kind)
            .map(|e| e.ts_ns)
            .min()
    };
    let mut at = [None; 14];
    at[0] = call(Point::SysSendEnter, 1);
    at[1] = packet(events, &[Point::NetDevQueue], seq, 1);
    at[2] = packet(events, &[Point::NetDevStartXmit], seq, 1);
    at[3] = packet(events, &[Point::NetifRx, Point::NapiGroReceive], seq, 1);
    at[4] = packet(events, &[Point::NetifReceiveSkb], seq, 1);
    at[5] = packet(events, &[Point::SkDataReady], seq, 1);
    at[8] = packet(events, &[Point::NetDevQueue], seq, 2);
    at[9] = packet(events, &[Point::NetDevStartXmit], seq, 2);
    at[10] = packet(events, &[Point::NetifRx, Point::NapiGroReceive], seq, 2);
    at[11] = packet(events, &[Point::NetifReceiveSkb], seq, 2);
    at[12] = packet(events, &[Point::SkDataReady], seq, 2);
    at[13] = call(Point::SysRecvExit, 2);
    // The responder's calls, by thread and time between its socket's
    // wake-up and the reply's queueing.
    if let (Some(ready), Some(queued)) = (at[5], at[8]) {
        let other = |e: &&&Event| e.tid != client && e.ts_ns >= ready && e.ts_ns <= queued;
        at[6] = events
            .iter()
            .filter(|e| e.point == Point::SysRecvExit)
            .filter(other)
            .map(|e| e.ts_ns)
            .min();
        at[7] = events
            .iter()
            .filter(|e| e.point == Point::SysSendEnter)
            .filter(other)
            .map(|e| e.ts_ns)
            .max()
            .filter(|&t| at[6].is_none_or(|r| t >= r));
    }
    at
}

/// The waterfall of the round trips in `events` whose client calls were
/// made by thread `client`, less the first `warmup` sent (the ping's
/// untimed datagrams); `rtt_mean_us` and the p50 are the client's own
/// figures, passed through.
pub fn waterfall(events: &[Event], client: u32, warmup: usize, rtt_mean_us: f64, traced_p50_us: f64) -> Layers {
    let mut sends: Vec<(u64, u64)> = events
        .iter()
        .filter(|e| e.point == Point::SysSendEnter && e.tid == client && e.kind == 1)
        .filter_map(|e| e.seq.map(|s| (e.ts_ns, s)))
        .collect();
    sends.sort_unstable();
    let mut seqs: Vec<u64> = Vec::new();
    for (_, s) in sends {
        if !seqs.contains(&s) {
            seqs.push(s);
        }
    }
    let seqs: Vec<u64> = seqs.into_iter().skip(warmup).collect();
    let all: Vec<&Event> = events.iter().collect();
    // (from, to) -> durations, ns, in first-seen order.
    let mut segments: Vec<((usize, usize), Vec<u64>)> = Vec::new();
    let (mut trips, mut traced) = (0u64, 0u128);
    for seq in seqs {
        let mine: Vec<&Event> = all.iter().copied().filter(|e| e.seq.is_none_or(|s| s == seq)).collect();
        let at = points(&mine, seq, client);
        let (Some(first), Some(last)) = (at[0], at[13]) else {
            continue;
        };
        // Points out of order (a record read from the wrong place) spoil
        // the sum: such a round trip is left out.
        let seen: Vec<(usize, u64)> = at.iter().enumerate().filter_map(|(i, t)| t.map(|t| (i, t))).collect();
        if seen.windows(2).any(|w| w[1].1 < w[0].1) || last < first {
            continue;
        }
        trips += 1;
        traced += u128::from(last - first);
        for w in seen.windows(2) {
            let key = (w[0].0, w[1].0);
            let d = w[1].1 - w[0].1;
            match segments.iter_mut().find(|s| s.0 == key) {
                Some(s) => s.1.push(d),
                None => segments.push((key, vec![d])),
            }
        }
    }
    segments.sort_by_key(|s| s.0);
    let us = |ns: f64| ns / 1000.0;
    Layers {
        round_trips: trips,
        segments: segments
            .into_iter()
            .map(|((f, t), mut d)| {
                d.sort_unstable();
                // Means over every round trip, so they add up to the
                // traced mean (a segment a round trip lacks counts 0).
                let sum: u64 = d.iter().sum();
                LayerSegment {
                    from: POINTS[f].into(),
                    to: POINTS[t].into(),
                    count: d.len() as u64,
                    p50_us: us(d[d.len() / 2] as f64),
                    mean_us: us(sum as f64 / trips.max(1) as f64),
                }
            })
            .collect(),
        traced_mean_us: us(traced as f64 / trips.max(1) as f64),
        rtt_mean_us,
        untraced_p50_us: None,
        traced_p50_us,
        lost_records: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts_ns: u64, point: Point, seq: Option<u64>, kind: u8, tid: u32) -> Event {
        Event {
            ts_ns,
            point,
            skb: 0,
            seq,
            kind,
            tid,
            tgid: 1,
            cpu: 0,
        }
    }

    /// Two round trips over loopback with every point, one without the
    /// responder's calls (an XDP answer): the segments add up to the
    /// traced time, and a segment missing from one round trip counts 0
    /// in its mean.
    #[test]
    fn segments_add_up_to_the_traced_round_trip() {
        let (c, r) = (10, 20);
        let mut e = Vec::new();
        for (seq, base) in [(1u64, 0u64), (2, 100_000)] {
            e.extend([
                ev(base, Point::SysSendEnter, Some(seq), 1, c),
                ev(base + 1_000, Point::NetDevQueue, Some(seq), 1, c),
                ev(base + 2_000, Point::NetDevStartXmit, Some(seq), 1, c),
                ev(base + 3_000, Point::NetifRx, Some(seq), 1, c),
                ev(base + 4_000, Point::NetifReceiveSkb, Some(seq), 1, c),
                ev(base + 5_000, Point::SkDataReady, Some(seq), 1, c),
            ]);
            if seq == 1 {
                e.extend([
                    ev(base + 7_000, Point::SysRecvExit, None, 0, r),
                    ev(base + 8_000, Point::SysSendEnter, Some(seq), 2, r),
                ]);
            }
            e.extend([
                ev(base + 9_000, Point::NetDevQueue, Some(seq), 2, r),
                ev(base + 10_000, Point::NetDevStartXmit, Some(seq), 2, r),
                ev(base + 11_000, Point::NetifRx, Some(seq), 2, r),
                ev(base + 12_000, Point::NetifReceiveSkb, Some(seq), 2, r),
                ev(base + 13_000, Point::SkDataReady, Some(seq), 2, r),
                ev(base + 15_000, Point::SysRecvExit, Some(seq), 2, c),
            ]);
        }
        let w = waterfall(&e, c, 0, 16.0, 15.0);
        assert_eq!(
            waterfall(&e, c, 1, 16.0, 15.0).round_trips,
            1,
            "the first is the warm-up"
        );
        assert_eq!(w.round_trips, 2);
        assert!((w.traced_mean_us - 15.0).abs() < 1e-9);
        let sum: f64 = w.segments.iter().map(|s| s.mean_us).sum();
        assert!((sum - w.traced_mean_us).abs() < 1e-9, "{sum} vs {}", w.traced_mean_us);
        let app = w.segments.iter().find(|s| s.from == "responder has it").unwrap();
        assert_eq!((app.count, app.mean_us), (1, 0.5), "one round trip of two had it");
        assert_eq!(w.segments.first().unwrap().from, "client send call");
        assert_eq!(w.segments.last().unwrap().to, "client has it");
    }
}
