//! What a reader sees of a typed value, before it is text, Markdown or
//! HTML: titles, lines, tables and charts in order.
//!
//! Every typed value (a test's [`crate::Document`], a
//! [`crate::Comparison`], a [`crate::SuiteOutcome`], a [`crate::Report`])
//! has one function that builds its [`View`]; each output format has one
//! renderer of views (`render::text`, `render::markdown`, `render::html`).
//! So a figure added to a view shows in every format, and no format can
//! disagree with another about what a value holds. JSON is the exception:
//! it serializes the typed value itself (`render::json`).

pub use crate::heatmap::Heatmap;

/// The blocks of one value, top to bottom.
#[derive(Clone, Debug, Default)]
pub struct View {
    /// The blocks, in reading order.
    pub blocks: Vec<Block>,
}

/// One piece of a view.
#[derive(Clone, Debug)]
pub enum Block {
    /// The first line of a value (text), its `<h1>` (HTML) or `#` (Markdown).
    Title(String),
    /// A section title.
    Heading(String),
    /// One line of prose.
    Line(String),
    /// An empty line in text; a paragraph break elsewhere.
    Blank,
    /// Rows under column heads.
    Table(Table),
    /// A chart: drawn in HTML only (text and Markdown leave it out).
    Chart(crate::chart::Chart),
    /// A matrix of values: a coloured grid in HTML, a table elsewhere.
    Heatmap(crate::heatmap::Heatmap),
    /// A round trip's segments as horizontal bars: SVG in HTML, a table
    /// with the bars in characters elsewhere.
    Waterfall(crate::waterfall::Waterfall),
    /// Something the reader must know to trust the figures.
    Warning(String),
    /// A remark on the figures (small samples, method).
    Note(String),
}

/// Column alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text columns (names, labels).
    Left,
    /// Numbers.
    Right,
}

/// A table column.
#[derive(Clone, Debug)]
pub struct Col {
    /// The head.
    pub head: String,
    /// Least width in characters (text); a live table keeps exactly this.
    pub width: usize,
    /// Alignment of head and cells.
    pub align: Align,
}

impl Col {
    /// A right-aligned column of at least `width` characters.
    pub fn num(head: &str, width: usize) -> Col {
        Col {
            head: head.into(),
            width,
            align: Align::Right,
        }
    }

    /// A left-aligned column of at least `width` characters.
    pub fn text(head: &str, width: usize) -> Col {
        Col {
            head: head.into(),
            width,
            align: Align::Left,
        }
    }
}

/// A table.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// The columns.
    pub cols: Vec<Col>,
    /// The rows, one cell per column (a short row is padded with blanks).
    pub rows: Vec<Vec<String>>,
    /// Rows below the body (a summary row), set apart in HTML.
    pub footer: Vec<Vec<String>>,
    /// Rows arrive while the test runs: text keeps the declared widths so
    /// each row can be printed as it comes (and a stored run prints the
    /// same bytes again).
    pub live: bool,
}

impl View {
    /// An empty view.
    pub fn new() -> View {
        View::default()
    }

    /// Appends a block.
    pub fn push(&mut self, b: Block) -> &mut View {
        self.blocks.push(b);
        self
    }

    /// Appends a line of prose.
    pub fn line(&mut self, s: impl Into<String>) -> &mut View {
        self.push(Block::Line(s.into()))
    }

    /// Appends an empty line.
    pub fn blank(&mut self) -> &mut View {
        self.push(Block::Blank)
    }

    /// Appends every block of `other`.
    pub fn extend(&mut self, other: View) -> &mut View {
        self.blocks.extend(other.blocks);
        self
    }

    /// The blocks printed before the first live row arrives: everything
    /// up to the first live table (its head included), or `None` when the
    /// view has no live table.
    pub fn live_split(&self) -> Option<usize> {
        self.blocks.iter().position(|b| matches!(b, Block::Table(t) if t.live))
    }
}

/// A whole value's view as part of a larger one: its title becomes a
/// section heading.
pub fn nested(v: View) -> View {
    View {
        blocks: v
            .blocks
            .into_iter()
            .map(|b| match b {
                Block::Title(t) => Block::Heading(t),
                other => other,
            })
            .collect(),
    }
}

/// A waterfall as a table, for text and Markdown (and HTML's details): a
/// row per step, the bars in characters.
pub fn waterfall_table(w: &crate::waterfall::Waterfall) -> Table {
    Table {
        cols: w
            .columns()
            .into_iter()
            .map(|(head, text, width)| match text {
                true => Col::text(&head, width),
                false => Col::num(&head, width),
            })
            .collect(),
        rows: w.cells(),
        ..Table::default()
    }
}

/// A heatmap as a table, for text and Markdown: one row per client, "-"
/// where a pair was not measured.
pub fn heatmap_table(h: &Heatmap) -> Table {
    // A suspect node's name carries a star: as a client on its row, as a
    // target on its column.
    let star = |name: &str, marked: bool| match marked {
        true => format!("*{name}"),
        false => name.to_string(),
    };
    let mut cols = vec![Col::text("client \\ target", 0)];
    cols.extend(
        h.cols
            .iter()
            .enumerate()
            .map(|(j, c)| Col::num(&star(c, h.marked_cols.contains(&j)), 0)),
    );
    Table {
        cols,
        rows: h
            .rows
            .iter()
            .zip(&h.cells)
            .enumerate()
            .map(|(i, (r, cells))| {
                let mut row = vec![star(r, h.marked_rows.contains(&i))];
                row.extend(
                    cells
                        .iter()
                        .map(|c| c.map(stackmeter_results::num).unwrap_or_else(|| "-".into())),
                );
                row
            })
            .collect(),
        ..Table::default()
    }
}

/// The decimals of a table's columns of values, from its largest value:
/// 3 below 1000, 1 from 1000, none from a million, 4 when every value is
/// below 1. One rule per table, so a column never mixes precisions.
pub fn decimals(values: impl IntoIterator<Item = f64>) -> usize {
    let top = values
        .into_iter()
        .map(f64::abs)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    match top {
        t if t >= 1e6 => 0,
        t if t >= 1000.0 => 1,
        t if t >= 1.0 => 3,
        _ => 4,
    }
}

/// A percentage as a person writes it: 2, 2.5, 7 (never 7.000000000000001).
pub fn percent(fraction: f64) -> String {
    format!("{}", (fraction * 1000.0).round() / 10.0)
}
