//! The rules that a call held over the run (rules 1 and 2 of
//! [`crate::decide`], and the medians' agreement), and the spell a row
//! names when a difference came and went: functions of a row's pairs
//! alone.

use super::outcome::{Decided, Spell};
use crate::sequential::{Call, MIN_PAIRS};
use crate::Direction;

/// Which way a call goes for a figure better `direction` (an open call is
/// no decision: within, for the spell's side only).
pub(super) fn decided(call: Call, direction: Direction) -> Decided {
    match (call, direction) {
        (Call::Within | Call::Open, _) => Decided::Equivalent,
        (Call::Lower, Direction::LowerIsBetter) | (Call::Higher, Direction::HigherIsBetter) => Decided::Faster,
        (Call::Lower, Direction::HigherIsBetter) | (Call::Higher, Direction::LowerIsBetter) => Decided::Slower,
    }
}

/// Rule 1: the pairs a call needs, from the pairs' own autocorrelation:
/// [`MIN_PAIRS`] effectively independent ones, and at least twice
/// [`MIN_PAIRS`].
pub fn min_pairs(x: &[f64]) -> usize {
    let tau = autocorrelation_time(x);
    ((MIN_PAIRS as f64 * tau).ceil() as usize).max(2 * MIN_PAIRS)
}

/// The integrated autocorrelation time of `x`, in pairs: 1 + 2 times the
/// sum of its autocorrelations, summed while successive pairs of them
/// stay positive (Geyer's initial positive sequence, 1992); 1 for
/// uncorrelated pairs, and 1 when there are too few to say.
pub fn autocorrelation_time(x: &[f64]) -> f64 {
    let n = x.len();
    if n < 4 {
        return 1.0;
    }
    let mean = mean(x);
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
    if var <= 0.0 {
        return 1.0;
    }
    let rho =
        |k: usize| -> f64 { (0..n - k).map(|t| (x[t] - mean) * (x[t + k] - mean)).sum::<f64>() / (n as f64 * var) };
    let mut sum = 0.0;
    let mut m = 0;
    // Pairs (rho(2m+1) + rho(2m+2)) while positive, up to lag n/2.
    while 2 * m + 2 <= n / 2 {
        let g = rho(2 * m + 1) + rho(2 * m + 2);
        if g <= 0.0 {
            break;
        }
        sum += g;
        m += 1;
    }
    (1.0 + 2.0 * sum).max(1.0)
}

/// `x` with its wild values pulled in to three robust standard deviations
/// of its median (the MAD's), so that one burst's pairs weigh in the
/// rules as pairs beyond that spread, not as their whole size; unchanged
/// when the pairs have no spread.
pub(super) fn tamed(x: &[f64]) -> Vec<f64> {
    let Some(s) = crate::mad(x) else {
        return x.to_vec();
    };
    let (m, k) = (s.median, 3.0 * crate::MAD_TO_SD * s.mad);
    if k <= 0.0 {
        return x.to_vec();
    }
    x.iter().map(|v| v.clamp(m - k, m + k)).collect()
}

/// Rule 2: whether each half of `x`, on its own, lies on the side of the
/// band that `call` is on, by the figure `of` (the mean or the median of
/// the half).
pub(super) fn halves_agree(x: &[f64], call: Call, band: f64, of: fn(&[f64]) -> f64) -> bool {
    let h = x.len() / 2;
    let holds = |m: f64| match call {
        Call::Higher => m > band,
        Call::Lower => m < -band,
        Call::Within => m.abs() < band,
        Call::Open => false,
    };
    holds(of(&x[..h])) && holds(of(&x[h..]))
}

/// Whether the medians of A's and B's values do not contradict `call`:
/// for a call beyond the band, their ratio lies beyond half of it on the
/// same side; for a call within it, inside it. A call about the typical
/// pair that the two targets' typical blocks deny is a call about a few
/// blocks.
pub(super) fn medians_agree(median_a: f64, median_b: f64, call: Call, band: f64) -> bool {
    let m = (median_b / median_a).ln();
    match call {
        Call::Higher => m > band / 2.0,
        Call::Lower => m < -band / 2.0,
        Call::Within => m.abs() < band,
        Call::Open => false,
    }
}

/// The mean of `x` (0 for none).
pub(super) fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len().max(1) as f64
}

/// The median of `x` (0 for none).
pub(super) fn median(x: &[f64]) -> f64 {
    crate::median(x).unwrap_or(0.0)
}

/// The spell in `x`, if there is one: split at its one change point (the
/// largest distance of the cumulative sum from its straight line, as a
/// CUSUM finds it), one side's mean beyond the band and the other's
/// within half of it, each side at least [`MIN_PAIRS`] / 2 pairs.
pub(super) fn spell(x: &[f64], band: f64, direction: Direction) -> Option<Spell> {
    let n = x.len();
    let least = MIN_PAIRS / 2;
    if n < 2 * least {
        return None;
    }
    let total: f64 = x.iter().sum();
    // The cumulative sum up to each candidate split, from the first pair.
    let (mut sum, mut best, mut at) = (x[..least - 1].iter().sum::<f64>(), 0.0, 0);
    for (k, v) in x.iter().enumerate().take(n - least).skip(least - 1) {
        sum += v;
        let d = (sum - total * (k + 1) as f64 / n as f64).abs();
        if d > best {
            (best, at) = (d, k + 1);
        }
    }
    if at == 0 {
        return None;
    }
    let (m1, m2) = (mean(&x[..at]), mean(&x[at..]));
    let (head, tail) = ((1, at), (at + 1, n));
    // One side beyond the band, the other nearer no change than the band's
    // edge: a difference that came and went, not one near the edge.
    let (pairs, not, m) = match (m1.abs() > band, m2.abs() > band) {
        (true, false) if m2.abs() < band / 2.0 => (head, tail, m1),
        (false, true) if m1.abs() < band / 2.0 => (tail, head, m2),
        _ => return None,
    };
    let call = if m > 0.0 { Call::Higher } else { Call::Lower };
    Some(Spell {
        pairs,
        not,
        verdict: decided(call, direction),
        ratio: m.exp(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spell over the first 10 of 40 pairs is split at pair 10 exactly
    /// (the cumulative sum counts every pair from the first).
    #[test]
    fn a_spell_is_split_where_it_ends() {
        let x: Vec<f64> = (0..40)
            .map(|i| if i < 10 { 0.3 } else { 0.001 * (i % 3) as f64 })
            .collect();
        let s = spell(&x, 0.05, Direction::LowerIsBetter).expect("a spell");
        assert_eq!((s.pairs, s.not), ((1, 10), (11, 40)));
        assert_eq!(s.verdict, Decided::Slower);
    }
}
