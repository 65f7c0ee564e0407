//! A comparison that runs until it knows, as a typed value, and what
//! builds it pair by pair from documents: the engine feeds each pair of
//! blocks (one document of A, one of B, measured back to back in random
//! order) as it finishes and asks whether to go on; `show` feeds the
//! stored documents again and gets the same value. The arithmetic is the
//! statistics crate's ([`stackmeter_statistics::decide`]); here, which
//! figures make the rows and what their verdicts are called.
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
pub use stackmeter_statistics::decide::Decided;
use stackmeter_statistics::decide::{Effect, Floor, Rows, Settings};
use stackmeter_statistics::sequential::MIN_PAIRS;
use stackmeter_statistics::Direction;

/// Above this lag-1 autocorrelation of a row's pairs, its error rate may
/// exceed alpha (the targets carry state from block to block): said, for
/// a row of at least [`SERIAL_PAIRS`] pairs (fewer give too rough an
/// estimate to warn on).
pub const SERIAL_WARN: f64 = 0.3;
/// See [`SERIAL_WARN`].
pub const SERIAL_PAIRS: usize = 16;

/// How a decided comparison runs, stored with the suite's settings: the
/// statistics crate's [`Settings`], every rule's setting in one value.
pub type DecideSettings = Settings;

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
    /// B/A of the typical pair, the effect the row was decided on:
    /// exp(median ln(B/A)), the median of the pairs' ratios (runs decided
    /// on the mean: exp(mean ln(B/A)), their geometric mean).
    pub ratio: f64,
    /// exp(mean ln(B/A)), the geometric mean of the pairs' ratios, when
    /// the effect is the median (a secondary figure: a few wild blocks
    /// move it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_ratio: Option<f64>,
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
    /// A difference that held over some of the row's pairs only (a row not
    /// decided faster or slower): not stationary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spell: Option<SpellNote>,
}

/// A spell of difference in a row's pairs: where it was, which way, how
/// much.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SpellNote {
    /// Its first and last pair (from 1).
    pub pairs: (usize, usize),
    /// The row's other pairs, which did not differ beyond the band.
    pub not: (usize, usize),
    /// Which way B went over it.
    pub verdict: Decided,
    /// exp(mean ln(B/A)) over it.
    pub ratio: f64,
    /// When it was, seconds from the start of the first pair (when the
    /// documents say).
    pub seconds: Option<(f64, f64)>,
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
    /// When the pair's later block started, milliseconds from the start of
    /// the first pair (when the documents say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
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

/// A row's identity and how its figure reads; its numbers are the
/// statistics crate's ([`Rows`], same index).
struct RowInfo {
    key: RowKey,
    unit: String,
    direction: Direction,
}

/// A compared figure of one document.
struct Compared {
    key: RowKey,
    unit: String,
    direction: Direction,
    value: f64,
}

/// Builds a [`Decision`] one pair at a time.
pub struct Decider {
    a: String,
    b: String,
    settings: DecideSettings,
    metric: String,
    info: Vec<RowInfo>,
    rows: Rows,
    history: Vec<PairRecord>,
    /// When the first pair's first block started, unix ms.
    origin_ms: Option<u64>,
}

impl Decider {
    /// A decider for B (`b`) against A (`a`) on the figure `metric`
    /// ("p50", "mean", "p99"; rates are always compared as measured).
    pub fn new(a: &str, b: &str, settings: DecideSettings, metric: &str) -> Decider {
        Decider {
            a: a.into(),
            b: b.into(),
            rows: Rows::new(&settings),
            settings,
            metric: metric.into(),
            info: Vec::new(),
            history: Vec::new(),
            origin_ms: None,
        }
    }

    /// Each row's alpha: the family's split evenly over the rows.
    pub fn row_alpha(&self) -> f64 {
        self.rows.row_alpha()
    }

    /// Feeds pair `pair` (from 1) of `step`: A's and B's documents and
    /// which was measured first. Returns the indices of the rows it
    /// decided.
    pub fn push(&mut self, pair: usize, step: &str, a_first: bool, a: &Document, b: &Document) -> Vec<usize> {
        // A block that broke off is no block: the pair is not counted.
        if !(a.complete && b.complete) {
            return Vec::new();
        }
        let fb = self.compared(b);
        let started = a.env.time_ms.zip(b.env.time_ms).map(|(x, y)| (x.min(y), x.max(y)));
        if self.origin_ms.is_none() {
            self.origin_ms = started.map(|s| s.0);
        }
        let at_ms = started.zip(self.origin_ms).map(|(s, o)| s.1.saturating_sub(o));
        let mut record = PairRecord {
            pair,
            step: step.into(),
            first: if a_first { "A" } else { "B" }.into(),
            ratios: Vec::new(),
            at_ms,
        };
        for fa in self.compared(a) {
            let Some(vb) = fb.iter().find(|f| f.key == fa.key).map(|f| f.value) else {
                continue;
            };
            if !(vb / fa.value).ln().is_finite() {
                continue;
            }
            let key = (fa.key.0, step.to_string(), fa.key.2, fa.key.3, fa.key.4);
            let i = match self.info.iter().position(|r| r.key == key) {
                Some(i) => i,
                None => {
                    self.info.push(RowInfo {
                        key,
                        unit: fa.unit,
                        direction: fa.direction,
                    });
                    self.rows.add(fa.direction)
                }
            };
            if let Some(x) = self.rows.observe(i, fa.value, vb) {
                record.ratios.push((i, x));
            }
        }
        if pair == 1 {
            self.rows.fix_split();
        }
        let fed: Vec<usize> = record.ratios.iter().map(|&(i, _)| i).collect();
        let decided = self.rows.settle(pair, at_ms, &fed);
        self.history.push(record);
        decided
    }

    /// The compared figures of a document.
    fn compared(&self, d: &Document) -> Vec<Compared> {
        figures(d)
            .into_iter()
            .filter(|f| f.compared && (f.stat == self.metric || f.stat == "value"))
            .map(|f| Compared {
                key: (d.body.kind(), String::new(), f.series, f.stat, f.row_label),
                unit: f.unit,
                direction: f.direction,
                value: f.value,
            })
            .collect()
    }

    /// Whether every row of `step` seen so far is decided (a step with no
    /// row yet is not).
    pub fn step_done(&self, step: &str) -> bool {
        let mut rows = (0..self.info.len()).filter(|&i| self.info[i].key.1 == step).peekable();
        rows.peek().is_some() && rows.all(|i| self.rows.is_decided(i))
    }

    /// Whether every row is decided.
    pub fn all_done(&self) -> bool {
        !self.rows.is_empty() && (0..self.rows.len()).all(|i| self.rows.is_decided(i))
    }

    /// Row `i` as it stands (decided, or its interval now).
    pub fn row(&self, i: usize) -> DecidedRow {
        let r = &self.info[i];
        let s = self.rows.state(i);
        let verdict = s.reached.map_or(Decided::Inconclusive, |d| d.decided);
        let percent = match r.direction {
            Direction::LowerIsBetter => (1.0 - s.ratio) * 100.0,
            Direction::HigherIsBetter => (s.ratio - 1.0) * 100.0,
        };
        DecidedRow {
            test: r.key.0,
            step: r.key.1.clone(),
            series: r.key.2.clone(),
            stat: r.key.3.clone(),
            label: r.key.4.clone(),
            unit: r.unit.clone(),
            direction: r.direction,
            pairs: s.pairs,
            median_a: s.median_a,
            median_b: s.median_b,
            ratio: s.ratio,
            mean_ratio: (self.settings.effect == Effect::Median).then_some(s.mean_ratio),
            interval: s.interval,
            percent,
            verdict,
            decided_at: s.reached.map(|d| d.pair),
            serial: s.serial,
            spell: s.spell.map(|sp| SpellNote {
                pairs: sp.pairs,
                not: sp.not,
                verdict: sp.verdict,
                ratio: sp.ratio,
                seconds: self.seconds(i, sp.pairs),
            }),
        }
    }

    /// When row `i`'s pairs `from..=to` (counted in the row's own pairs)
    /// were measured, seconds from the first pair's start, when the
    /// documents say.
    fn seconds(&self, i: usize, (from, to): (usize, usize)) -> Option<(f64, f64)> {
        let at: Vec<Option<u64>> = self
            .history
            .iter()
            .filter(|p| p.ratios.iter().any(|&(r, _)| r == i))
            .map(|p| p.at_ms)
            .collect();
        let start = at.get(from.checked_sub(1)?).copied().flatten()?;
        let end = at.get(to.checked_sub(1)?).copied().flatten()?;
        Some((start as f64 / 1000.0, end as f64 / 1000.0))
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
        let k = self.rows.family();
        Decision {
            a: self.a,
            b: self.b,
            method: method(&self.settings),
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

/// The method of a run decided under `s`, in words (the whole of it; the
/// text view prints its first sentence).
fn method(s: &Settings) -> String {
    let sequence = match s.effect {
        Effect::Median => "per row a confidence sequence of the median of ln(B/A), the typical pair, valid at \
             every look whatever the distribution (Howard and Ramdas 2022: the count of pairs below it, a \
             normal mixture at variance 1/4 a pair, alpha/2 each side)"
            .to_string(),
        Effect::Mean => "per row a confidence sequence of ln(B/A) valid at every look (normal mixture, Howard \
             et al. 2021, variance estimated: asymptotic, Waudby-Smith et al. 2024)"
            .to_string(),
    };
    let hold = match s.floor {
        None => String::new(),
        Some(f) => format!(
            "; and only when the difference held over the run: its pairs span {}, number at least \
             {MIN_PAIRS} times their autocorrelation time (and {}), and each half of them, alone, lies \
             on the side of the band the call is on{}",
            match f {
                Floor::Millis(ms) => format!("{} s (a quarter of the budget)", ms as f64 / 1000.0),
                Floor::Pairs(n) => format!("{n} pairs (a quarter of the budget)"),
            },
            2 * MIN_PAIRS,
            match s.effect {
                Effect::Median => ", as do the medians of A's and B's blocks",
                Effect::Mean => "",
            }
        ),
    };
    format!(
        "pairs of blocks (one of A, one of B, order random per pair, seed {}); {sequence}, no call before \
         {MIN_PAIRS} pairs; decided when it lies wholly outside +/-{}% (faster or slower) or wholly inside \
         (equivalent){hold}",
        s.seed,
        (s.tolerance * 1000.0).round() / 10.0
    )
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
