//! Many rows decided together, one pair of blocks at a time: each row
//! keeps its own confidence sequence of its pairs' ln(B/A) and stops on
//! its own; the family's alpha is split evenly over the rows
//! (Bonferroni), which stays valid when each row stops at its own time.
//! Everything a run is decided by is in its [`Settings`] (this folder's
//! `settings.rs`), stored with the run so it replays as it was decided.
//!
//! **What a row decides on** ([`Effect`]): the median of its pairs'
//! log-ratios, the typical pair, with a confidence sequence that needs no
//! variance and that a few wild blocks cannot move
//! ([`crate::median_seq`]); runs stored before it decided on the mean
//! ([`crate::sequential`]), and replay so.
//!
//! A confidence sequence holds for a difference that stays; a difference
//! that lasts half a second (a busy loop sharing one side's CPU for a
//! while) is not one, and a sequence fed only by it can be called before
//! the spell ends. So a row is called only when the difference held over
//! the run ([`Rows::settle`]; the rules are `rules.rs`):
//!
//! 0. **A quarter of the budget.** No call before the pairs span a
//!    quarter of the run's budget (its time, or its pairs): a spell that
//!    starts with the first pair and is shorter than an eighth of the
//!    budget then lies in the first half of the pairs only, where rule 2
//!    sees it. Nothing in the pairs can tell a spell still going on from a
//!    difference, so this one bound is a share of what the user gave, not
//!    a figure of any machine.
//! 1. **Enough independent pairs.** At least [`crate::sequential::MIN_PAIRS`] effectively
//!    independent pairs: n >= MIN_PAIRS x tau, tau the integrated
//!    autocorrelation time of the row's pairs as measured (Geyer's initial
//!    positive sequence; on the median, of the pairs with their wild
//!    values pulled in to three robust standard deviations), and never
//!    fewer than 2 x MIN_PAIRS. A spell makes the pairs autocorrelated,
//!    and so asks for more of them.
//! 2. **Both halves agree.** The first and the second half of the row's
//!    pairs, each on its own (its median, or its mean), lie on the side of
//!    the band the call is on (beyond it for faster or slower, inside it
//!    for equivalent). A spell that came and went moves one half only: the
//!    row then says so (a [`Spell`]: which pairs went that way, the others
//!    not) and goes on, ending inconclusive if the budget runs out first.
//! 3. **The medians agree** (on the median only). The ratio of the two
//!    targets' median blocks lies beyond half the band on the call's side
//!    (inside the band for equivalent): a call never names a side the
//!    typical blocks of the two targets deny.
//!
//! All of them only ever withhold a call the sequence makes, so the
//! sequence's guarantee for a stationary difference stands; what they cost
//! is time to a decision, measured in bench/results (docs/methods.md, "No
//! call from a burst", "The typical pair"). A spell that started with the
//! first pair and lasts past the rules cannot be told from a difference by
//! any rule that looks only at the pairs; the suite prints where each
//! side's responder ran so a reader can see a shared CPU.
//!
//! This is the arithmetic of `suite --until decided`, with no notion of
//! what a row is: the caller (the results crate's `Decider`) maps its
//! figures to row indices. Pure: no I/O, no clock.

mod outcome;
mod rules;
mod settings;

pub use outcome::{Decided, Reached, Spell};
pub use rules::{autocorrelation_time, min_pairs};
pub use settings::{Budget, BudgetError, Effect, Floor, Limit, Rules, Settings, ALPHA};

use crate::median_seq::MedianSeq;
use crate::sequential::{Call, ConfSeq};
use crate::Direction;

/// One row as it stands.
#[derive(Clone, Debug, PartialEq)]
pub struct RowState {
    /// Pairs it was judged on.
    pub pairs: usize,
    /// exp(effect): the median (or, by the mean, the geometric mean) of
    /// the pairs' ratios.
    pub ratio: f64,
    /// exp(mean ln(B/A)): the geometric mean of the pairs' ratios, a
    /// secondary figure when the effect is the median.
    pub mean_ratio: f64,
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
    /// The mean's sequence: the effect by the mean, and the pairs' mean
    /// and autocorrelation whatever the effect.
    mean: ConfSeq,
    /// The median's sequence, when the effect is the median.
    median: Option<MedianSeq>,
    a: Vec<f64>,
    b: Vec<f64>,
    /// ln(B/A) of each pair, in order.
    x: Vec<f64>,
    reached: Option<Reached>,
}

/// Rows decided pair by pair under one run's [`Settings`].
pub struct Rows {
    alpha: f64,
    band: f64,
    effect: Effect,
    /// The rules that a call held over the run, from this floor; none:
    /// the sequence alone (how runs stored before the rules were decided).
    hold: Option<Floor>,
    rows: Vec<Row>,
    /// Rows after the first pair: what alpha is split over.
    split: usize,
}

impl Rows {
    /// No rows yet, to be decided under `settings`.
    pub fn new(settings: &Settings) -> Rows {
        Rows {
            alpha: settings.alpha,
            band: (1.0 + settings.tolerance).ln(),
            effect: settings.effect,
            hold: settings.floor,
            rows: Vec::new(),
            split: 0,
        }
    }

    /// A new row whose values are better `direction`; its index.
    pub fn add(&mut self, direction: Direction) -> usize {
        self.rows.push(Row {
            direction,
            mean: ConfSeq::new(),
            median: (self.effect == Effect::Median).then(MedianSeq::new),
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
        r.mean.push(x);
        if let Some(m) = &mut r.median {
            m.push(x);
        }
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
    /// call held over the run (the module's rules 0 to 3).
    pub fn settle(&mut self, pair: usize, at_ms: Option<u64>, rows: &[usize]) -> Vec<usize> {
        let alpha = self.row_alpha();
        let mut decided = Vec::new();
        for &i in rows {
            let r = &self.rows[i];
            if r.reached.is_some() {
                continue;
            }
            let call = r.call(alpha, self.band);
            if call == Call::Open || !self.held(r, call, at_ms) {
                continue;
            }
            let r = &mut self.rows[i];
            r.reached = Some(Reached {
                pair,
                decided: rules::decided(call, r.direction),
                interval: r.interval(alpha),
            });
            decided.push(i);
        }
        decided
    }

    /// Whether `call` of row `r` held over the run (the module's rules 0
    /// to 3; always, for a run decided by the sequence alone).
    fn held(&self, r: &Row, call: Call, at_ms: Option<u64>) -> bool {
        let Some(floor) = self.hold else {
            return true;
        };
        let spanned = match floor {
            Floor::Pairs(n) => r.x.len() >= n,
            Floor::Millis(ms) => at_ms.is_none_or(|t| t >= ms),
        };
        match self.effect {
            Effect::Mean => {
                spanned && r.x.len() >= min_pairs(&r.x) && rules::halves_agree(&r.x, call, self.band, rules::mean)
            }
            Effect::Median => {
                spanned
                    && r.x.len() >= min_pairs(&rules::tamed(&r.x))
                    && rules::halves_agree(&r.x, call, self.band, rules::median)
                    && rules::medians_agree(rules::median(&r.a), rules::median(&r.b), call, self.band)
            }
        }
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
            None => r.interval(self.row_alpha()),
        };
        RowState {
            pairs: r.mean.len(),
            ratio: match &r.median {
                Some(m) if !m.is_empty() => m.median().exp(),
                Some(_) | None => r.mean.mean().exp(),
            },
            mean_ratio: r.mean.mean().exp(),
            interval: interval.map(|(lo, hi)| (lo.exp(), hi.exp())),
            median_a: crate::median(&r.a).unwrap_or(f64::NAN),
            median_b: crate::median(&r.b).unwrap_or(f64::NAN),
            serial: r.mean.serial(),
            reached: r.reached,
            spell: match r.reached.map(|d| d.decided) {
                Some(Decided::Faster | Decided::Slower) => None,
                Some(Decided::Equivalent | Decided::Inconclusive) | None => {
                    let x = match self.effect {
                        Effect::Mean => r.x.clone(),
                        Effect::Median => rules::tamed(&r.x),
                    };
                    rules::spell(&x, self.band, r.direction)
                }
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

impl Row {
    /// Its sequence's call now.
    fn call(&self, alpha: f64, band: f64) -> Call {
        match &self.median {
            Some(m) => m.call(alpha, band),
            None => self.mean.call(alpha, band),
        }
    }

    /// Its sequence's interval of ln(B/A) now.
    fn interval(&self, alpha: f64) -> Option<(f64, f64)> {
        match &self.median {
            Some(m) => m.interval(alpha),
            None => self.mean.interval(alpha),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequential::MIN_PAIRS;

    /// A run's settings with this band, floor and effect.
    fn settings(tolerance: f64, floor: Option<Floor>, effect: Effect) -> Settings {
        Settings {
            alpha: 0.05,
            tolerance,
            budget: "20s".parse().unwrap(),
            seed: 1,
            floor,
            effect,
        }
    }

    /// A row 10% slower every pair is called worse once the minimum of
    /// pairs is in, and a row of no change within the band later; a row
    /// that went one way takes no more pairs.
    #[test]
    fn rows_stop_on_their_own() {
        let mut rows = Rows::new(&settings(0.02, Some(Floor::Pairs(1)), Effect::Mean));
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
        assert_eq!(s.reached.map(|r| r.decided), Some(Decided::Slower));
        assert_eq!(at[slow], Some(2 * MIN_PAIRS), "uncorrelated pairs: the floor");
        assert_eq!(s.pairs, 2 * MIN_PAIRS);
        assert!((s.ratio - 1.10).abs() < 0.01, "{}", s.ratio);
        assert_eq!(rows.state(same).reached.map(|r| r.decided), Some(Decided::Equivalent));
        assert!(at[same].unwrap() > at[slow].unwrap());
        assert_eq!(rows.observe(slow, 1.0, 2.0), None);
        assert!((rows.row_alpha() - 0.025).abs() < 1e-12);
    }

    /// Row `r` of B 40% slower over pairs `spell`, A and B alike
    /// otherwise, 40 ms a pair, decided under `hold`: the verdict, and the
    /// spell the rules named.
    fn spell_run(spell: std::ops::RangeInclusive<usize>, hold: Option<Floor>) -> (Option<Decided>, Option<Spell>) {
        let mut rng = crate::rng::Rng::new(7);
        let mut rows = Rows::new(&settings(0.05, hold, Effect::Mean));
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
        (s.reached.map(|d| d.decided), s.spell)
    }

    /// A spell at the start shorter than an eighth of the budget (20 s:
    /// 2.5 s, here 1.2 s), and one in the middle of the run: the sequence
    /// alone calls the first B slower; the rules hold the call and name the spell,
    /// and the row is never called slower (equivalent, or still open when
    /// the spell's weight keeps its interval wide).
    #[test]
    fn a_spell_that_ends_is_not_called() {
        let budget = Some(Floor::Millis(5_000));
        assert_eq!(spell_run(1..=30, None).0, Some(Decided::Slower), "the hazard is real");
        let (verdict, spell) = spell_run(1..=30, budget);
        assert_ne!(verdict, Some(Decided::Slower));
        let spell = spell.expect("the spell is named");
        assert_eq!((spell.verdict, spell.pairs.0), (Decided::Slower, 1), "{spell:?}");
        let (verdict, spell) = spell_run(60..=100, budget);
        assert_ne!(verdict, Some(Decided::Slower));
        assert!(spell.is_some());
        // A difference that stays is still called, after the floor.
        let (verdict, _) = spell_run(1..=500, budget);
        assert_eq!(verdict, Some(Decided::Slower));
    }

    /// The autocorrelation time is about 1 for independent pairs and
    /// about (1 + phi) / (1 - phi) for an AR(1) series, and grows the
    /// pairs a call needs.
    /// A user's A/A run on a loaded machine ("run 16"): two rows, 92 pairs
    /// in 5 s, blocks of both targets near 18.0 us at the median, and a
    /// fifth of A's blocks caught by a burst (4-6x slower). The mean of
    /// ln(B/A) says B is 25% faster, and the mean's sequence, under every
    /// rule that a call held, called it so; the typical pair says no
    /// difference: the median's sequence never names a side, and the
    /// headline's effect is the median pair's.
    #[test]
    fn a_burst_on_one_side_is_not_a_difference() {
        let mut rng = crate::rng::Rng::new(16);
        let run = |effect: Effect, rng: &mut crate::rng::Rng| {
            let mut rows = Rows::new(&settings(0.05, Some(Floor::Millis(5_000)), effect));
            let r = rows.add(Direction::LowerIsBetter);
            let mut called = None;
            for pair in 1..=92 {
                let noise = |rng: &mut crate::rng::Rng| 18.0 * (1.0 + 0.01 * (rng.unit() - 0.5));
                let (mut a, b) = (noise(rng), noise(rng));
                if pair % 5 == 3 {
                    a *= 4.0 + 2.0 * rng.unit();
                }
                rows.observe(r, a, b);
                if pair == 1 {
                    rows.fix_split();
                }
                if called.is_none() && !rows.settle(pair, Some(pair as u64 * 54 + 5_000), &[r]).is_empty() {
                    called = Some(pair);
                }
            }
            (rows.state(r), called)
        };
        let (mean, at) = run(Effect::Mean, &mut rng);
        assert!(mean.ratio < 0.8, "the mean's B/A: {}", mean.ratio);
        assert_eq!(
            mean.reached.map(|d| d.decided),
            Some(Decided::Faster),
            "called at {at:?}"
        );
        let mut rng = crate::rng::Rng::new(16);
        let (median, _) = run(Effect::Median, &mut rng);
        assert!(
            (median.ratio - 1.0).abs() < 0.01,
            "the typical pair's B/A: {}",
            median.ratio
        );
        assert!(
            median.mean_ratio < 0.8,
            "the mean kept beside it: {}",
            median.mean_ratio
        );
        assert!(
            !matches!(
                median.reached.map(|d| d.decided),
                Some(Decided::Faster | Decided::Slower)
            ),
            "{median:?}"
        );
    }

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
