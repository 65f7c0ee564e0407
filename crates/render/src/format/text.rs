//! Views as terminal text: tables with aligned columns, one line per block.
//!
//! A live table (rows that arrive while a test runs) keeps its declared
//! column widths, so [`live_head`] + [`live_row`] per row + [`live_tail`]
//! prints exactly what [`view`] prints for the finished value: a stored run
//! shows the same bytes its command printed.

use crate::view::{Align, Block, Table, View};

/// The whole view.
pub fn view(v: &View) -> String {
    let mut o = String::new();
    for b in &v.blocks {
        block(&mut o, b);
    }
    o
}

/// What is printed before the first row of the view's live table: the
/// blocks above it and its head. Empty when the view has no live table.
pub fn live_head(v: &View) -> String {
    let Some(at) = v.live_split() else {
        return String::new();
    };
    let mut o = String::new();
    for b in &v.blocks[..at] {
        block(&mut o, b);
    }
    if let Block::Table(t) = &v.blocks[at] {
        head(&mut o, t, &widths(t));
    }
    o
}

/// One live row of `t` (as [`live_head`] printed its head).
pub fn live_row(t: &Table, cells: &[String]) -> String {
    let mut o = String::new();
    row(&mut o, t, &widths(t), cells);
    o
}

/// What follows the live rows: the live table's footer and the blocks
/// below it. The whole view when it has no live table.
pub fn live_tail(v: &View) -> String {
    let Some(at) = v.live_split() else {
        return view(v);
    };
    let mut o = String::new();
    if let Block::Table(t) = &v.blocks[at] {
        let w = widths(t);
        for r in &t.footer {
            row(&mut o, t, &w, r);
        }
    }
    for b in &v.blocks[at + 1..] {
        block(&mut o, b);
    }
    o
}

fn block(o: &mut String, b: &Block) {
    match b {
        Block::Title(s) | Block::Line(s) => line(o, s),
        Block::Heading(s) => {
            o.push('\n');
            line(o, s);
        }
        Block::Blank => o.push('\n'),
        Block::Table(t) => table(o, t),
        Block::Heatmap(h) => {
            o.push('\n');
            line(o, &h.title);
            table(o, &crate::view::heatmap_table(h));
        }
        Block::Waterfall(w) => {
            line(o, &format!(" {}", w.title));
            table(o, &crate::view::waterfall_table(w));
            for n in &w.notes {
                line(o, &format!(" {n}"));
            }
        }
        Block::Chart(_) => {}
        Block::Warning(s) => line(o, &format!("warning: {s}")),
        Block::Note(s) => line(o, &format!("note: {s}")),
    }
}

fn line(o: &mut String, s: &str) {
    o.push_str(s);
    o.push('\n');
}

fn table(o: &mut String, t: &Table) {
    let w = widths(t);
    head(o, t, &w);
    for r in t.rows.iter().chain(&t.footer) {
        row(o, t, &w, r);
    }
}

/// Column widths: the declared ones for a live table, else wide enough
/// for the head and every cell.
fn widths(t: &Table) -> Vec<usize> {
    t.cols
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if t.live {
                return c.width;
            }
            let cells = t.rows.iter().chain(&t.footer).filter_map(|r| r.get(i));
            cells
                .map(|s| s.chars().count())
                .chain([c.width, c.head.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect()
}

fn head(o: &mut String, t: &Table, w: &[usize]) {
    let heads: Vec<String> = t.cols.iter().map(|c| c.head.clone()).collect();
    row(o, t, w, &heads);
}

fn row(o: &mut String, t: &Table, w: &[usize], cells: &[String]) {
    let mut s = String::new();
    for (i, c) in t.cols.iter().enumerate() {
        let cell = cells.get(i).map(String::as_str).unwrap_or("");
        s.push_str(if i == 0 { " " } else { "  " });
        let n = cell.chars().count();
        let pad = " ".repeat(w[i].saturating_sub(n));
        match c.align {
            Align::Left => {
                s.push_str(cell);
                s.push_str(&pad);
            }
            Align::Right => {
                s.push_str(&pad);
                s.push_str(cell);
            }
        }
    }
    line(o, s.trim_end());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::Col;

    #[test]
    fn live_printing_equals_the_whole_view() {
        let mut v = View::new();
        v.push(Block::Title("t".into()));
        let mut t = Table {
            cols: vec![Col::num("a", 4), Col::text("b", 3)],
            live: true,
            ..Table::default()
        };
        t.rows = vec![vec!["1".into(), "x".into()], vec!["12345".into(), "yy".into()]];
        t.footer = vec![vec!["9".into(), "sum".into()]];
        v.push(Block::Table(t.clone()));
        v.line("after");
        let mut live = live_head(&v);
        for r in &t.rows {
            live.push_str(&live_row(&t, r));
        }
        live.push_str(&live_tail(&v));
        assert_eq!(live, view(&v));
        assert_eq!(view(&v), "t\n    a  b\n    1  x\n 12345  yy\n    9  sum\nafter\n");
    }

    #[test]
    fn finished_tables_fit_their_widest_cell() {
        let mut v = View::new();
        v.push(Block::Table(Table {
            cols: vec![Col::text("name", 0), Col::num("n", 0)],
            rows: vec![vec!["long name".into(), "1".into()]],
            ..Table::default()
        }));
        assert_eq!(view(&v), " name       n\n long name  1\n");
    }
}
