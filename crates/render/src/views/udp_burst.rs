//! udp-burst's view: per burst size, what was answered and how long a
//! whole burst took; then the largest burst answered whole.

use crate::units::Units;
use crate::view::{Block, Col, Table, View};
use stackmeter_results::{latency_text, UdpBurstBody};

impl crate::views::TestView for UdpBurstBody {
    fn view(&self, v: &mut View, _units: Units) -> Vec<u64> {
        let p = &self.params;
        v.line(format!(
            "{}-byte UDP datagrams sent back to back in bursts of {}; {} round(s) per burst size, each waiting up to {} ms after its last send; {} warm-up round trip(s)",
            p.size,
            p.bursts.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
            p.rounds,
            p.timeout_ms,
            p.warmup
        ));
        v.blank();
        let mut table = Table {
            cols: vec![
                Col::num("burst", 5),
                Col::num("rounds", 6),
                Col::num("sent", 8),
                Col::num("answered", 8),
                Col::num("lost", 6),
                Col::num("delivered %", 11),
                Col::num("whole rounds", 12),
                Col::num("drain p50 us", 12),
                Col::num("drain p99 us", 12),
            ],
            ..Table::default()
        };
        for r in &self.results {
            let drain = |pick: fn(&stackmeter_results::LatencyUs) -> f64| {
                r.drain_us.as_ref().map_or("-".into(), |s| latency_text(pick(s)))
            };
            table.rows.push(vec![
                r.burst.to_string(),
                r.rounds.to_string(),
                r.sent.to_string(),
                r.received.to_string(),
                r.lost.to_string(),
                format!("{:.2}", r.delivered_pct()),
                r.whole_rounds.to_string(),
                drain(|s| s.p50),
                drain(|s| s.p99),
            ]);
        }
        v.push(Block::Table(table));
        v.blank();
        if !self.results.is_empty() {
            v.line(match self.largest_whole() {
                Some(b) => format!(
                    " largest burst answered whole in every round (and every smaller one): {b} datagram(s) of {} bytes",
                    p.size
                ),
                None => " not even the smallest burst was answered whole in every round".into(),
            });
        }
        v.line(" drain: first send to last reply read, of the rounds answered whole; it includes the client's own sends and reads, so compare it between targets, not as the target's time alone");
        // Drain times are the only percentiles, one sample per whole round.
        self.results
            .iter()
            .filter_map(|r| r.drain_us.as_ref().map(|s| s.count))
            .collect()
    }
}
