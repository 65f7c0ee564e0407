//! What one pair's probes of one summary period add up to, pure: counts
//! and full distributions kept as the probes come, and the ping and rr
//! result rows built from them, the same types `stackmeter ping` and
//! `stackmeter rr` produce, so a stored summary is read, compared and
//! reported like any other result. Samples are nanoseconds; rows are in
//! microseconds as everywhere in the results.

use stackmeter_recorder::{bimodal, Recorder, Summary};
use stackmeter_results::{Body, Levels, PingParams, PingResult, RrParams, RrResult, SizePair, Slow};

/// Slow answers listed one by one in a ping row (as `stackmeter ping`).
const SLOW_LISTED: usize = 10;

/// How the probes of a period were sent (the parameters of its rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probing {
    /// Time between two probes of one kind to one peer, microseconds.
    pub interval_us: u64,
    /// No answer within this is a lost probe, milliseconds.
    pub timeout_ms: u64,
    /// Ping datagram size, bytes (header included, MAC trailer not).
    pub ping_size: usize,
    /// A ping answer slower than this counts as slow, microseconds.
    pub slow_us: u64,
}

/// One period's pings to one peer.
#[derive(Clone, Debug)]
pub struct PingTally {
    sent: u64,
    received: u64,
    late: u64,
    duplicates: u64,
    reordered: u64,
    mismatched: u64,
    slow: u64,
    slow_first: Vec<Slow>,
    highest: Option<u64>,
    max_send_lag_ns: u64,
    rtt: Recorder,
    server: Recorder,
}

/// An answer to a ping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The probe's number among this peer's pings.
    pub index: u64,
    /// Round trip, ns.
    pub rtt_ns: u64,
    /// Time inside the responder, ns, when it stamped the reply.
    pub server_ns: Option<u64>,
    /// Length, kind and payload as sent.
    pub intact: bool,
}

impl PingTally {
    /// A ping left `lag_ns` after its due time.
    pub fn sent(&mut self, lag_ns: u64) {
        self.sent += 1;
        self.max_send_lag_ns = self.max_send_lag_ns.max(lag_ns);
    }

    /// A ping was answered within the timeout.
    pub fn answered(&mut self, a: Answer, slow_us: u64) {
        self.received += 1;
        match self.highest {
            Some(h) if a.index < h => self.reordered += 1,
            _ => self.highest = Some(a.index),
        }
        if !a.intact {
            self.mismatched += 1;
        }
        self.rtt.record(a.rtt_ns);
        if let Some(s) = a.server_ns {
            self.server.record(s);
        }
        if a.rtt_ns > slow_us.saturating_mul(1000) {
            self.slow += 1;
            if self.slow_first.len() < SLOW_LISTED {
                self.slow_first.push(Slow {
                    seq: a.index,
                    rtt_us: a.rtt_ns as f64 / 1000.0,
                });
            }
        }
    }

    /// An answer came after the timeout (its ping is lost).
    pub fn late(&mut self) {
        self.late += 1;
    }

    /// A second answer to one ping.
    pub fn duplicate(&mut self) {
        self.duplicates += 1;
    }

    /// Pings sent this period.
    pub fn count(&self) -> u64 {
        self.sent
    }

    /// The period's ping document body (over `wall_s` seconds) and the
    /// distributions behind its figures, by the row's JSON key.
    pub fn body(&self, p: &Probing, wall_s: f64) -> (Body, Vec<(&'static str, Recorder)>) {
        let mut r = PingResult::empty(p.ping_size);
        r.sent = self.sent;
        r.received = self.received.min(self.sent);
        r.lost = self.sent.saturating_sub(self.received);
        r.late = self.late;
        r.duplicates = self.duplicates;
        r.reordered = self.reordered;
        r.mismatched = self.mismatched;
        r.slow = self.slow;
        r.slow_first = self.slow_first.clone();
        r.rtt_us = us(&self.rtt);
        r.server_us = us(&self.server);
        r.levels = levels(&self.rtt);
        r.max_send_lag_us = self.max_send_lag_ns as f64 / 1000.0;
        r.pps = if wall_s > 0.0 {
            self.received as f64 / wall_s
        } else {
            0.0
        };
        let params = PingParams {
            size: p.ping_size,
            count: self.sent,
            warmup: 0,
            interval_us: p.interval_us,
            slow_us: p.slow_us,
            timeout_ms: p.timeout_ms,
            echo: false,
            timestamps: None,
            layers: false,
        };
        let mut h = Vec::new();
        for (metric, rec) in [("rtt_us", &self.rtt), ("server_us", &self.server)] {
            if rec.count() > 0 {
                h.push((metric, rec.clone()));
            }
        }
        (
            Body::Ping(stackmeter_results::PingBody {
                params,
                results: vec![r],
            }),
            h,
        )
    }
}

/// One period's rr probes to one peer.
#[derive(Clone, Debug)]
pub struct RrTally {
    sent: u64,
    rtt: Recorder,
}

// An agent keeps a tally per peer and kind: their histograms grow with
// what they hold (a few KiB for LAN round trips) instead of covering an
// hour from the start (bench/fleet.sh: memory per peer).
impl Default for RrTally {
    fn default() -> RrTally {
        RrTally {
            sent: 0,
            rtt: Recorder::growing(),
        }
    }
}

impl Default for PingTally {
    fn default() -> PingTally {
        PingTally {
            sent: 0,
            received: 0,
            late: 0,
            duplicates: 0,
            reordered: 0,
            mismatched: 0,
            slow: 0,
            slow_first: Vec::new(),
            highest: None,
            max_send_lag_ns: 0,
            rtt: Recorder::growing(),
            server: Recorder::growing(),
        }
    }
}

impl RrTally {
    /// A round was tried (answered or not).
    pub fn sent(&mut self) {
        self.sent += 1;
    }

    /// A round was answered after `rtt_ns`.
    pub fn answered(&mut self, rtt_ns: u64) {
        self.rtt.record(rtt_ns);
    }

    /// Rounds tried this period.
    pub fn count(&self) -> u64 {
        self.sent
    }

    /// The period's rr document body (1:1 over `wall_s` seconds) and its
    /// distribution; without a row when no round was answered (an rr row
    /// always has its latency figures).
    pub fn body(&self, p: &Probing, wall_s: f64) -> (Body, Vec<(&'static str, Recorder)>) {
        let params = RrParams {
            sizes: vec![SizePair { req: 1, resp: 1 }],
            iterations: self.sent,
            warmup: 0,
            nodelay: true,
            timeout_ms: p.timeout_ms,
            open_loop: None,
            echo: false,
            raw: false,
            request_prefix: None,
            timestamps: None,
            layers: false,
        };
        let Some(rtt_us) = us(&self.rtt) else {
            return (
                Body::Rr(stackmeter_results::RrBody {
                    params,
                    results: vec![],
                }),
                vec![],
            );
        };
        let row = RrResult {
            req_bytes: 1,
            resp_bytes: 1,
            samples: self.rtt.count(),
            warmup: 0,
            rtt_us,
            tps: if wall_s > 0.0 {
                self.rtt.count() as f64 / wall_s
            } else {
                0.0
            },
            levels: levels(&self.rtt),
            requested_rate: None,
            achieved_rate: None,
            send_lag_us: None,
            late_sends: None,
            timestamps: None,
            split_us: None,
            retransmits: None,
            layers: None,
        };
        (
            Body::Rr(stackmeter_results::RrBody {
                params,
                results: vec![row],
            }),
            vec![("rtt_us", self.rtt.clone())],
        )
    }
}

fn us(r: &Recorder) -> Option<Summary> {
    Summary::of(r).map(|s| s.scaled(1000.0))
}

fn levels(r: &Recorder) -> Option<Levels> {
    bimodal(r.histogram()).map(|m| Levels {
        low_us: m.low / 1000.0,
        high_us: m.high / 1000.0,
        low_share: m.low_share,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Probing = Probing {
        interval_us: 1_000_000,
        timeout_ms: 1000,
        ping_size: 64,
        slow_us: 1000,
    };

    #[test]
    fn a_ping_period_counts_loss_order_and_slow_answers() {
        let mut t = PingTally::default();
        for _ in 0..10 {
            t.sent(5_000);
        }
        for (index, rtt) in [(0, 30_000), (1, 31_000), (3, 2_000_000), (2, 29_000), (5, 30_500)] {
            t.answered(
                Answer {
                    index,
                    rtt_ns: rtt,
                    server_ns: Some(4_000),
                    intact: index != 5,
                },
                P.slow_us,
            );
        }
        t.late();
        t.duplicate();
        let (body, h) = t.body(&P, 10.0);
        let Body::Ping(stackmeter_results::PingBody { params, results }) = body else {
            panic!("a ping body")
        };
        assert_eq!(
            (params.count, params.interval_us, params.timeout_ms),
            (10, 1_000_000, 1000)
        );
        let r = &results[0];
        assert_eq!((r.sent, r.received, r.lost, r.late, r.duplicates), (10, 5, 5, 1, 1));
        assert_eq!((r.reordered, r.mismatched, r.slow), (1, 1, 1));
        assert_eq!(r.slow_first[0].seq, 3);
        let rtt = r.rtt_us.unwrap();
        assert_eq!(rtt.count, 5);
        assert!((rtt.min - 29.0).abs() < 0.1 && (rtt.max - 2000.0).abs() < 1.0);
        assert!((r.server_us.unwrap().p50 - 4.0).abs() < 0.01);
        assert!((r.pps - 0.5).abs() < 1e-9);
        assert_eq!(r.max_send_lag_us, 5.0);
        assert_eq!(h.iter().map(|x| x.0).collect::<Vec<_>>(), ["rtt_us", "server_us"]);
    }

    #[test]
    fn an_rr_period_with_and_without_answers() {
        let mut t = RrTally::default();
        for ns in [40_000, 41_000, 39_000] {
            t.sent();
            t.answered(ns);
        }
        t.sent();
        assert_eq!(t.count(), 4);
        let (body, h) = t.body(&P, 4.0);
        let Body::Rr(stackmeter_results::RrBody { params, results }) = body else {
            panic!("an rr body")
        };
        assert_eq!(params.iterations, 4);
        assert_eq!(results[0].samples, 3);
        assert!((results[0].rtt_us.p50 - 40.0).abs() < 0.1);
        assert_eq!(h.len(), 1);
        let mut none = RrTally::default();
        none.sent();
        let (body, h) = none.body(&P, 1.0);
        assert!(matches!(body, Body::Rr(stackmeter_results::RrBody { results, .. }) if results.is_empty()));
        assert!(h.is_empty());
    }
}
