//! The output formats: one module per format, each rendering any view, so
//! a document, a comparison, a suite's outcome and a report all print the
//! same way in text, Markdown and HTML; JSON is the typed value itself.

pub mod html;
pub mod json;
pub mod markdown;
pub mod text;

use crate::view::View;
use serde::Serialize;

/// An output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Aligned plain text for a terminal.
    Text,
    /// GitHub-flavoured Markdown (tables as pipe tables).
    Md,
    /// The typed value as pretty JSON (schema `stackmeter/1`, docs/json.md).
    Json,
    /// One self-contained HTML page with inline SVG charts.
    Html,
}

/// How a reader wants figures written (the same for every format).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// Bit rates scaled to the value, or in one fixed unit.
    pub units: crate::units::Units,
}

/// A value that can be shown: its view (for text, Markdown and HTML), a
/// title (the HTML page's), and itself as JSON.
pub trait Render: Serialize {
    /// What a reader sees of the value.
    fn view(&self, style: &Style) -> View;
    /// A one-line title.
    fn title(&self) -> String;
}

/// Renders `value` in `format`, newline-terminated.
pub fn render<T: Render + ?Sized>(value: &T, format: Format, style: &Style) -> String {
    match format {
        Format::Text => text::view(&value.view(style)),
        Format::Md => markdown::view(&value.view(style)),
        Format::Json => json::pretty(value),
        Format::Html => html::page(&value.title(), &value.view(style)),
    }
}
