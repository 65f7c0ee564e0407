//! What an analysis is asked: which way is worse, how large a change must
//! be to count as a regression, how strong the evidence must be, and how
//! few runs a segment may have.

use crate::error::HistoryError;
use serde::{Deserialize, Serialize};
use stackmeter_statistics::Direction;

/// Default [`Settings::tolerance`]: a change smaller than 5% is reported
/// but is neither a regression nor an improvement.
pub const TOLERANCE: f64 = 0.05;
/// Default [`Settings::alpha`]: a change point needs a p-value below 0.1%
/// (Otava's default too), after allowing for every position it could have
/// been found at.
pub const ALPHA: f64 = 0.001;
/// Default [`Settings::min_segment`]: five runs on each side of a change
/// (as a comparison needs five repetitions a side), so a shift can be
/// flagged five runs after it happened, and a burst of three or four slow
/// runs on a busy machine is not taken for two change points.
pub const MIN_SEGMENT: usize = 5;
/// Default [`Settings::max_episode`]: a shift undone within 20 runs is an
/// episode (on a shared machine, a neighbour's build; in a nightly job, a
/// regression fixed within three weeks).
pub const MAX_EPISODE: usize = 20;

/// The questions an analysis answers.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Settings {
    /// Which way is better for the figure (times: lower; rates: higher).
    pub direction: Direction,
    /// A change point is a regression (or an improvement) when the
    /// ratio after/before moved the worse (better) way by more than this
    /// fraction (0.05: 5%). Smaller significant changes are still
    /// reported, flagged as neither.
    pub tolerance: f64,
    /// Significance level of a change point, two-sided, after allowing
    /// for the search over positions (0 < alpha < 1).
    pub alpha: f64,
    /// Fewest runs on either side of a change point (at least 1). The
    /// shortest series judged has `max(2 * min_segment, 4)` runs.
    pub min_segment: usize,
    /// Two change points at most this many runs apart whose outer levels
    /// agree (the level after the second within `tolerance` of the level
    /// before the first) bound an episode: both are marked transient
    /// ([`crate::ChangePoint::transient`]). 0: no episodes.
    pub max_episode: usize,
}

impl Settings {
    /// The defaults: [`TOLERANCE`], [`ALPHA`], [`MIN_SEGMENT`], [`MAX_EPISODE`].
    pub fn new(direction: Direction) -> Settings {
        Settings {
            direction,
            tolerance: TOLERANCE,
            alpha: ALPHA,
            min_segment: MIN_SEGMENT,
            max_episode: MAX_EPISODE,
        }
    }

    /// Fewest runs a series needs.
    pub fn min_runs(&self) -> usize {
        (2 * self.min_segment).max(4)
    }

    /// Checks every field's range.
    pub fn check(&self) -> Result<(), HistoryError> {
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            return Err(HistoryError::Settings("alpha must be between 0 and 1"));
        }
        if !(self.tolerance >= 0.0 && self.tolerance < 1.0) {
            return Err(HistoryError::Settings("tolerance must be at least 0 and below 1"));
        }
        if self.min_segment == 0 {
            return Err(HistoryError::Settings("min_segment must be at least 1 run"));
        }
        Ok(())
    }

    /// True when `ratio` (after/before) is worse by more than the tolerance.
    pub fn is_regression(&self, ratio: f64) -> bool {
        match self.direction {
            Direction::LowerIsBetter => ratio > 1.0 + self.tolerance,
            Direction::HigherIsBetter => ratio < 1.0 - self.tolerance,
        }
    }

    /// True when `ratio` (after/before) is better by more than the tolerance.
    pub fn is_improvement(&self, ratio: f64) -> bool {
        match self.direction {
            Direction::LowerIsBetter => ratio < 1.0 - self.tolerance,
            Direction::HigherIsBetter => ratio > 1.0 + self.tolerance,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worse_depends_on_the_direction() {
        let t = Settings::new(Direction::LowerIsBetter);
        assert!(t.is_regression(1.06) && !t.is_improvement(1.06));
        assert!(t.is_improvement(0.9) && !t.is_regression(0.9));
        assert!(!t.is_regression(1.04) && !t.is_improvement(0.96));
        let r = Settings::new(Direction::HigherIsBetter);
        assert!(r.is_regression(0.9) && r.is_improvement(1.1));
    }

    #[test]
    fn ranges_are_checked() {
        let ok = Settings::new(Direction::LowerIsBetter);
        assert!(ok.check().is_ok());
        assert!(Settings { alpha: 0.0, ..ok }.check().is_err());
        assert!(Settings { alpha: 1.0, ..ok }.check().is_err());
        assert!(Settings { tolerance: -0.1, ..ok }.check().is_err());
        assert!(Settings { min_segment: 0, ..ok }.check().is_err());
        assert_eq!(Settings { min_segment: 1, ..ok }.min_runs(), 4);
        assert_eq!(Settings { min_segment: 5, ..ok }.min_runs(), 10);
    }
}
