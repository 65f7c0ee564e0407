//! Receive-side counters of one UDP stream: loss, duplicates, reordering
//! and RFC 3550 jitter, from sequence numbers and times given by the caller.
//!
//! The responder keeps one [`UdpRx`] per stream of a test and feeds it every
//! stream data datagram with its arrival time. Pure: the caller reads the
//! clock. Loss is counted from what arrived, never from what a sender says it
//! sent (docs/methods.md, "UDP rates and loss"): `expected` is the highest
//! sequence number seen plus one, so datagrams lost after the last one that
//! arrived are not visible here; the client adds them from its own sent
//! count.
//!
//! Duplicates are detected within a window of [`WINDOW`] sequence numbers
//! below the highest seen; an older datagram is counted as received and
//! reordered (it cannot be told from a duplicate), which the docs state.

/// How far below the highest sequence number duplicates are still detected.
pub const WINDOW: u64 = crate::limits::DUP_WINDOW;
const WORDS: usize = (WINDOW / 64) as usize;
/// Counters ahead of the window in [`UdpRx::to_words`].
const SCALARS: usize = 8;
/// Length of a [`UdpRx`] as flat words ([`UdpRx::to_words`]).
pub const STATE_WORDS: usize = SCALARS + WORDS;

/// Counters of one UDP stream as seen by its receiver.
#[derive(Clone, Debug, Default)]
pub struct UdpRx {
    /// Datagrams received, duplicates excluded.
    pub received: u64,
    /// Bytes of those datagrams (whole UDP payloads).
    pub bytes: u64,
    /// Highest sequence number seen plus one (0 before the first datagram).
    pub expected: u64,
    /// Datagrams received twice (within the window).
    pub duplicates: u64,
    /// Datagrams that arrived after one with a higher sequence number.
    pub reordered: u64,
    /// Jitter times 16, in ns (RFC 3550 A.8 keeps it scaled to avoid
    /// rounding); read it with [`UdpRx::jitter_ns`].
    jitter16: u64,
    /// Transit time (arrival minus sender stamp) of the previous datagram.
    last_transit: Option<i64>,
    /// Bit `s % WINDOW` is set when sequence `s` (within the window) arrived.
    seen: [u64; WORDS],
}

impl UdpRx {
    /// Counts a datagram of `len` bytes with sequence `seq`, stamped
    /// `sent_ns` by the sender and received at `arrival_ns` (two different
    /// clocks: only differences of their difference are used).
    pub fn record(&mut self, seq: u64, len: usize, sent_ns: u64, arrival_ns: u64) {
        if seq >= self.expected {
            // A peer may send any sequence number: u64::MAX must not wrap.
            self.advance_to(seq);
            self.expected = seq.saturating_add(1);
        } else if self.expected - seq <= WINDOW {
            if self.is_seen(seq) {
                self.duplicates += 1;
                return;
            }
            self.reordered += 1;
        } else {
            self.reordered += 1;
        }
        self.mark(seq);
        self.received += 1;
        self.bytes += len as u64;
        let transit = arrival_ns.wrapping_sub(sent_ns) as i64;
        if let Some(last) = self.last_transit {
            let d = transit.wrapping_sub(last).unsigned_abs();
            // J += (|D| - J) / 16, with J kept times 16 (saturating: the
            // timestamps come from the network).
            self.jitter16 = self.jitter16.saturating_add(d) - (self.jitter16.saturating_add(8) >> 4);
        }
        self.last_transit = Some(transit);
    }

    /// The current RFC 3550 jitter estimate in ns.
    pub fn jitter_ns(&self) -> u64 {
        self.jitter16 >> 4
    }

    /// Datagrams missing: expected but not received.
    pub fn lost(&self) -> u64 {
        self.expected.saturating_sub(self.received)
    }

    /// The whole state as flat words, for a store that cannot hold the
    /// struct itself (the machine's registry keeps streams in atomics, which
    /// several threads share without a lock).
    pub fn to_words(&self) -> [u64; STATE_WORDS] {
        let mut w = [0u64; STATE_WORDS];
        w[..SCALARS].copy_from_slice(&[
            self.received,
            self.bytes,
            self.expected,
            self.duplicates,
            self.reordered,
            self.jitter16,
            self.last_transit.is_some() as u64,
            self.last_transit.unwrap_or(0) as u64,
        ]);
        w[SCALARS..].copy_from_slice(&self.seen);
        w
    }

    /// The state [`UdpRx::to_words`] wrote.
    pub fn from_words(w: &[u64; STATE_WORDS]) -> UdpRx {
        let mut seen = [0u64; WORDS];
        seen.copy_from_slice(&w[SCALARS..]);
        UdpRx {
            received: w[0],
            bytes: w[1],
            expected: w[2],
            duplicates: w[3],
            reordered: w[4],
            jitter16: w[5],
            last_transit: (w[6] != 0).then_some(w[7] as i64),
            seen,
        }
    }

    /// Clears the window bits for the sequence numbers between the old
    /// highest and `seq`, which become part of the window now.
    fn advance_to(&mut self, seq: u64) {
        let gap = seq.saturating_add(1) - self.expected;
        if gap >= WINDOW {
            self.seen = [0; WORDS];
        } else {
            for s in self.expected..=seq {
                self.seen[((s % WINDOW) / 64) as usize] &= !(1u64 << (s % 64));
            }
        }
    }

    fn is_seen(&self, seq: u64) -> bool {
        self.seen[((seq % WINDOW) / 64) as usize] & (1u64 << (seq % 64)) != 0
    }

    fn mark(&mut self, seq: u64) {
        self.seen[((seq % WINDOW) / 64) as usize] |= 1u64 << (seq % 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_stream_has_no_loss() {
        let mut r = UdpRx::default();
        for s in 0..5000 {
            r.record(s, 64, s * 1000, s * 1000 + 50);
        }
        assert_eq!(
            (r.received, r.expected, r.lost(), r.duplicates, r.reordered),
            (5000, 5000, 0, 0, 0)
        );
        assert_eq!(r.jitter_ns(), 0, "constant transit time has no jitter");
        assert_eq!(r.bytes, 5000 * 64);
    }

    #[test]
    fn gaps_duplicates_and_reordering_are_told_apart() {
        let mut r = UdpRx::default();
        for s in [0, 1, 3, 2, 2, 5, 5, 9] {
            r.record(s, 10, 0, 0);
        }
        // 4, 6, 7, 8 never arrived; 2 came late; 2 and 5 came twice.
        assert_eq!(r.expected, 10);
        assert_eq!(r.received, 6);
        assert_eq!(r.lost(), 4);
        assert_eq!(r.duplicates, 2);
        assert_eq!(r.reordered, 1);
    }

    #[test]
    fn window_reuse_does_not_call_new_datagrams_duplicates() {
        let mut r = UdpRx::default();
        for s in 0..3 * WINDOW {
            r.record(s, 1, 0, 0);
        }
        r.record(10 * WINDOW, 1, 0, 0);
        r.record(10 * WINDOW - 5, 1, 0, 0);
        assert_eq!(r.duplicates, 0);
        assert_eq!(r.received, 3 * WINDOW + 2);
        // Far older than the window: counted as a late arrival.
        r.record(7, 1, 0, 0);
        assert_eq!(r.reordered, 2);
    }

    #[test]
    fn hostile_sequence_numbers_and_stamps_do_not_overflow() {
        let mut r = UdpRx::default();
        r.record(u64::MAX, 1, 0, u64::MAX);
        r.record(u64::MAX, 1, u64::MAX, 0);
        r.record(0, 1, 0, u64::MAX / 2);
        assert_eq!(r.expected, u64::MAX);
        assert_eq!(r.received, 3);
    }

    #[test]
    fn words_round_trip() {
        let mut r = UdpRx::default();
        for s in [0, 5, 3, 3, 2000] {
            r.record(s, 9, s * 7, s * 11);
        }
        let mut back = UdpRx::from_words(&r.to_words());
        assert_eq!(back.to_words(), r.to_words());
        back.record(2001, 9, 0, 0);
        r.record(2001, 9, 0, 0);
        assert_eq!((back.received, back.jitter_ns()), (r.received, r.jitter_ns()));
    }

    #[test]
    fn jitter_follows_rfc3550() {
        let mut r = UdpRx::default();
        // Transit alternates 100 and 300 ns: |D| = 200 each time, so J
        // converges to 200.
        for s in 0..2000u64 {
            let transit = if s % 2 == 0 { 100 } else { 300 };
            r.record(s, 1, s * 10_000, s * 10_000 + transit);
        }
        assert!((195..=200).contains(&r.jitter_ns()), "jitter {}", r.jitter_ns());
    }
}
