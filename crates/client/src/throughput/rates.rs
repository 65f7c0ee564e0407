//! Counts turned into the figures of a throughput row: rates, the spread
//! of the interval rates, CPU shares, and the rows' rate fields from the
//! bytes each direction moved. Pure.

use stackmeter_results::{CpuShare, CpuUse, Interval, SenderBytes, Spread, StreamSummary};

/// Megabits per second of `bytes` over `secs`.
pub(crate) fn mbps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs / 1e6
    } else {
        0.0
    }
}

/// Thousands of `length`-byte messages per second of `bytes` over `secs`.
pub(crate) fn kpps(bytes: u64, length: u32, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 / length as f64 / secs / 1e3
    } else {
        0.0
    }
}

/// `part` as a share of `of` (0 when `of` is): a loss ratio.
pub(crate) fn share(part: u64, of: u64) -> f64 {
    if of > 0 {
        part as f64 / of as f64
    } else {
        0.0
    }
}

/// The bytes each direction moved over a span of a test: client to target
/// (`sent`) and back (`recv`), in `length`-byte messages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Moved {
    pub(crate) secs: f64,
    pub(crate) sent: u64,
    pub(crate) recv: u64,
    pub(crate) length: u32,
}

impl Moved {
    /// The interval row from `start_s` to `end_s` with these rates; its
    /// TCP and UDP figures are the caller's.
    pub(crate) fn interval(&self, start_s: f64, end_s: f64, omitted: bool) -> Interval {
        let (sent, recv, secs, len) = (self.sent, self.recv, self.secs, self.length);
        Interval {
            start_s,
            end_s,
            omitted,
            sent_mbps: mbps(sent, secs),
            sent_kpps: kpps(sent, len, secs),
            recv_mbps: mbps(recv, secs),
            recv_kpps: kpps(recv, len, secs),
            total_mbps: mbps(sent + recv, secs),
            total_kpps: kpps(sent + recv, len, secs),
            sent_bytes: sent,
            recv_bytes: recv,
            retransmits: None,
            cwnd_kib: None,
            rtt_us: None,
            udp: None,
            acked_bytes: None,
            acked_mbps: None,
        }
    }

    /// The summary with these rates, the senders' counts, the spread of
    /// `intervals` and the CPU used; its TCP and UDP figures are the
    /// caller's.
    pub(crate) fn summary(&self, senders: SenderBytes, intervals: &[Interval], cpu: CpuUse) -> StreamSummary {
        let (sent, recv, secs, len) = (self.sent, self.recv, self.secs, self.length);
        StreamSummary {
            duration_s: secs,
            sent_mbps: mbps(sent, secs),
            recv_mbps: mbps(recv, secs),
            total_mbps: mbps(sent + recv, secs),
            sent_kpps: kpps(sent, len, secs),
            recv_kpps: kpps(recv, len, secs),
            total_kpps: kpps(sent + recv, len, secs),
            sent_bytes: sent,
            recv_bytes: recv,
            senders,
            interval_total_mbps: spread(intervals),
            retransmits: None,
            cpu,
            udp: None,
            zerocopy: None,
            acked_bytes: None,
            acked_mbps: None,
        }
    }
}

/// min / median / max of the non-omitted intervals' totals.
pub(crate) fn spread(intervals: &[Interval]) -> Spread {
    let mut totals: Vec<f64> = intervals.iter().filter(|i| !i.omitted).map(|i| i.total_mbps).collect();
    totals.sort_by(f64::total_cmp);
    match (totals.first(), stackmeter_statistics::median(&totals), totals.last()) {
        (Some(&min), Some(median), Some(&max)) => Spread { min, median, max },
        _ => Spread::default(),
    }
}

/// CPU seconds as a share of `over` seconds of wall time.
pub(crate) fn cpu_of(user_ns: u64, sys_ns: u64, over: f64) -> CpuShare {
    CpuShare {
        user_s: user_ns as f64 / 1e9,
        sys_s: sys_ns as f64 / 1e9,
        percent_of_core: if over > 0.0 {
            100.0 * (user_ns + sys_ns) as f64 / 1e9 / over
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-second row in which `mbit` Mbit went client to target.
    fn row(mbit: u64, omitted: bool) -> Interval {
        let moved = Moved {
            secs: 1.0,
            sent: mbit * 125_000,
            recv: 0,
            length: 1000,
        };
        moved.interval(0.0, 1.0, omitted)
    }

    #[test]
    fn a_row_has_each_direction_and_both() {
        let m = Moved {
            secs: 2.0,
            sent: 250_000,
            recv: 500_000,
            length: 1000,
        };
        let r = m.interval(1.0, 3.0, false);
        assert_eq!((r.sent_mbps, r.recv_mbps, r.total_mbps), (1.0, 2.0, 3.0));
        assert_eq!((r.sent_kpps, r.recv_kpps, r.total_kpps), (0.125, 0.25, 0.375));
        assert_eq!(
            (r.start_s, r.end_s, r.sent_bytes, r.recv_bytes),
            (1.0, 3.0, 250_000, 500_000)
        );
    }

    #[test]
    fn the_spread_leaves_out_the_omitted_intervals() {
        let rows = [
            row(900, true),
            row(10, false),
            row(30, false),
            row(20, false),
            row(40, false),
        ];
        let s = spread(&rows);
        assert_eq!((s.min, s.median, s.max), (10.0, 25.0, 40.0));
        let s = spread(&rows[..1]);
        assert_eq!((s.min, s.median, s.max), (0.0, 0.0, 0.0));
    }

    #[test]
    fn rates_over_no_time_are_zero() {
        assert_eq!((mbps(1, 0.0), kpps(1, 64, 0.0)), (0.0, 0.0));
        assert_eq!(cpu_of(500_000_000, 500_000_000, 2.0).percent_of_core, 50.0);
        assert_eq!(cpu_of(1, 1, 0.0).percent_of_core, 0.0);
        assert_eq!((share(1, 4), share(1, 0)), (0.25, 0.0));
    }
}
