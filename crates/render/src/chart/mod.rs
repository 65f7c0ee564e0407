//! Charts as data, and their SVG drawing: line, point and bar series on
//! linear or logarithmic axes, with error bars and shaded bands. A view
//! carries charts as values (`Block::Chart`); only the HTML renderer draws
//! them, as inline SVG written here as text, so a page works offline
//! (nothing is fetched).
//!
//! SVG has no text layout of its own, so the layout is done here, from an
//! estimate of each label's width ([`text_width`]: DejaVu Sans metrics,
//! among the widest common sans-serif faces, and the face the SVG asks for
//! first): titles and axis names wrap onto more lines, each axis shows its
//! values in the unit that suits its range (ms rather than 60000 us), and
//! tick steps are chosen so that neighbouring labels keep apart. The drawing
//! has a fixed coordinate system (a `viewBox` [`WIDTH`] units wide) and
//! scales with its container, so what does not overlap here does not
//! overlap at any page width.

//!
//! The files by job: this one is the model (axes, series, bands: what a
//! view builds); `text.rs` measures and wraps text; `scale.rs` picks the
//! unit that suits an axis' range; `ticks.rs` picks tick values whose
//! labels keep apart; `layout.rs` places every text and the plot;
//! `svg.rs` draws the laid-out chart.

mod layout;
mod model;
mod scale;
mod svg;
mod text;
mod ticks;

pub use layout::{Anchor, Layout, Text};
pub use model::{by_percentile, Axis, Band, Chart, Kind, TickFormat, Trace, COLORS, WIDTH};
pub use scale::scale_unit;
pub(crate) use text::esc;
pub use text::{text_width, wrap, ASCENT, DESCENT, FONT};
pub use ticks::{Along, Tick};

#[cfg(test)]
mod tests;
