//! When each probe leaves, pure: times in nanoseconds in, times out.
//!
//! Every peer is probed once per interval by each probe kind, and the
//! probes of one interval are spread evenly over it instead of leaving in
//! one burst: with `n` peers and `m` kinds, kind `j` of peer `k` leaves at
//! `(k * m + j) * interval / (n * m)` into each round. A burst of 2n probes
//! at once would queue behind each other in this host's stack and in
//! every switch on the way and measure that queue, not the path; spread,
//! two probes of this agent are `interval / (n * m)` apart (10 ms with 50
//! peers, two kinds and the default second).
//!
//! A prober that falls behind (a stalled machine, a slow write) skips the
//! rounds it missed and goes on with the next one: the missed probes are
//! not sent late in a burst, which would measure the burst.

/// Where probe kind `kind` (of `kinds`) of peer `peer` (of `peers`) sits
/// in a round of `interval_ns`, as an offset from the round's start.
pub fn offset(peer: usize, peers: usize, kind: usize, kinds: usize, interval_ns: u64) -> u64 {
    let slots = (peers.max(1) * kinds.max(1)) as u128;
    let slot = (peer * kinds.max(1) + kind) as u128;
    (interval_ns as u128 * slot / slots) as u64
}

/// The first time at or after `now` at which a probe with `offset` in
/// rounds of `interval_ns` that started at `epoch` is due. Rounds before
/// `now` are skipped, never made up.
pub fn next_due(epoch: u64, offset: u64, interval_ns: u64, now: u64) -> u64 {
    let interval = interval_ns.max(1);
    let first = epoch.saturating_add(offset);
    if now <= first {
        return first;
    }
    let rounds = (now - first).div_ceil(interval);
    first.saturating_add(rounds.saturating_mul(interval))
}

/// The due time after `due` (the round after the one just sent), or the
/// next one at or after `now` when the prober fell behind by a round or
/// more.
pub fn after(due: u64, interval_ns: u64, now: u64) -> u64 {
    let next = due.saturating_add(interval_ns.max(1));
    if next >= now {
        next
    } else {
        next_due(due, interval_ns, interval_ns, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn probes_are_spread_evenly_over_the_interval() {
        // 4 peers, ping and rr: 8 probes, 125 ms apart, each peer's rr
        // half a slot pair after its ping.
        let mut all: Vec<u64> = Vec::new();
        for peer in 0..4 {
            for kind in 0..2 {
                all.push(offset(peer, 4, kind, 2, S));
            }
        }
        assert_eq!(all, [0, 125, 250, 375, 500, 625, 750, 875].map(|ms| ms * 1_000_000));
        // Every offset inside the interval, whatever the counts.
        for peers in 1..40 {
            for kinds in 1..4 {
                let mut last = None;
                for p in 0..peers {
                    for k in 0..kinds {
                        let o = offset(p, peers, k, kinds, S);
                        assert!(o < S);
                        assert!(last.is_none_or(|l| o > l), "increasing");
                        last = Some(o);
                    }
                }
            }
        }
        assert_eq!(offset(0, 0, 0, 0, S), 0, "no peers: no division by zero");
    }

    #[test]
    fn the_next_due_time_is_never_in_the_past_and_missed_rounds_are_skipped() {
        let (epoch, off) = (10 * S, 300_000_000);
        assert_eq!(next_due(epoch, off, S, 0), epoch + off, "before the first round");
        assert_eq!(next_due(epoch, off, S, epoch + off), epoch + off, "exactly due");
        assert_eq!(next_due(epoch, off, S, epoch + off + 1), epoch + off + S);
        // Behind by 3.5 rounds: the next one, not the 3 missed ones.
        let now = epoch + off + 3 * S + S / 2;
        assert_eq!(next_due(epoch, off, S, now), epoch + off + 4 * S);
        for now in (0..50).map(|i| epoch + i * 77_777_777) {
            let d = next_due(epoch, off, S, now);
            assert!(d >= now && d - now <= S);
            assert_eq!((d - epoch - off) % S, 0, "on the grid");
        }
    }

    #[test]
    fn after_a_probe_the_next_round_or_the_first_one_not_missed() {
        assert_eq!(after(5 * S, S, 5 * S + 10), 6 * S, "on time");
        assert_eq!(after(5 * S, S, 6 * S), 6 * S, "just due");
        assert_eq!(after(5 * S, S, 8 * S + 1), 9 * S, "fell behind: rounds 6 to 8 skipped");
    }
}
