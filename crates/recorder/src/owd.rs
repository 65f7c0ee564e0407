//! One-way delay from round trips whose far end stamps its receive and send
//! times on its own clock (irtt, crusader). The two clocks differ by an
//! unknown offset that drifts; the round trip tells both apart only up to
//! the time the probe spent outside the responder, so the offset is taken
//! from the probe with the lowest round trip (the tightest bound, as NTP's
//! clock filter does), once near the start and once near the end of a test,
//! with a straight line between them for the drift. Pure: stamps in, delays
//! out.

/// One probe's four stamps, nanoseconds: client send and receive on the
/// client's clock, responder receive and send on the responder's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamps {
    /// Client send.
    pub c_tx: u64,
    /// Responder receive.
    pub s_rx: u64,
    /// Responder send.
    pub s_tx: u64,
    /// Client receive.
    pub c_rx: u64,
}

impl Stamps {
    /// Time outside the responder: the round trip minus the responder's
    /// own time (network and both stacks, both ways).
    pub fn path_ns(&self) -> i128 {
        (self.c_rx as i128 - self.c_tx as i128) - (self.s_tx as i128 - self.s_rx as i128)
    }

    /// The offset (responder clock minus client clock) that makes this
    /// probe's two one-way delays equal.
    fn midpoint_offset(&self) -> f64 {
        ((self.s_rx as f64 - self.c_tx as f64) + (self.s_tx as f64 - self.c_rx as f64)) / 2.0
    }
}

/// The offset at one moment, with its error bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Offset {
    /// When (client clock, ns): the send time of the probe it came from.
    pub at_ns: u64,
    /// Responder clock minus client clock, ns.
    pub offset_ns: f64,
    /// The true offset lies within this of `offset_ns` (half the probe's
    /// time outside the responder).
    pub bound_ns: f64,
}

/// The offset from the lowest-round-trip probe of `probes` (`None`: no
/// probe, or the stamps contradict each other: a responder time longer
/// than the round trip).
pub fn offset(probes: &[Stamps]) -> Option<Offset> {
    let best = probes.iter().filter(|p| p.path_ns() >= 0).min_by_key(|p| p.path_ns())?;
    Some(Offset {
        at_ns: best.c_tx,
        offset_ns: best.midpoint_offset(),
        bound_ns: best.path_ns() as f64 / 2.0,
    })
}

/// How the responder's clock maps onto the client's over a test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Clock {
    /// Offset at `start.at_ns`.
    pub start: Offset,
    /// Drift: change of the offset per nanosecond of client time (0 with
    /// one estimate).
    pub drift: f64,
    /// Error bound of any one-way delay, ns: the larger of the two
    /// estimates' bounds.
    pub bound_ns: f64,
}

impl Clock {
    /// From an estimate near the start and, if there is one, near the end.
    pub fn estimated(start: Offset, end: Option<Offset>) -> Clock {
        match end.filter(|e| e.at_ns > start.at_ns) {
            Some(e) => Clock {
                start,
                drift: (e.offset_ns - start.offset_ns) / (e.at_ns - start.at_ns) as f64,
                bound_ns: start.bound_ns.max(e.bound_ns),
            },
            None => Clock {
                start,
                drift: 0.0,
                bound_ns: start.bound_ns,
            },
        }
    }

    /// Both clocks are one (the same host) or kept together (PTP): offset
    /// 0, no estimate, and no bound this code can give.
    pub fn synced() -> Clock {
        Clock {
            start: Offset {
                at_ns: 0,
                offset_ns: 0.0,
                bound_ns: 0.0,
            },
            drift: 0.0,
            bound_ns: 0.0,
        }
    }

    /// The offset at client time `t`.
    pub fn offset_at(&self, t: u64) -> f64 {
        self.start.offset_ns + self.drift * (t as f64 - self.start.at_ns as f64)
    }

    /// (up, down) one-way delays of a probe, ns; either may come out
    /// slightly negative when a path is faster than the bound allows for.
    pub fn one_way(&self, p: &Stamps) -> (f64, f64) {
        let off = self.offset_at(p.c_tx);
        (
            p.s_rx as f64 - off - p.c_tx as f64,
            p.c_rx as f64 - (p.s_tx as f64 - off),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe sent at client time `t` over paths of `up` and `down` ns,
    /// through a responder that holds it `hold` ns and whose clock reads
    /// `offset + (1 + drift) * client time`.
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
    fn offset_and_drift_recovered_within_the_bound() {
        let (off, drift) = (5e12, 20e-6); // 20 ppm
                                          // Idle: 30 us up, 40 us down at best; loaded later: 2 ms down.
        let early: Vec<Stamps> = (0..50)
            .map(|i| {
                probe(
                    1_000_000_000 + i * 10_000_000,
                    30_000 + i * 100,
                    40_000 + i * 50,
                    5_000,
                    off,
                    drift,
                )
            })
            .collect();
        let late: Vec<Stamps> = (0..50)
            .map(|i| {
                probe(
                    30_000_000_000 + i * 10_000_000,
                    30_000 + i * 70,
                    40_000,
                    5_000,
                    off,
                    drift,
                )
            })
            .collect();
        let clock = Clock::estimated(offset(&early).unwrap(), offset(&late));
        assert!((clock.drift - drift).abs() < 1e-6, "{}", clock.drift);
        // The best probe's path is 70 us: the bound is 35 us.
        assert!((clock.bound_ns - 35_000.0).abs() < 1.0, "{}", clock.bound_ns);
        let loaded = probe(20_000_000_000, 30_000, 2_000_000, 5_000, off, drift);
        let (up, down) = clock.one_way(&loaded);
        assert!((up - 30_000.0).abs() <= clock.bound_ns, "{up}");
        assert!((down - 2_000_000.0).abs() <= clock.bound_ns + 1.0, "{down}");
        // Queueing shows in the direction it happened, not the other.
        assert!(down > 1_900_000.0 && up < 100_000.0);
    }

    #[test]
    fn symmetric_paths_come_out_exactly_and_synced_clocks_need_no_estimate() {
        let p = probe(10, 1_000, 1_000, 200, 123_456.0, 0.0);
        let c = Clock::estimated(offset(&[p]).unwrap(), None);
        assert_eq!(c.one_way(&p), (1_000.0, 1_000.0));
        let same = probe(10, 700, 1_300, 200, 0.0, 0.0);
        assert_eq!(Clock::synced().one_way(&same), (700.0, 1_300.0));
    }

    #[test]
    fn contradictory_stamps_give_no_offset() {
        let bad = Stamps {
            c_tx: 100,
            s_rx: 0,
            s_tx: 1_000,
            c_rx: 200,
        };
        assert_eq!(offset(&[bad]), None);
        assert_eq!(offset(&[]), None);
    }
}
