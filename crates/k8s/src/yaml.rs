//! A small YAML writer for Kubernetes manifests, from a JSON value.
//!
//! Why not a YAML crate: Kubernetes reads manifests as YAML 1.1 (the API
//! machinery's YAML goes through go-yaml v2), where an unquoted `on`,
//! `yes`, `y`, `no` or `off` is a boolean, `12:30` an integer (base 60) and
//! `1_000` the integer 1000. The maintained serde YAML crates
//! (`serde_yaml_ng`, `serde_norway`) write strings for a YAML 1.2 reader
//! and leave all of those unquoted, so a label value `on` or a node named
//! `y` would reach the API server as a boolean. This writer quotes every
//! string that is not plainly safe under both YAML 1.1 and 1.2, which is a
//! rule small enough to read and test here:
//!
//! - a string is written plain only if it starts with an ASCII letter
//!   or `/` (after at most two `-`: a command's flags), has nothing but ASCII
//!   letters, digits, `.`, `_`, `/` and `-`, and is not one of YAML's
//!   words for true, false or null in any case;
//! - a multi-line string that is a mapping's value is written as a
//!   literal block (`|`, `|-` or `|+` as its trailing newlines ask, with an
//!   indentation indicator when its first line starts with a space) if
//!   every character is printable, no line ends in a space or a tab, and
//!   there is no carriage return, NEL or Unicode line or paragraph
//!   separator (line breaks in YAML 1.1);
//! - every other string is double-quoted, with `\"`, `\\`, `\n`, `\t`,
//!   `\r` and `\uXXXX` / `\UXXXXXXXX` escapes for everything outside
//!   printable ASCII (the escapes YAML 1.1 and 1.2 share).
//!
//! Mapping keys come out in a fixed order: `apiVersion`, `kind`,
//! `metadata`, `name`, `namespace`, then the rest alphabetically (serde_json's map is
//! sorted), so the same value always gives the same bytes. Sequences are
//! indented under their key. Numbers, booleans and null are written as
//! JSON writes them.

use serde_json::Value;

/// The documents, `---` between them, each ending with a newline.
pub fn documents(docs: &[Value]) -> String {
    let mut out = String::new();
    for (i, d) in docs.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        document(&mut out, d);
    }
    out
}

/// One document: a mapping at the top (any other value on one line).
fn document(out: &mut String, v: &Value) {
    match v {
        Value::Object(m) if !m.is_empty() => mapping(out, m, 0),
        other => {
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
}

/// The order keys are written in.
fn rank(key: &str) -> (usize, &str) {
    let first = ["apiVersion", "kind", "metadata", "name", "namespace"];
    (first.iter().position(|k| *k == key).unwrap_or(first.len()), key)
}

fn sorted(m: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut kv: Vec<(&String, &Value)> = m.iter().collect();
    kv.sort_by(|a, b| rank(a.0).cmp(&rank(b.0)));
    kv
}

fn pad(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

/// A mapping whose keys start at column `indent`; the first key's
/// indentation is already written when `first_done`.
fn mapping_from(out: &mut String, m: &serde_json::Map<String, Value>, indent: usize, first_done: bool) {
    for (i, (k, v)) in sorted(m).into_iter().enumerate() {
        if i > 0 || !first_done {
            pad(out, indent);
        }
        out.push_str(&scalar(k));
        out.push(':');
        value_after_key(out, v, indent);
    }
}

fn mapping(out: &mut String, m: &serde_json::Map<String, Value>, indent: usize) {
    mapping_from(out, m, indent, false);
}

/// What follows `key:` for a key at column `indent`.
fn value_after_key(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            mapping(out, m, indent + 2);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            sequence(out, a, indent + 2);
        }
        Value::String(s) if literal_ok(s) => literal(out, s, indent + 2),
        other => {
            out.push(' ');
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
}

/// A sequence whose dashes are at column `indent`.
fn sequence(out: &mut String, a: &[Value], indent: usize) {
    for v in a {
        pad(out, indent);
        out.push('-');
        match v {
            Value::Object(m) if !m.is_empty() => {
                out.push(' ');
                mapping_from(out, m, indent + 2, true);
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push('\n');
                sequence(out, inner, indent + 2);
            }
            other => {
                out.push(' ');
                out.push_str(&inline(other));
                out.push('\n');
            }
        }
    }
}

/// A value on one line: scalars, and empty mappings and sequences.
fn inline(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => scalar(s),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
    }
}

/// YAML's words for true, false and null (1.1 and 1.2), in lower case.
const WORDS: [&str; 9] = ["y", "n", "yes", "no", "on", "off", "true", "false", "null"];

/// Whether `s` reads back as the same string, unquoted, in YAML 1.1 and 1.2.
pub fn plain_ok(s: &str) -> bool {
    // One or two dashes before a letter (a command's flags) are not an
    // indicator: only "- " and "---" are.
    let rest = s.strip_prefix("--").or_else(|| s.strip_prefix('-')).unwrap_or(s);
    rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-'))
        && !WORDS.contains(&s.to_ascii_lowercase().as_str())
}

/// A string on one line: plain when safe, else double-quoted.
pub fn scalar(s: &str) -> String {
    if plain_ok(s) {
        return s.to_string();
    }
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            '\r' => q.push_str("\\r"),
            ' '..='~' => q.push(c),
            c if u32::from(c) <= 0xFFFF => q.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => q.push_str(&format!("\\U{:08X}", u32::from(c))),
        }
    }
    q.push('"');
    q
}

/// Whether `c` may stand as itself in a literal block (printable, and not
/// a line break in YAML 1.1).
fn literal_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | ' '..='~')
        || matches!(u32::from(c), 0xA0..=0xD7FF | 0xE000..=0xFFFD | 0x1_0000..=0x10_FFFF)
            && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

/// Whether `s` is written as a literal block.
fn literal_ok(s: &str) -> bool {
    let body = s.trim_end_matches('\n');
    body.contains('\n')
        && s.chars().all(literal_char)
        && body.split('\n').all(|l| !l.ends_with([' ', '\t']))
        && body.split('\n').any(|l| !l.is_empty())
}

/// `s` as a literal block whose lines start at column `indent`.
fn literal(out: &mut String, s: &str, indent: usize) {
    let body = s.trim_end_matches('\n');
    let newlines = s.len() - body.len();
    out.push_str(" |");
    let first = body.split('\n').find(|l| !l.is_empty()).unwrap_or("");
    if first.starts_with(' ') {
        // The indentation of the first line cannot tell the block's own.
        out.push('2');
    }
    out.push_str(match newlines {
        0 => "-",
        1 => "",
        _ => "+",
    });
    out.push('\n');
    for line in body.split('\n') {
        if !line.is_empty() {
            pad(out, indent);
            out.push_str(line);
        }
        out.push('\n');
    }
    for _ in 1..newlines {
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ambiguous_strings_are_quoted() {
        for s in [
            "on",
            "Yes",
            "N",
            "off",
            "TRUE",
            "null",
            "12:30",
            "1_000",
            "0755",
            "1e3",
            ".inf",
            "~",
            "",
            " a",
            "a ",
            "a: b",
            "#x",
            "-",
            "*",
            "stackmeter:0.2.0",
            "$(POD_IP)",
            "0.0.0.0:24680",
            "10001",
            "-1",
            "--1",
            "---a",
            "-.5",
        ] {
            assert!(scalar(s).starts_with('"'), "{s} -> {}", scalar(s));
        }
        for s in [
            "apps/v1",
            "DaemonSet",
            "app.kubernetes.io/name",
            "pc-a1",
            "IfNotPresent",
            "fleet.toml",
            "ClusterFirstWithHostNet",
            "--node",
            "-x",
            "/tmp",
            "/etc/stackmeter/fleet.toml",
        ] {
            assert_eq!(scalar(s), s);
        }
        assert_eq!(
            scalar("a\"b\\c\nd\te\u{7f}é\u{1F600}"),
            "\"a\\\"b\\\\c\\nd\\te\\u007F\\u00E9\\U0001F600\""
        );
    }

    #[test]
    fn a_manifest_is_written_in_block_style() {
        let v = json!({
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": { "name": "p", "labels": { "on": "on" } },
            "spec": {
                "containers": [
                    { "name": "c", "command": ["a", "--port", "1"], "ports": [{ "containerPort": 1, "name": "x" }] }
                ],
                "empty": {},
                "none": [],
                "hostNetwork": true
            }
        });
        let want = "\
apiVersion: v1
kind: Pod
metadata:
  name: p
  labels:
    \"on\": \"on\"
spec:
  containers:
    - name: c
      command:
        - a
        - --port
        - \"1\"
      ports:
        - name: x
          containerPort: 1
  empty: {}
  hostNetwork: true
  none: []
";
        assert_eq!(documents(&[v]), want);
    }

    #[test]
    fn multi_line_text_is_a_literal_block_when_it_can_be() {
        let doc = |s: &str| documents(&[json!({ "data": { "f": s } })]);
        assert_eq!(doc("a = 1\n\n  b\n"), "data:\n  f: |\n    a = 1\n\n      b\n");
        assert_eq!(doc("a\nb"), "data:\n  f: |-\n    a\n    b\n");
        assert_eq!(doc("a\nb\n\n"), "data:\n  f: |+\n    a\n    b\n\n");
        assert_eq!(doc("  a\nb\n"), "data:\n  f: |2\n      a\n    b\n");
        assert_eq!(doc("\n\n  a\nb\n"), "data:\n  f: |2\n\n\n      a\n    b\n");
        assert_eq!(doc("tab\n\tx # µs\n"), "data:\n  f: |\n    tab\n    \tx # µs\n");
        // Trailing spaces, carriage returns and YAML 1.1's line breaks: quoted.
        assert_eq!(doc("a \nb\n"), "data:\n  f: \"a \\nb\\n\"\n");
        assert_eq!(doc("a\r\nb\r\n"), "data:\n  f: \"a\\r\\nb\\r\\n\"\n");
        assert_eq!(doc("a\u{2028}\nb\n"), "data:\n  f: \"a\\u2028\\nb\\n\"\n");
        assert_eq!(doc("\n\n"), "data:\n  f: \"\\n\\n\"\n");
        // One line, even with its newline: quoted.
        assert_eq!(doc("one\n"), "data:\n  f: \"one\\n\"\n");
        // In a sequence a multi-line string is quoted too.
        assert_eq!(documents(&[json!({ "l": ["a\nb\n"] })]), "l:\n  - \"a\\nb\\n\"\n");
    }

    #[test]
    fn documents_are_separated() {
        let s = documents(&[json!({ "a": 1 }), json!({ "b": null })]);
        assert_eq!(s, "a: 1\n---\nb: null\n");
    }
}
