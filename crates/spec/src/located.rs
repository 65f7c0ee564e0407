//! Errors in the TOML files a user writes (plans, fleet files) shown where
//! they are: `FILE:LINE:COLUMN: what`, then the line itself and a caret
//! under the place, as compilers print them.
//!
//! The TOML parser gives a byte range for syntax errors and wrong types;
//! a check made after parsing names a path of keys instead (`step`, 2,
//! `time`), which [`locate`] finds in the text with the parser's spanned
//! tables.

use std::ops::Range;
use toml::de::{DeTable, DeValue};

/// Where in a file an error is, and a step of a path into it: the fleet
/// crate's types (the lower of the two crates that read TOML files), so
/// plans and fleet files share them and nothing converts between copies.
pub use stackmeter_fleet::{At, Key};

/// The bytes `path` names in `text`: the value at the end of the path, or
/// the deepest part of it that exists (`None` if the text does not parse
/// or the first key is not there).
pub fn locate(text: &str, path: &[Key]) -> Option<Range<usize>> {
    let top = DeTable::parse(text).ok()?;
    let mut table: &DeTable<'_> = top.get_ref();
    let mut value: Option<&toml::Spanned<DeValue<'_>>> = None;
    let mut found: Option<Range<usize>> = None;
    for k in path {
        let next = match (k, value.map(toml::Spanned::get_ref)) {
            (Key::Name(n), None) => table.get(n.as_str()),
            (Key::Name(n), Some(DeValue::Table(t))) => {
                table = t;
                t.get(n.as_str())
            }
            (Key::Index(i), Some(DeValue::Array(a))) => a.get(*i),
            _ => None,
        };
        let Some(v) = next else { break };
        found = Some(v.span());
        value = Some(v);
        if let DeValue::Table(t) = v.get_ref() {
            table = t;
            value = None;
            // A table's span can be empty or start past its header: keep
            // the last useful one.
            if v.span().is_empty() {
                continue;
            }
        }
    }
    found
}

/// `message` about `at` in file `name` whose text is `text`, shown as
/// `name:line:column: message` and, where the place is known, the line and
/// a caret under it.
pub fn show(name: &str, text: &str, at: &At, message: &str) -> String {
    let span = match at {
        At::Span(s) => Some(s.clone()),
        At::Path(p) => locate(text, p),
        At::File => None,
    };
    let Some(span) = span.filter(|s| s.start <= text.len()) else {
        return format!("{name}: {message}");
    };
    let start = span.start;
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line_no = text[..start].matches('\n').count() + 1;
    let col = text[line_start..start].chars().count() + 1;
    let line = &text[line_start..line_end];
    let width = text[start..span.end.min(line_end).max(start)].chars().count().max(1);
    let gutter = line_no.to_string().len();
    format!(
        "{name}:{line_no}:{col}: {message}\n {:>gutter$} | {line}\n {:>gutter$} | {}{}",
        line_no,
        "",
        " ".repeat(col - 1),
        "^".repeat(width)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "description = \"x\"\n\n[[step]]\ntest = \"rr\"\n\n[[step]]\ntest = \"stream\"\ntime = 0\n";

    #[test]
    fn a_path_finds_its_value() {
        let path = [Key::Name("step".into()), Key::Index(1), Key::Name("time".into())];
        let s = locate(PLAN, &path).unwrap();
        assert_eq!(&PLAN[s], "0");
        let path = [Key::Name("description".into())];
        assert_eq!(&PLAN[locate(PLAN, &path).unwrap()], "\"x\"");
        // A key that is not there: the deepest part that is.
        let path = [Key::Name("step".into()), Key::Index(0), Key::Name("nope".into())];
        assert!(locate(PLAN, &path).is_some());
        assert!(locate(PLAN, &[Key::Name("nope".into())]).is_none());
    }

    #[test]
    fn shown_with_line_column_and_caret() {
        let path = At::Path(vec![Key::Name("step".into()), Key::Index(1), Key::Name("time".into())]);
        let s = show("bad.toml", PLAN, &path, "'time' 0: expected seconds above 0");
        assert_eq!(
            s,
            "bad.toml:8:8: 'time' 0: expected seconds above 0\n 8 | time = 0\n   |        ^"
        );
        let text = "[[step]\ntest = \"rr\"\n";
        let e = toml::from_str::<toml::Table>(text).unwrap_err();
        let s = show("bad.toml", text, &At::Span(e.span().unwrap()), e.message());
        assert!(s.starts_with("bad.toml:1:"), "{s}");
        assert!(s.contains("\n 1 | [[step]\n"), "{s}");
        assert!(s.ends_with('^'), "{s}");
        assert_eq!(show("f.toml", text, &At::File, "no steps"), "f.toml: no steps");
    }
}
