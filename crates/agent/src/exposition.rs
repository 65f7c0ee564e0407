//! Which text a scraper gets, pure: OpenMetrics for a scraper that asks
//! for it (Prometheus does, in its `Accept` header), the Prometheus text
//! format 0.0.4 for anything else (curl, `promtool check metrics`, older
//! scrapers), as the Prometheus org's own clients do.
//!
//! `prometheus-client` writes OpenMetrics only. The two formats share the
//! samples and differ in the family lines: OpenMetrics names a counter
//! family without its `_total` suffix, has an `info` type, `# UNIT`
//! lines and a closing `# EOF`; the 0.0.4 format names the family as its
//! samples are named, knows no info type (an info metric is the gauge
//! `NAME_info` of value 1, as the Go client writes it) and neither of the
//! other two lines. [`to_text`] does that translation on the exposition
//! this crate's registry writes.

/// One of the two exposition formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text.
    OpenMetrics,
    /// Prometheus text format 0.0.4.
    Text,
}

impl Format {
    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// The format for a request's `Accept` header: OpenMetrics when it asks
/// for `application/openmetrics-text` with a quality above 0 and no lower
/// than any other type it accepts; the 0.0.4 text otherwise.
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Text;
    };
    let mut open = 0.0f64;
    let mut other = 0.0f64;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q=").and_then(|v| v.trim().parse::<f64>().ok()))
            .next_back()
            .unwrap_or(1.0);
        if media == "application/openmetrics-text" {
            open = open.max(q);
        } else if !media.is_empty() {
            other = other.max(q);
        }
    }
    if open > 0.0 && open >= other {
        Format::OpenMetrics
    } else {
        Format::Text
    }
}

/// The 0.0.4 text of an OpenMetrics exposition: counter families named
/// `NAME_total`, info families the gauge `NAME_info`, other types kept
/// (types 0.0.4 lacks become untyped), `# UNIT` and `# EOF` dropped.
/// Sample lines pass through unchanged, less any exemplar.
pub fn to_text(open: &str) -> String {
    let mut out = String::with_capacity(open.len());
    let mut help: Option<(&str, String)> = None;
    for line in open.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            if let Some((n, t)) = help.take() {
                // A HELP without a TYPE: keep it as it was.
                push_help(&mut out, n, &t);
            }
            help = Some((name, text.replace("\\\"", "\"")));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            let (family, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                "gauge" | "histogram" | "summary" => (name.to_string(), kind),
                _ => (name.to_string(), "untyped"),
            };
            match help.take() {
                Some((n, t)) if n == name => push_help(&mut out, &family, &t),
                Some((n, t)) => push_help(&mut out, n, &t),
                None => {}
            }
            out.push_str("# TYPE ");
            out.push_str(&family);
            out.push(' ');
            out.push_str(kind);
            out.push('\n');
        } else if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        } else {
            if let Some((n, t)) = help.take() {
                push_help(&mut out, n, &t);
            }
            let sample = line.split_once(" # ").map_or(line, |(s, _)| s);
            out.push_str(sample);
            out.push('\n');
        }
    }
    if let Some((n, t)) = help.take() {
        push_help(&mut out, n, &t);
    }
    out
}

fn push_help(out: &mut String, name: &str, text: &str) {
    out.push_str("# HELP ");
    out.push_str(name);
    out.push(' ');
    out.push_str(text);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_gets_openmetrics_and_everything_else_the_text_format() {
        // Prometheus 2.x's scrape header.
        let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(prom)), Format::OpenMetrics);
        assert_eq!(negotiate(Some("*/*")), Format::Text, "curl");
        assert_eq!(negotiate(None), Format::Text);
        assert_eq!(negotiate(Some("text/plain;version=0.0.4")), Format::Text);
        assert_eq!(negotiate(Some("application/openmetrics-text; q=0")), Format::Text);
        assert_eq!(
            negotiate(Some("text/plain;q=0.9, application/openmetrics-text;q=0.5")),
            Format::Text
        );
        assert_eq!(negotiate(Some("Application/OpenMetrics-Text")), Format::OpenMetrics);
    }

    #[test]
    fn counters_and_info_renamed_units_and_eof_dropped() {
        let open = "\
# HELP stackmeter_agent The agent's name, node and version.
# TYPE stackmeter_agent info
stackmeter_agent_info{source=\"a\",node=\"n1\"} 1
# HELP stackmeter_probes_sent Probes sent, \\\"a\\\" quote.
# TYPE stackmeter_probes_sent counter
stackmeter_probes_sent_total{source=\"a\",target=\"b\"} 7
# HELP stackmeter_rtt_seconds Round trip.
# TYPE stackmeter_rtt_seconds histogram
# UNIT stackmeter_rtt_seconds seconds
stackmeter_rtt_seconds_sum{source=\"a\"} 0.5
stackmeter_rtt_seconds_count{source=\"a\"} 2
stackmeter_rtt_seconds_bucket{le=\"+Inf\",source=\"a\"} 2 # {trace=\"x\"} 0.4
# TYPE odd stateset
odd{odd=\"x\"} 1
# EOF
";
        let want = "\
# HELP stackmeter_agent_info The agent's name, node and version.
# TYPE stackmeter_agent_info gauge
stackmeter_agent_info{source=\"a\",node=\"n1\"} 1
# HELP stackmeter_probes_sent_total Probes sent, \"a\" quote.
# TYPE stackmeter_probes_sent_total counter
stackmeter_probes_sent_total{source=\"a\",target=\"b\"} 7
# HELP stackmeter_rtt_seconds Round trip.
# TYPE stackmeter_rtt_seconds histogram
stackmeter_rtt_seconds_sum{source=\"a\"} 0.5
stackmeter_rtt_seconds_count{source=\"a\"} 2
stackmeter_rtt_seconds_bucket{le=\"+Inf\",source=\"a\"} 2
# TYPE odd untyped
odd{odd=\"x\"} 1
";
        assert_eq!(to_text(open), want);
        assert_eq!(to_text("# EOF\n"), "");
    }
}
