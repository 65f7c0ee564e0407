//! Many rows decided together, one pair of blocks at a time: each row
//! keeps its own confidence sequence of ln(B/A) ([`crate::sequential`])
//! and stops on its own; the family's alpha is split evenly over the rows
//! (Bonferroni), which stays valid when each row stops at its own time.
//!
//! A confidence sequence holds for a difference that stays; a difference
//! that lasts half a second (a busy loop sharing one side's CPU for a
//! while) is not one, and a sequence fed only by it can be called before
//! the spell ends. So a row is called only when the difference held over
//! the run ([`Rows::settle`]):
//!
//! 0. **A quarter of the budget.** No call before the pairs span a
//!    quarter of the run's budget (its time, or its pairs): a spell that
//!    starts with the first pair and is shorter than an eighth of the
//!    budget then lies in the first half of the pairs only, where rule 2
//!    sees it. Nothing in the pairs can tell a spell still going on from a
//!    difference, so this one bound is a share of what the user gave, not
//!    a figure of any machine.
//! 1. **Enough independent pairs.** At least [`MIN_PAIRS`] effectively
//!    independent pairs: n >= MIN_PAIRS x tau, tau the integrated
//!    autocorrelation time of the row's pairs as measured (Geyer's initial
//!    positive sequence), and never fewer than 2 x MIN_PAIRS. A spell
//!    makes the pairs autocorrelated, and so asks for more of them.
//! 2. **Both halves agree.** The first and the second half of the row's
//!    pairs, each on its own, lie on the side of the band the call is
//!    on (beyond it for faster or slower, inside it for equivalent). A
//!    spell that came and went moves one half only: the row then says so
//!    (a [`Spell`]: which pairs went that way, the others not) and goes on,
//!    ending inconclusive if the budget runs out first.
//!
//! Both only ever withhold a call the sequence makes, so the sequence's
//! guarantee for a stationary difference stands; what they cost is time to
//! a decision, measured in bench/results (docs/methods.md, "No call from
//! a burst"). A spell that started with the first pair and lasts past
//! both rules cannot be told from a difference by any rule that looks
//! only at the pairs; the suite prints where each side's responder ran so
//! a reader can see a shared CPU.
//!
//! This is the arithmetic of `suite --until decided`, with no notion of
//! what a row is: the caller (the results crate's `Decider`) maps its
//! figures to row indices and its verdicts to words. Pure: no I/O, no
//! clock.

use crate::sequential::{Call, ConfSeq, MIN_PAIRS};
use crate::Direction;

/// Which way a decided row went, B against A.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// B better than A by more than the band.
    Better,
    /// B worse than A by more than the band.
    Worse,
    /// B and A within the band of each other.
    Within,
}

/// A row's decision: the pair it came at, the verdict, and the interval
/// of ln(B/A) then.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reached {
    /// The pair (counted from 1) that decided it.
    pub pair: usize,
    /// Which way.
    pub verdict: Verdict,
    /// The interval of ln(B/A) at that pair.
    pub interval: Option<(f64, f64)>,
}

/// A difference that held over part of a row's pairs only: the run of
/// pairs on one side of its one change point (the largest step in the
/// cumulative sum of ln(B/A)) lies beyond the band and the other within
/// half of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spell {
    /// The pairs (counted from 1, both ends included) beyond the band.
    pub pairs: (usize, usize),
    /// The other pairs, inside it.
    pub not: (usize, usize),
    /// Which way B went over the spell.
    pub verdict: Verdict,
    /// exp(mean ln(B/A)) over the spell.
    pub ratio: f64,
}

/// One row as it stands.
#[derive(Clone, Debug, PartialEq)]
pub struct RowState {
    /// Pairs it was judged on.
    pub pairs: usize,
    /// exp(mean ln(B/A)).
    pub ratio: f64,
    /// The interval of B/A: at its decision, or now at the row's alpha.
    pub interval: Option<(f64, f64)>,
    /// Median of A's values, and of B's.
    pub median_a: f64,
    /// See `median_a`.
    pub median_b: f64,
    /// Lag-1 autocorrelation of its pairs (bias-corrected).
    pub serial: f64,
    /// Its decision, if it has one.
    pub reached: Option<Reached>,
    /// When the row is not decided faster or slower: a spell of difference
    /// in its pairs, if there was one.
    pub spell: Option<Spell>,
}

struct Row {
    direction: Direction,
    seq: ConfSeq,
    a: Vec<f64>,
    b: Vec<f64>,
    /// ln(B/A) of each pair, in order.
    x: Vec<f64>,
    reached: Option<Reached>,
}

/// Rule 0's bound: the pairs or the time a call waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Floor {
    /// This many pairs of the row.
    Pairs(usize),
    /// This many milliseconds from the start of the first pair.
    Millis(u64),
}

/// Rows decided pair by pair at family level `alpha` against a band of
/// +/-`tolerance` (a fraction) around no change.
pub struct Rows {
    alpha: f64,
    band: f64,
    /// The rules that a call held over the run, from this floor; none:
    /// the sequence alone (how runs stored before the rules were decided).
    hold: Option<Floor>,
    rows: Vec<Row>,
    /// Rows after the first pair: what alpha is split over.
    split: usize,
}

impl Rows {
    /// No rows yet; `hold`: the rules that a call held over the run, with
    /// rule 0's floor (none: the sequence alone).
    pub fn new(alpha: f64, tolerance: f64, hold: Option<Floor>) -> Rows {
        Rows {
            alpha,
            band: (1.0 + tolerance).ln(),
            hold,
            rows: Vec::new(),
            split: 0,
        }
    }

    /// A new row whose values are better `direction`; its index.
    pub fn add(&mut self, direction: Direction) -> usize {
        self.rows.push(Row {
            direction,
            seq: ConfSeq::new(),
            a: Vec::new(),
            b: Vec::new(),
            x: Vec::new(),
            reached: None,
        });
        self.rows.len() - 1
    }

    /// Row `i`'s values of one pair: its ln(B/A) when the row takes it
    /// (undecided, and the ratio finite), else none.
    pub fn observe(&mut self, i: usize, a: f64, b: f64) -> Option<f64> {
        let r = &mut self.rows[i];
        let x = (b / a).ln();
        if r.reached.is_some() || !x.is_finite() {
            return None;
        }
        r.seq.push(x);
        r.a.push(a);
        r.b.push(b);
        r.x.push(x);
        Some(x)
    }

    /// After the first pair: the rows known then are what alpha is split
    /// over (a row seen later takes the same share).
    pub fn fix_split(&mut self) {
        self.split = self.rows.len();
    }

    /// Each row's alpha: the family's split evenly over the rows.
    pub fn row_alpha(&self) -> f64 {
        self.alpha / self.split.max(self.rows.len()).max(1) as f64
    }

    /// The rows the split is over (at least one).
    pub fn family(&self) -> usize {
        self.split.max(self.rows.len()).max(1)
    }

    /// Judges `rows` after pair `pair`, which ended `at_ms` after the first
    /// pair began (none: not known): the ones that are decided now. A row
    /// is decided when its sequence makes a call and, under the rules, the
    /// call held over the run (the module's rules 0 to 2).
    pub fn settle(&mut self, pair: usize, at_ms: Option<u64>, rows: &[usize]) -> Vec<usize> {
        let (alpha, band, hold) = (self.row_alpha(), self.band, self.hold);
        let mut decided = Vec::new();
        for &i in rows {
            let r = &mut self.rows[i];
            if r.reached.is_some() {
                continue;
            }
            let call = r.seq.call(alpha, band);
            if call == Call::Open {
                continue;
            }
            let verdict = verdict(call, r.direction);
            if let Some(floor) = hold {
                let spanned = match floor {
                    Floor::Pairs(n) => r.x.len() >= n,
                    Floor::Millis(ms) => at_ms.is_none_or(|t| t >= ms),
                };
                if !spanned || r.x.len() < min_pairs(&r.x) {
                    continue;
                }
                if !halves_agree(&r.x, call, band) {
                    continue;
                }
            }
            r.reached = Some(Reached {
                pair,
                verdict,
                interval: r.seq.interval(alpha),
            });
            decided.push(i);
        }
        decided
    }

    /// Whether row `i` is decided.
    pub fn is_decided(&self, i: usize) -> bool {
        self.rows[i].reached.is_some()
    }

    /// Row `i` as it stands.
    pub fn state(&self, i: usize) -> RowState {
        let r = &self.rows[i];
        let interval = match r.reached {
            Some(d) => d.interval,
            None => r.seq.interval(self.row_alpha()),
        };
        RowState {
            pairs: r.seq.len(),
            ratio: r.seq.mean().exp(),
            interval: interval.map(|(lo, hi)| (lo.exp(), hi.exp())),
            median_a: crate::median(&r.a).unwrap_or(f64::NAN),
            median_b: crate::median(&r.b).unwrap_or(f64::NAN),
            serial: r.seq.serial(),
            reached: r.reached,
            spell: match r.reached.map(|d| d.verdict) {
                Some(Verdict::Better | Verdict::Worse) => None,
                Some(Verdict::Within) | None => spell(&r.x, self.band, r.direction),
            },
        }
    }

    /// Rows so far.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there is no row yet.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// Which way a call goes for a figure better `direction`.
fn verdict(call: Call, direction: Direction) -> Verdict {
    match (call, direction) {
        (Call::Within | Call::Open, _) => Verdict::Within,
        (Call::Lower, Direction::LowerIsBetter) | (Call::Higher, Direction::HigherIsBetter) => Verdict::Better,
        (Call::Lower, Direction::HigherIsBetter) | (Call::Higher, Direction::LowerIsBetter) => Verdict::Worse,
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
    let mean = x.iter().sum::<f64>() / n as f64;
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

/// Rule 2: whether each half of `x`, on its own, lies on the side of the
/// band that `call` is on.
fn halves_agree(x: &[f64], call: Call, band: f64) -> bool {
    let h = x.len() / 2;
    let holds = |m: f64| match call {
        Call::Higher => m > band,
        Call::Lower => m < -band,
        Call::Within => m.abs() < band,
        Call::Open => false,
    };
    holds(mean(&x[..h])) && holds(mean(&x[h..]))
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len().max(1) as f64
}

/// The spell in `x`, if there is one: split at its one change point (the
/// largest distance of the cumulative sum from its straight line, as a
/// CUSUM finds it), one side's mean beyond the band and the other's
/// within half of it, each side at least [`MIN_PAIRS`] / 2 pairs.
fn spell(x: &[f64], band: f64, direction: Direction) -> Option<Spell> {
    let n = x.len();
    let least = MIN_PAIRS / 2;
    if n < 2 * least {
        return None;
    }
    let total: f64 = x.iter().sum();
    let (mut sum, mut best, mut at) = (0.0, 0.0, 0);
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
        verdict: verdict(call, direction),
        ratio: m.exp(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row 10% slower every pair is called worse once the minimum of
    /// pairs is in, and a row of no change within the band later; a row
    /// that went one way takes no more pairs.
    #[test]
    fn rows_stop_on_their_own() {
        let mut rows = Rows::new(0.05, 0.02, Some(Floor::Pairs(1)));
        let slow = rows.add(Direction::LowerIsBetter);
        let same = rows.add(Direction::LowerIsBetter);
        let mut at = [None, None];
        for pair in 1..=400 {
            let wobble = if pair % 2 == 0 { 1.001 } else { 0.999 };
            rows.observe(slow, 100.0, 110.0 * wobble);
            rows.observe(same, 100.0, 100.0 * wobble);
            if pair == 1 {
                rows.fix_split();
            }
            for i in rows.settle(pair, None, &[slow, same]) {
                at[i] = Some(pair);
            }
        }
        let s = rows.state(slow);
        assert_eq!(s.reached.map(|r| r.verdict), Some(Verdict::Worse));
        assert_eq!(at[slow], Some(2 * MIN_PAIRS), "uncorrelated pairs: the floor");
        assert_eq!(s.pairs, 2 * MIN_PAIRS);
        assert!((s.ratio - 1.10).abs() < 0.01, "{}", s.ratio);
        assert_eq!(rows.state(same).reached.map(|r| r.verdict), Some(Verdict::Within));
        assert!(at[same].unwrap() > at[slow].unwrap());
        assert_eq!(rows.observe(slow, 1.0, 2.0), None);
        assert!((rows.row_alpha() - 0.025).abs() < 1e-12);
    }

    /// Row `r` of B 40% slower over pairs `spell`, A and B alike
    /// otherwise, 40 ms a pair, decided under `hold`: the verdict, and the
    /// spell the rules named.
    fn spell_run(spell: std::ops::RangeInclusive<usize>, hold: Option<Floor>) -> (Option<Verdict>, Option<Spell>) {
        let mut rng = crate::rng::Rng::new(7);
        let mut rows = Rows::new(0.05, 0.05, hold);
        let r = rows.add(Direction::LowerIsBetter);
        for pair in 1..=500 {
            let noise = 1.0 + 0.02 * (rng.unit() - 0.5);
            let b = if spell.contains(&pair) { 140.0 } else { 100.0 } * noise;
            rows.observe(r, 100.0, b);
            if pair == 1 {
                rows.fix_split();
            }
            if !rows.settle(pair, Some(pair as u64 * 40), &[r]).is_empty() {
                break;
            }
        }
        let s = rows.state(r);
        (s.reached.map(|d| d.verdict), s.spell)
    }

    /// A spell at the start shorter than an eighth of the budget (20 s:
    /// 2.5 s, here 1.2 s), and one in the middle of the run: the sequence
    /// alone calls the first B slower; the rules hold the call and name the spell,
    /// and the row is never called slower (equivalent, or still open when
    /// the spell's weight keeps its interval wide).
    #[test]
    fn a_spell_that_ends_is_not_called() {
        let budget = Some(Floor::Millis(5_000));
        assert_eq!(spell_run(1..=30, None).0, Some(Verdict::Worse), "the hazard is real");
        let (verdict, spell) = spell_run(1..=30, budget);
        assert_ne!(verdict, Some(Verdict::Worse));
        let spell = spell.expect("the spell is named");
        assert_eq!((spell.verdict, spell.pairs.0), (Verdict::Worse, 1), "{spell:?}");
        let (verdict, spell) = spell_run(60..=100, budget);
        assert_ne!(verdict, Some(Verdict::Worse));
        assert!(spell.is_some());
        // A difference that stays is still called, after the floor.
        let (verdict, _) = spell_run(1..=500, budget);
        assert_eq!(verdict, Some(Verdict::Worse));
    }

    /// The autocorrelation time is about 1 for independent pairs and
    /// about (1 + phi) / (1 - phi) for an AR(1) series, and grows the
    /// pairs a call needs.
    #[test]
    fn autocorrelation_time_follows_the_series() {
        let mut rng = crate::rng::Rng::new(3);
        let iid: Vec<f64> = (0..4000).map(|_| rng.unit()).collect();
        let t = autocorrelation_time(&iid);
        assert!((0.8..1.3).contains(&t), "{t}");
        let phi = 0.8;
        let mut y = 0.0;
        let ar: Vec<f64> = (0..20000)
            .map(|_| {
                y = phi * y + rng.unit() - 0.5;
                y
            })
            .collect();
        let t = autocorrelation_time(&ar);
        assert!((7.0..11.0).contains(&t), "AR(1) 0.8: 9 expected, {t}");
        assert!(min_pairs(&ar) > 60);
        assert_eq!(min_pairs(&iid), 2 * MIN_PAIRS);
    }
}
