//! Charts as data, and their SVG drawing: line and bar series on linear or
//! logarithmic axes, with error bars. A view carries charts as values
//! (`Block::Chart`); only the HTML renderer draws them, as inline SVG
//! written here as text, so a page works offline (nothing is fetched).

use std::fmt::Write;

/// Series colours, colour-blind friendly (Okabe-Ito).
pub const COLORS: &[&str] = &["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"];

/// An axis.
#[derive(Clone, Debug)]
pub struct Axis {
    pub label: String,
    pub min: f64,
    pub max: f64,
    pub log: bool,
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
    /// A linear axis.
    pub fn linear(label: impl Into<String>, min: f64, max: f64) -> Axis {
        Axis {
            label: label.into(),
            min,
            max,
            log: false,
        }
    }

    /// A logarithmic axis.
    pub fn log(label: impl Into<String>, min: f64, max: f64) -> Axis {
        Axis {
            log: true,
            ..Axis::linear(label, min, max)
        }
    }

    /// The x axis of a percentile plot: 1/(1-q) on a log scale up to `xmax`
    /// (at least 10, so a short spectrum still shows p50 and p90).
    pub fn percentiles(xmax: f64) -> Axis {
        Axis::log(
            "1/(1-q): 2 = p50, 10 = p90, 100 = p99, 1000 = p99.9 (log)",
            1.0,
            xmax.max(10.0),
        )
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

const W: f64 = 640.0;
const H: f64 = 320.0;
const L: f64 = 64.0;
const R: f64 = 16.0;
const T: f64 = 28.0;
const B: f64 = 64.0;

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Axis {
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

    /// Tick values: 1-2-5 steps on a log axis, about 5 round steps on a linear one.
    fn ticks(&self) -> Vec<f64> {
        let mut out = Vec::new();
        // An empty or broken range (no data) gets no ticks rather than an
        // endless loop.
        if !(self.min.is_finite() && self.max.is_finite() && self.max >= self.min) {
            return out;
        }
        if self.log {
            // 1-2-5 per decade; every integer multiple when that leaves
            // fewer than four labels (a range inside one decade).
            for steps in [&[1.0, 2.0, 5.0][..], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0][..]] {
                out.clear();
                let mut p = 10f64.powf(self.min.max(1e-12).log10().floor());
                while p <= self.max * 1.0001 {
                    for m in steps {
                        let v = p * m;
                        if v >= self.min * 0.9999 && v <= self.max * 1.0001 {
                            out.push(v);
                        }
                    }
                    p *= 10.0;
                }
                if out.len() >= 4 {
                    break;
                }
            }
        } else {
            let span = (self.max - self.min).max(1e-12);
            let raw = span / 5.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * mag)
                .find(|s| *s >= raw)
                .unwrap_or(raw);
            let mut v = (self.min / step).ceil() * step;
            while v <= self.max + step * 1e-9 {
                out.push(v);
                v += step;
            }
        }
        out
    }
}

/// A number for an axis label.
fn tick_label(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{}G", trim(v / 1e9))
    } else if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    // A value that rounds to zero is "0", never "-0".
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

impl Chart {
    /// Where each series' legend entry goes (left to right below the
    /// plot, wrapping), and how many rows that takes.
    fn legend_layout(&self) -> (Vec<(f64, f64)>, usize) {
        let (mut x, mut y, mut rows) = (L, H + 8.0, 0);
        let mut at = Vec::new();
        for s in &self.series {
            let w = 28.0 + 6.5 * s.name.chars().count() as f64;
            if x + w > W - R && x > L {
                x = L;
                y += 16.0;
                rows += 1;
            }
            rows = rows.max(1);
            at.push((x, y));
            x += w;
        }
        (at, rows)
    }

    /// The chart as an inline `<svg>` element.
    pub fn svg(&self) -> String {
        let pw = W - L - R;
        let ph = H - T - B;
        let px = |x: f64| L + self.x.norm(x) * pw;
        let py = |y: f64| T + (1.0 - self.y.norm(y)) * ph;
        let (legend, rows) = self.legend_layout();
        let height = H + rows as f64 * 16.0 + 6.0;
        let mut o = String::new();
        let _ = write!(
            o,
            r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height}" width="{W}" height="{height}" data-chart="{}" role="img"><title>{}</title>"#,
            esc(&self.kind),
            esc(&self.title)
        );
        let _ = write!(o, r#"<text x="{}" y="18" class="t">{}</text>"#, L, esc(&self.title));
        // Grid and ticks.
        for v in self.y.ticks() {
            let y = py(v);
            let _ = write!(
                o,
                r#"<line x1="{L}" x2="{}" y1="{y:.1}" y2="{y:.1}" class="g"/><text x="{}" y="{:.1}" class="yl">{}</text>"#,
                L + pw,
                L - 6.0,
                y + 4.0,
                tick_label(v)
            );
        }
        if self.categories.is_empty() {
            for v in self.x.ticks() {
                let x = px(v);
                let _ = write!(
                    o,
                    r#"<line x1="{x:.1}" x2="{x:.1}" y1="{T}" y2="{}" class="g"/><text x="{x:.1}" y="{}" class="xl">{}</text>"#,
                    T + ph,
                    T + ph + 16.0,
                    tick_label(v)
                );
            }
        } else {
            for (i, c) in self.categories.iter().enumerate() {
                let x = px(i as f64);
                let _ = write!(
                    o,
                    r#"<text x="{x:.1}" y="{}" class="xl" transform="rotate(-20 {x:.1} {})">{}</text>"#,
                    T + ph + 16.0,
                    T + ph + 16.0,
                    esc(c)
                );
            }
        }
        let _ = write!(
            o,
            r#"<rect x="{L}" y="{T}" width="{pw}" height="{ph}" class="f"/><text x="{}" y="{}" class="al">{}</text><text transform="translate(14 {}) rotate(-90)" class="al">{}</text>"#,
            L + pw / 2.0,
            H - 8.0,
            esc(&self.x.label),
            T + ph / 2.0,
            esc(&self.y.label)
        );
        for (i, b) in self.bands.iter().enumerate() {
            let (x0, x1) = (px(b.from), px(b.to));
            let fill = if i % 2 == 0 { "#f2f2f2" } else { "#e4ecf4" };
            let _ = write!(
                o,
                r#"<rect x="{x0:.1}" y="{T}" width="{:.1}" height="{ph}" fill="{fill}" class="band"/><text x="{:.1}" y="{}" class="xl">{}</text>"#,
                (x1 - x0).max(0.0),
                (x0 + x1) / 2.0,
                T + 12.0,
                esc(&b.label)
            );
        }
        if let Some(h) = self.hline {
            let y = py(h);
            let _ = write!(
                o,
                r#"<line x1="{L}" x2="{}" y1="{y:.1}" y2="{y:.1}" class="ref"/>"#,
                L + pw
            );
        }
        for s in &self.series {
            match s.kind {
                Kind::Points { radius } => {
                    for &(x, y) in &s.points {
                        let _ = write!(
                            o,
                            r#"<circle cx="{:.1}" cy="{:.1}" r="{radius}" fill="{}" fill-opacity="0.8" class="series"><title>{}: {}</title></circle>"#,
                            px(x),
                            py(y),
                            s.color,
                            esc(&s.name),
                            trim(y)
                        );
                    }
                }
                Kind::Line => {
                    let pts: Vec<String> = s
                        .points
                        .iter()
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
                            trim(y)
                        );
                    }
                }
            }
            for (&(x, _), &(lo, hi)) in s.points.iter().zip(&s.errors) {
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
        // Legend: below the plot, never over the data.
        for (s, &(lx, ly)) in self.series.iter().zip(&legend) {
            let _ = write!(
                o,
                r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="10" fill="{}"/><text x="{:.1}" y="{ly:.1}" class="lg">{}</text>"#,
                ly - 9.0,
                s.color,
                lx + 16.0,
                esc(&s.name)
            );
        }
        o.push_str("</svg>");
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_run_1_2_5_and_a_broken_range_has_none() {
        assert_eq!(
            Axis::log("us", 1.0, 100.0).ticks(),
            [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        );
        for (lo, hi) in [(1.0, f64::INFINITY), (f64::NAN, 10.0), (10.0, 1.0)] {
            assert!(Axis::log("us", lo, hi).ticks().is_empty(), "{lo}..{hi}");
            assert!(Axis::linear("s", lo, hi).ticks().is_empty(), "{lo}..{hi}");
        }
    }

    #[test]
    fn percentile_points_leave_out_the_maximum() {
        let pts = by_percentile([(0.5, 10.0), (0.99, 20.0), (1.0, 30.0)]);
        assert_eq!(pts.len(), 2);
        assert!((pts[0].0 - 2.0).abs() < 1e-9 && (pts[1].0 - 100.0).abs() < 1e-6);
    }
}
