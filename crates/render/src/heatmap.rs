//! A matrix of one figure (clients down, targets across) coloured by how
//! far each cell is from a centre value: the fleet's pair matrix. HTML
//! draws it as inline SVG; text and Markdown print it as a table
//! (`render::heatmap_table`).

use stackmeter_statistics::Direction;

use crate::chart::{esc, text_width, wrap, Anchor, Text, ASCENT, DESCENT, FONT};
use stackmeter_results::num;

/// A heatmap: rows by columns of values around `center`.
#[derive(Clone, Debug)]
pub struct Heatmap {
    /// What it shows.
    pub title: String,
    /// Row names (clients).
    pub rows: Vec<String>,
    /// Column names (targets).
    pub cols: Vec<String>,
    /// `cells[row][col]`; `None`: not measured.
    pub cells: Vec<Vec<Option<f64>>>,
    /// Unit of the values.
    pub unit: String,
    /// True when a lower value is better.
    pub direction: Direction,
    /// The typical value: a cell here is neutral, further the bad way is redder.
    pub center: f64,
    /// Rows to outline (a node named as a suspect as a client).
    pub marked_rows: Vec<usize>,
    /// Columns to outline (a node named as a suspect as a target).
    pub marked_cols: Vec<usize>,
}

/// How many times worse than the centre is fully red.
const RED_AT: f64 = 16.0;

impl Heatmap {
    /// How many times worse than the centre `v` is (1: as good or better).
    fn worse(&self, v: f64) -> f64 {
        let (v, c) = (v.max(0.0) + 1e-12, self.center.max(0.0) + 1e-12);
        let r = match self.direction {
            Direction::LowerIsBetter => v / c,
            Direction::HigherIsBetter => c / v,
        };
        r.max(1.0)
    }

    /// The fill of a cell: pale green at or better than the centre, through
    /// yellow to red at [`RED_AT`] times worse.
    fn fill(&self, v: f64) -> String {
        let t = (self.worse(v).log2() / RED_AT.log2()).clamp(0.0, 1.0);
        // Hue 120 (green) to 0 (red); lighter near the centre.
        let hue = 120.0 * (1.0 - t);
        let light = 88.0 - 38.0 * t;
        format!("hsl({hue:.0},70%,{light:.0}%)")
    }

    /// Inline SVG (its title only as the SVG's `<title>`: the page writes
    /// it above): labels on the left and top (turned), a square per cell
    /// with its value (and a tooltip), a legend under it, wrapped. Margins
    /// come from the labels' estimated sizes, so none leaves the drawing;
    /// it shrinks with a narrow container and never grows past its size.
    pub fn svg(&self) -> String {
        const PAD: f64 = 10.0;
        const SIZE: f64 = 11.0;
        const TURN: f64 = -55.0;
        let n = self.cols.len().max(1);
        let cell = match n {
            0..=12 => 56.0,
            13..=24 => 34.0,
            _ => 22.0,
        };
        let with_text = cell >= 34.0;
        // Row names right-aligned left of the grid; column names turned,
        // starting just above their column.
        let left = PAD + self.rows.iter().map(|r| text_width(r, SIZE, false)).fold(0.0, f64::max) + 6.0;
        let mut heads: Vec<Text> = self
            .cols
            .iter()
            .enumerate()
            .map(|(j, c)| {
                let mut t = Text::new(
                    left + cell * (j as f64 + 0.5),
                    0.0,
                    SIZE,
                    Anchor::Start,
                    vec![c.clone()],
                );
                t.rotate = TURN;
                t
            })
            .collect();
        let rise = heads.iter().map(|t| -t.bounds().1).fold(0.0, f64::max);
        let top = PAD + rise + 6.0;
        for t in &mut heads {
            t.y = top - 6.0;
        }
        let grid_right = left + cell * n as f64;
        let heads_right = heads.iter().map(|t| t.bounds().2).fold(grid_right, f64::max);
        let width = (heads_right + PAD).max(360.0);
        let better = self.direction.word();
        let marked = match self.marked_rows.is_empty() && self.marked_cols.is_empty() {
            true => "",
            false => "; outlined: a suspect node's pairs (its row as a client, its column as a target)",
        };
        let legend = format!(
            "{}: green at or better than the median of pairs ({} {}), red {RED_AT:.0}x worse or more; {better} is better{marked}",
            self.unit,
            num(self.center),
            self.unit
        );
        let legend_lines = wrap(&legend, width - 2.0 * PAD, SIZE, false);
        let grid_bottom = top + cell * self.rows.len() as f64;
        let mut note = Text::new(
            PAD,
            grid_bottom + 10.0 + ASCENT * SIZE,
            SIZE,
            Anchor::Start,
            legend_lines,
        );
        note.line_height = 14.0;
        let height = note.bounds().3 + PAD;
        let mut o = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" data-chart=\"heatmap\" viewBox=\"0 0 {width:.0} {height:.0}\" width=\"{width:.0}\" style=\"max-width:100%;height:auto\" font-family=\"{FONT}\" fill=\"#222\" role=\"img\"><title>{}</title>",
            esc(&self.title)
        );
        for t in &heads {
            t.svg(&mut o);
        }
        for (i, (r, cells)) in self.rows.iter().zip(&self.cells).enumerate() {
            let y = top + cell * i as f64;
            Text::new(
                left - 6.0,
                y + cell / 2.0 + (ASCENT - DESCENT) / 2.0 * SIZE,
                SIZE,
                Anchor::End,
                vec![r.clone()],
            )
            .svg(&mut o);
            for (j, v) in cells.iter().enumerate() {
                let x = left + cell * j as f64;
                match v {
                    Some(v) => {
                        o += &format!(
                            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\" stroke=\"#fff\" class=\"series\"><title>{} -> {}: {} {}</title></rect>",
                            cell,
                            cell,
                            self.fill(*v),
                            esc(r),
                            esc(&self.cols[j]),
                            num(*v),
                            esc(&self.unit)
                        );
                        if with_text {
                            let size = if cell >= 56.0 { 11.0 } else { 8.0 };
                            Text::new(
                                x + cell / 2.0,
                                y + cell / 2.0 + (ASCENT - DESCENT) / 2.0 * size,
                                size,
                                Anchor::Middle,
                                vec![short(*v)],
                            )
                            .svg(&mut o);
                        }
                    }
                    None => {
                        o += &format!(
                            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{cell:.1}\" height=\"{cell:.1}\" fill=\"#eee\" stroke=\"#fff\"/>"
                        );
                    }
                }
            }
        }
        self.marks_svg(&mut o, left, top, cell);
        note.svg(&mut o);
        o += "</svg>";
        o
    }

    /// An outline around each marked row and column (a suspect node's
    /// pairs), over the cells.
    fn marks_svg(&self, o: &mut String, left: f64, top: f64, cell: f64) {
        let (w, h) = (cell * self.cols.len() as f64, cell * self.rows.len() as f64);
        for &i in &self.marked_rows {
            *o += &format!(
                "<rect x=\"{left:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{cell:.1}\" fill=\"none\" stroke=\"#b3261e\" stroke-width=\"3\" data-suspect=\"client\"><title>suspect as a client: {}</title></rect>",
                top + cell * i as f64,
                esc(self.rows.get(i).map_or("", String::as_str))
            );
        }
        for &j in &self.marked_cols {
            *o += &format!(
                "<rect x=\"{:.1}\" y=\"{top:.1}\" width=\"{cell:.1}\" height=\"{h:.1}\" fill=\"none\" stroke=\"#b3261e\" stroke-width=\"3\" data-suspect=\"target\"><title>suspect as a target: {}</title></rect>",
                left + cell * j as f64,
                esc(self.cols.get(j).map_or("", String::as_str))
            );
        }
    }
}

/// A value in at most 5 characters, for a cell.
fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.0}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> Heatmap {
        Heatmap {
            title: "rtt <p99>".into(),
            rows: vec!["a".into(), "b".into()],
            cols: vec!["a".into(), "b".into()],
            cells: vec![vec![None, Some(20.0)], vec![Some(400.0), None]],
            unit: "us".into(),
            direction: Direction::LowerIsBetter,
            center: 20.0,
            marked_rows: vec![],
            marked_cols: vec![1],
        }
    }

    #[test]
    fn the_bad_way_is_redder() {
        let m = map();
        assert_eq!(m.fill(20.0), m.fill(5.0), "better than the centre is as green");
        assert_eq!(m.fill(20.0 * RED_AT), "hsl(0,70%,50%)");
        let mut up = m.clone();
        up.direction = Direction::HigherIsBetter;
        assert_eq!(up.fill(20.0 / RED_AT), "hsl(0,70%,50%)");
    }

    #[test]
    fn drawn_with_every_cell_and_escaped() {
        let s = map().svg();
        // Four cells and the outline of the marked column.
        assert_eq!(s.matches("<rect").count(), 5);
        assert_eq!(s.matches("data-suspect=\"target\"").count(), 1);
        assert!(s.contains("suspect as a target: b"), "{s}");
        let mut plain = map();
        plain.marked_cols.clear();
        assert_eq!(plain.svg().matches("<rect").count(), 4);
        assert!(s.contains("rtt &lt;p99&gt;"));
        assert!(s.contains("<title>b -> a: 400.000 us</title>"), "{s}");
    }

    #[test]
    fn long_names_widen_the_drawing_instead_of_leaving_it() {
        let mut m = map();
        let long = "board-with-a-rather-long-name-7";
        m.cols[1] = long.into();
        m.rows[1] = long.into();
        let s = m.svg();
        let view: Vec<f64> = s
            .split("viewBox=\"0 0 ")
            .nth(1)
            .and_then(|v| v.split('"').next())
            .unwrap()
            .split(' ')
            .map(|x| x.parse().unwrap())
            .collect();
        let name = text_width(long, 11.0, false);
        // Row names on the left, two 56-unit columns, the last column's
        // name turned 55 degrees up and to the right of its cell.
        let right = 10.0 + name + 6.0 + 56.0 * 1.5 + name * 55f64.to_radians().cos();
        assert!(view[0] >= right, "{view:?} < {right}");
        assert!(
            view[1] >= 10.0 + name * 55f64.to_radians().sin() + 2.0 * 56.0,
            "{view:?}"
        );
    }
}
