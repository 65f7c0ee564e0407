//! A round trip as a waterfall (`--layers`): one horizontal bar per
//! segment, each starting where the one before it ends, its length the
//! segment's mean (so the bars end at the traced mean), a tick at its
//! median; the segments' names on the left, the tracer's cost under it.
//! Several runs are drawn side by side on one time scale with their rows
//! aligned by point (a run that lacks a point has one taller bar over the
//! rows it spans), so a reader sees which layer a difference sits in. HTML
//! draws it as inline SVG; text and Markdown print it as a table with the
//! bars in characters.

use crate::chart::esc;
use stackmeter_results::layers::Layers;
use std::fmt::Write;

/// One run's segment: from point `from` to point `to` (indexes into
/// [`Waterfall::points`]), starting at `start_us` since the client's send.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub from: usize,
    pub to: usize,
    pub start_us: f64,
    pub mean_us: f64,
    pub p50_us: f64,
}

/// The waterfall of one or more runs.
#[derive(Clone, Debug)]
pub struct Waterfall {
    /// What it shows.
    pub title: String,
    /// The runs' names (empty for a single run shown on its own).
    pub runs: Vec<String>,
    /// Every run's points, in the path's order.
    pub points: Vec<String>,
    /// Per run, its segments in order.
    pub bars: Vec<Vec<Bar>>,
    /// Written under it: each run's round trips traced and the tracer's
    /// cost.
    pub notes: Vec<String>,
}

/// The points of `a` and `b` (each in the path's order) in one order.
fn merge(a: &[String], b: &[String]) -> Vec<String> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        let next = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                j += 1;
                i += 1;
                x
            }
            (Some(x), Some(y)) if b[j..].contains(x) => {
                j += 1;
                let _ = x;
                y
            }
            (Some(x), _) => {
                i += 1;
                x
            }
            (None, Some(y)) => {
                j += 1;
                y
            }
            (None, None) => break,
        };
        if !out.contains(next) {
            out.push(next.clone());
        }
    }
    out
}

/// The points a run's segments pass, in the order of the path: each
/// point after every point a segment leads to it from (a topological
/// order of the segments; ties in the order first seen). A run whose round
/// trips saw different points has segments that skip some (4 -> 8 beside
/// 4 -> 5 -> ... -> 8), so the order of first appearance is not the
/// path's.
fn points_of(l: &Layers) -> Vec<String> {
    let mut seen: Vec<&String> = Vec::new();
    for s in &l.segments {
        for x in [&s.from, &s.to] {
            if !seen.contains(&x) {
                seen.push(x);
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    while out.len() < seen.len() {
        // The first point not placed whose every predecessor is placed; a
        // cycle (no such point) takes the first not placed.
        let placed = |p: &String| out.contains(p);
        let ready = |p: &String| !placed(p) && l.segments.iter().filter(|s| &s.to == p).all(|s| placed(&s.from));
        let next = seen
            .iter()
            .find(|p| ready(p))
            .or_else(|| seen.iter().find(|p| !placed(p)))
            .map(|p| (*p).clone());
        match next {
            Some(p) => out.push(p),
            None => break,
        }
    }
    out
}

impl Waterfall {
    /// The waterfall of `runs` (name, layers), titled `title`.
    pub fn of(title: &str, runs: &[(String, &Layers)]) -> Waterfall {
        let mut points: Vec<String> = Vec::new();
        for (_, l) in runs {
            points = merge(&points, &points_of(l));
        }
        let at = |p: &String| points.iter().position(|x| x == p).unwrap_or(0);
        let bars = runs
            .iter()
            .map(|(_, l)| {
                let mut start = 0.0;
                l.segments
                    .iter()
                    .map(|s| {
                        let b = Bar {
                            from: at(&s.from),
                            to: at(&s.to),
                            start_us: start,
                            mean_us: s.mean_us,
                            p50_us: s.p50_us,
                        };
                        start += s.mean_us;
                        b
                    })
                    .collect()
            })
            .collect();
        let named = runs.len() > 1;
        let notes = runs
            .iter()
            .map(|(name, l)| {
                let who = if named { format!("{name}: ") } else { String::new() };
                format!("{who}{}", cost_line(l))
            })
            .collect();
        Waterfall {
            title: title.into(),
            runs: runs.iter().map(|(n, _)| n.clone()).collect(),
            points,
            bars,
            notes,
        }
    }

    /// The longest run's end, us.
    fn span(&self) -> f64 {
        self.bars
            .iter()
            .flat_map(|r| r.iter().map(|b| b.start_us + b.mean_us))
            .fold(0.0, f64::max)
            .max(1e-9)
    }

    /// The rows: each step from one point to the next.
    fn rows(&self) -> usize {
        self.points.len().saturating_sub(1)
    }

    /// The bar of run `r` that starts at row `row`, and whether one of its
    /// bars covers the row without starting there.
    fn at_row(&self, r: usize, row: usize) -> (Option<&Bar>, bool) {
        let bars = &self.bars[r];
        let starts = bars.iter().find(|b| b.from == row);
        let covered = bars.iter().any(|b| b.from < row && b.to > row);
        (starts, covered)
    }
}

/// "10000 round trips traced of 10000, 0 records lost; the tracer's cost:
/// median 13.10 us traced against 12.50 untraced (x1.05)".
pub fn cost_line(l: &Layers) -> String {
    let traced = match l.exchanges {
        0 => format!("{} round trips traced", l.round_trips),
        n => format!("{} round trips traced of {n}", l.round_trips),
    };
    let cost = match (l.untraced_p50_us, l.cost_ratio()) {
        (Some(u), Some(r)) => format!(
            "the tracer's cost: median {:.2} us traced against {u:.2} us untraced just before (x{r:.2})",
            l.traced_p50_us
        ),
        _ => "the tracer's cost: no untraced run to compare with".into(),
    };
    format!("{traced}, {} records lost; {cost}", l.lost_records)
}

/// Characters of a text bar column.
const TEXT_BAR: usize = 32;

impl Waterfall {
    /// The table's columns (text and Markdown, `view::waterfall_table`):
    /// head, whether it is text (else a number), least width.
    pub fn columns(&self) -> Vec<(String, bool, usize)> {
        let named = self.runs.len() > 1;
        let mut cols = vec![("segment".to_string(), true, 44)];
        for r in 0..self.bars.len() {
            let who = if named {
                format!("{} ", self.runs[r])
            } else {
                String::new()
            };
            cols.push((format!("{who}p50 (us)"), false, 8));
            cols.push((format!("{who}mean (us)"), false, 9));
            cols.push((format!("{who}waterfall"), true, TEXT_BAR));
        }
        cols
    }

    /// The table's rows: a row per step, per run its median and mean, and
    /// the bar in characters.
    pub fn cells(&self) -> Vec<Vec<String>> {
        let scale = TEXT_BAR as f64 / self.span();
        let mut rows = Vec::new();
        for row in 0..self.rows() {
            let mut cells = vec![self.label(row)];
            for r in 0..self.bars.len() {
                match self.at_row(r, row) {
                    (Some(b), _) => {
                        cells.push(format!("{:.2}", b.p50_us));
                        cells.push(format!("{:.2}", b.mean_us));
                        cells.push(text_bar(b, scale, self.points.get(b.to), b.to > row + 1));
                    }
                    (None, covered) => {
                        let mark = if covered { "↓" } else { "" };
                        cells.extend([mark.to_string(), mark.to_string(), String::new()]);
                    }
                }
            }
            rows.push(cells);
        }
        rows
    }
}

/// A bar as characters: spaces to its start, then at least one block.
fn text_bar(b: &Bar, scale: f64, to: Option<&String>, spans: bool) -> String {
    let lead = (b.start_us * scale).round() as usize;
    let len = ((b.mean_us * scale).round() as usize).max(1);
    let mut s = " ".repeat(lead.min(TEXT_BAR)) + &"█".repeat(len);
    if let (true, Some(to)) = (spans, to) {
        let _ = write!(s, " (to {to})");
    }
    s
}

/// Pixels of the SVG: its width beside the labels, a row, a character of
/// a label (12 px system-ui, generously).
const WIDTH: f64 = 900.0;
const ROW: f64 = 22.0;
const CHAR: f64 = 6.8;
const TOP: f64 = 46.0;
const GAP: f64 = 24.0;

impl Waterfall {
    /// As inline SVG: labels on the left, a panel per run on one time
    /// scale, the notes under it.
    pub fn svg(&self) -> String {
        let runs = self.bars.len().max(1);
        let longest = (0..self.rows())
            .map(|r| self.label(r).chars().count())
            .max()
            .unwrap_or(0);
        let label = 12.0 + CHAR * longest as f64;
        let all = label + WIDTH;
        let panel = (WIDTH - 10.0 - GAP * (runs as f64 - 1.0)) / runs as f64;
        let scale = (panel - 120.0) / self.span();
        let rows = self.rows() as f64;
        let bottom = TOP + rows * ROW;
        let height = bottom + 36.0 + 18.0 * self.notes.len() as f64;
        let mut o = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" data-chart=\"waterfall\" viewBox=\"0 0 {all} {height}\" width=\"{all}\" height=\"{height}\" font-family=\"system-ui,sans-serif\" font-size=\"12\">"
        );
        let _ = write!(
            o,
            "<text x=\"4\" y=\"16\" font-weight=\"600\" font-size=\"13\">{}</text>",
            esc(&self.title)
        );
        for row in 0..self.rows() {
            let y = TOP + row as f64 * ROW;
            if row % 2 == 0 {
                let _ = write!(
                    o,
                    "<rect x=\"0\" y=\"{y}\" width=\"{all}\" height=\"{ROW}\" fill=\"#f6f6f6\"/>"
                );
            }
            let text = esc(&self.label(row));
            let _ = write!(
                o,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{text}</text>",
                label - 6.0,
                y + 15.0
            );
        }
        for r in 0..self.bars.len() {
            let x0 = label + r as f64 * (panel + GAP);
            self.panel_svg(&mut o, r, x0, panel, scale, bottom);
        }
        let _ = write!(
            o,
            "<text x=\"{label}\" y=\"{}\" fill=\"#444\">us since the client's send call (bar: mean, from where the ones before it end; tick: median; numbers: p50 / mean)</text>",
            bottom + 30.0
        );
        for (i, n) in self.notes.iter().enumerate() {
            let _ = write!(
                o,
                "<text x=\"4\" y=\"{}\" fill=\"#444\">{}</text>",
                bottom + 46.0 + 18.0 * i as f64,
                esc(n)
            );
        }
        o.push_str("</svg>");
        o
    }

    /// Run `r`'s panel at `x0`: its name, its bars with a tick at each
    /// median and the numbers beside them, the time axis under it.
    fn panel_svg(&self, o: &mut String, r: usize, x0: f64, panel: f64, scale: f64, bottom: f64) {
        const COLORS: [&str; 4] = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1"];
        let color = COLORS[r % COLORS.len()];
        if let Some(name) = self.runs.get(r).filter(|_| self.runs.len() > 1) {
            let _ = write!(
                o,
                "<text x=\"{x0}\" y=\"36\" font-weight=\"600\" fill=\"{color}\">{}</text>",
                esc(name)
            );
        }
        let _ = write!(o, "<g class=\"series\" fill=\"{color}\">");
        for b in &self.bars[r] {
            let y = TOP + b.from as f64 * ROW + 3.0;
            let h = b.to.saturating_sub(b.from).max(1) as f64 * ROW - 6.0;
            let (x, w) = (x0 + b.start_us * scale, (b.mean_us * scale).max(1.0));
            let _ = write!(o, "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{h}\"><title>mean {:.2} us, p50 {:.2} us</title></rect>", b.mean_us, b.p50_us);
            let tick = x + (b.p50_us * scale).min(w);
            let _ = write!(
                o,
                "<rect x=\"{:.1}\" y=\"{}\" width=\"2\" height=\"{}\" fill=\"#222\"/>",
                tick - 1.0,
                y - 2.0,
                h + 4.0
            );
            let _ = write!(
                o,
                "<text x=\"{:.1}\" y=\"{}\" fill=\"#222\">{:.2} / {:.2}</text>",
                x + w + 5.0,
                y + 12.0,
                b.p50_us,
                b.mean_us
            );
        }
        o.push_str("</g>");
        let _ = write!(
            o,
            "<line x1=\"{x0}\" y1=\"{bottom}\" x2=\"{}\" y2=\"{bottom}\" stroke=\"#888\"/>",
            x0 + panel - 110.0
        );
        let step = tick_step(self.span());
        let mut t = 0.0;
        while t <= self.span() * 1.0001 {
            let x = x0 + t * scale;
            let _ = write!(o, "<line x1=\"{x:.1}\" y1=\"{bottom}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#888\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444\">{}</text>", bottom + 4.0, bottom + 16.0, trim(t));
            t += step;
        }
    }

    /// Row `row`'s label: "from → to".
    fn label(&self, row: usize) -> String {
        format!("{} → {}", self.points[row], self.points[row + 1])
    }
}

/// A round step for about six ticks over `span`.
fn tick_step(span: f64) -> f64 {
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackmeter_results::layers::LayerSegment;

    fn layers(path: &[(&str, f64)]) -> Layers {
        let segments = path
            .windows(2)
            .map(|w| LayerSegment {
                from: w[0].0.into(),
                to: w[1].0.into(),
                count: 10,
                p50_us: w[1].1 * 0.9,
                mean_us: w[1].1,
            })
            .collect();
        Layers {
            round_trips: 10,
            segments,
            traced_mean_us: path.iter().map(|p| p.1).sum(),
            rtt_mean_us: 0.0,
            untraced_p50_us: Some(10.0),
            traced_p50_us: 11.0,
            lost_records: 0,
            exchanges: 10,
            unfinished: 0,
            unordered: 0,
            untraced_mean_us: None,
            probes: Vec::new(),
        }
    }

    /// The application's path and the sockmap's (which has no read) in
    /// one order: the sockmap's segment from the socket to the write spans
    /// the application's two rows, and each run's bars start where the one
    /// before ends.
    #[test]
    fn two_runs_align_by_point() {
        let app = layers(&[
            ("send", 0.0),
            ("socket", 2.0),
            ("has it", 10.0),
            ("writes", 1.0),
            ("back", 3.0),
        ]);
        let sockmap = layers(&[("send", 0.0), ("socket", 2.0), ("writes", 5.0), ("back", 3.0)]);
        let w = Waterfall::of("t", &[("app".into(), &app), ("sockmap".into(), &sockmap)]);
        assert_eq!(w.points, ["send", "socket", "has it", "writes", "back"]);
        let s = &w.bars[1][1];
        assert_eq!((s.from, s.to, s.start_us, s.mean_us), (1, 3, 2.0, 5.0));
        assert_eq!(w.bars[0][3].start_us, 13.0);
        let t = w.cells();
        assert_eq!((t.len(), w.columns().len()), (4, 7));
        assert_eq!(t[2][4], "↓", "the sockmap's bar covers the read's row: {:?}", t[2]);
        assert!(t[1][6].contains("(to writes)"), "{:?}", t[1]);
        let svg = w.svg();
        assert_eq!(
            svg.matches("<rect x=").count() - 2,
            2 * (4 + 3),
            "a bar and a tick per segment, two row stripes"
        );
        assert!(w.notes[1].starts_with("sockmap: 10 round trips traced of 10, 0 records lost"));
        assert!(w.notes[0].contains("(x1.10)"), "{}", w.notes[0]);
    }

    /// A run whose round trips saw different points: segments sorted by
    /// (from, to) put a segment that skips points (4 -> 8) before the ones
    /// it skips; the points still come out in the path's order, and every
    /// bar runs downwards.
    #[test]
    fn a_segment_that_skips_points_keeps_the_path_order() {
        let mut l = layers(&[("4", 0.0), ("5", 1.0), ("6", 1.0), ("7", 1.0), ("8", 1.0)]);
        let skip = LayerSegment {
            from: "4".into(),
            to: "8".into(),
            count: 2,
            p50_us: 3.0,
            mean_us: 3.0,
        };
        l.segments.insert(1, skip);
        assert_eq!(points_of(&l), ["4", "5", "6", "7", "8"]);
        let w = Waterfall::of("t", &[("run".into(), &l)]);
        assert!(w.bars[0].iter().all(|b| b.to > b.from), "{:?}", w.bars[0]);
        assert!(w.svg().contains("<rect"));
    }
}
