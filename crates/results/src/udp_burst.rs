//! udp-burst: how large a burst of back-to-back UDP datagrams a target
//! takes without losing one. An embedded stack receives into a small pool
//! of packet buffers (lwIP's pbufs, smoltcp's socket buffer of a few
//! packets); a burst larger than the pool is lost in part, and no
//! one-at-a-time round trip shows it. Its parameters, rows, figures.

use crate::figures::Figures;
use crate::latency::LatencyUs;
use serde::{Deserialize, Serialize};

/// udp-burst parameters.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UdpBurstParams {
    /// Datagram size in bytes (UDP payload, the 40-byte header included).
    pub size: u32,
    /// Burst sizes, datagrams sent back to back, in the order run.
    pub bursts: Vec<u32>,
    /// Rounds per burst size: each sends one burst and waits for its replies.
    pub rounds: u64,
    /// Untimed single round trips before the first burst.
    pub warmup: u64,
    /// A reply not back this long after its burst's last send is lost, ms.
    pub timeout_ms: u64,
}

/// One burst size's row.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UdpBurstResult {
    /// Datagrams per burst.
    pub burst: u32,
    /// Rounds run.
    pub rounds: u64,
    /// Datagrams sent.
    pub sent: u64,
    /// Intact replies back in time.
    pub received: u64,
    /// Datagrams with no intact reply in time.
    pub lost: u64,
    /// Rounds whose every datagram came back.
    pub whole_rounds: u64,
    /// Replies that were not an intact answer to this burst (wrong bytes,
    /// or a late answer to an earlier one).
    pub mismatched: u64,
    /// Datagrams the client's own receive queue dropped (the kernel's count
    /// for its socket): answers that reached this host, so not the
    /// target's loss; `None` when the count could not be read (no
    /// `/proc/net/udp`, or a socket the kernel does not hold, as under an
    /// `LD_PRELOAD` stack).
    #[serde(default)]
    pub client_drops: Option<u64>,
    /// First send to last reply read, of the rounds answered whole,
    /// microseconds: the target's time to answer the burst plus the
    /// client's own sends and reads, so a figure to compare between
    /// targets measured by one client, not the target's time alone.
    pub drain_us: Option<LatencyUs>,
}

impl UdpBurstResult {
    /// The share of datagrams answered, percent.
    pub fn delivered_pct(&self) -> f64 {
        match self.sent {
            0 => 0.0,
            n => 100.0 * self.received as f64 / n as f64,
        }
    }

    /// True when every round came back whole.
    pub fn lossless(&self) -> bool {
        self.rounds > 0 && self.whole_rounds == self.rounds
    }
}

/// A udp-burst document's body: parameters and one row per burst size.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UdpBurstBody {
    /// Parameters.
    pub params: UdpBurstParams,
    /// One row per burst size, in the order run.
    pub results: Vec<UdpBurstResult>,
}

impl UdpBurstBody {
    /// The largest burst size that, and every smaller one measured, came
    /// back whole in every one of its rounds, all of them run (`None`: not
    /// even the smallest, or nothing measured).
    pub fn largest_whole(&self) -> Option<u32> {
        let mut rows: Vec<&UdpBurstResult> = self.results.iter().collect();
        rows.sort_by_key(|r| r.burst);
        rows.iter()
            .take_while(|r| r.lossless() && r.rounds == self.params.rounds)
            .map(|r| r.burst)
            .last()
    }
}

impl crate::TestBody for UdpBurstBody {
    const KIND: crate::TestKind = crate::TestKind::UdpBurst;
    const LOADS_THE_LINK: bool = false;
    type Params = UdpBurstParams;

    fn empty(params: UdpBurstParams) -> UdpBurstBody {
        UdpBurstBody {
            params,
            results: Vec::new(),
        }
    }
    fn params(&self) -> &UdpBurstParams {
        &self.params
    }
    fn is_empty(&self) -> bool {
        self.results.iter().all(|r| r.sent == 0)
    }
    /// Per burst size: the share delivered and the drain time, both
    /// compared.
    fn figures(&self, f: &mut Figures) {
        for (i, r) in self.results.iter().enumerate() {
            let label = format!("burst {}", r.burst);
            if let Some(s) = &r.drain_us {
                f.latency(i, &label, "drain", s, true);
            }
            f.rate(i, &label, "delivered", "%", r.delivered_pct(), true);
        }
    }
    fn warnings(&self, _run: &crate::warnings::RunContext) -> Vec<crate::warnings::Warning> {
        let mut out = Vec::new();
        let mismatched: u64 = self.results.iter().map(|r| r.mismatched).sum();
        if mismatched > 0 {
            out.push(crate::warnings::Warning::BurstMismatched { replies: mismatched });
        }
        let drops: u64 = self.results.iter().filter_map(|r| r.client_drops).sum();
        if drops > 0 {
            out.push(crate::warnings::Warning::BurstClientDrops { replies: drops });
        }
        if self.results.iter().any(|r| r.client_drops.is_none() && r.lost > 0) {
            out.push(crate::warnings::Warning::BurstClientDropsUnknown);
        }
        out
    }
    fn unanswered(&self) -> Option<String> {
        let sent: u64 = self.results.iter().map(|r| r.sent).sum();
        let received: u64 = self.results.iter().map(|r| r.received).sum();
        (sent > 0 && received == 0).then(|| format!("no answer to any of {sent} datagrams"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(burst: u32, rounds: u64, whole: u64) -> UdpBurstResult {
        UdpBurstResult {
            burst,
            rounds,
            whole_rounds: whole,
            sent: rounds * burst as u64,
            received: rounds * burst as u64 - (rounds - whole),
            lost: rounds - whole,
            ..Default::default()
        }
    }

    #[test]
    fn the_largest_whole_burst_stops_at_the_first_loss() {
        let params = UdpBurstParams {
            size: 64,
            bursts: vec![1, 2, 4, 8],
            rounds: 3,
            warmup: 0,
            timeout_ms: 100,
        };
        let mut b = UdpBurstBody {
            params,
            results: vec![row(1, 3, 3), row(2, 3, 3), row(4, 3, 2), row(8, 3, 3)],
        };
        assert_eq!(b.largest_whole(), Some(2));
        b.results[0].whole_rounds = 0;
        assert_eq!(b.largest_whole(), None);
        assert!((row(4, 3, 2).delivered_pct() - 100.0 * 11.0 / 12.0).abs() < 1e-9);
    }
}
