//! Statistics for stackmeter, as pure code: no I/O, no clock.
//!
//! Samples are durations or sizes in integer units (nanoseconds for times).
//! A [`Recorder`] keeps every sample in an HdrHistogram (3 significant
//! digits, so any percentile is within 0.1% of the true sample) plus the
//! exact minimum, maximum, sum and sum of squares; a [`Summary`] is computed
//! from it. Percentiles are always read from a (merged) histogram, never
//! averaged. [`modality`] flags distributions with two clear levels, which
//! on a 2-core machine usually means client and responder moved between
//! "same CPU" and "other CPU" during the run (docs/methods.md, "Timing").
//! [`mlr`] is the search for the highest rate at a loss goal (MLRsearch);
//! [`owd`] turns round trips with the responder's stamps into one-way
//! delays, and [`phases`] assembles latency under load (rrul) from them;
//! [`split`] splits round trips into stack and application time from
//! kernel timestamps; [`mean_ci`] is a mean with its 95% interval over a
//! few runs; [`serial`] turns histograms into bytes for the store and into
//! the points of distribution and percentile charts.

pub mod mean_ci;
pub mod mlr;
pub mod modality;
pub mod owd;
pub mod phases;
mod recorder;
pub mod serial;
pub mod split;
mod summary;

pub use mean_ci::{mean_ci95, MeanCi};
pub use modality::{bimodal, Modes};
pub use recorder::Recorder;
pub use summary::Summary;
