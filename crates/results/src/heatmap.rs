//! A matrix of one figure (clients down, targets across) coloured by how
//! far each cell is from a centre value: the fleet's pair matrix. HTML
//! draws it as inline SVG; text and Markdown print it as a table
//! (`render::heatmap_table`).

use crate::units::num;

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
    pub lower_is_better: bool,
    /// The typical value: a cell here is neutral, further the bad way is redder.
    pub center: f64,
}

/// How many times worse than the centre is fully red.
const RED_AT: f64 = 16.0;

impl Heatmap {
    /// How many times worse than the centre `v` is (1: as good or better).
    fn worse(&self, v: f64) -> f64 {
        let (v, c) = (v.max(0.0) + 1e-12, self.center.max(0.0) + 1e-12);
        let r = if self.lower_is_better { v / c } else { c / v };
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

    /// Inline SVG: labels on the left and top (turned), a square per cell
    /// with its value (and a tooltip), a legend line under it.
    pub fn svg(&self) -> String {
        let n = self.cols.len().max(1);
        let cell = match n {
            0..=12 => 56.0,
            13..=24 => 34.0,
            _ => 22.0,
        };
        let with_text = cell >= 34.0;
        let longest = |v: &[String]| v.iter().map(|s| s.chars().count()).max().unwrap_or(1) as f64;
        let left = 12.0 + 7.0 * longest(&self.rows);
        let top = 16.0 + 5.5 * longest(&self.cols);
        let width = left + cell * n as f64 + 12.0;
        let height = top + cell * self.rows.len() as f64 + 40.0;
        let mut o = format!(
            "<figure class=\"heatmap\"><figcaption>{}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" data-chart=\"heatmap\" viewBox=\"0 0 {width:.0} {height:.0}\" width=\"{width:.0}\" height=\"{height:.0}\" style=\"max-width:100%;height:auto\" font-family=\"sans-serif\" font-size=\"11\">",
            esc(&self.title)
        );
        for (j, c) in self.cols.iter().enumerate() {
            let x = left + cell * (j as f64 + 0.5);
            o += &format!(
                "<text x=\"{x:.1}\" y=\"{:.1}\" transform=\"rotate(-55 {x:.1} {:.1})\">{}</text>",
                top - 6.0,
                top - 6.0,
                esc(c)
            );
        }
        for (i, (r, cells)) in self.rows.iter().zip(&self.cells).enumerate() {
            let y = top + cell * i as f64;
            o += &format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                left - 6.0,
                y + cell / 2.0 + 4.0,
                esc(r)
            );
            for (j, v) in cells.iter().enumerate() {
                let x = left + cell * j as f64;
                match v {
                    Some(v) => {
                        o += &format!(
                            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\" stroke=\"#fff\"><title>{} -> {}: {} {}</title></rect>",
                            cell,
                            cell,
                            self.fill(*v),
                            esc(r),
                            esc(&self.cols[j]),
                            num(*v),
                            esc(&self.unit)
                        );
                        if with_text {
                            o += &format!(
                                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"{}\">{}</text>",
                                x + cell / 2.0,
                                y + cell / 2.0 + 4.0,
                                if cell >= 56.0 { 11 } else { 8 },
                                short(*v)
                            );
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
        let better = if self.lower_is_better { "lower" } else { "higher" };
        o += &format!(
            "<text x=\"{left:.1}\" y=\"{:.1}\">{}: green at or better than the median of pairs ({} {}), red {RED_AT:.0}x worse or more; {better} is better</text>",
            height - 14.0,
            esc(&self.unit),
            num(self.center),
            esc(&self.unit)
        );
        o += "</svg></figure>";
        o
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

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
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
            lower_is_better: true,
            center: 20.0,
        }
    }

    #[test]
    fn the_bad_way_is_redder() {
        let m = map();
        assert_eq!(m.fill(20.0), m.fill(5.0), "better than the centre is as green");
        assert_eq!(m.fill(20.0 * RED_AT), "hsl(0,70%,50%)");
        let mut up = m.clone();
        up.lower_is_better = false;
        assert_eq!(up.fill(20.0 / RED_AT), "hsl(0,70%,50%)");
    }

    #[test]
    fn drawn_with_every_cell_and_escaped() {
        let s = map().svg();
        assert_eq!(s.matches("<rect").count(), 4);
        assert!(s.contains("rtt &lt;p99&gt;"));
        assert!(s.contains("<title>b -> a: 400.000 us</title>"), "{s}");
    }
}
