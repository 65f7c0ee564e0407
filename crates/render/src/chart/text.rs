//! Text measurement and wrapping: SVG lays out no text of its own, so every
//! label's width is estimated here (DejaVu Sans metrics) before it is
//! placed, and long ones wrap or are cut with "...". Also the escaping of
//! text written into SVG.

/// `s` escaped for SVG text and attributes.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The font the charts ask for: the metrics below are DejaVu Sans's
/// (Verdana's are alike), and a narrower face only leaves more room.
pub const FONT: &str = "'DejaVu Sans',Verdana,sans-serif";
/// Height above the baseline of a line of text, in ems (DejaVu Sans' ascent,
/// what a browser's text box starts at).
pub const ASCENT: f64 = 0.93;
/// Depth below the baseline, in ems.
pub const DESCENT: f64 = 0.24;

/// Advance of a character of DejaVu Sans (Book), in ems.
fn advance(c: char) -> f64 {
    match c {
        ' ' | ',' | '.' => 0.32,
        'i' | 'j' | 'l' | 'I' | 'J' | '\'' | '|' | ':' | ';' => 0.34,
        '!' | '/' | '\\' | 'f' | 't' | '(' | ')' | '[' | ']' | '-' => 0.4,
        'r' => 0.411,
        '"' | '*' | '_' | '`' => 0.5,
        's' | 'z' | 'c' | '?' => 0.55,
        'k' | 'v' | 'x' | 'y' | 'L' => 0.6,
        '0'..='9' | 'a' | 'b' | 'd' | 'e' | 'g' | 'h' | 'n' | 'o' | 'p' | 'q' | 'u' | '$' | '{' | '}' => 0.64,
        'F' | 'T' | 'Y' | 'P' | 'E' | 'S' | 'Z' | 'X' | 'A' | 'B' | 'V' | 'K' | 'R' | 'C' => 0.72,
        'w' | 'D' | 'G' | 'H' | 'N' | 'O' | 'Q' | 'U' | '&' => 0.8,
        '+' | '<' | '=' | '>' | '^' | '~' | '#' => 0.84,
        'M' | '%' => 0.95,
        'm' | 'W' | '@' => 1.0,
        _ if c.is_ascii() => 0.64,
        // Anything else: as wide as a capital M, to be safe.
        _ => 1.0,
    }
}

/// The estimated width of `s` at font size `size` (bold text is about a
/// tenth wider).
pub fn text_width(s: &str, size: f64, bold: bool) -> f64 {
    let ems: f64 = s.chars().map(advance).sum();
    ems * size * if bold { 1.1 } else { 1.0 }
}

/// `s` broken at spaces into lines no wider than `max` (estimated); a
/// word wider than `max` on its own is cut between characters.
pub fn wrap(s: &str, max: f64, size: f64, bold: bool) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        let joined = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if text_width(&joined, size, bold) <= max {
            cur = joined;
            continue;
        }
        if !cur.is_empty() {
            lines.push(std::mem::take(&mut cur));
        }
        // The word alone: cut it if it is too long for any line.
        for c in word.chars() {
            let mut next = cur.clone();
            next.push(c);
            if !cur.is_empty() && text_width(&next, size, bold) > max {
                lines.push(std::mem::take(&mut cur));
                cur.push(c);
            } else {
                cur = next;
            }
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// `s` shortened with an ellipsis to at most `max` wide.
pub(super) fn ellipsize(s: &str, max: f64, size: f64) -> String {
    if text_width(s, size, false) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    for c in s.chars() {
        if text_width(&format!("{out}{c}..."), size, false) > max {
            break;
        }
        out.push(c);
    }
    format!("{}...", out.trim_end())
}
