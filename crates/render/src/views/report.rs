//! The HTML report's view: latency CDFs and histograms, throughput per
//! interval, rrul's induced latency, the comparisons and the environment.
use crate::format::Style;
use stackmeter_results::HistKey;
use stackmeter_results::ReportSource;
use stackmeter_results::RunReport;
use stackmeter_results::TestKind;

use crate::chart::{by_percentile, Axis, Chart, Kind, Trace};
use crate::view::{nested, Block, Col, Table, View};
use hdrhistogram::Histogram;
use stackmeter_results::step_suffix;
use stackmeter_results::Document;

impl crate::format::Render for RunReport {
    fn view(&self, style: &Style) -> View {
        let mut v = View::new();
        v.push(Block::Title(self.title()));
        v.push(Block::Note(format!(
            "Generated {} by stackmeter {}. Latency charts merge every repetition's full histogram (HdrHistogram, 3 significant digits).",
            self.generated, self.version
        )));
        if !self.comparisons.is_empty() || !self.decisions.is_empty() {
            v.push(Block::Heading("Comparison".into()));
            for c in &self.comparisons {
                v.extend(nested(c.view(style)));
            }
            for d in &self.decisions {
                v.extend(nested(d.view(style)));
            }
        }
        let lat = latency_charts(&self.sources);
        if !lat.blocks.is_empty() {
            v.push(Block::Heading("Latency distributions".into()));
            v.extend(lat);
        }
        v.extend(test_sections(&self.sources, style));
        let iv = interval_charts(&self.sources);
        if !iv.is_empty() {
            v.push(Block::Heading("Throughput per interval".into()));
            v.blocks.extend(iv.into_iter().map(Block::Chart));
        }
        v.push(Block::Heading("Environment".into()));
        v.push(Block::Table(environment(&self.sources)));
        v
    }

    fn title(&self) -> String {
        let names: Vec<&str> = self.sources.iter().map(|s| s.name.as_str()).collect();
        format!("stackmeter report: {}", names.join(" vs "))
    }
}

/// A CDF and a histogram per row and figure, every source overlaid.
fn latency_charts(sources: &[ReportSource]) -> View {
    let mut keys: Vec<&HistKey> = Vec::new();
    for s in sources {
        for (k, _) in &s.merged {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let mut v = View::new();
    for key in keys {
        let hs: Vec<(usize, &str, &Histogram<u64>)> = sources
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                s.merged
                    .iter()
                    .find(|e| &e.0 == key)
                    .map(|e| (i, s.name.as_str(), &e.1))
            })
            .filter(|(_, _, h)| !h.is_empty())
            .collect();
        if hs.is_empty() {
            continue;
        }
        let lo = hs.iter().map(|(_, _, h)| h.min()).min().unwrap_or(1).max(1) as f64 / 1000.0;
        let hi = hs.iter().map(|(_, _, h)| h.max()).max().unwrap_or(1).max(2) as f64 / 1000.0;
        let (lo, hi) = (lo * 0.95, (hi * 1.05).max(lo * 1.5));
        let metric = key.metric.trim_end_matches("_us");
        let step = step_suffix(key.test.name(), &key.step);
        let title = format!("{}{step} {} {}", key.test, key.row, metric);
        let x = || Axis::log(metric, lo, hi).unit("us");
        let mut qmax: f64 = 10.0;
        let pct: Vec<Trace> = hs
            .iter()
            .map(|(i, name, h)| {
                let spectrum = stackmeter_recorder::serial::spectrum(h, 5);
                let points = by_percentile(spectrum.iter().map(|p| (p.quantile, p.value as f64 / 1000.0)));
                qmax = points.iter().fold(qmax, |m, p| m.max(p.0));
                Trace::line(format!("{name} (n={})", h.len()), *i, points)
            })
            .collect();
        let percentiles = Chart::new(
            "percentiles",
            format!("{title}: latency by percentile"),
            Axis::percentiles(qmax),
            Axis::log(metric, lo, hi).unit("us").snapped(),
            pct,
        );
        // 40 log-spaced bins over the common range, as a share of each
        // side's samples so sides of different sizes compare.
        let bins = 40;
        let f = (hi / lo).powf(1.0 / bins as f64);
        let mut ymax: f64 = 0.0;
        let series: Vec<Trace> = hs
            .iter()
            .map(|(i, name, h)| {
                let n = h.len() as f64;
                let points: Vec<(f64, f64)> = (0..bins)
                    .map(|b| {
                        let a = lo * f.powi(b);
                        let z = a * f;
                        let c = h.count_between((a * 1000.0) as u64, (z * 1000.0) as u64 - 1) as f64 / n;
                        ((a * z).sqrt(), c)
                    })
                    .collect();
                ymax = points.iter().fold(ymax, |m, p| m.max(p.1));
                Trace {
                    kind: Kind::Bars { width: f, base: 0.0 },
                    ..Trace::line(*name, *i, points)
                }
            })
            .collect();
        let y = Axis::linear("share of samples", 0.0, ymax.max(0.01)).snapped();
        let hist = Chart::new("histogram", format!("{title}: latency histogram"), x(), y, series);
        v.push(Block::Heading(title));
        v.push(Block::Chart(percentiles));
        v.push(Block::Chart(hist));
    }
    v
}

/// Per-interval throughput, one chart per test and step with every
/// source's tests overlaid (a line each, coloured by source), so targets
/// are compared interval by interval.
fn interval_charts(sources: &[ReportSource]) -> Vec<Chart> {
    let mut groups: Vec<(TestKind, String)> = Vec::new();
    for s in sources {
        for t in &s.tests {
            let key = (t.doc.body.kind(), t.step.clone());
            if !t.intervals.is_empty() && !groups.contains(&key) {
                groups.push(key);
            }
        }
    }
    let mut out = Vec::new();
    for (test, step) in groups {
        let (mut tmax, mut vmax, mut unit) = (1e-3f64, 1e-9f64, String::new());
        let mut series = Vec::new();
        for (k, s) in sources.iter().enumerate() {
            let mine = s.tests.iter().filter(|t| t.doc.body.kind() == test && t.step == step);
            for t in mine {
                let total: Vec<(f64, f64)> = t
                    .intervals
                    .iter()
                    .filter(|i| i.series == "total")
                    .map(|i| (i.end_s, i.value))
                    .collect();
                if let Some(i) = t.intervals.first() {
                    unit = i.unit.clone();
                }
                tmax = total.iter().fold(tmax, |m, p| m.max(p.0));
                vmax = total.iter().fold(vmax, |m, p| m.max(p.1));
                series.push(Trace::line(format!("{} (test {})", s.name, t.id), k, total));
            }
        }
        let step = step_suffix(test.name(), &step);
        out.push(Chart::new(
            "intervals",
            format!("{test}{step}: total per interval, every source"),
            Axis::linear("time", 0.0, tmax).unit("s"),
            Axis::linear("total", 0.0, vmax).unit(unit).snapped(),
            series,
        ));
    }
    out
}

/// The sections that belong to one test, in the list of tests' order:
/// a test has one when its view says so ([`crate::views::TestView::report_section`]).
fn test_sections(sources: &[ReportSource], style: &Style) -> View {
    let mut v = View::new();
    for kind in TestKind::ALL {
        let section = crate::views::report_section(*kind, sources, style);
        if let Some((heading, body)) = section.filter(|(_, b)| !b.blocks.is_empty()) {
            v.push(Block::Heading(heading.into()));
            v.extend(body);
        }
    }
    v
}

fn placement(d: &Document) -> String {
    let p = &d.placement;
    let client = match p.client_cpu {
        Some(c) => format!("client CPU {c}"),
        None => "client not pinned".into(),
    };
    match (p.client_cpu, p.responder_cpu, d.target.embedded) {
        (None, None, true) => "not pinned (client and responder)".into(),
        (_, Some(r), _) => format!("{client}, responder CPU {r}"),
        (_, None, true) => format!("{client}, responder not pinned"),
        (_, None, false) => format!("{client}, responder CPU not known"),
    }
}

/// Where and how each source ran.
fn environment(sources: &[ReportSource]) -> Table {
    let heads = [
        "source",
        "tests",
        "first",
        "last",
        "target",
        "host",
        "kernel",
        "CPU",
        "CPUs",
        "placement",
        "stackmeter",
        "command",
    ];
    let mut t = Table {
        cols: heads.iter().map(|h| Col::text(h, 0)).collect(),
        ..Table::default()
    };
    for s in sources {
        let (Some(first), Some(last)) = (s.tests.first(), s.tests.last()) else {
            continue;
        };
        let mut targets: Vec<String> = s.tests.iter().map(|t| t.doc.target.address.clone()).collect();
        targets.dedup();
        let d = &first.doc;
        t.rows.push(vec![
            s.name.clone(),
            s.tests.len().to_string(),
            d.env.time.clone(),
            last.doc.env.time.clone(),
            targets.join(", "),
            d.env.hostname.clone(),
            d.env.kernel.clone(),
            d.env.cpu_model.clone(),
            d.env.cpus.to_string(),
            placement(d),
            d.env.version.clone(),
            d.env.command.join(" "),
        ]);
    }
    t
}
