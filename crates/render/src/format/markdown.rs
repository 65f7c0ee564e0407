//! Views as GitHub-flavoured Markdown: `#` titles, pipe tables, one
//! paragraph per line of prose. Charts are left out (text has none).

use crate::view::{Align, Block, Table, View};
use std::fmt::Write;

/// The whole view.
pub fn view(v: &View) -> String {
    let mut o = String::new();
    for b in &v.blocks {
        match b {
            Block::Title(s) => para(&mut o, &format!("# {}", s.trim())),
            Block::Heading(s) => para(&mut o, &format!("## {}", s.trim())),
            Block::Line(s) => para(&mut o, s.trim()),
            Block::Blank | Block::Chart(_) => {}
            Block::Table(t) => table(&mut o, t),
            Block::Heatmap(h) => {
                para(&mut o, &format!("**{}**", h.title.trim()));
                table(&mut o, &crate::view::heatmap_table(h));
            }
            Block::Waterfall(w) => {
                para(&mut o, &format!("**{}**", w.title.trim()));
                table(&mut o, &crate::view::waterfall_table(w));
                for n in &w.notes {
                    para(&mut o, n);
                }
            }
            Block::Warning(s) => para(&mut o, &format!("**Warning:** {}", s.trim())),
            Block::Note(s) => para(&mut o, &format!("*Note:* {}", s.trim())),
        }
    }
    o
}

fn para(o: &mut String, s: &str) {
    if !s.is_empty() {
        let _ = writeln!(o, "{}\n", cell(s));
    }
}

/// Text safe inside a table cell or a paragraph: pipes escaped, no breaks.
fn cell(s: &str) -> String {
    s.trim().replace('|', "\\|").replace('\n', " ")
}

fn table(o: &mut String, t: &Table) {
    let heads: Vec<String> = t
        .cols
        .iter()
        .map(|c| {
            if c.head.trim().is_empty() {
                " ".into()
            } else {
                cell(&c.head)
            }
        })
        .collect();
    let _ = writeln!(o, "| {} |", heads.join(" | "));
    let rule: Vec<&str> = t
        .cols
        .iter()
        .map(|c| match c.align {
            Align::Left => "---",
            Align::Right => "---:",
        })
        .collect();
    let _ = writeln!(o, "|{}|", rule.join("|"));
    for r in t.rows.iter().chain(&t.footer) {
        let cells: Vec<String> = (0..t.cols.len())
            .map(|i| cell(r.get(i).map(String::as_str).unwrap_or("")))
            .collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    o.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::Col;

    #[test]
    fn tables_and_prose() {
        let mut v = View::new();
        v.push(Block::Title("stackmeter rr".into()));
        v.line("  100 timed | 10 warm-up");
        v.push(Block::Table(Table {
            cols: vec![Col::text("Size", 0), Col::num("p50", 0)],
            rows: vec![vec!["1 B:1 KiB".into(), "20.00".into()]],
            ..Table::default()
        }));
        assert_eq!(
            view(&v),
            "# stackmeter rr\n\n100 timed \\| 10 warm-up\n\n| Size | p50 |\n|---|---:|\n| 1 B:1 KiB | 20.00 |\n\n"
        );
    }
}
