//! A comparison that runs until it knows, as a typed value, and the pure
//! machine that builds it pair by pair: the engine feeds each pair of
//! blocks (one document of A, one of B, measured back to back in random
//! order) as it finishes and asks whether to go on; `show` feeds the
//! stored documents again and gets the same value.
//!
//! Each row (a step's figure of one size, as `compare` has them) keeps a
//! confidence sequence of ln(B/A) over the pairs
//! ([`stackmeter_statistics::sequential`]) and stops on its own when the
//! sequence lies wholly outside the band of +/-tolerance (faster or
//! slower), wholly inside it (equivalent), or never (inconclusive when the
//! budget is spent). Every row is judged at alpha / k for k rows (the
//! alpha split evenly, Bonferroni), which stays valid when each row stops
//! at its own time: the chance that any row's sequence ever leaves the
//! truth out is at most alpha. docs/methods.md explains the design.

use crate::doc::{figures, Document};
use crate::kind::TestKind;
use serde::{Deserialize, Serialize};
use stackmeter_statistics::sequential::{Call, ConfSeq, MIN_PAIRS};
use stackmeter_statistics::Direction;

/// Above this lag-1 autocorrelation of a row's pairs, its error rate may
/// exceed alpha (the targets carry state from block to block): said, for
/// a row of at least [`SERIAL_PAIRS`] pairs (fewer give too rough an
/// estimate to warn on).
pub const SERIAL_WARN: f64 = 0.3;
/// See [`SERIAL_WARN`].
pub const SERIAL_PAIRS: usize = 16;

/// How a decided comparison runs: stored with the suite's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DecideSettings {
    /// The chance, over all rows together, that any row's interval ever
    /// leaves out the truth (0.05).
    pub alpha: f64,
    /// The band around no change, as a fraction (0.02: +/-2%).
    pub tolerance: f64,
    /// The budget as given ("60s", "200 pairs").
    pub budget: String,
    /// The seed of the A/B order of each pair.
    pub seed: u64,
}

/// A row's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decided {
    /// B is better than A by more than the tolerance.
    Faster,
    /// B is worse than A by more than the tolerance.
    Slower,
    /// B and A differ by less than the tolerance.
    Equivalent,
    /// The budget was spent (or the run cut short) before any of these.
    Inconclusive,
}

/// One row of a decided comparison.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DecidedRow {
    /// The test.
    pub test: TestKind,
    /// Plan step.
    pub step: String,
    /// "1 B:1 KiB", "64 B".
    pub label: String,
    /// "rtt", "rate", ...
    pub series: String,
    /// "p50", "mean", "value".
    pub stat: String,
    /// Unit of the figure.
    pub unit: String,
    /// True for times.
    #[serde(rename = "lower_is_better", with = "stackmeter_statistics::as_lower_is_better")]
    #[schemars(with = "bool")]
    pub direction: Direction,
    /// Pairs the row was judged on (up to its decision).
    pub pairs: usize,
    /// Median of A's blocks, and of B's, over those pairs.
    pub median_a: f64,
    /// See `median_a`.
    pub median_b: f64,
    /// exp(mean ln(B/A)): the geometric mean of the pairs' ratios.
    pub ratio: f64,
    /// The confidence sequence's interval of that ratio when the row
    /// stopped (or at the end); none before the minimum of pairs.
    pub interval: Option<(f64, f64)>,
    /// How much better B is, in percent of A (negative: worse), from `ratio`.
    pub percent: f64,
    /// The outcome.
    pub verdict: Decided,
    /// The pair (counted from 1) at which the row was decided.
    pub decided_at: Option<usize>,
    /// Lag-1 autocorrelation of the row's pairs (bias-corrected).
    pub serial: f64,
}

/// One pair of blocks of one step: which went first, and each row's
/// ln(B/A) (rows by index into `rows`; a decided row takes no more).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PairRecord {
    /// Pair number, from 1.
    pub pair: usize,
    /// Plan step.
    pub step: String,
    /// "A" or "B": the block measured first.
    pub first: String,
    /// (row index, ln(B/A)) for every row this pair fed.
    pub ratios: Vec<(usize, f64)>,
}

/// A decided comparison of B against the baseline A.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Decision {
    /// Baseline label.
    pub a: String,
    /// The other label.
    pub b: String,
    /// How it ran.
    pub settings: DecideSettings,
    /// The method in words.
    pub method: String,
    /// How the rows' errors are held together.
    pub correction: String,
    /// Why it stopped.
    pub stop: String,
    /// Pairs measured (of the step measured longest).
    pub pairs: usize,
    /// The rows, in the order first seen.
    pub rows: Vec<DecidedRow>,
    /// Every pair as measured.
    pub history: Vec<PairRecord>,
}

/// What identifies a row: test, step, series, stat, row label.
type RowKey = (TestKind, String, String, String, String);

struct RowState {
    key: RowKey,
    unit: String,
    direction: Direction,
    seq: ConfSeq,
    a: Vec<f64>,
    b: Vec<f64>,
    decided: Option<Reached>,
}

/// A row's decision: the pair it came at, the verdict, the interval.
type Reached = (usize, Decided, Option<(f64, f64)>);

/// Builds a [`Decision`] one pair at a time.
pub struct Decider {
    a: String,
    b: String,
    settings: DecideSettings,
    metric: String,
    rows: Vec<RowState>,
    /// Rows after the first pair: what alpha is split over.
    split: usize,
    history: Vec<PairRecord>,
}

impl Decider {
    /// A decider for B (`b`) against A (`a`) on the figure `metric`
    /// ("p50", "mean", "p99"; rates are always compared as measured).
    pub fn new(a: &str, b: &str, settings: DecideSettings, metric: &str) -> Decider {
        Decider {
            a: a.into(),
            b: b.into(),
            settings,
            metric: metric.into(),
            rows: Vec::new(),
            split: 0,
            history: Vec::new(),
        }
    }

    fn band(&self) -> f64 {
        (1.0 + self.settings.tolerance).ln()
    }

    /// Each row's alpha: the family's split evenly over the rows.
    pub fn row_alpha(&self) -> f64 {
        self.settings.alpha / self.split.max(self.rows.len()).max(1) as f64
    }

    /// Feeds pair `pair` (from 1) of `step`: A's and B's documents and
    /// which was measured first. Returns the indices of the rows it
    /// decided.
    pub fn push(&mut self, pair: usize, step: &str, a_first: bool, a: &Document, b: &Document) -> Vec<usize> {
        // A block that broke off is no block: the pair is not counted.
        if !(a.complete && b.complete) {
            return Vec::new();
        }
        let fa = self.compared(a);
        let fb = self.compared(b);
        let mut record = PairRecord {
            pair,
            step: step.into(),
            first: if a_first { "A" } else { "B" }.into(),
            ratios: Vec::new(),
        };
        for (key, unit, direction, va) in fa {
            let Some((.., vb)) = fb.iter().find(|f| f.0 == key) else {
                continue;
            };
            let x = (vb / va).ln();
            if !x.is_finite() {
                continue;
            }
            let key = (key.0, step.to_string(), key.2, key.3, key.4);
            let i = match self.rows.iter().position(|r| r.key == key) {
                Some(i) => i,
                None => {
                    self.rows.push(RowState {
                        key,
                        unit,
                        direction,
                        seq: ConfSeq::new(),
                        a: Vec::new(),
                        b: Vec::new(),
                        decided: None,
                    });
                    self.rows.len() - 1
                }
            };
            let r = &mut self.rows[i];
            if r.decided.is_some() {
                continue;
            }
            r.seq.push(x);
            r.a.push(va);
            r.b.push(*vb);
            record.ratios.push((i, x));
        }
        if pair == 1 {
            self.split = self.rows.len();
        }
        let (alpha, band) = (self.row_alpha(), self.band());
        let mut decided = Vec::new();
        for &(i, _) in &record.ratios {
            let r = &mut self.rows[i];
            let call = r.seq.call(alpha, band);
            let verdict = match (call, r.direction) {
                (Call::Open, _) => continue,
                (Call::Within, _) => Decided::Equivalent,
                (Call::Lower, Direction::LowerIsBetter) | (Call::Higher, Direction::HigherIsBetter) => Decided::Faster,
                (Call::Lower, Direction::HigherIsBetter) | (Call::Higher, Direction::LowerIsBetter) => Decided::Slower,
            };
            r.decided = Some((pair, verdict, r.seq.interval(alpha)));
            decided.push(i);
        }
        self.history.push(record);
        decided
    }

    /// The compared figures of a document: (key, unit, which way is better, value).
    fn compared(&self, d: &Document) -> Vec<(RowKey, String, Direction, f64)> {
        figures(d)
            .into_iter()
            .filter(|f| f.compared && (f.stat == self.metric || f.stat == "value"))
            .map(|f| {
                let key = (d.body.kind(), String::new(), f.series, f.stat, f.row_label);
                (key, f.unit, f.direction, f.value)
            })
            .collect()
    }

    /// Whether every row of `step` seen so far is decided (a step with no
    /// row yet is not).
    pub fn step_done(&self, step: &str) -> bool {
        let mut rows = self.rows.iter().filter(|r| r.key.1 == step).peekable();
        rows.peek().is_some() && rows.all(|r| r.decided.is_some())
    }

    /// Whether every row is decided.
    pub fn all_done(&self) -> bool {
        !self.rows.is_empty() && self.rows.iter().all(|r| r.decided.is_some())
    }

    /// Row `i` as it stands (decided, or its interval now).
    pub fn row(&self, i: usize) -> DecidedRow {
        let r = &self.rows[i];
        let (verdict, decided_at, interval) = match r.decided {
            Some((at, v, iv)) => (v, Some(at), iv),
            None => (Decided::Inconclusive, None, r.seq.interval(self.row_alpha())),
        };
        let ratio = r.seq.mean().exp();
        let percent = match r.direction {
            Direction::LowerIsBetter => (1.0 - ratio) * 100.0,
            Direction::HigherIsBetter => (ratio - 1.0) * 100.0,
        };
        DecidedRow {
            test: r.key.0,
            step: r.key.1.clone(),
            series: r.key.2.clone(),
            stat: r.key.3.clone(),
            label: r.key.4.clone(),
            unit: r.unit.clone(),
            direction: r.direction,
            pairs: r.seq.len(),
            median_a: stackmeter_statistics::median(&r.a).unwrap_or(f64::NAN),
            median_b: stackmeter_statistics::median(&r.b).unwrap_or(f64::NAN),
            ratio,
            interval: interval.map(|(lo, hi)| (lo.exp(), hi.exp())),
            percent,
            verdict,
            decided_at,
            serial: r.seq.serial(),
        }
    }

    /// Rows so far.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no row is known yet.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The decision, stopped for `stop` (words: "every row decided",
    /// "budget of 60s spent", "interrupted").
    pub fn finish(self, stop: &str) -> Decision {
        let rows: Vec<DecidedRow> = (0..self.rows.len()).map(|i| self.row(i)).collect();
        let pairs = self.history.iter().map(|p| p.pair).max().unwrap_or(0);
        let k = self.split.max(self.rows.len()).max(1);
        Decision {
            a: self.a,
            b: self.b,
            method: format!(
                "pairs of blocks (one of A, one of B, order random per pair, seed {}); per row a confidence \
                 sequence of ln(B/A) valid at every look (normal mixture, Howard et al. 2021, variance \
                 estimated: asymptotic, Waudby-Smith et al. 2024), no call before {MIN_PAIRS} pairs; \
                 decided when it lies wholly outside +/-{}% (faster or slower) or wholly inside (equivalent)",
                self.settings.seed,
                (self.settings.tolerance * 1000.0).round() / 10.0
            ),
            correction: format!(
                "alpha {} split evenly over {k} row(s) (Bonferroni: {:.4} each), valid with each row stopping on its own",
                self.settings.alpha,
                self.settings.alpha / k as f64
            ),
            settings: self.settings,
            stop: stop.into(),
            pairs,
            rows,
            history: self.history,
        }
    }
}

impl Decision {
    /// Replays a decided suite's finished tests, in the order measured,
    /// each as (label, step, repetition = pair, document): the same
    /// decision the run reached.
    pub fn replay<'a>(
        a: &str,
        b: &str,
        settings: DecideSettings,
        metric: &str,
        done: &[(&'a str, &'a str, usize, &'a Document)],
        stop: &str,
    ) -> Decision {
        let mut d = Decider::new(a, b, settings, metric);
        let mut seen: Vec<(usize, &str)> = Vec::new();
        for &(_, step, pair, _) in done {
            if seen.contains(&(pair, step)) {
                continue;
            }
            seen.push((pair, step));
            let this = |label: &str| {
                done.iter()
                    .position(|&(l, s, p, _)| p == pair && s == step && l == label)
            };
            if let (Some(ia), Some(ib)) = (this(a), this(b)) {
                d.push(pair, step, ia < ib, done[ia].3, done[ib].3);
            }
        }
        d.finish(stop)
    }

    /// Rows with each verdict: faster, slower, equivalent, inconclusive.
    pub fn counts(&self) -> [usize; 4] {
        let mut n = [0; 4];
        for r in &self.rows {
            n[match r.verdict {
                Decided::Faster => 0,
                Decided::Slower => 1,
                Decided::Equivalent => 2,
                Decided::Inconclusive => 3,
            }] += 1;
        }
        n
    }

    /// Rows whose pairs are autocorrelated enough that their error rate
    /// may exceed alpha.
    pub fn serial_rows(&self) -> Vec<&DecidedRow> {
        self.rows
            .iter()
            .filter(|r| r.serial > SERIAL_WARN && r.pairs >= SERIAL_PAIRS)
            .collect()
    }
}
