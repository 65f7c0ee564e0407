//! A chart laid out in a drawing `WIDTH` units wide: the title wrapped, the
//! margins that the tick labels and axis names need, category labels
//! turned when they do not fit side by side, band names, the legend rows.

use super::model::{Axis, Chart, WIDTH};
use super::text::{ellipsize, text_width, wrap, ASCENT, DESCENT};
use super::ticks::{Along, Tick, TICK};

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

/// The x axis as fitted between the margins its labels need.
struct FittedX {
    left: f64,
    right: f64,
    axis: Axis,
    ticks: Vec<Tick>,
    /// Category labels (a chart of named categories has no ticks).
    cats: Vec<Text>,
}

impl Chart {
    /// The chart laid out in a drawing [`WIDTH`] wide: the title, the
    /// margins the axes' labels need, tick labels, axis names, band names
    /// and the legend, each a step below.
    pub fn layout(&self) -> Layout {
        let mut texts = Vec::new();
        let top = self.title_texts(&mut texts);
        let (y, y_ticks) = self.y.drawn(PLOT_H, Along::Y);
        let y_label_w = y_ticks
            .iter()
            .map(|t| text_width(&t.label, TICK, false))
            .fold(0.0, f64::max);
        let y_name = wrap(&y.title(), PLOT_H + 20.0, AXIS, false);
        let left = PAD + y_name.len() as f64 * AXIS_LINE + 6.0 + y_label_w + 6.0;
        let fit = self.fit_x(left, top);
        let pw = WIDTH - fit.left - fit.right;
        let below = self.tick_texts(&mut texts, &fit, &y, &y_ticks, top);
        let below = axis_names(&mut texts, y_name, &fit, top, below);
        self.band_texts(&mut texts, &fit, top);
        let (legend, height) = self.legend_texts(&mut texts, below);
        Layout {
            height: height.ceil(),
            plot: (fit.left, top, pw, PLOT_H),
            x: fit.axis,
            y,
            x_ticks: fit.ticks,
            y_ticks,
            texts,
            legend,
        }
    }

    /// The title, wrapped; returns the plot's top.
    fn title_texts(&self, texts: &mut Vec<Text>) -> f64 {
        let lines = wrap(&self.title, WIDTH - 2.0 * PAD, TITLE, true);
        let n_title = lines.len();
        let mut title = Text::new(PAD, PAD + ASCENT * TITLE, TITLE, Anchor::Start, lines);
        title.bold = true;
        title.line_height = TITLE_LINE;
        texts.push(title);
        PAD + n_title as f64 * TITLE_LINE + 10.0
    }

    /// The x axis between margins wide enough for its first and last
    /// labels (or its category labels), widened at most three times.
    fn fit_x(&self, mut left: f64, top: f64) -> FittedX {
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
        FittedX {
            left,
            right,
            axis: x,
            ticks: x_ticks,
            cats,
        }
    }

    /// The tick labels of both axes (or the category labels); returns the
    /// lowest point they reach.
    fn tick_texts(&self, texts: &mut Vec<Text>, fit: &FittedX, y: &Axis, y_ticks: &[Tick], top: f64) -> f64 {
        let pw = WIDTH - fit.left - fit.right;
        let px = |v: f64| fit.left + fit.axis.norm(v) * pw;
        let py = |v: f64| top + (1.0 - y.norm(v)) * PLOT_H;
        let mut below = top + PLOT_H;
        for t in y_ticks {
            texts.push(Text::new(
                fit.left - 6.0,
                py(t.value) + (ASCENT - DESCENT) / 2.0 * TICK,
                TICK,
                Anchor::End,
                vec![t.label.clone()],
            ));
        }
        if self.categories.is_empty() {
            for t in &fit.ticks {
                texts.push(Text::new(
                    px(t.value),
                    top + PLOT_H + X_GAP + ASCENT * TICK,
                    TICK,
                    Anchor::Middle,
                    vec![t.label.clone()],
                ));
            }
            if !fit.ticks.is_empty() {
                below += X_GAP + (ASCENT + DESCENT) * TICK;
            }
        } else {
            below = fit.cats.iter().map(|t| t.bounds().3).fold(below, f64::max);
            texts.extend(fit.cats.iter().cloned());
        }
        below
    }

    /// Band names, inside the top of the plot where they fit their band.
    fn band_texts(&self, texts: &mut Vec<Text>, fit: &FittedX, top: f64) {
        let pw = WIDTH - fit.left - fit.right;
        let px = |v: f64| fit.left + fit.axis.norm(v) * pw;
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
    }

    /// Legend rows under everything, never over the data: where each
    /// swatch goes, and the drawing's height.
    fn legend_texts(&self, texts: &mut Vec<Text>, below: f64) -> (Vec<(f64, f64)>, f64) {
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
        (legend, height)
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
}

/// The axes' names: the y axis' turned at the left, the x axis' centred
/// under the tick labels; returns the lowest point reached.
fn axis_names(texts: &mut Vec<Text>, y_name: Vec<String>, fit: &FittedX, top: f64, mut below: f64) -> f64 {
    let pw = WIDTH - fit.left - fit.right;
    if !y_name.is_empty() {
        let mut t = Text::new(PAD + ASCENT * AXIS, top + PLOT_H / 2.0, AXIS, Anchor::Middle, y_name);
        t.rotate = -90.0;
        t.line_height = AXIS_LINE;
        texts.push(t);
    }
    let x_name = wrap(&fit.axis.title(), WIDTH - 2.0 * PAD, AXIS, false);
    if !x_name.is_empty() {
        let w = x_name.iter().map(|l| text_width(l, AXIS, false)).fold(0.0, f64::max);
        let cx = (fit.left + pw / 2.0).clamp(PAD + w / 2.0, WIDTH - PAD - w / 2.0);
        let n = x_name.len();
        let mut t = Text::new(cx, below + 6.0 + ASCENT * AXIS, AXIS, Anchor::Middle, x_name);
        t.line_height = AXIS_LINE;
        below += 6.0 + (n - 1) as f64 * AXIS_LINE + (ASCENT + DESCENT) * AXIS;
        texts.push(t);
    }
    below
}
