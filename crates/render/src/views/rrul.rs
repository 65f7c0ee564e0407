//! rrul's figures and view: the phase table, throughput and probe delay
//! against time with the phases shaded, the round trip by percentile per
//! phase, and the induced-latency chart a report draws across runs.

use crate::chart::{by_percentile, Axis, Band, Chart, Trace};
use crate::units::{bit_rate, Units};
use crate::view::{Block, Col, Table, View};
use stackmeter_results::latency_text as num;
use stackmeter_results::rrul::{phase_label, ClockInfo, Induced, Phase, ProbePoint, RatePoint, RrulParams};

/// The view; returns the probe counts behind its percentiles.
#[allow(clippy::too_many_arguments)]
pub(crate) fn view(
    v: &mut View,
    p: &RrulParams,
    phases: &[Phase],
    induced: &[Induced],
    clock: Option<&ClockInfo>,
    series: &[ProbePoint],
    throughput: &[RatePoint],
    u: Units,
) -> Vec<u64> {
    v.line(format!(
        "latency under load: phases {} of {} s; load {} TCP stream(s) per direction, {}-byte writes; UDP probes of {} B every {} ms{}",
        p.phases.join(" -> "),
        p.phase_s,
        p.parallel,
        p.length,
        p.probe_size,
        p.probe_interval_ms,
        if p.tcp_probe { ", and a TCP 1:1 rr probe" } else { "" }
    ));
    v.blank();
    let opt = |x: Option<f64>| x.map(num).unwrap_or_else(|| "-".into());
    let ind = |i: usize, pick: fn(&Induced) -> Option<f64>| -> String {
        let label = phase_label(i, &phases[i].name);
        opt(induced.iter().find(|d| d.phase == label).and_then(pick))
    };
    let mut cols = vec![
        Col::text("phase", 8),
        Col::num("s", 9),
        Col::num("down", 12),
        Col::num("up", 12),
        Col::num("rtt p50", 8),
        Col::num("rtt p99", 8),
        Col::num("+p50", 8),
        Col::num("+p99", 8),
        Col::num("up p50", 8),
        Col::num("down p50", 8),
        Col::num("+up", 8),
        Col::num("+down", 8),
    ];
    if p.tcp_probe {
        cols.push(Col::num("tcp p50", 8));
    }
    cols.push(Col::num("probes", 7));
    cols.push(Col::num("loss %", 7));
    // Loss each way where the responder counted the probes it received.
    let split = phases.iter().any(|ph| ph.probe_loss_up.is_some());
    if split {
        cols.push(Col::num("up %", 7));
        cols.push(Col::num("down %", 7));
    }
    // "-" where the phase does not load that direction.
    let rate = |ph: &Phase, dir: &str, v: f64| match ph.name == dir || ph.name == "bidir" {
        true => bit_rate(v, u),
        false => "-".to_string(),
    };
    let rows = phases
        .iter()
        .enumerate()
        .map(|(i, ph)| {
            let mut r = vec![
                phase_label(i, &ph.name),
                format!("{:.1}-{:.1}", ph.start_s, ph.end_s),
                rate(ph, "down", ph.down_mbps),
                rate(ph, "up", ph.up_mbps),
                opt(ph.rtt_us.as_ref().map(|s| s.p50)),
                opt(ph.rtt_us.as_ref().map(|s| s.p99)),
                ind(i, |d| Some(d.rtt_p50_us)),
                ind(i, |d| Some(d.rtt_p99_us)),
                opt(ph.owd_up_us.as_ref().map(|s| s.p50)),
                opt(ph.owd_down_us.as_ref().map(|s| s.p50)),
                ind(i, |d| d.owd_up_p50_us),
                ind(i, |d| d.owd_down_p50_us),
            ];
            if p.tcp_probe {
                r.push(opt(ph.tcp_rtt_us.as_ref().map(|s| s.p50)));
            }
            r.push(ph.probes_sent.to_string());
            r.push(format!("{:.2}", ph.probe_loss * 100.0));
            if split {
                let pct = |x: Option<f64>| x.map_or_else(|| "-".into(), |x| format!("{:.2}", x * 100.0));
                r.push(pct(ph.probe_loss_up));
                r.push(pct(ph.probe_loss_down));
            }
            r
        })
        .collect();
    v.push(Block::Table(Table {
        cols,
        rows,
        ..Table::default()
    }));
    v.blank();
    v.line(" delays in us; + = induced: the phase's figure minus the first idle phase's; up/down = one-way delays of the probes");
    if let Some(c) = clock {
        v.line(format!(" {}", c.text));
    }
    if split {
        v.line(" up %/down %: probes lost on the way to the responder and on the way back, from the responder's count of what it received (docs/protocol.md 4.4); a reply later than the timeout counts as lost on the way back");
    } else {
        v.line(" loss % is both ways together: this responder did not count the probes it received, so loss cannot be split into up and down (an older responder; docs/protocol.md 4.4)");
    }
    if let Some(d) = induced.iter().find(|d| d.rtt_p50_us < 0.0 || d.rtt_p99_us < 0.0) {
        v.line(format!(
            " a negative induced figure ({} first) means that phase answered faster than the first idle one: a CPU that idles between probes wakes slower (deeper sleep states, timer wake-ups) than one kept busy, and a later phase may find it busier; it is not a gain of the stack",
            d.phase
        ));
    }
    charts(v, phases, series, throughput);
    phases
        .iter()
        .filter_map(|p| p.rtt_us.as_ref().map(|s| s.count))
        .collect()
}

/// The charts flent and crusader users read first, into the view.
fn charts(v: &mut View, phases: &[Phase], series: &[ProbePoint], throughput: &[RatePoint]) {
    for c in time_charts("", phases, series, throughput) {
        v.push(Block::Chart(c));
    }
}

/// Throughput and probe delay against time with the phases shaded, and the
/// round trip by percentile per phase; titles start with `prefix`.
pub(crate) fn time_charts(
    prefix: &str,
    phases: &[Phase],
    series: &[ProbePoint],
    throughput: &[RatePoint],
) -> Vec<Chart> {
    let Some(end) = phases.last().map(|p| p.end_s) else {
        return Vec::new();
    };
    let bands: Vec<Band> = phases
        .iter()
        .map(|p| Band {
            from: p.start_s,
            to: p.end_s,
            label: p.name.clone(),
        })
        .collect();
    let pick = |f: fn(&RatePoint) -> f64| throughput.iter().map(|r| (r.t_s, f(r))).collect::<Vec<_>>();
    let top = throughput
        .iter()
        .map(|r| r.down_mbps.max(r.up_mbps))
        .fold(1.0, f64::max);
    let mut c = Chart::new(
        "rrul-throughput",
        format!("{prefix}Throughput against time (receiver-counted, per interval)"),
        Axis::linear("time", 0.0, end).unit("s"),
        Axis::linear("throughput", 0.0, top).unit("Mbit/s").snapped(),
        vec![
            Trace::line("down", 0, pick(|r| r.down_mbps)),
            Trace::line("up", 1, pick(|r| r.up_mbps)),
        ],
    );
    c.bands = bands.clone();
    let line = |f: fn(&ProbePoint) -> Option<f64>| {
        series
            .iter()
            .filter_map(|p| f(p).map(|y| (p.t_s, y.max(0.1))))
            .collect::<Vec<_>>()
    };
    let (rtt, up, down) = (line(|p| p.rtt_us), line(|p| p.up_us), line(|p| p.down_us));
    let all = || rtt.iter().chain(&up).chain(&down).map(|p| p.1);
    let (lo, hi) = (all().fold(f64::INFINITY, f64::min), all().fold(1.0, f64::max));
    let mut d = Chart::new(
        "rrul-latency",
        format!("{prefix}Probe delay against time: round trip and each way"),
        Axis::linear("time", 0.0, end).unit("s"),
        Axis::log("probe delay", lo.min(hi), hi).unit("us").snapped(),
        vec![
            Trace::line("rtt", 0, rtt),
            Trace::line("up", 1, up),
            Trace::line("down", 2, down),
        ],
    );
    d.bands = bands;
    // Round trip by percentile per phase, from every probe of the phase.
    let mut lines = Vec::new();
    let (mut bottom, mut top) = (f64::INFINITY, 1.0f64);
    for (i, p) in phases.iter().enumerate() {
        let mut r: Vec<f64> = series
            .iter()
            .filter(|s| s.t_s >= p.start_s && s.t_s < p.end_s)
            .filter_map(|s| s.rtt_us)
            .collect();
        if r.is_empty() {
            continue;
        }
        r.sort_by(f64::total_cmp);
        let n = r.len();
        let pts = by_percentile((0..n).map(|k| ((k as f64 + 0.5) / n as f64, r[k])));
        top = top.max(r[n - 1]);
        bottom = bottom.min(r[0].max(0.1));
        lines.push(Trace::line(phase_label(i, &p.name), i, pts));
    }
    let xmax = lines
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(10.0, f64::max);
    let e = Chart::new(
        "rrul-percentiles",
        format!("{prefix}Probe round trip by percentile, per phase"),
        Axis::percentiles(xmax),
        Axis::log("round trip", bottom.min(top), top).unit("us").snapped(),
        lines,
    );
    vec![c, d, e]
}

/// Induced round-trip latency (p50) per phase, every side side by side: a
/// dot at the median over its runs with a bar from the lowest to the
/// highest. `sides` are (name, each run's induced rows).
pub(crate) fn induced_chart(sides: &[(String, Vec<&[Induced]>)]) -> Option<Chart> {
    let mut phases: Vec<String> = Vec::new();
    for (_, runs) in sides {
        for d in runs.iter().flat_map(|r| r.iter()) {
            if !phases.contains(&d.phase) && !d.phase.ends_with(" idle") {
                phases.push(d.phase.clone());
            }
        }
    }
    if phases.is_empty() {
        return None;
    }
    let n = sides.len().max(1) as f64;
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    let mut series = Vec::new();
    for (k, (name, runs)) in sides.iter().enumerate() {
        let mut s = Trace::line(name.clone(), k, Vec::new());
        s.kind = crate::chart::Kind::Points { radius: 4.0 };
        for (i, ph) in phases.iter().enumerate() {
            let mut v: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.iter().find(|d| &d.phase == ph).map(|d| d.rtt_p50_us))
                .collect();
            if v.is_empty() {
                continue;
            }
            v.sort_by(f64::total_cmp);
            let x = i as f64 + (k as f64 - (n - 1.0) / 2.0) * 0.5 / n;
            let m = v.len();
            s.points.push((x, (v[(m - 1) / 2] + v[m / 2]) / 2.0));
            s.errors.push((v[0], v[v.len() - 1]));
            lo = lo.min(v[0]);
            hi = hi.max(v[v.len() - 1]);
        }
        series.push(s);
    }
    let mut c = Chart::new(
        "rrul-induced",
        "Induced round trip per phase (p50 minus idle's): median of runs, lowest to highest",
        Axis::linear("phase", -0.5, phases.len() as f64 - 0.5),
        Axis::linear("induced round trip", lo * 1.05, hi * 1.05)
            .unit("us")
            .snapped(),
        series,
    );
    c.categories = phases;
    c.hline = Some(0.0);
    Some(c)
}

impl crate::views::TestView for stackmeter_results::RrulBody {
    fn view(&self, v: &mut View, units: Units) -> Vec<u64> {
        view(
            v,
            &self.params,
            &self.phases,
            &self.induced,
            self.clock.as_ref(),
            &self.series,
            &self.throughput,
            units,
        )
    }

    fn report_section(
        sources: &[stackmeter_results::ReportSource],
        style: &crate::format::Style,
    ) -> Option<(&'static str, View)> {
        Some(("Latency under load (rrul)", report_section(sources, style)))
    }
}

/// rrul's section of a run report: induced latency per phase of every
/// source side by side, then each source's latest run as its command
/// printed it (the phase table with the induced p50 and p99, its notes)
/// and against time.
fn report_section(sources: &[stackmeter_results::ReportSource], style: &crate::format::Style) -> View {
    use crate::view::Block;
    use stackmeter_results::{Body, ReportSource, ReportTest, RrulBody};
    fn rrul(s: &ReportSource) -> Vec<(&ReportTest, &RrulBody)> {
        let mut out = Vec::new();
        for t in &s.tests {
            if let Body::Rrul(r) = &t.doc.body {
                out.push((t, r));
            }
        }
        out
    }
    let sides: Vec<(String, Vec<&[Induced]>)> = sources
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                rrul(s).into_iter().map(|(_, r)| &r.induced[..]).collect(),
            )
        })
        .collect();
    let mut v = View::new();
    if let Some(c) = induced_chart(&sides) {
        v.push(Block::Chart(c));
    }
    for s in sources {
        let Some((t, r)) = rrul(s).last().copied() else {
            continue;
        };
        v.push(Block::Heading(format!("{}: latest rrul run (test {})", s.name, t.id)));
        // Its own view, but the charts named after the source.
        for b in crate::format::Render::view(&t.doc, style).blocks {
            match b {
                Block::Title(l) => {
                    v.line(l);
                }
                Block::Chart(_) => {}
                other => {
                    v.push(other);
                }
            }
        }
        let prefix = format!("{} (test {}): ", s.name, t.id);
        for c in time_charts(&prefix, &r.phases, &r.series, &r.throughput) {
            v.push(Block::Chart(c));
        }
    }
    v
}
