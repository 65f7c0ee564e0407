//! Typed values as JSON: the value itself, serialized (docs/json.md).

use serde::Serialize;

/// `value` as pretty JSON with a final newline.
pub fn pretty<T: Serialize + ?Sized>(value: &T) -> String {
    // Cannot fail: the typed values hold no maps with non-string keys, and
    // serde_json writes a non-finite float as null instead of failing.
    serde_json::to_string_pretty(value).expect("a typed value serializes") + "\n"
}

/// `value` as one line of JSON with a final newline (for JSON lines).
pub fn line<T: Serialize + ?Sized>(value: &T) -> String {
    // Cannot fail, as above.
    serde_json::to_string(value).expect("a typed value serializes") + "\n"
}
