//! What can stop an analysis: a series that cannot be judged (too short,
//! a run without values, a value the method cannot take the logarithm
//! of) or settings out of range. The CSV reader has its own errors
//! (`stackmeter_history_csv::CsvError`), which name a line and a column.

use thiserror::Error;

/// Why a series could not be built or analysed.
#[derive(Clone, Copy, Debug, PartialEq, Error)]
pub enum HistoryError {
    /// Fewer runs than the method needs to put a change point between
    /// two segments of `min_segment` runs each. Measure more runs, or
    /// lower `Settings::min_segment`.
    #[error("a series of {runs} runs is too short to judge: at least {need} are needed")]
    TooShort {
        /// Runs in the series.
        runs: usize,
        /// Runs the settings need (twice `min_segment`, and at least 4).
        need: usize,
    },
    /// A run without a single repetition. Leave the run out instead.
    #[error("run {run} has no repetitions")]
    EmptyRun {
        /// Index of the run in the series.
        run: usize,
    },
    /// A value that is not a finite number above zero. The method works on
    /// logarithms (figures are times and rates); a figure that can be zero,
    /// such as a loss percentage, is not a series this method judges.
    #[error("run {run}, repetition {repetition}: {value} is not a positive finite number")]
    NotPositive {
        /// Index of the run in the series.
        run: usize,
        /// Index of the repetition within the run.
        repetition: usize,
        /// The value.
        value: f64,
    },
    /// Flat values and run lengths that do not add up.
    #[error("{values} values, but the run lengths add up to {lengths}")]
    RunLengths {
        /// How many values were given.
        values: usize,
        /// What the run lengths add up to.
        lengths: usize,
    },
    /// A setting outside its range; the text says which and what it accepts.
    #[error("bad setting: {0}")]
    Settings(&'static str),
}
