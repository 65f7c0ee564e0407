//! A live row (an interval or a trial) as the cells of its table.

use crate::views::stream::interval_cells;
use crate::views::udp_max::trial_cells;
use stackmeter_results::Live;

/// A live row's cells, under the columns of its test's live table.
pub fn live_cells(row: &Live, style: &crate::format::Style) -> Vec<String> {
    match row {
        Live::Interval(i) => interval_cells(i, style.units),
        Live::Trial(t) => trial_cells(t.n, t.trial),
    }
}
