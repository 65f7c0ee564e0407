//! `stackmeter report`: one self-contained HTML file from stored results:
//! latency CDF and histogram per size (merged over repetitions), throughput
//! per interval when a test has intervals, comparison bars with their 95%
//! intervals, and the environment. Charts are inline SVG; a few lines of
//! inline script only mark each chart as drawn (what the browser test
//! checks). Nothing is fetched from the network.

use crate::args::DbArgs;
use crate::compare_cmd::{resolve, Metric};
use crate::comparison::{self, Comparison};
use crate::fail;
use crate::svg::{Axis, Chart, Kind, Series, COLORS};
use clap::Args;
use hdrhistogram::Histogram;
use stackmeter_store::{Store, StoredTest};
use std::fmt::Write;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// What to report: labels, run ids or RUN:LABEL; the first is the baseline of the comparisons.
    #[arg(required = true)]
    pub sources: Vec<String>,
    /// The HTML file to write.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: std::path::PathBuf,
    /// Latency figure compared per repetition.
    #[arg(long, value_enum, default_value = "mean")]
    pub metric: Metric,
    #[command(flatten)]
    pub db: DbArgs,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:12px}svg{background:#fff;border:1px solid #ddd}
svg .t{font-size:13px;font-weight:600}svg .xl{font-size:10px;text-anchor:middle}svg .yl{font-size:10px;text-anchor:end}
svg .al{font-size:11px;text-anchor:middle}svg .lg{font-size:11px}svg .g{stroke:#eee}svg .f{fill:none;stroke:#888}
svg .ref{stroke:#444;stroke-dasharray:4 3}.faster{color:#0a7d32}.slower{color:#b3261e}.note{color:#555}";

/// Marks every chart the browser actually laid out, and counts them.
const SCRIPT: &str = "window.addEventListener('load',function(){var n=0;\
document.querySelectorAll('svg[data-chart]').forEach(function(s){var b=s.getBBox();\
if(b.width>0&&b.height>0&&s.querySelectorAll('.series').length>0){n++;s.setAttribute('data-drawn','yes');}});\
document.body.setAttribute('data-charts-drawn',String(n));});";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head>\n<body>\n{body}\n<script>{SCRIPT}</script>\n</body></html>\n",
        esc(title)
    )
}

/// The comparison as an HTML table and bar charts of B/A with intervals.
fn comparison_html(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "<h2>{} vs {} (A, baseline)</h2>", esc(&c.b), esc(&c.a));
    for s in &c.sections {
        let _ = writeln!(o, "<h3>{}</h3>", esc(&s.title()));
        let _ = writeln!(
            o,
            "<table><tr><th>Size</th><th>A: {} ({u})</th><th>B: {} ({u})</th><th>Difference ({u})</th><th>B vs A</th><th>95% CI of B/A</th><th>p-value</th><th>reps A/B</th></tr>",
            esc(&c.a),
            esc(&c.b),
            u = esc(&s.unit)
        );
        for r in &s.rows {
            let st = &r.stats;
            let class = match st.verdict {
                stackmeter_compare::Verdict::Faster => "faster",
                stackmeter_compare::Verdict::Slower => "slower",
                _ => "note",
            };
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:+.3}</td><td class=\"{class}\">{}</td><td>{:.3}-{:.3}</td><td>{:.3}</td><td>{}/{}</td></tr>",
                esc(&r.label),
                comparison::num(st.median_a),
                comparison::num(st.median_b),
                st.difference,
                esc(&comparison::verdict_words(st)),
                st.ratio_ci.0,
                st.ratio_ci.1,
                st.p_value,
                st.n_a,
                st.n_b
            );
        }
        o.push_str("</table>\n");
        let (mut lo, mut hi) = (1.0f64, 1.0f64);
        for r in &s.rows {
            lo = lo.min(r.stats.ratio_ci.0).min(r.stats.ratio);
            hi = hi.max(r.stats.ratio_ci.1).max(r.stats.ratio);
        }
        let n = s.rows.len() as f64;
        let chart = Chart {
            title: "B / A per row, with 95% interval".into(),
            x: Axis {
                label: String::new(),
                min: -0.6,
                max: n - 0.4,
                log: false,
            },
            y: Axis {
                label: "B / A".into(),
                min: (lo - 0.05 * (hi - lo + 0.1)).max(0.0),
                max: hi + 0.05 * (hi - lo + 0.1),
                log: false,
            },
            series: vec![Series {
                name: format!("{} / {}", c.b, c.a),
                color: COLORS[1].into(),
                points: s
                    .rows
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (i as f64, r.stats.ratio))
                    .collect(),
                errors: s.rows.iter().map(|r| r.stats.ratio_ci).collect(),
                kind: Kind::Bars {
                    width: 0.6,
                    base: (lo - 0.05 * (hi - lo + 0.1)).max(0.0),
                },
            }],
            categories: s.rows.iter().map(|r| r.label.clone()).collect(),
            hline: Some(1.0),
            kind: "comparison".into(),
        };
        let _ = writeln!(o, "<div class=\"charts\">{}</div>", chart.svg());
    }
    o.push_str("<p>");
    for l in comparison::summary_lines(c) {
        let _ = write!(o, "{}<br>", esc(&l));
    }
    for n in &c.notes {
        let _ = write!(o, "Note: {}<br>", esc(n));
    }
    let _ = writeln!(o, "</p><p class=\"note\">Method: {}.</p>", esc(&c.method));
    o
}

/// `compare --format html`: the comparison alone, as a page.
pub fn comparison_page(c: &Comparison) -> String {
    page(
        &format!("stackmeter compare {} vs {}", c.b, c.a),
        &format!("<h1>stackmeter compare</h1>\n{}", comparison_html(c)),
    )
}

/// Histograms of one source merged over repetitions, keyed by
/// (test, step, row label, metric), in first-seen order.
type Merged = Vec<((String, String, String, String), Histogram<u64>)>;

fn merged(store: &Store, tests: &[StoredTest]) -> Result<Merged, String> {
    let mut out: Merged = Vec::new();
    for t in tests {
        let figs = stackmeter_results::figures(&t.doc);
        for h in store.histograms(t.id).map_err(|e| e.to_string())? {
            if h.encoding != stackmeter_stats::serial::ENCODING {
                continue;
            }
            let hist = stackmeter_stats::serial::decode(&h.data).map_err(|e| format!("test {}: {e}", t.id))?;
            let row = figs
                .iter()
                .find(|f| f.row == h.row)
                .map(|f| f.row_label.clone())
                .unwrap_or_default();
            let key = (
                t.doc.body.test_name().to_string(),
                t.step.clone(),
                row,
                h.metric.clone(),
            );
            match out.iter_mut().find(|e| e.0 == key) {
                Some(e) => {
                    // Histograms with other bounds are skipped, not fatal.
                    let _ = e.1.add(&hist);
                }
                None => out.push((key, hist)),
            }
        }
    }
    Ok(out)
}

fn latency_charts(sources: &[(String, Merged)]) -> (String, usize) {
    let mut keys: Vec<(String, String, String, String)> = Vec::new();
    for (_, m) in sources {
        for (k, _) in m {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let mut o = String::new();
    let mut count = 0;
    for key in &keys {
        let hs: Vec<(usize, &String, &Histogram<u64>)> = sources
            .iter()
            .enumerate()
            .filter_map(|(i, (name, m))| m.iter().find(|e| &e.0 == key).map(|e| (i, name, &e.1)))
            .filter(|(_, _, h)| !h.is_empty())
            .collect();
        if hs.is_empty() {
            continue;
        }
        let lo = hs.iter().map(|(_, _, h)| h.min()).min().unwrap_or(1).max(1) as f64 / 1000.0;
        let hi = hs.iter().map(|(_, _, h)| h.max()).max().unwrap_or(1).max(2) as f64 / 1000.0;
        let (lo, hi) = (lo * 0.95, (hi * 1.05).max(lo * 1.5));
        let metric = key.3.trim_end_matches("_us");
        let step = if key.1.is_empty() || key.1 == key.0 {
            String::new()
        } else {
            format!(" [{}]", key.1)
        };
        let title = format!("{}{step} {} {}", key.0, key.2, metric);
        let cdf = Chart {
            title: format!("{title}: latency CDF"),
            x: Axis {
                label: format!("{metric} (us, log scale)"),
                min: lo,
                max: hi,
                log: true,
            },
            y: Axis {
                label: "fraction of samples at or below".into(),
                min: 0.0,
                max: 1.0,
                log: false,
            },
            series: hs
                .iter()
                .map(|(i, name, h)| Series {
                    name: format!("{name} (n={})", h.len()),
                    color: COLORS[i % COLORS.len()].into(),
                    points: stackmeter_stats::serial::cdf(h)
                        .into_iter()
                        .map(|(v, q)| (v as f64 / 1000.0, q))
                        .collect(),
                    errors: vec![],
                    kind: Kind::Line,
                })
                .collect(),
            categories: vec![],
            hline: None,
            kind: "cdf".into(),
        };
        // Histogram: 40 log-spaced bins over the common range, as a share of
        // each side's samples so sides of different sizes compare.
        let bins = 40;
        let f = (hi / lo).powf(1.0 / bins as f64);
        let mut ymax: f64 = 0.0;
        let series: Vec<Series> = hs
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
                Series {
                    name: name.to_string(),
                    color: COLORS[i % COLORS.len()].into(),
                    points,
                    errors: vec![],
                    kind: Kind::Bars { width: f, base: 0.0 },
                }
            })
            .collect();
        let hist = Chart {
            title: format!("{title}: latency histogram"),
            x: Axis {
                label: format!("{metric} (us, log scale)"),
                min: lo,
                max: hi,
                log: true,
            },
            y: Axis {
                label: "share of samples".into(),
                min: 0.0,
                max: (ymax * 1.1).max(0.01),
                log: false,
            },
            series,
            categories: vec![],
            hline: None,
            kind: "histogram".into(),
        };
        let _ = writeln!(
            o,
            "<h3>{}</h3><div class=\"charts\">{}{}</div>",
            esc(&title),
            cdf.svg(),
            hist.svg()
        );
        count += 2;
    }
    (o, count)
}

fn interval_charts(store: &Store, sources: &[(String, Vec<StoredTest>)]) -> Result<String, String> {
    let mut o = String::new();
    for (name, tests) in sources {
        for t in tests {
            let iv = store.intervals(t.id).map_err(|e| e.to_string())?;
            if iv.is_empty() {
                continue;
            }
            let mut names: Vec<&str> = Vec::new();
            for i in &iv {
                if !names.contains(&i.series.as_str()) {
                    names.push(&i.series);
                }
            }
            let unit = iv[0].unit.clone();
            let tmax = iv.iter().fold(0.0f64, |m, i| m.max(i.end_s));
            let vmax = iv.iter().fold(0.0f64, |m, i| m.max(i.value));
            let chart = Chart {
                title: format!("{name}: {} test {} per interval", t.doc.body.test_name(), t.id),
                x: Axis {
                    label: "time (s)".into(),
                    min: 0.0,
                    max: tmax.max(1e-3),
                    log: false,
                },
                y: Axis {
                    label: unit.clone(),
                    min: 0.0,
                    max: (vmax * 1.1).max(1e-9),
                    log: false,
                },
                series: names
                    .iter()
                    .enumerate()
                    .map(|(k, s)| Series {
                        name: s.to_string(),
                        color: COLORS[k % COLORS.len()].into(),
                        points: iv
                            .iter()
                            .filter(|i| i.series == *s)
                            .map(|i| (i.end_s, i.value))
                            .collect(),
                        errors: vec![],
                        kind: Kind::Line,
                    })
                    .collect(),
                categories: vec![],
                hline: None,
                kind: "intervals".into(),
            };
            let _ = writeln!(o, "<div class=\"charts\">{}</div>", chart.svg());
        }
    }
    Ok(o)
}

fn environment(sources: &[(String, Vec<StoredTest>)]) -> String {
    let mut o = String::from(
        "<table><tr><th>source</th><th>tests</th><th>first</th><th>last</th><th>target</th><th>host</th><th>kernel</th><th>CPU</th><th>CPUs</th><th>placement (client/responder CPU)</th><th>stackmeter</th><th>command</th></tr>\n",
    );
    for (name, tests) in sources {
        let Some(first) = tests.first() else { continue };
        let last = tests.last().unwrap_or(first);
        let mut targets: Vec<String> = tests.iter().map(|t| t.doc.target.address.clone()).collect();
        targets.dedup();
        let d = &first.doc;
        let pl = |c: Option<usize>| c.map(|c| c.to_string()).unwrap_or_else(|| "-".into());
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(name),
            tests.len(),
            esc(&d.env.time),
            esc(&last.doc.env.time),
            esc(&targets.join(", ")),
            esc(&d.env.hostname),
            esc(&d.env.kernel),
            esc(&d.env.cpu_model),
            d.env.cpus,
            pl(d.placement.client_cpu),
            pl(d.placement.responder_cpu),
            esc(&d.env.version),
            esc(&d.env.command.join(" "))
        );
    }
    o.push_str("</table>\n");
    o
}

pub fn run(a: ReportArgs) -> i32 {
    let store = match crate::record::open(&a.db) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut sources = Vec::new();
    for s in &a.sources {
        match resolve(&store, s) {
            Ok(r) => sources.push(r),
            Err(e) => return fail(2, e),
        }
    }
    let mut merged_all = Vec::new();
    for (name, tests) in &sources {
        match merged(&store, tests) {
            Ok(m) => merged_all.push((name.clone(), m)),
            Err(e) => return fail(1, e),
        }
    }
    let mut body = String::new();
    let names: Vec<&str> = sources.iter().map(|s| s.0.as_str()).collect();
    let _ = writeln!(
        body,
        "<h1>stackmeter report: {}</h1>\n<p class=\"note\">Generated {} by stackmeter {}. Latency charts merge every repetition's full histogram (HdrHistogram, 3 significant digits).</p>",
        esc(&names.join(" vs ")),
        crate::record::now(),
        env!("CARGO_PKG_VERSION")
    );
    if sources.len() >= 2 {
        let _ = writeln!(body, "<h2>Comparison</h2>");
        for other in sources.iter().skip(1) {
            let c = crate::compare_cmd::of(sources[0].clone(), other.clone(), a.metric);
            body.push_str(&comparison_html(&c));
        }
    }
    let (lat, _) = latency_charts(&merged_all);
    if !lat.is_empty() {
        let _ = writeln!(body, "<h2>Latency distributions</h2>\n{lat}");
    }
    match interval_charts(&store, &sources) {
        Ok(iv) if !iv.is_empty() => {
            let _ = writeln!(body, "<h2>Throughput per interval</h2>\n{iv}");
        }
        Ok(_) => {}
        Err(e) => return fail(1, e),
    }
    let _ = writeln!(body, "<h2>Environment</h2>\n{}", environment(&sources));
    let html = page(&format!("stackmeter report: {}", names.join(" vs ")), &body);
    match std::fs::write(&a.output, html) {
        Ok(()) => {
            eprintln!("stackmeter: wrote {}", a.output.display());
            0
        }
        Err(e) => fail(1, format!("cannot write {}: {e}", a.output.display())),
    }
}
