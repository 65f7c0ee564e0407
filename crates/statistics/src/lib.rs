//! A/B statistics for stackmeter, as pure code: no I/O, no clock, and a
//! seeded random generator so every verdict is reproducible.
//!
//! The input of one comparison row is one figure per repetition for each
//! side (for example each repetition's mean RTT of one size pair). The
//! output is the two medians, the ratio B/A with a 95% bootstrap interval,
//! the Mann-Whitney U p-value, and a verdict that is only "faster" or
//! "slower" when both the interval excludes 1 and p < 0.05
//! (docs/methods.md, "Comparing A and B": benchstat's test, criterion's
//! interval). Summaries across rows use the geometric mean of the ratios
//! with a bootstrap interval over the repetitions; the arithmetic mean of
//! percentages that hand-made tables print (the latency grid's "Average
//! ... faster", docs/scenarios.md) is computed too, for comparison, and
//! labelled as such by the renderers.
//!
//! When many rows are judged at once, [`fdr`] keeps the share of false
//! verdicts among them in check (Benjamini-Hochberg); [`twoway`] fits a
//! fleet's pair matrix as one effect per node as a client and one as a
//! target (median polish), so a slow node is named instead of its pairs.
//!
//! A comparison that runs until it knows uses a confidence sequence of the
//! paired log-ratios that stays valid however often it is looked at, and
//! its call against a tolerance band: of their median ([`median_seq`],
//! distribution-free: the typical pair) or, as runs stored before it
//! did, of their mean ([`sequential`]); [`decide`] runs many such rows
//! together, each stopping on its own, under one run's settings.

pub mod decide;
pub mod dist;
pub mod fdr;
mod median;
pub mod median_seq;
pub mod moderated;
pub mod mwu;
pub mod rng;
mod row;
pub mod sequential;
pub mod twoway;

pub use median::{hodges_lehmann, mad, median, median_in_place, Spread, MAD_TO_SD};
pub use mwu::mann_whitney_u;
pub use row::{
    as_lower_is_better, compare, geomean_interval, summarize, Direction, Overall, RowStats, Verdict, ALPHA,
    BOOTSTRAP_RESAMPLES, MIN_REPETITIONS,
};
pub use sequential::{Call, ConfSeq};
