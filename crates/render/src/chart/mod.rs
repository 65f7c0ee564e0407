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

use std::fmt::Write;

/// Series colours, colour-blind friendly (Okabe-Ito).
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
pub struct Series {
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
    pub series: Vec<Series>,
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

impl Series {
    /// A line through `points`, in the `k`-th colour.
    pub fn line(name: impl Into<String>, k: usize, points: Vec<(f64, f64)>) -> Series {
        Series {
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
    pub fn new(kind: &str, title: impl Into<String>, x: Axis, y: Axis, series: Vec<Series>) -> Chart {
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

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

// ---------------------------------------------------------------------------
// Text measurement and wrapping.

/// The font the charts ask for: the metrics below are DejaVu Sans's
/// (Verdana's are alike), and a narrower face only leaves more room.
pub const FONT: &str = "'DejaVu Sans',Verdana,sans-serif";
/// Height above the baseline of a line of text, in ems (DejaVu Sans' ascent,
/// what a browser's text box starts at).
pub const ASCENT: f64 = 0.93;
/// Depth below the baseline, in ems.
pub const DESCENT: f64 = 0.24;

/// Advance of a character of DejaVu Sans (Book), in ems.
fn advance(c: char) -> f64 {
    match c {
        ' ' | ',' | '.' => 0.32,
        'i' | 'j' | 'l' | 'I' | 'J' | '\'' | '|' | ':' | ';' => 0.34,
        '!' | '/' | '\\' | 'f' | 't' | '(' | ')' | '[' | ']' | '-' => 0.4,
        'r' => 0.411,
        '"' | '*' | '_' | '`' => 0.5,
        's' | 'z' | 'c' | '?' => 0.55,
        'k' | 'v' | 'x' | 'y' | 'L' => 0.6,
        '0'..='9' | 'a' | 'b' | 'd' | 'e' | 'g' | 'h' | 'n' | 'o' | 'p' | 'q' | 'u' | '$' | '{' | '}' => 0.64,
        'F' | 'T' | 'Y' | 'P' | 'E' | 'S' | 'Z' | 'X' | 'A' | 'B' | 'V' | 'K' | 'R' | 'C' => 0.72,
        'w' | 'D' | 'G' | 'H' | 'N' | 'O' | 'Q' | 'U' | '&' => 0.8,
        '+' | '<' | '=' | '>' | '^' | '~' | '#' => 0.84,
        'M' | '%' => 0.95,
        'm' | 'W' | '@' => 1.0,
        _ if c.is_ascii() => 0.64,
        // Anything else: as wide as a capital M, to be safe.
        _ => 1.0,
    }
}

/// The estimated width of `s` at font size `size` (bold text is about a
/// tenth wider).
pub fn text_width(s: &str, size: f64, bold: bool) -> f64 {
    let ems: f64 = s.chars().map(advance).sum();
    ems * size * if bold { 1.1 } else { 1.0 }
}

/// `s` broken at spaces into lines no wider than `max` (estimated); a
/// word wider than `max` on its own is cut between characters.
pub fn wrap(s: &str, max: f64, size: f64, bold: bool) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        let joined = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if text_width(&joined, size, bold) <= max {
            cur = joined;
            continue;
        }
        if !cur.is_empty() {
            lines.push(std::mem::take(&mut cur));
        }
        // The word alone: cut it if it is too long for any line.
        for c in word.chars() {
            let mut next = cur.clone();
            next.push(c);
            if !cur.is_empty() && text_width(&next, size, bold) > max {
                lines.push(std::mem::take(&mut cur));
                cur.push(c);
            } else {
                cur = next;
            }
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// `s` shortened with an ellipsis to at most `max` wide.
fn ellipsize(s: &str, max: f64, size: f64) -> String {
    if text_width(s, size, false) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    for c in s.chars() {
        if text_width(&format!("{out}{c}..."), size, false) > max {
            break;
        }
        out.push(c);
    }
    format!("{}...", out.trim_end())
}

// ---------------------------------------------------------------------------
// Units and tick values.

/// Units of one kind, smallest first, with their size in the kind's base.
const FAMILIES: &[&[(&str, f64)]] = &[
    &[("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)],
    &[
        ("bit/s", 1.0),
        ("kbit/s", 1e3),
        ("Mbit/s", 1e6),
        ("Gbit/s", 1e9),
        ("Tbit/s", 1e12),
    ],
    &[("pps", 1.0), ("kpps", 1e3), ("Mpps", 1e6)],
    &[("tps", 1.0), ("ktps", 1e3), ("Mtps", 1e6)],
    &[("cps", 1.0), ("kcps", 1e3), ("Mcps", 1e6)],
    &[
        ("B/s", 1.0),
        ("KiB/s", 1024.0),
        ("MiB/s", 1048576.0),
        ("GiB/s", 1073741824.0),
    ],
    &[("B", 1.0), ("KiB", 1024.0), ("MiB", 1048576.0), ("GiB", 1073741824.0)],
];

/// The unit to label values of `unit` up to `largest` (absolute) with, and
/// the number to divide them by: the largest unit of the same kind in
/// which `largest` is still 1 or more (60000 us: ms, divide by 1000).
/// Units of no known kind are kept.
pub fn scale_unit(unit: &str, largest: f64) -> (String, f64) {
    let keep = (unit.to_string(), 1.0);
    let Some(family) = FAMILIES.iter().find(|f| f.iter().any(|u| u.0 == unit)) else {
        return keep;
    };
    let base = family.iter().find(|u| u.0 == unit).map_or(1.0, |u| u.1);
    if !(largest.is_finite() && largest > 0.0) {
        return keep;
    }
    let in_base = largest * base;
    let pick = family
        .iter()
        .rev()
        .find(|u| in_base >= u.1 * 0.999_999)
        .unwrap_or(&family[0]);
    // Every ratio between units of a kind is a whole number or its inverse.
    let r = pick.1 / base;
    let r = if r >= 1.0 { r.round() } else { 1.0 / (1.0 / r).round() };
    (pick.0.to_string(), r)
}

/// Which direction an axis runs on the page: its labels are as wide as
/// their text along x, one line high along y.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Along {
    X,
    Y,
}

/// A labelled value of an axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    pub value: f64,
    pub label: String,
}

/// Font size of tick labels.
const TICK: f64 = 11.0;

/// A way of choosing round values: every multiple of a step, or on a log
/// scale the given multiples of every `every`-th power of ten.
#[derive(Clone, Copy, Debug)]
enum Scheme {
    Linear(f64),
    Log(&'static [f64], i32),
}

const EVERY_DIGIT: &[f64] = &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
const ONE_TWO_FIVE: &[f64] = &[1.0, 2.0, 5.0];
const ONE_THREE: &[f64] = &[1.0, 3.0];
const ONE: &[f64] = &[1.0];

impl Scheme {
    /// Its values from `lo` to `hi` (inclusive, a hair of tolerance).
    fn values(&self, lo: f64, hi: f64) -> Vec<f64> {
        let mut out = Vec::new();
        if !(lo.is_finite() && hi.is_finite() && hi >= lo) {
            return out;
        }
        match *self {
            Scheme::Linear(step) => {
                let (a, b) = ((lo / step - 1e-9).ceil(), (hi / step + 1e-9).floor());
                if b - a > 1000.0 {
                    return out;
                }
                let mut k = a;
                while k <= b {
                    let v = k * step;
                    out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
                    k += 1.0;
                }
            }
            Scheme::Log(mults, every) => {
                if lo <= 0.0 {
                    return out;
                }
                let first = (lo.log10().floor() as i32).div_euclid(every) * every;
                let mut d = first;
                while d as f64 <= hi.log10().ceil() && out.len() < 1000 {
                    for m in mults {
                        let v = m * 10f64.powi(d);
                        if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                            out.push(v);
                        }
                    }
                    d += every;
                }
            }
        }
        out
    }

    /// The largest value of the scheme at or below `v`.
    fn floor(&self, v: f64) -> Option<f64> {
        let lo = match *self {
            Scheme::Linear(step) => v - step * 1.5,
            Scheme::Log(_, every) => v / 10f64.powi(every + 1),
        };
        self.values(lo, v).pop()
    }

    /// The smallest value of the scheme at or above `v`.
    fn ceil(&self, v: f64) -> Option<f64> {
        let hi = match *self {
            Scheme::Linear(step) => v + step * 1.5,
            Scheme::Log(_, every) => v * 10f64.powi(every + 1),
        };
        self.values(v, hi).first().copied()
    }
}

/// A tick value in at most a few significant digits, never "-0".
fn number(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".into();
    }
    let d = (3 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{v:.d$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

impl Axis {
    /// Position of `v` on the axis, 0 at `min` to 1 at `max` (a little
    /// past either end at most).
    fn norm(&self, v: f64) -> f64 {
        let (a, b, v) = if self.log {
            (self.min.max(1e-12).ln(), self.max.max(1e-12).ln(), v.max(1e-12).ln())
        } else {
            (self.min, self.max, v)
        };
        if b > a {
            ((v - a) / (b - a)).clamp(-0.05, 1.05)
        } else {
            0.5
        }
    }

    fn usable(&self) -> bool {
        self.min.is_finite() && self.max.is_finite() && self.max >= self.min && (!self.log || self.max > 0.0)
    }

    /// The unit the labels are written in, and what to divide values by.
    pub fn shown_unit(&self) -> (String, f64) {
        let largest = self.min.abs().max(self.max.abs());
        scale_unit(&self.unit, largest)
    }

    /// The axis' name as written beside it: "rtt (ms, log scale)".
    pub fn title(&self) -> String {
        let (unit, _) = self.shown_unit();
        let mut extra: Vec<&str> = Vec::new();
        if !unit.is_empty() {
            extra.push(&unit);
        }
        if self.log && self.format == TickFormat::Number {
            extra.push("log scale");
        }
        match (self.label.is_empty(), extra.is_empty()) {
            (_, true) => self.label.clone(),
            (true, false) => extra.join(", "),
            (false, false) => format!("{} ({})", self.label, extra.join(", ")),
        }
    }

    /// The label of the value `v`.
    fn label_of(&self, v: f64, div: f64) -> String {
        match self.format {
            TickFormat::Percentile => {
                let q = 100.0 * (1.0 - 1.0 / v.max(1.0));
                let s = format!("{q:.4}");
                let s = s.trim_end_matches('0').trim_end_matches('.');
                format!("p{s}")
            }
            TickFormat::Number => {
                let v = v / div;
                // Plain numbers of no unit keep an SI suffix when large.
                if self.unit.is_empty() && v.abs() >= 1e4 {
                    let (d, s) = match v.abs() {
                        a if a >= 1e9 => (1e9, "G"),
                        a if a >= 1e6 => (1e6, "M"),
                        _ => (1e3, "k"),
                    };
                    format!("{}{s}", number(v / d))
                } else {
                    number(v)
                }
            }
        }
    }

    fn ticks_of(&self, values: &[f64]) -> Vec<Tick> {
        let (_, div) = self.shown_unit();
        values
            .iter()
            .map(|&v| Tick {
                value: v,
                label: self.label_of(v, div),
            })
            .collect()
    }

    /// True when neighbouring labels of `ticks` keep apart on an axis
    /// `pixels` long.
    fn fits(&self, ticks: &[Tick], pixels: f64, along: Along) -> bool {
        let extent = |t: &Tick| match along {
            Along::X => text_width(&t.label, TICK, false),
            Along::Y => (ASCENT + DESCENT) * TICK,
        };
        // Room between labels, and a least distance between ticks so an
        // axis of short labels does not turn into a ruler.
        let (gap, least) = match along {
            Along::X => (10.0, 40.0),
            Along::Y => (8.0, 22.0),
        };
        ticks.windows(2).all(|w| {
            let d = (self.norm(w[1].value) - self.norm(w[0].value)).abs() * pixels;
            d >= least && d >= (extent(&w[0]) + extent(&w[1])) / 2.0 + gap
        })
    }

    /// The round-value schemes worth trying for this axis, densest first.
    fn schemes(&self) -> Vec<Scheme> {
        let linear = || -> Vec<Scheme> {
            let span = self.max - self.min;
            if !(span.is_finite() && span > 0.0) {
                return Vec::new();
            }
            let e = (span / 40.0).log10().floor() as i32;
            (e..e + 4)
                .flat_map(|e| ONE_TWO_FIVE.iter().map(move |m| Scheme::Linear(m * 10f64.powi(e))))
                .collect()
        };
        if !self.log {
            return linear();
        }
        let mut out = Vec::new();
        if self.format == TickFormat::Number {
            out.push(Scheme::Log(EVERY_DIGIT, 1));
        }
        out.push(Scheme::Log(ONE_TWO_FIVE, 1));
        out.push(Scheme::Log(ONE_THREE, 1));
        for every in [1, 2, 3, 5, 10, 20] {
            out.push(Scheme::Log(ONE, every));
        }
        if self.format == TickFormat::Number {
            out.extend(linear());
        }
        out
    }

    /// The axis as drawn `pixels` long, and its ticks: the densest scheme
    /// whose labels keep apart, preferring (on a log axis) powers of ten
    /// and their 1-2-5 or 1-3 steps to plain steps; at least two labels
    /// where any two fit. An axis that snaps is widened, scheme by scheme,
    /// to that scheme's values around the range; the axis returned no
    /// longer snaps (it is drawn as it is).
    pub fn drawn(&self, pixels: f64, along: Along) -> (Axis, Vec<Tick>) {
        let plain = Axis {
            snap: false,
            ..self.clone()
        };
        if !self.usable() {
            return (plain, Vec::new());
        }
        let tried: Vec<(Scheme, Axis, Vec<Tick>)> = self
            .schemes()
            .into_iter()
            .filter_map(|s| {
                let mut a = plain.clone();
                if self.snap {
                    a.min = s.floor(a.min).unwrap_or(a.min);
                    a.max = s.ceil(a.max).unwrap_or(a.max);
                }
                let t = a.ticks_of(&s.values(a.min, a.max));
                a.fits(&t, pixels, along).then_some((s, a, t))
            })
            .collect();
        let least = |n: usize, log_only: bool| {
            tried
                .iter()
                .find(|(s, _, t)| t.len() >= n && (!log_only || matches!(s, Scheme::Log(..))))
        };
        let best = match self.log {
            true => least(3, true).or_else(|| least(2, true)).or_else(|| least(2, false)),
            false => least(2, false),
        };
        match best.or_else(|| tried.iter().max_by_key(|(_, _, t)| t.len())) {
            Some((_, a, t)) => (a.clone(), t.clone()),
            None => (plain, Vec::new()),
        }
    }

    /// The labelled values of the axis drawn `pixels` long.
    pub fn ticks(&self, pixels: f64, along: Along) -> Vec<Tick> {
        self.drawn(pixels, along).1
    }
}

// ---------------------------------------------------------------------------
// Layout.

const PAD: f64 = 10.0;
/// Height of the plot area.
const PLOT_H: f64 = 230.0;
const TITLE: f64 = 14.0;
const TITLE_LINE: f64 = 18.0;
const AXIS: f64 = 12.0;
const AXIS_LINE: f64 = 15.0;
const LEGEND: f64 = 11.0;
const LEGEND_ROW: f64 = 18.0;
const BAND: f64 = 10.0;
/// Space between the plot and the x axis' labels: more than the lowest y
/// label reaches below the plot, so the two never touch in the corner.
const X_GAP: f64 = 9.0;
/// Category labels that do not fit side by side are turned this much.
const TURN: f64 = 40.0;
/// Longest category label, in characters (the rest is cut, with "...").
const CATEGORY_CHARS: usize = 28;

/// Where a text's `x` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

/// One piece of text as placed: its lines from the baseline `y` down,
/// turned by `rotate` degrees (clockwise, as SVG turns) about (`x`, `y`).
#[derive(Clone, Debug)]
pub struct Text {
    pub x: f64,
    pub y: f64,
    pub size: f64,
    pub bold: bool,
    pub anchor: Anchor,
    pub rotate: f64,
    pub lines: Vec<String>,
    pub line_height: f64,
    /// Shown on hover (a label cut short keeps its whole text here).
    pub tooltip: Option<String>,
}

impl Text {
    pub(crate) fn new(x: f64, y: f64, size: f64, anchor: Anchor, lines: Vec<String>) -> Text {
        Text {
            x,
            y,
            size,
            bold: false,
            anchor,
            rotate: 0.0,
            lines,
            line_height: size * 1.25,
            tooltip: None,
        }
    }

    /// The estimated box's corners, on the page (turned with the text).
    pub fn corners(&self) -> [(f64, f64); 4] {
        let w = self
            .lines
            .iter()
            .map(|l| text_width(l, self.size, self.bold))
            .fold(0.0, f64::max);
        let x0 = match self.anchor {
            Anchor::Start => 0.0,
            Anchor::Middle => -w / 2.0,
            Anchor::End => -w,
        };
        let top = -ASCENT * self.size;
        let bottom = (self.lines.len().max(1) - 1) as f64 * self.line_height + DESCENT * self.size;
        let (s, c) = self.rotate.to_radians().sin_cos();
        let turn = |(dx, dy): (f64, f64)| (self.x + dx * c - dy * s, self.y + dx * s + dy * c);
        [
            turn((x0, top)),
            turn((x0 + w, top)),
            turn((x0 + w, bottom)),
            turn((x0, bottom)),
        ]
    }

    /// The smallest upright box around it: (left, top, right, bottom).
    pub fn bounds(&self) -> (f64, f64, f64, f64) {
        let c = self.corners();
        let xs = c.iter().map(|p| p.0);
        let ys = c.iter().map(|p| p.1);
        (
            xs.clone().fold(f64::INFINITY, f64::min),
            ys.clone().fold(f64::INFINITY, f64::min),
            xs.fold(f64::NEG_INFINITY, f64::max),
            ys.fold(f64::NEG_INFINITY, f64::max),
        )
    }

    fn shift(&mut self, dx: f64, dy: f64) {
        self.x += dx;
        self.y += dy;
    }

    pub(crate) fn svg(&self, o: &mut String) {
        let anchor = match self.anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{:.1}" font-size="{}" text-anchor="{anchor}""#,
            self.x, self.y, self.size
        );
        if self.bold {
            o.push_str(r#" font-weight="bold""#);
        }
        if self.rotate != 0.0 {
            let _ = write!(o, r#" transform="rotate({} {:.1} {:.1})""#, self.rotate, self.x, self.y);
        }
        o.push('>');
        if let Some(t) = &self.tooltip {
            let _ = write!(o, "<title>{}</title>", esc(t));
        }
        if self.lines.len() == 1 {
            o.push_str(&esc(&self.lines[0]));
        } else {
            for (i, l) in self.lines.iter().enumerate() {
                let dy = if i == 0 { 0.0 } else { self.line_height };
                let _ = write!(o, r#"<tspan x="{:.1}" dy="{dy}">{}</tspan>"#, self.x, esc(l));
            }
        }
        o.push_str("</text>");
    }
}

/// Where everything of a chart goes.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The drawing's height (its width is [`WIDTH`]).
    pub height: f64,
    /// The plot area: left, top, width, height.
    pub plot: (f64, f64, f64, f64),
    /// The axes as drawn (widened when they snap).
    pub x: Axis,
    pub y: Axis,
    pub x_ticks: Vec<Tick>,
    pub y_ticks: Vec<Tick>,
    /// Every text: title, tick labels, axis names, band names, legend.
    pub texts: Vec<Text>,
    /// Where each series' legend swatch goes.
    pub legend: Vec<(f64, f64)>,
}

impl Chart {
    /// The chart laid out in a drawing [`WIDTH`] wide.
    pub fn layout(&self) -> Layout {
        let mut texts = Vec::new();
        // Title, wrapped.
        let lines = wrap(&self.title, WIDTH - 2.0 * PAD, TITLE, true);
        let n_title = lines.len();
        let mut title = Text::new(PAD, PAD + ASCENT * TITLE, TITLE, Anchor::Start, lines);
        title.bold = true;
        title.line_height = TITLE_LINE;
        texts.push(title);
        let top = PAD + n_title as f64 * TITLE_LINE + 10.0;

        // The y axis: its labels and name set the left margin.
        let (y, y_ticks) = self.y.drawn(PLOT_H, Along::Y);
        let y_label_w = y_ticks
            .iter()
            .map(|t| text_width(&t.label, TICK, false))
            .fold(0.0, f64::max);
        let y_name = wrap(&y.title(), PLOT_H + 20.0, AXIS, false);
        let name_w = y_name.len() as f64 * AXIS_LINE;
        let mut left = PAD + name_w + 6.0 + y_label_w + 6.0;

        // The x axis: its labels may need more room on either side.
        let mut right = PAD + 6.0;
        let mut x = self.x.clone();
        let mut x_ticks = Vec::new();
        let mut cats: Vec<Text> = Vec::new();
        for _ in 0..3 {
            let pw = WIDTH - left - right;
            (x, x_ticks) = self.x.drawn(pw, Along::X);
            let px = |v: f64| left + x.norm(v) * pw;
            let base = top + PLOT_H;
            let (need_l, need_r);
            if self.categories.is_empty() {
                let ends = |t: &Tick| (px(t.value), text_width(&t.label, TICK, false) / 2.0);
                need_l = x_ticks.first().map_or(0.0, |t| {
                    let (p, h) = ends(t);
                    (PAD + h) - p
                });
                need_r = x_ticks.last().map_or(0.0, |t| {
                    let (p, h) = ends(t);
                    p + h - (WIDTH - PAD)
                });
            } else {
                // Categories are named, not numbered: no ticks, no grid.
                x_ticks.clear();
                cats = self.category_texts(&x, left, pw, base);
                need_l = cats.iter().map(|t| PAD - t.bounds().0).fold(0.0, f64::max);
                need_r = cats.iter().map(|t| t.bounds().2 - (WIDTH - PAD)).fold(0.0, f64::max);
            }
            if need_l <= 0.01 && need_r <= 0.01 {
                break;
            }
            left += need_l.max(0.0);
            right += need_r.max(0.0);
        }
        let pw = WIDTH - left - right;
        let px = |v: f64| left + x.norm(v) * pw;
        let py = |v: f64| top + (1.0 - y.norm(v)) * PLOT_H;
        let mut below = top + PLOT_H;

        // Tick labels.
        for t in &y_ticks {
            texts.push(Text::new(
                left - 6.0,
                py(t.value) + (ASCENT - DESCENT) / 2.0 * TICK,
                TICK,
                Anchor::End,
                vec![t.label.clone()],
            ));
        }
        if self.categories.is_empty() {
            for t in &x_ticks {
                texts.push(Text::new(
                    px(t.value),
                    top + PLOT_H + X_GAP + ASCENT * TICK,
                    TICK,
                    Anchor::Middle,
                    vec![t.label.clone()],
                ));
            }
            if !x_ticks.is_empty() {
                below += X_GAP + (ASCENT + DESCENT) * TICK;
            }
        } else {
            below = cats.iter().map(|t| t.bounds().3).fold(below, f64::max);
            texts.extend(cats);
        }

        // Axis names.
        if !y_name.is_empty() {
            let mut t = Text::new(PAD + ASCENT * AXIS, top + PLOT_H / 2.0, AXIS, Anchor::Middle, y_name);
            t.rotate = -90.0;
            t.line_height = AXIS_LINE;
            texts.push(t);
        }
        let x_name = wrap(&x.title(), WIDTH - 2.0 * PAD, AXIS, false);
        if !x_name.is_empty() {
            let w = x_name.iter().map(|l| text_width(l, AXIS, false)).fold(0.0, f64::max);
            let cx = (left + pw / 2.0).clamp(PAD + w / 2.0, WIDTH - PAD - w / 2.0);
            let n = x_name.len();
            let mut t = Text::new(cx, below + 6.0 + ASCENT * AXIS, AXIS, Anchor::Middle, x_name);
            t.line_height = AXIS_LINE;
            below += 6.0 + (n - 1) as f64 * AXIS_LINE + (ASCENT + DESCENT) * AXIS;
            texts.push(t);
        }

        // Band names, inside the top of the plot where they fit their band.
        for b in &self.bands {
            let (x0, x1) = (px(b.from), px(b.to));
            let w = text_width(&b.label, BAND, false);
            if w + 6.0 <= (x1 - x0).abs() {
                texts.push(Text::new(
                    (x0 + x1) / 2.0,
                    top + 4.0 + ASCENT * BAND,
                    BAND,
                    Anchor::Middle,
                    vec![b.label.clone()],
                ));
            }
        }

        // Legend rows under everything, never over the data.
        let mut legend = Vec::new();
        let room = WIDTH - 2.0 * PAD;
        let (mut lx, mut ly) = (PAD, below + 10.0 + ASCENT * LEGEND);
        let mut rows = 0;
        for s in &self.series {
            let name = ellipsize(&s.name, room - 18.0, LEGEND);
            let w = 16.0 + text_width(&name, LEGEND, false) + 14.0;
            if lx + w > WIDTH - PAD + 14.0 && lx > PAD {
                lx = PAD;
                ly += LEGEND_ROW;
            }
            rows = rows.max(1);
            legend.push((lx, ly));
            let mut t = Text::new(lx + 16.0, ly, LEGEND, Anchor::Start, vec![name.clone()]);
            if name != s.name {
                t.tooltip = Some(s.name.clone());
            }
            texts.push(t);
            lx += w;
        }
        let height = if rows > 0 {
            ly + DESCENT * LEGEND + PAD
        } else {
            below + PAD
        };
        Layout {
            height: height.ceil(),
            plot: (left, top, pw, PLOT_H),
            x,
            y,
            x_ticks,
            y_ticks,
            texts,
            legend,
        }
    }

    /// The category names under the plot: side by side where they fit,
    /// else turned; every k-th when even turned ones would touch.
    fn category_texts(&self, x: &Axis, left: f64, pw: f64, base: f64) -> Vec<Text> {
        let px = |v: f64| left + x.norm(v) * pw;
        let names: Vec<(String, bool)> = self
            .categories
            .iter()
            .map(|c| {
                let cut = c.chars().count() > CATEGORY_CHARS;
                let s: String = c.chars().take(CATEGORY_CHARS).collect();
                (if cut { format!("{}...", s.trim_end()) } else { s }, cut)
            })
            .collect();
        let slot = if self.categories.len() > 1 {
            (px(1.0) - px(0.0)).abs()
        } else {
            pw
        };
        let widest = names
            .iter()
            .map(|(n, _)| text_width(n, TICK, false))
            .fold(0.0, f64::max);
        let flat = widest + 8.0 <= slot;
        let line = (ASCENT + DESCENT) * TICK + 2.0;
        let every = match flat {
            true => 1,
            false => (line / (slot * TURN.to_radians().sin())).ceil().max(1.0) as usize,
        };
        let mut out = Vec::new();
        for (i, (name, cut)) in names.into_iter().enumerate() {
            if i % every != 0 {
                continue;
            }
            let full = self.categories[i].clone();
            let mut t = if flat {
                Text::new(
                    px(i as f64),
                    base + X_GAP + ASCENT * TICK,
                    TICK,
                    Anchor::Middle,
                    vec![name],
                )
            } else {
                let mut t = Text::new(px(i as f64), base, TICK, Anchor::End, vec![name]);
                t.rotate = -TURN;
                // Hang the turned label just under the axis, its end at the tick.
                let (_, top, right, _) = t.bounds();
                t.shift(px(i as f64) + 3.0 - right, base + X_GAP - top);
                t
            };
            if cut {
                t.tooltip = Some(full);
            }
            out.push(t);
        }
        out
    }

    /// The chart as an inline `<svg>` element: as wide as its container,
    /// its height from its proportions.
    pub fn svg(&self) -> String {
        let lay = self.layout();
        let (left, top, pw, ph) = lay.plot;
        let (x, y) = (&lay.x, &lay.y);
        let px = |v: f64| left + x.norm(v) * pw;
        let py = |v: f64| top + (1.0 - y.norm(v)) * ph;
        let height = lay.height;
        let mut o = String::new();
        let _ = write!(
            o,
            r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="100%" style="height:auto" font-family="{FONT}" fill="#222" data-chart="{}" role="img"><title>{}</title>"##,
            esc(&self.kind),
            esc(&self.title)
        );
        // Bands, then the grid, under everything else.
        for (i, b) in self.bands.iter().enumerate() {
            let (x0, x1) = (px(b.from), px(b.to));
            let fill = if i % 2 == 0 { "#f2f2f2" } else { "#e4ecf4" };
            let _ = write!(
                o,
                r#"<rect x="{:.1}" y="{top:.1}" width="{:.1}" height="{ph}" fill="{fill}" class="band"><title>{}</title></rect>"#,
                x0.min(x1),
                (x1 - x0).abs(),
                esc(&b.label)
            );
        }
        for t in &lay.y_ticks {
            let v = py(t.value);
            let _ = write!(
                o,
                r##"<line x1="{left:.1}" x2="{:.1}" y1="{v:.1}" y2="{v:.1}" stroke="#e6e6e6"/>"##,
                left + pw
            );
        }
        for t in &lay.x_ticks {
            let v = px(t.value);
            let _ = write!(
                o,
                r##"<line x1="{v:.1}" x2="{v:.1}" y1="{top:.1}" y2="{:.1}" stroke="#e6e6e6"/>"##,
                top + ph
            );
        }
        let _ = write!(
            o,
            r##"<rect x="{left:.1}" y="{top:.1}" width="{pw:.1}" height="{ph}" fill="none" stroke="#888"/>"##
        );
        if let Some(h) = self.hline {
            let v = py(h);
            let _ = write!(
                o,
                r##"<line x1="{left:.1}" x2="{:.1}" y1="{v:.1}" y2="{v:.1}" stroke="#444" stroke-dasharray="4 3" class="ref"/>"##,
                left + pw
            );
        }
        for s in &self.series {
            self.series_svg(&mut o, s, y, &px, &py);
        }
        for (s, &(lx, ly)) in self.series.iter().zip(&lay.legend) {
            let _ = write!(
                o,
                r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="10" fill="{}"/>"#,
                ly - 9.0,
                s.color
            );
        }
        for t in &lay.texts {
            t.svg(&mut o);
        }
        o.push_str("</svg>");
        o
    }

    fn series_svg(&self, o: &mut String, s: &Series, y_axis: &Axis, px: &dyn Fn(f64) -> f64, py: &dyn Fn(f64) -> f64) {
        let (unit, div) = y_axis.shown_unit();
        let value = |v: f64| format!("{} {unit}", number(v / div)).trim_end().to_string();
        match s.kind {
            Kind::Points { radius } => {
                for &(x, y) in s.points.iter().filter(|p| p.1.is_finite()) {
                    let _ = write!(
                        o,
                        r#"<circle cx="{:.1}" cy="{:.1}" r="{radius}" fill="{}" fill-opacity="0.8" class="series"><title>{}: {}</title></circle>"#,
                        px(x),
                        py(y),
                        s.color,
                        esc(&s.name),
                        esc(&value(y))
                    );
                }
            }
            Kind::Line => {
                let pts: Vec<String> = s
                    .points
                    .iter()
                    .filter(|p| p.0.is_finite() && p.1.is_finite())
                    .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                    .collect();
                let _ = write!(
                    o,
                    r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2" class="series"><title>{}</title></polyline>"#,
                    pts.join(" "),
                    s.color,
                    esc(&s.name)
                );
            }
            Kind::Bars { width, base } => {
                for &(x, y) in &s.points {
                    // On a log axis `width` is a factor (the bin's hi/lo).
                    let (x0, x1) = if self.x.log {
                        (px(x / width.sqrt()), px(x * width.sqrt()))
                    } else {
                        (px(x - width / 2.0), px(x + width / 2.0))
                    };
                    let (y0, y1) = (py(y), py(base));
                    let _ = write!(
                        o,
                        r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}" fill-opacity="0.6" class="series"><title>{}: {}</title></rect>"#,
                        x0.min(x1),
                        y0.min(y1),
                        (x1 - x0).abs().max(1.0),
                        (y1 - y0).abs().max(0.5),
                        s.color,
                        esc(&s.name),
                        esc(&value(y))
                    );
                }
            }
        }
        // An error bar of no finite bounds is not drawn (no interval).
        for (&(x, _), &(lo, hi)) in s.points.iter().zip(&s.errors) {
            if !(lo.is_finite() && hi.is_finite()) {
                continue;
            }
            let x = px(x);
            let (a, b) = (py(lo), py(hi));
            let _ = write!(
                o,
                r##"<path d="M{:.1} {a:.1}V{b:.1}M{:.1} {a:.1}h8M{:.1} {b:.1}h8" stroke="#222" stroke-width="1.5" class="err"/>"##,
                x,
                x - 4.0,
                x - 4.0
            );
        }
    }
}

#[cfg(test)]
mod tests;
