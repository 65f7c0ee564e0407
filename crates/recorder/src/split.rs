//! Splitting each round trip into stack time and application time, from
//! the kernel and application timestamps of both ends (docs/tests.md,
//! "Timestamps").
//!
//! With `c_*` on the client's clock and `r_*` on the responder's, the five
//! parts of one exchange are
//!
//! ```text
//! client_send_stack = c_tx_kernel - c_app_send
//! out_path          = r_app_rx    - c_tx_kernel   (wire + responder stack in)
//! responder_app     = r_app_tx    - r_app_rx
//! back_path         = c_rx_kernel - r_app_tx      (responder stack out + wire)
//! client_recv_stack = c_app_rx    - c_rx_kernel
//! ```
//!
//! and they add up to `c_app_rx - c_app_send`, the round trip. `out_path`
//! and `back_path` compare the two clocks: with an `offset` (responder
//! clock minus client clock) they are corrected by it; [`estimate_offset`]
//! finds one when the clocks are not shared. Pure: stamps in, recorders out.

use crate::Recorder;

/// The stamps of one exchange, nanoseconds (`c_*` on the client's clock,
/// `r_*` on the responder's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exchange {
    /// The client's clock right before its send call.
    pub c_app_send: u64,
    /// The client kernel's send stamp of the request (its last byte).
    pub c_tx_kernel: u64,
    /// The responder's clock right after it read the request.
    pub r_app_rx: u64,
    /// The responder's clock right before it sent the reply.
    pub r_app_tx: u64,
    /// The client kernel's receive stamp of the reply (its last byte).
    pub c_rx_kernel: u64,
    /// The client's clock right after the reply was received.
    pub c_app_rx: u64,
}

/// The five parts of one round trip, ns; any may be negative when the
/// stamps disagree (a clock offset estimated wrongly, stamps paired with
/// the wrong exchange).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Parts {
    /// Client send call to its kernel's send stamp.
    pub client_send_stack: i64,
    /// Client kernel send stamp to the responder's application receive.
    pub out_path: i64,
    /// The responder's application: its receive to its send.
    pub responder_app: i64,
    /// The responder's send to the client kernel's receive stamp.
    pub back_path: i64,
    /// Client kernel receive stamp to the client's application receive.
    pub client_recv_stack: i64,
}

impl Parts {
    /// The parts in order.
    pub fn all(&self) -> [i64; 5] {
        [
            self.client_send_stack,
            self.out_path,
            self.responder_app,
            self.back_path,
            self.client_recv_stack,
        ]
    }

    /// Their sum: the round trip they split.
    pub fn sum(&self) -> i64 {
        self.all().iter().sum()
    }
}

fn diff(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

impl Exchange {
    /// The five parts, with `offset` = responder clock minus client clock
    /// (0 when both ends read one clock).
    pub fn parts(&self, offset: i64) -> Parts {
        Parts {
            client_send_stack: diff(self.c_tx_kernel, self.c_app_send),
            out_path: diff(self.r_app_rx, self.c_tx_kernel) - offset,
            responder_app: diff(self.r_app_tx, self.r_app_rx),
            back_path: diff(self.c_rx_kernel, self.r_app_tx) + offset,
            client_recv_stack: diff(self.c_app_rx, self.c_rx_kernel),
        }
    }

    /// Kernel send to kernel receive on the client, minus the responder's
    /// own time: what the two paths take together, whatever the offset.
    pub fn paths(&self) -> i64 {
        diff(self.c_rx_kernel, self.c_tx_kernel) - diff(self.r_app_tx, self.r_app_rx)
    }
}

/// A clock offset estimated from the stamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offset {
    /// Responder clock minus client clock, ns.
    pub ns: i64,
    /// The true offset lies within this many ns of `ns`: half the two
    /// paths' time on the exchange it came from (a path cannot take less
    /// than nothing).
    pub bound_ns: u64,
}

/// NTP-style offset: on the exchange whose paths took least (the least
/// queueing, so the most symmetric), the offset that makes the way out and
/// the way back equal. `None` without exchanges.
pub fn estimate_offset<'a>(exchanges: impl IntoIterator<Item = &'a Exchange>) -> Option<Offset> {
    // The same rule as one-way delay (owd.rs), on the stamps around the
    // two paths: the client kernel's and the responder application's.
    let outside: Vec<crate::owd::Stamps> = exchanges
        .into_iter()
        .map(|s| crate::owd::Stamps {
            c_tx: s.c_tx_kernel,
            s_rx: s.r_app_rx,
            s_tx: s.r_app_tx,
            c_rx: s.c_rx_kernel,
        })
        .collect();
    let o = crate::owd::offset(&outside)?;
    Some(Offset {
        ns: o.offset_ns.round() as i64,
        bound_ns: o.bound_ns as u64,
    })
}

/// Largest share of a round trip by which the parts' sum may miss the
/// measured round trip before the sample counts as unbalanced.
pub const TOLERANCE: f64 = 0.01;

/// The distributions of the five parts over many exchanges, with the
/// responder's own stack times and its application's share of each round
/// trip, and the counts that say whether every sample held together.
#[derive(Clone, Debug, Default)]
pub struct Split {
    /// One recorder per part, in [`Parts::all`] order (ns; a negative part
    /// is recorded as 0 and counted in `negative`).
    pub parts: [Recorder; 5],
    /// The responder's kernel receive stamp to its application receive.
    pub responder_stack_in: Recorder,
    /// The responder's application send to its kernel's send stamp.
    pub responder_stack_out: Recorder,
    /// responder_app / round trip, in parts per million.
    pub responder_share_ppm: Recorder,
    /// Exchanges split.
    pub samples: u64,
    /// Exchanges with at least one negative part.
    pub negative: u64,
    /// Exchanges whose parts missed their measured round trip by more than
    /// [`TOLERANCE`].
    pub unbalanced: u64,
}

impl Split {
    /// An empty split.
    pub fn new() -> Split {
        Split::default()
    }

    /// Adds one exchange whose round trip, as the client's timer measured
    /// it, was `rtt_ns`.
    pub fn add(&mut self, s: &Exchange, offset: i64, rtt_ns: u64) {
        let p = s.parts(offset);
        self.samples += 1;
        if p.all().iter().any(|&v| v < 0) {
            self.negative += 1;
        }
        if (p.sum() - rtt_ns as i64).unsigned_abs() as f64 > TOLERANCE * rtt_ns as f64 {
            self.unbalanced += 1;
        }
        for (r, v) in self.parts.iter_mut().zip(p.all()) {
            r.record(v.max(0) as u64);
        }
        if rtt_ns > 0 {
            let share = p.responder_app.max(0) as u128 * 1_000_000 / rtt_ns as u128;
            self.responder_share_ppm.record(share as u64);
        }
    }

    /// Adds the responder's own stack times of one exchange, when it sent
    /// its kernel stamps (each on the responder's clock only).
    pub fn add_responder_stacks(&mut self, stack_in: Option<i64>, stack_out: Option<i64>) {
        if let Some(v) = stack_in {
            self.responder_stack_in.record(v.max(0) as u64);
        }
        if let Some(v) = stack_out {
            self.responder_stack_out.record(v.max(0) as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(c0: u64, ctx: u64, rrx: u64, rtx: u64, crx: u64, c1: u64) -> Exchange {
        Exchange {
            c_app_send: c0,
            c_tx_kernel: ctx,
            r_app_rx: rrx,
            r_app_tx: rtx,
            c_rx_kernel: crx,
            c_app_rx: c1,
        }
    }

    #[test]
    fn parts_add_up_to_the_round_trip_whatever_the_offset() {
        let s = ex(1000, 1400, 3000, 3500, 5200, 5600);
        let p = s.parts(0);
        assert_eq!(p.all(), [400, 1600, 500, 1700, 400]);
        assert_eq!(p.sum(), 4600);
        let q = s.parts(1_000_000);
        assert_eq!(q.sum(), 4600);
        assert_eq!((q.out_path, q.back_path), (1600 - 1_000_000, 1700 + 1_000_000));
    }

    #[test]
    fn offset_makes_the_fastest_exchange_symmetric() {
        // The responder's clock is 10 ms ahead; wire 1000 each way on the
        // fastest exchange, 3000 out on a slow one.
        let off = 10_000_000u64;
        let fast = ex(0, 100, 1100 + off, 1300 + off, 2300, 2400);
        let slow = ex(5000, 5100, 8100 + off, 8300 + off, 9300, 9400);
        let o = estimate_offset([&slow, &fast]).unwrap();
        assert_eq!(
            o,
            Offset {
                ns: off as i64,
                bound_ns: 1000
            }
        );
        assert_eq!(fast.parts(o.ns).all(), [100, 1000, 200, 1000, 100]);
        assert_eq!(slow.parts(o.ns).out_path, 3000);
        assert_eq!(estimate_offset([]), None);
    }

    #[test]
    fn split_counts_negative_and_unbalanced_samples() {
        let mut sp = Split::new();
        let s = ex(1000, 1400, 3000, 3500, 5200, 5600);
        sp.add(&s, 0, 4600);
        sp.add(&s, 0, 4630); // within 1%
        sp.add(&s, 0, 5000); // the stamps do not add up to this
        sp.add(&s, 2000, 4600); // out_path negative
        assert_eq!((sp.samples, sp.negative, sp.unbalanced), (4, 1, 1));
        assert_eq!(sp.parts[1].min(), Some(0));
        assert_eq!(sp.parts[2].max(), Some(500));
        // 500 of the 5000 round trip: the smallest share.
        assert_eq!(sp.responder_share_ppm.min(), Some(100_000));
        sp.add_responder_stacks(Some(300), None);
        assert_eq!((sp.responder_stack_in.count(), sp.responder_stack_out.count()), (1, 0));
    }
}
