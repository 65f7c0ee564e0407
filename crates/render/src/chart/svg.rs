//! A laid-out chart drawn as inline SVG text.

use super::layout::{Anchor, Text};
use super::model::{Axis, Chart, Kind, Trace, WIDTH};
use super::text::{esc, FONT};
use super::ticks::number;

use std::fmt::Write;

impl Chart {
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

    fn series_svg(&self, o: &mut String, s: &Trace, y_axis: &Axis, px: &dyn Fn(f64) -> f64, py: &dyn Fn(f64) -> f64) {
        let (unit, div) = y_axis.shown_unit();
        let value = |v: f64| format!("{} {unit}", number(v / div)).trim_end().to_string();
        match s.kind {
            Kind::Points { radius } => {
                for (i, &(x, y)) in s.points.iter().enumerate().filter(|p| p.1 .1.is_finite()) {
                    // A point with an interval names both of its ends.
                    let shown = match s.errors.get(i) {
                        Some(&(lo, hi)) if lo.is_finite() && hi.is_finite() => {
                            format!("{} ({} .. {})", value(y), value(lo), value(hi))
                        }
                        _ => value(y),
                    };
                    let _ = write!(
                        o,
                        r#"<circle cx="{:.1}" cy="{:.1}" r="{radius}" fill="{}" fill-opacity="0.8" class="series"><title>{}: {}</title></circle>"#,
                        px(x),
                        py(y),
                        s.color,
                        esc(&s.name),
                        esc(&shown)
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

impl Text {
    /// The text as an SVG `<text>` element (lines as `<tspan>`s).
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
