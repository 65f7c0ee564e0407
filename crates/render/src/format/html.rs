//! Views as one self-contained HTML page: tables, prose and inline SVG
//! charts, styled inline, with a few lines of script that only mark the
//! charts the browser laid out (what the browser test checks). Nothing is
//! fetched from the network.

use crate::chart::esc;
use crate::view::{Align, Block, Table, View};
use std::fmt::Write;

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}.l{text-align:left}tfoot td{font-weight:600}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,540px),1fr));gap:16px;align-items:start;margin:12px 0}
.charts>svg{display:block;width:100%;height:auto;box-sizing:border-box;background:#fff;border:1px solid #ddd}
.charts figure{margin:0}.charts figcaption{font-weight:600;margin-bottom:4px}
.charts figure svg{display:block;background:#fff;border:1px solid #ddd;box-sizing:border-box}
figure.waterfall{margin:12px 0}figure.waterfall svg{max-width:100%;height:auto;border:1px solid #ddd;background:#fff}
details{margin:4px 0 8px}.warning{color:#b3261e}.note{color:#555}";

/// Marks every chart the browser actually laid out, and counts them.
const SCRIPT: &str = "window.addEventListener('load',function(){var n=0;\
document.querySelectorAll('svg[data-chart]').forEach(function(s){var b=s.getBBox();\
if(b.width>0&&b.height>0&&s.querySelectorAll('.series').length>0){n++;s.setAttribute('data-drawn','yes');}});\
document.body.setAttribute('data-charts-drawn',String(n));});";

/// The view as a complete page titled `title`.
pub fn page(title: &str, v: &View) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head>\n<body>\n{}<script>{SCRIPT}</script>\n</body></html>\n",
        esc(title),
        body(v)
    )
}

/// The view's blocks as HTML elements; consecutive charts share a grid of
/// one or two columns, as the page's width allows (each chart scales to
/// its column).
pub fn body(v: &View) -> String {
    let mut o = String::new();
    let mut in_charts = false;
    for b in &v.blocks {
        let chart = matches!(b, Block::Chart(_) | Block::Heatmap(_));
        if in_charts && !chart {
            o.push_str("</div>\n");
        }
        if chart && !in_charts {
            o.push_str("<div class=\"charts\">");
        }
        in_charts = chart;
        match b {
            Block::Title(s) => {
                let _ = writeln!(o, "<h1>{}</h1>", esc(s.trim()));
            }
            Block::Heading(s) => {
                let _ = writeln!(o, "<h2>{}</h2>", esc(s.trim()));
            }
            Block::Line(s) => {
                let _ = writeln!(o, "<p>{}</p>", esc(s.trim()));
            }
            Block::Blank => {}
            Block::Table(t) => table(&mut o, t),
            Block::Chart(c) => o.push_str(&c.svg()),
            Block::Heatmap(h) => {
                // The numbers as the text output prints them too: a large
                // matrix has no room for them in its cells.
                let _ = write!(
                    o,
                    "<figure class=\"heatmap\"><figcaption>{}</figcaption>",
                    esc(&h.title)
                );
                o.push_str(&h.svg());
                o.push_str("<details><summary>the values as a table</summary>");
                table(&mut o, &crate::view::heatmap_table(h));
                o.push_str("</details></figure>");
            }
            Block::Waterfall(w) => {
                let _ = write!(o, "<figure class=\"waterfall\">{}", w.svg());
                o.push_str("<details><summary>the values as a table</summary>");
                table(&mut o, &crate::view::waterfall_table(w));
                o.push_str("</details></figure>\n");
            }
            Block::Warning(s) => {
                let _ = writeln!(o, "<p class=\"warning\">warning: {}</p>", esc(s.trim()));
            }
            Block::Note(s) => {
                let _ = writeln!(o, "<p class=\"note\">{}</p>", esc(s.trim()));
            }
        }
    }
    if in_charts {
        o.push_str("</div>\n");
    }
    o
}

fn table(o: &mut String, t: &Table) {
    let class = |a: Align| if a == Align::Left { " class=\"l\"" } else { "" };
    o.push_str("<table><thead><tr>");
    for c in &t.cols {
        let _ = write!(o, "<th{}>{}</th>", class(c.align), esc(&c.head));
    }
    o.push_str("</tr></thead>\n");
    for (tag, rows) in [("tbody", &t.rows), ("tfoot", &t.footer)] {
        if rows.is_empty() {
            continue;
        }
        let _ = write!(o, "<{tag}>");
        for r in rows {
            o.push_str("<tr>");
            for (i, c) in t.cols.iter().enumerate() {
                let cell = r.get(i).map(String::as_str).unwrap_or("");
                let _ = write!(o, "<td{}>{}</td>", class(c.align), esc(cell.trim()));
            }
            o.push_str("</tr>\n");
        }
        let _ = write!(o, "</{tag}>");
    }
    o.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_self_contained_and_escaped() {
        let mut v = View::new();
        v.push(Block::Title("a <b> & c".into()));
        let p = page("t", &v);
        assert!(p.starts_with("<!DOCTYPE html>"));
        assert!(p.contains("<h1>a &lt;b&gt; &amp; c</h1>"));
        assert!(!p.contains("<link") && !p.contains("src=\""));
    }

    #[test]
    fn every_table_of_the_text_is_in_the_page() {
        let mut v = View::new();
        v.push(Block::Table(Table {
            cols: vec![crate::view::Col::text("phase", 0), crate::view::Col::num("+p99", 0)],
            rows: vec![vec!["2 down".into(), "4324.4".into()]],
            ..Table::default()
        }));
        // A heatmap too large for numbers in its cells.
        let n = 30;
        v.push(Block::Heatmap(crate::view::Heatmap {
            title: "rtt p50".into(),
            rows: (0..n).map(|i| format!("n{i}")).collect(),
            cols: (0..n).map(|i| format!("n{i}")).collect(),
            cells: (0..n)
                .map(|i| (0..n).map(|j| Some((i * n + j) as f64 + 0.25)).collect())
                .collect(),
            unit: "us".into(),
            direction: stackmeter_statistics::Direction::LowerIsBetter,
            center: 400.0,
            marked_rows: vec![3],
            marked_cols: vec![],
        }));
        let text = crate::format::text::view(&v);
        let html = body(&v);
        assert_eq!(html.matches("<table>").count(), 2, "{html}");
        for cell in ["4324.4", "+p99", "899.250"] {
            assert!(text.contains(cell) && html.contains(&format!(">{cell}</")), "{cell}");
        }
    }
}
