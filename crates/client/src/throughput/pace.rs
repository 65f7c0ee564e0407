//! Pacing for UDP senders: a token bucket with sub-millisecond grain.
//!
//! Datagram `n` is due at `n * period` after the start. The sender asks how
//! many datagrams are due now, sends them, and sleeps until the next one is
//! due. A sender that wakes late sends what accrued meanwhile (a burst as
//! long as its wake-up latency, tens of microseconds), never the 100 ms
//! bursts of iperf3's pacing that make small boards drop (esnet/iperf#296).
//! A sender that cannot keep up at all does not try to catch up more than
//! [`MAX_BURST`] at once: the schedule slips, and the achieved rate shows it.
//!
//! Pure: the caller passes the elapsed time.

use std::time::Duration;

/// Longest backlog sent at once after a late wake-up (or [`MIN_BURST`]
/// datagrams, if that is more: at low rates a wake-up a few milliseconds
/// late must not cost datagrams).
pub const MAX_BURST: Duration = Duration::from_millis(2);
/// Datagrams that may always be sent at once.
pub const MIN_BURST: u64 = 16;

/// A schedule of datagrams at a fixed rate.
#[derive(Clone, Debug)]
pub struct Pacer {
    period_ns: f64,
    /// Datagrams sent (or skipped by a slip) so far.
    issued: u64,
    /// Nanoseconds the schedule has slipped because the sender fell behind.
    pub slipped_ns: u64,
}

impl Pacer {
    /// A schedule of `pps` datagrams per second (`f64::INFINITY`: no pacing).
    pub fn new(pps: f64) -> Pacer {
        Pacer {
            period_ns: if pps.is_finite() && pps > 0.0 { 1e9 / pps } else { 0.0 },
            issued: 0,
            slipped_ns: 0,
        }
    }

    /// How many datagrams to send now, `elapsed_ns` after the start; call
    /// [`Pacer::sent`] with the number actually sent.
    pub fn due(&mut self, elapsed_ns: u64) -> u64 {
        if self.period_ns == 0.0 {
            return 64;
        }
        let t = elapsed_ns.saturating_sub(self.slipped_ns) as f64;
        let should = (t / self.period_ns).floor() as u64 + 1;
        let due = should.saturating_sub(self.issued);
        let burst = ((MAX_BURST.as_nanos() as f64 / self.period_ns).ceil() as u64).max(MIN_BURST);
        if due > burst {
            // Behind by more than a burst: slip the schedule so that only
            // one burst is owed.
            let late = ((due - burst) as f64 * self.period_ns) as u64;
            self.slipped_ns += late;
            return burst;
        }
        due
    }

    /// Records `n` datagrams sent.
    pub fn sent(&mut self, n: u64) {
        self.issued += n;
    }

    /// Nanoseconds from the start until the next datagram is due.
    pub fn next_due_ns(&self) -> u64 {
        (self.issued as f64 * self.period_ns) as u64 + self.slipped_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_rate_without_bursts() {
        // 100k/s: one every 10 us. Waking every 50 us gives 5 at a time.
        let mut p = Pacer::new(100_000.0);
        let mut total = 0;
        let mut largest = 0;
        for step in 0..20_000u64 {
            let n = p.due(step * 50_000);
            p.sent(n);
            total += n;
            largest = largest.max(n);
        }
        // 1 s of schedule: 100,000 due (plus the one at t = 0).
        assert_eq!(total, 100_000 - 5 + 1);
        assert!(largest <= 6, "burst of {largest}");
        assert_eq!(p.slipped_ns, 0);
    }

    #[test]
    fn a_late_sender_slips_instead_of_bursting() {
        let mut p = Pacer::new(1_000_000.0);
        let n = p.due(10_000_000); // 10 ms late: 10,001 owed
        assert_eq!(n, 2000, "at most 2 ms worth at once");
        assert!(p.slipped_ns >= 7_999_000);
        p.sent(n);
        assert!(p.next_due_ns() >= 10_000_000 - 1000);
    }

    #[test]
    fn next_due_is_the_schedule() {
        let mut p = Pacer::new(1000.0);
        assert_eq!(p.due(0), 1);
        p.sent(1);
        assert_eq!(p.next_due_ns(), 1_000_000);
        assert_eq!(p.due(999_999), 0);
        assert_eq!(p.due(1_000_000), 1);
    }
}

#[cfg(test)]
mod slow_rate {
    use super::*;

    #[test]
    fn a_few_ms_late_at_a_low_rate_loses_nothing() {
        let mut p = Pacer::new(1000.0);
        assert_eq!(p.due(0), 1);
        p.sent(1);
        // 5 ms late: 5 more are owed and sent at once, nothing slips.
        assert_eq!(p.due(5_000_000), 5);
        assert_eq!(p.slipped_ns, 0);
    }
}
