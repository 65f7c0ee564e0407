//! The batch analysis: a whole series in, its change points out.

use crate::change::{describe_all, ChangePoint};
use crate::detect::detect;
use crate::error::HistoryError;
use crate::model::{Prepared, RunSummary};
use crate::series::Series;
use crate::settings::Settings;

/// Every change point of `series`, in order. Deterministic: the same
/// series and settings always give the same answer.
///
/// Errors: [`HistoryError::TooShort`] below `settings.min_runs()` runs,
/// [`HistoryError::Settings`] for settings out of range.
pub fn analyze(series: &Series, settings: &Settings) -> Result<Vec<ChangePoint>, HistoryError> {
    settings.check()?;
    let need = settings.min_runs();
    if series.runs() < need {
        return Err(HistoryError::TooShort {
            runs: series.runs(),
            need,
        });
    }
    let runs = summarize(series);
    let prep = Prepared::new(&runs);
    let found = detect(&prep, settings.min_segment, settings.alpha);
    Ok(describe_all(&prep, &found, settings))
}

/// Every run's summary.
pub(crate) fn summarize(series: &Series) -> Vec<RunSummary> {
    let mut scratch = Vec::new();
    series.iter().map(|r| RunSummary::of(r, &mut scratch)).collect()
}
