//! Results as typed values, and the renderers that turn them into text.
//!
//! A measuring command builds one [`Document`]; the text table and the JSON
//! document are both rendered from it, so they can never disagree. The JSON
//! form is the versioned schema `stackmeter/1` described in `docs/json.md`;
//! it is also what later commands (store, compare, report) read back, so
//! every type here deserializes too.

mod doc;
mod figures;
mod load;
mod text;
mod text_throughput;
mod throughput;
mod units;
pub mod warnings;

pub use doc::*;
pub use figures::{figures, Figure};
pub use load::{LoadParams, LoadRun, LoadSummary, ObjectInfo, ObjectLatency};
pub use text::{first_line, text, trailer};
pub use text_throughput::{interval_line, stream_head, stream_tail};
pub use units::{format_size, utc_rfc3339};

/// The schema name every JSON document carries.
pub const SCHEMA: &str = "stackmeter/1";

/// The document as pretty JSON.
pub fn json(doc: &Document) -> String {
    // Cannot fail: Document holds no maps with non-string keys, and
    // serde_json writes a non-finite float as null instead of failing.
    serde_json::to_string_pretty(doc).expect("a Document always serializes")
}
