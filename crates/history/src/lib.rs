//! Change points in a series of runs: where a figure of one target moved,
//! found without choosing a baseline, for `stackmeter history`, CI jobs
//! and dashboards. Pure code: no I/O, no clock, no randomness.
//!
//! A series is the runs of one figure in order (time, or an attribute
//! such as a commit), each run with its repetitions ([`Series`]). The
//! layers, bottom up:
//!
//! - `model` (private): each run as the median of its log
//!   values and the spread of its repetitions; a variance-components fit
//!   (between-run variance plus within-run variance over the count of
//!   repetitions) gives each run a weight; centres are winsorised against
//!   a running median, so outliers move nothing far.
//! - `pvalue` (private): how surprising the largest standardised
//!   difference over every split of a segment is (James, James and
//!   Siegmund's approximation for the maximum of a standardised CUSUM).
//! - `detect` (private): a seeded binary segmentation proposes change
//!   points with prefix sums in O(n log n); a pruning step keeps those
//!   whose p-value between their neighbours passes alpha.
//! - `change` (private): each change point described from the segments
//!   on either side: medians, the ratio with its 95% interval, the
//!   p-value, whether it is a regression (a change the worse way,
//!   [`Direction`], past a tolerance, [`Settings`]), and whether it bounds
//!   an episode (the level came back within a few runs).
//! - [`analyze`] (the batch analysis) and [`Tracker`] (one run at a time,
//!   re-examining only the runs since the last change point) on top.
//!
//! Series from a CSV file in Otava's shape are `stackmeter-history-csv`'s.
//!
//! docs/methods.md ("History: change points in a series of runs") says
//! why this method, what it assumes and what it costs.

mod analyze;
mod change;
mod detect;
mod error;
mod model;
mod pvalue;
mod series;
mod settings;
mod tracker;

pub use analyze::analyze;
pub use change::ChangePoint;
pub use error::HistoryError;
pub use series::Series;
pub use settings::{Settings, ALPHA, MAX_EPISODE, MIN_SEGMENT, TOLERANCE};
pub use stackmeter_statistics::Direction;
pub use tracker::Tracker;
