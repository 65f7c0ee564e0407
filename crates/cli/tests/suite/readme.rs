//! README.md's example outputs keep the shape of what the commands print
//! now: when a change to rr's or compare's output leaves the examples
//! behind, this fails, and `scripts/readme-examples` makes them again
//! (with the day and the machine they were made on).

use super::{run, stderr};

/// The example `name` of README.md: the lines of its ```text block.
fn example(name: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let start = readme
        .find(&format!("<!-- example {name} -->"))
        .unwrap_or_else(|| panic!("README.md has no example {name}"));
    let end = readme[start..].find(&format!("<!-- /example {name} -->")).unwrap() + start;
    let block = &readme[start..end];
    let text = &block[block.find("```text\n").expect("a text block") + 8..block.rfind("```").unwrap()];
    assert!(
        block.contains("scripts/readme-examples"),
        "{name}: says how it was made"
    );
    text.lines().skip(1).map(str::to_string).collect()
}

/// A line with every number, address and run of spaces made one symbol,
/// and "faster"/"slower" one word: what a line looks like, whatever was
/// measured.
fn shape(line: &str) -> String {
    let line = line.replace("faster", "quicker").replace("slower", "quicker");
    let line = line.as_str();
    let mut out = String::new();
    let mut last = ' ';
    for c in line.trim().chars() {
        let c = match c {
            '0'..='9' | '.' | ':' | '-' | '+' | '%' => '#',
            c if c.is_whitespace() => ' ',
            c => c,
        };
        if !(c == last && (c == '#' || c == ' ')) {
            out.push(c);
        }
        last = c;
    }
    out
}

fn find<'a>(lines: &'a [String], prefix: &str) -> &'a String {
    lines
        .iter()
        .find(|l| l.trim_start().starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in {lines:#?}"))
}

#[test]
fn readme_examples_have_the_current_output_shape() {
    let ex = example("rr");
    let out = run(&["rr", "-n", "20", "--warmup", "2", "--no-store"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let now: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    for prefix in ["request", "100 timed", "note:"] {
        let now_line = match prefix {
            "100 timed" => find(&now, "20 timed"),
            p => find(&now, p),
        };
        assert_eq!(
            shape(find(&ex, prefix)),
            shape(now_line),
            "README rr example: run scripts/readme-examples"
        );
    }
    let rows = |l: &[String]| {
        l.iter()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .filter(|l| l.contains(" B ") && (l.contains("KiB") || l.contains("MiB")))
            .count()
    };
    assert_eq!(rows(&ex), rows(&now), "README rr example rows");
    // The suite's decision (the README's first command runs until
    // decided): its title, table head and closing lines as a short decided
    // run of the same two local responders prints them.
    let ex = example("suite");
    let out = run(&["suite", "--quick", "--budget", "2s", "--no-store"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let now: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    for prefix in ["stackmeter decide:", "Request:response", "Correction:", "Method:"] {
        assert_eq!(
            shape(find(&ex, prefix)),
            shape(find(&now, prefix)),
            "README suite example ({prefix}): run scripts/readme-examples"
        );
    }
    let counts = |l: &String| shape(l.split(';').next().unwrap_or(""));
    assert_eq!(
        counts(find(&ex, "Decided, B (c) vs A (rust):")),
        counts(find(&now, "Decided, B (c) vs A (rust):")),
        "README suite example (Decided): run scripts/readme-examples"
    );
}
