//! What a reader sees of stackmeter's results, and how each format draws
//! it: the other half of `stackmeter-results`, which holds only the values.
//!
//! Every value (a test's `Document`, a `Comparison`, a `SuiteOutcome`, a
//! `Report`, a fleet report or comparison, the list of runs, a spectrum, a
//! fleet plan) has one function that builds its [`View`](view::View):
//! titles, lines, tables and charts in order (`views/`, one file per
//! value). Each output format has one renderer of views (`format/`:
//! `text.rs`, `markdown.rs`, `html.rs`), so a figure added to a view shows
//! in every format and no format can disagree with another; JSON is the
//! value itself (`format/json.rs`). Charts are data laid out and drawn as
//! inline SVG by `chart/` (the model, text measuring, units, ticks, layout,
//! SVG, each in its own file), heatmaps by `heatmap.rs`.
//!
//! Pure: no I/O, no clock. The crates that only need values (the store,
//! the client, the fleet plan) do not depend on this one.

pub mod chart;
mod format;
pub mod heatmap;
pub mod units;
pub mod view;
mod views;
pub mod waterfall;

pub use format::{html, json, markdown, text};
pub use views::live::live_cells;
pub use views::stream::interval_cells;
pub use views::udp_max::trial_cells;

pub use format::{render, Format, Render, Style};
