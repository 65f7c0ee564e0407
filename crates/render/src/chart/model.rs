//! Charts as data: axes, series, bands and categories, as a view builds
//! them. Nothing here measures or draws.

/// Trace colours, colour-blind friendly (Okabe-Ito).
pub const COLORS: &[&str] = &["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"];

/// The width of every chart's coordinate system (its `viewBox`); the page
/// scales it to the column it is given.
pub const WIDTH: f64 = 640.0;

/// How an axis writes its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TickFormat {
    /// Numbers in the axis' unit, scaled ("2 ms", "40 Gbit/s").
    Number,
    /// x = 1/(1-q) written as the percentile q ("p99", "p99.9").
    Percentile,
}

/// An axis.
#[derive(Clone, Debug)]
pub struct Axis {
    /// What the axis shows ("rtt", "throughput"); may be empty.
    pub label: String,
    /// The unit of the values given ("us", "Mbit/s", "s"); the axis
    /// chooses a larger or smaller one of the same kind for its labels.
    /// Empty: plain numbers.
    pub unit: String,
    pub min: f64,
    pub max: f64,
    pub log: bool,
    /// Widen the range to the tick values just outside it, so the lowest
    /// and highest points sit between labelled values.
    pub snap: bool,
    pub format: TickFormat,
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Line,
    /// A dot per point (with its error bar, if any): ratios with their
    /// intervals, per-repetition figures.
    Points {
        radius: f64,
    },
    /// Vertical bars from `y = base` (per point: x centre; `width` in data
    /// units, or as the factor hi/lo on a log axis).
    Bars {
        width: f64,
        base: f64,
    },
}

/// One series.
#[derive(Clone, Debug)]
pub struct Trace {
    pub name: String,
    pub color: String,
    pub points: Vec<(f64, f64)>,
    /// Error bars (low, high) per point, same order as `points`.
    pub errors: Vec<(f64, f64)>,
    pub kind: Kind,
}

/// A chart.
#[derive(Clone, Debug)]
pub struct Chart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Trace>,
    /// Category names for the x axis (bar charts), at x = 0, 1, 2, ...
    pub categories: Vec<String>,
    /// A horizontal reference line (for example ratio 1).
    pub hline: Option<f64>,
    /// Name written into `data-chart` (what the browser test looks for).
    pub kind: String,
    /// Shaded spans of the x axis with a name each (the phases of a test
    /// over time), drawn under the series.
    pub bands: Vec<Band>,
}

/// A shaded span of the x axis.
#[derive(Clone, Debug)]
pub struct Band {
    pub from: f64,
    pub to: f64,
    pub label: String,
}

impl Axis {
    /// A linear axis of plain numbers.
    pub fn linear(label: impl Into<String>, min: f64, max: f64) -> Axis {
        Axis {
            label: label.into(),
            unit: String::new(),
            min,
            max,
            log: false,
            snap: false,
            format: TickFormat::Number,
        }
    }

    /// A logarithmic axis of plain numbers.
    pub fn log(label: impl Into<String>, min: f64, max: f64) -> Axis {
        Axis {
            log: true,
            ..Axis::linear(label, min, max)
        }
    }

    /// The same axis with values in `unit` ("us", "Mbit/s", "s", ...).
    pub fn unit(self, unit: impl Into<String>) -> Axis {
        Axis {
            unit: unit.into(),
            ..self
        }
    }

    /// The same axis widened to the tick values around its range.
    pub fn snapped(self) -> Axis {
        Axis { snap: true, ..self }
    }

    /// The x axis of a percentile plot: 1/(1-q) on a log scale up to `xmax`
    /// (at least 10, so a short spectrum still shows p50 and p90), labelled
    /// with the percentiles themselves.
    pub fn percentiles(xmax: f64) -> Axis {
        Axis {
            format: TickFormat::Percentile,
            ..Axis::log("percentile, spaced as 1/(1-q)", 1.0, xmax.max(10.0))
        }
    }
}

/// HdrHistogram's percentile plot: each (quantile, value) as
/// (1/(1-q), value), so the tail (p99, p99.9 ...) gets as much room as the
/// body. The maximum (q = 1) has no place on that axis and is left out.
pub fn by_percentile(points: impl IntoIterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    points
        .into_iter()
        .filter(|(q, _)| *q < 1.0)
        .map(|(q, v)| (1.0 / (1.0 - q), v))
        .collect()
}

impl Trace {
    /// A line through `points`, in the `k`-th colour.
    pub fn line(name: impl Into<String>, k: usize, points: Vec<(f64, f64)>) -> Trace {
        Trace {
            name: name.into(),
            color: COLORS[k % COLORS.len()].into(),
            points,
            errors: Vec::new(),
            kind: Kind::Line,
        }
    }
}

impl Chart {
    /// A chart of `series` named `kind` (what `data-chart` says), without
    /// categories or a reference line.
    pub fn new(kind: &str, title: impl Into<String>, x: Axis, y: Axis, series: Vec<Trace>) -> Chart {
        Chart {
            title: title.into(),
            x,
            y,
            series,
            categories: Vec::new(),
            hline: None,
            kind: kind.into(),
            bands: Vec::new(),
        }
    }
}
