//! rrul: latency under load (flent's RRUL, crusader). Phases of TCP load
//! (idle, down, up, both ways) with latency probes running through all of
//! them; per phase the throughput each way, the probes' round trip and
//! one-way delays, their loss, and the latency the load induced over the
//! idle baseline. Its parameters, the pure assembly of phases from raw
//! probe stamps, its figures and its view (a phase table; throughput and
//! delay against time with the phases shaded; a latency-by-percentile
//! chart per phase).

use crate::chart::{by_percentile, Axis, Band, Chart, Series};
use crate::figures::Figures;
use crate::latency::{num, LatencyUs};
use crate::units::{bit_rate, Units};
use crate::view::{Block, Col, Table, View};
use serde::{Deserialize, Serialize};
use stackmeter_stats::owd::{self, Clock, Stamps};
use stackmeter_stats::{Recorder, Summary};

/// rrul parameters.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RrulParams {
    /// The phases in order: `idle`, `down`, `up`, `bidir`.
    pub phases: Vec<String>,
    /// Seconds per phase.
    pub phase_s: f64,
    /// TCP streams per loaded direction.
    pub parallel: u32,
    /// Bytes per write of the load streams.
    pub length: u32,
    /// Milliseconds between UDP probes.
    pub probe_interval_ms: f64,
    /// UDP probe size (stackmeter header included).
    pub probe_size: usize,
    /// A TCP request/response probe (1:1) runs too, on its own connection.
    pub tcp_probe: bool,
    /// `estimate`: the clock offset comes from the probes; `synced`: the
    /// two clocks are trusted to agree; `auto`: synced on loopback.
    pub clock: String,
    /// Bound on every network wait, and the time after which a probe is lost.
    pub timeout_ms: u64,
}

/// One phase's figures.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Phase {
    /// `idle`, `down`, `up` or `bidir`.
    pub name: String,
    /// Start, seconds since the test began.
    pub start_s: f64,
    /// End, seconds since the test began.
    pub end_s: f64,
    /// Target-to-client goodput counted by the client, Mbit/s (0 when idle
    /// or only up).
    pub down_mbps: f64,
    /// Client-to-target goodput counted by the target, Mbit/s.
    pub up_mbps: f64,
    /// UDP probe round trips.
    pub rtt_us: Option<LatencyUs>,
    /// Client to responder one-way delay of the probes.
    pub owd_up_us: Option<LatencyUs>,
    /// Responder to client one-way delay of the probes.
    pub owd_down_us: Option<LatencyUs>,
    /// TCP request/response probe round trips (with `tcp_probe`).
    pub tcp_rtt_us: Option<LatencyUs>,
    /// UDP probes sent in the phase.
    pub probes_sent: u64,
    /// Of them, unanswered within the timeout.
    pub probes_lost: u64,
    /// probes_lost / probes_sent.
    pub probe_loss: f64,
    /// Loss on the way to the responder, where the responder counts what
    /// it received (protocol v1 echo responders do not: `None`).
    pub probe_loss_up: Option<f64>,
    /// Loss on the way back, likewise.
    pub probe_loss_down: Option<f64>,
}

/// Latency a phase's load added over the idle baseline (the first idle
/// phase), microseconds.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Induced {
    /// The phase, as its row label ("2 down").
    pub phase: String,
    /// Round-trip median minus the baseline's.
    pub rtt_p50_us: f64,
    /// Round-trip 99th percentile minus the baseline's.
    pub rtt_p99_us: f64,
    /// Upward one-way median minus the baseline's.
    pub owd_up_p50_us: Option<f64>,
    /// Downward one-way median minus the baseline's.
    pub owd_down_p50_us: Option<f64>,
}

/// How the one-way delays were made.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClockInfo {
    /// `estimated`, `synced`, or `none` (no probe answered with stamps).
    pub method: String,
    /// Responder clock minus client clock at the first estimate, us.
    pub offset_us: f64,
    /// Drift of that offset, parts per million (0: one estimate only).
    pub drift_ppm: f64,
    /// Every one-way delay is within this of the truth, us (`None` with
    /// synced clocks: as good as their synchronisation).
    pub bound_us: Option<f64>,
    /// The method in words, as the text output prints it.
    pub text: String,
}

/// One probe on the time axis.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProbePoint {
    /// Send time, seconds since the test began.
    pub t_s: f64,
    /// Round trip, us; `None`: lost.
    pub rtt_us: Option<f64>,
    /// One-way up, us.
    pub up_us: Option<f64>,
    /// One-way down, us.
    pub down_us: Option<f64>,
}

/// Throughput of one load interval on the time axis.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RatePoint {
    /// Interval end, seconds since the test began.
    pub t_s: f64,
    /// Target to client, Mbit/s.
    pub down_mbps: f64,
    /// Client to target, Mbit/s.
    pub up_mbps: f64,
}

/// What the client collected: raw stamps and the load phases' figures.
#[derive(Clone, Debug, Default)]
pub struct RawRrul {
    /// Client clock (ns) when the test began.
    pub origin_ns: u64,
    /// Each UDP probe: send time, and the reply's stamps if it came back.
    pub probes: Vec<RawProbe>,
    /// TCP probes: send time and round trip (ns), `None` if it failed.
    pub tcp_probes: Vec<(u64, Option<u64>)>,
    /// The phases as they ran.
    pub phases: Vec<RawPhase>,
}

/// A UDP probe as sent and answered.
#[derive(Clone, Copy, Debug)]
pub struct RawProbe {
    /// Client send time, ns.
    pub c_tx: u64,
    /// (responder receive, responder send, client receive), ns.
    pub reply: Option<(u64, u64, u64)>,
}

/// A phase as it ran.
#[derive(Clone, Debug)]
pub struct RawPhase {
    /// Its name.
    pub name: String,
    /// Client clock at start and end, ns.
    pub start_ns: u64,
    /// End.
    pub end_ns: u64,
    /// Receiver-counted rates over the phase's window, Mbit/s.
    pub down_mbps: f64,
    /// Up.
    pub up_mbps: f64,
    /// Interval rows: (end, ns on the client clock; down; up).
    pub intervals: Vec<(u64, f64, f64)>,
}

/// The assembled result.
#[derive(Clone, Debug, Default)]
pub struct Assembled {
    /// Per phase.
    pub phases: Vec<Phase>,
    /// Per phase, against the first idle phase (empty without one).
    pub induced: Vec<Induced>,
    /// The clock method.
    pub clock: Option<ClockInfo>,
    /// Every probe.
    pub series: Vec<ProbePoint>,
    /// Every load interval.
    pub throughput: Vec<RatePoint>,
    /// UDP probe round trips per phase, ns (for the store).
    pub rtt: Vec<Recorder>,
}

/// The row label of phase `i` ("1 idle").
pub fn phase_label(i: usize, name: &str) -> String {
    format!("{} {name}", i + 1)
}

fn stamps(p: &RawProbe) -> Option<Stamps> {
    p.reply.map(|(s_rx, s_tx, c_rx)| Stamps {
        c_tx: p.c_tx,
        s_rx,
        s_tx,
        c_rx,
    })
}

/// Assembles the phases from raw stamps: the clock first (from the
/// lowest-RTT probe of the first and the last idle phase), then each
/// phase's distributions, then the induced latency.
pub fn assemble(raw: &RawRrul, synced: bool) -> Assembled {
    let secs = |ns: u64| ns.saturating_sub(raw.origin_ns) as f64 / 1e9;
    // The phases tile the test: each runs to the next one's start (the
    // moments between two phases belong to the earlier one), the first
    // takes the probes before it and the last every probe after it, so
    // every probe is in exactly one phase.
    let within = |ph: &RawPhase, t: u64| {
        let i = raw.phases.iter().position(|p| std::ptr::eq(p, ph)).unwrap_or(0);
        let start = if i == 0 { 0 } else { ph.start_ns };
        let end = raw.phases.get(i + 1).map_or(u64::MAX, |n| n.start_ns);
        t >= start && t < end
    };
    let phase_stamps = |ph: &RawPhase| -> Vec<Stamps> {
        raw.probes
            .iter()
            .filter(|p| within(ph, p.c_tx))
            .filter_map(stamps)
            .collect()
    };
    let idle: Vec<&RawPhase> = raw.phases.iter().filter(|p| p.name == "idle").collect();
    let (clock, info) = clock(raw, &idle, synced, &phase_stamps);
    let one_way = |s: &Stamps| clock.map(|c| c.one_way(s));
    let mut out = Assembled {
        clock: Some(info),
        ..Assembled::default()
    };
    for p in &raw.probes {
        let s = stamps(p);
        let ow = s.as_ref().and_then(one_way);
        out.series.push(ProbePoint {
            t_s: secs(p.c_tx),
            rtt_us: s.map(|s| s.c_rx.saturating_sub(s.c_tx) as f64 / 1e3),
            up_us: ow.map(|o| o.0 / 1e3),
            down_us: ow.map(|o| o.1 / 1e3),
        });
    }
    for ph in &raw.phases {
        let (mut rtt, mut up, mut down, mut tcp) = (Recorder::new(), Recorder::new(), Recorder::new(), Recorder::new());
        let mut sent = 0;
        for p in raw.probes.iter().filter(|p| within(ph, p.c_tx)) {
            sent += 1;
            let Some(s) = stamps(p) else { continue };
            rtt.record(s.c_rx.saturating_sub(s.c_tx));
            if let Some((u, d)) = one_way(&s) {
                // A delay the bound allows below zero counts as zero.
                up.record(u.max(0.0) as u64);
                down.record(d.max(0.0) as u64);
            }
        }
        for (_, r) in raw.tcp_probes.iter().filter(|(t, _)| within(ph, *t)) {
            if let Some(r) = r {
                tcp.record(*r);
            }
        }
        let lost = sent - rtt.count();
        let us = |r: &Recorder| Summary::of(r).map(|s| s.scaled(1e3));
        out.phases.push(Phase {
            name: ph.name.clone(),
            start_s: secs(ph.start_ns),
            end_s: secs(ph.end_ns),
            down_mbps: ph.down_mbps,
            up_mbps: ph.up_mbps,
            rtt_us: us(&rtt),
            owd_up_us: us(&up),
            owd_down_us: us(&down),
            tcp_rtt_us: us(&tcp),
            probes_sent: sent,
            probes_lost: lost,
            probe_loss: if sent > 0 { lost as f64 / sent as f64 } else { 0.0 },
            probe_loss_up: None,
            probe_loss_down: None,
        });
        out.rtt.push(rtt);
        for &(t, d, u) in &ph.intervals {
            out.throughput.push(RatePoint {
                t_s: secs(t),
                down_mbps: d,
                up_mbps: u,
            });
        }
    }
    out.induced = induced(&out.phases);
    out
}

type PhaseStamps<'a> = dyn Fn(&RawPhase) -> Vec<Stamps> + 'a;

/// The clock mapping and its description.
fn clock(raw: &RawRrul, idle: &[&RawPhase], synced: bool, phase_stamps: &PhaseStamps) -> (Option<Clock>, ClockInfo) {
    if synced {
        return (
            Some(Clock::synced()),
            ClockInfo {
                method: "synced".into(),
                offset_us: 0.0,
                drift_ppm: 0.0,
                bound_us: None,
                text: "one-way delays: the client's and the responder's clocks are taken as one (loopback: the same host's monotonic clock; --clock synced: one host, or both disciplined by PTP); their error is the clocks' own".into(),
            },
        );
    }
    let all: Vec<Stamps> = raw.probes.iter().filter_map(stamps).collect();
    let first = idle.first().map(|p| phase_stamps(p)).unwrap_or_else(|| all.clone());
    let last = match idle.len() {
        0 | 1 => None,
        _ => Some(phase_stamps(idle[idle.len() - 1])),
    };
    let Some(start) = owd::offset(&first).or_else(|| owd::offset(&all)) else {
        return (
            None,
            ClockInfo {
                method: "none".into(),
                offset_us: 0.0,
                drift_ppm: 0.0,
                bound_us: None,
                text: "one-way delays: none (no probe came back with the responder's stamps)".into(),
            },
        );
    };
    let end = last.as_deref().and_then(owd::offset);
    let c = Clock::estimated(start, end);
    let from = match (idle.is_empty(), end.is_some()) {
        (true, _) => "the lowest-RTT probe of the whole test (no idle phase: the bound is loose)".to_string(),
        (false, false) => {
            "the lowest-RTT probe of the first idle phase (no idle phase at the end: offset only, no drift)".into()
        }
        (false, true) => {
            "the lowest-RTT probes of the first and the last idle phase, drift a straight line between them".into()
        }
    };
    let info = ClockInfo {
        method: "estimated".into(),
        offset_us: c.start.offset_ns / 1e3,
        drift_ppm: c.drift * 1e6,
        bound_us: Some(c.bound_ns / 1e3),
        text: format!(
            "one-way delays: clock offset {} us, drift {:.2} ppm, from {from}; each one-way delay is within +/-{} us of the truth (half the round trip those probes spent outside the responder)",
            num(c.start.offset_ns / 1e3),
            c.drift * 1e6,
            num(c.bound_ns / 1e3)
        ),
    };
    (Some(c), info)
}

/// Each phase against the first idle one.
fn induced(phases: &[Phase]) -> Vec<Induced> {
    let Some(base) = phases.iter().find(|p| p.name == "idle") else {
        return Vec::new();
    };
    let Some(b) = &base.rtt_us else { return Vec::new() };
    let p50 = |s: &Option<LatencyUs>| s.as_ref().map(|s| s.p50);
    phases
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let r = p.rtt_us.as_ref()?;
            Some(Induced {
                phase: phase_label(i, &p.name),
                rtt_p50_us: r.p50 - b.p50,
                rtt_p99_us: r.p99 - b.p99,
                owd_up_p50_us: p50(&p.owd_up_us).zip(p50(&base.owd_up_us)).map(|(a, b)| a - b),
                owd_down_p50_us: p50(&p.owd_down_us).zip(p50(&base.owd_down_us)).map(|(a, b)| a - b),
            })
        })
        .collect()
}

/// rrul's figures: per phase, the probe RTT (compared), the one-way
/// delays, the induced latency (compared) and the throughput each way
/// (compared where the phase loads that direction).
pub(crate) fn figures(f: &mut Figures, phases: &[Phase], induced: &[Induced]) {
    for (i, p) in phases.iter().enumerate() {
        let label = phase_label(i, &p.name);
        if let Some(s) = &p.rtt_us {
            f.latency(i, &label, "rtt", s, true);
        }
        if let Some(s) = &p.owd_up_us {
            f.latency(i, &label, "owd up", s, false);
        }
        if let Some(s) = &p.owd_down_us {
            f.latency(i, &label, "owd down", s, false);
        }
        if let Some(d) = induced.iter().find(|d| d.phase == label).filter(|_| p.name != "idle") {
            f.delay(i, &label, "induced rtt p50", d.rtt_p50_us, true);
            f.delay(i, &label, "induced rtt p99", d.rtt_p99_us, true);
        }
        let loads = |dir: &str| p.name == dir || p.name == "bidir";
        if loads("down") {
            f.rate(i, &label, "down", "Mbit/s", p.down_mbps, true);
        }
        if loads("up") {
            f.rate(i, &label, "up", "Mbit/s", p.up_mbps, true);
        }
    }
}

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
    v.line(" probe loss up/down: not counted (a protocol v1 echo responder keeps no count per client); the loss column is both ways together");
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
        Axis::linear("seconds", 0.0, end),
        Axis::linear("Mbit/s", 0.0, top * 1.1),
        vec![
            Series::line("down", 0, pick(|r| r.down_mbps)),
            Series::line("up", 1, pick(|r| r.up_mbps)),
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
        Axis::linear("seconds", 0.0, end),
        Axis::log("us (log)", lo.min(hi) * 0.9, hi * 1.1),
        vec![
            Series::line("rtt", 0, rtt),
            Series::line("up", 1, up),
            Series::line("down", 2, down),
        ],
    );
    d.bands = bands;
    // Round trip by percentile per phase, from every probe of the phase.
    let mut lines = Vec::new();
    let mut top: f64 = 1.0;
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
        lines.push(Series::line(phase_label(i, &p.name), i, pts));
    }
    let xmax = lines
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(10.0, f64::max);
    let e = Chart::new(
        "rrul-percentiles",
        format!("{prefix}Probe round trip by percentile, per phase"),
        Axis::percentiles(xmax),
        Axis::log("us (log)", lo.min(top) * 0.9, top * 1.1),
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
        let mut s = Series::line(name.clone(), k, Vec::new());
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
            s.points.push((x, v[v.len() / 2]));
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
        Axis::linear("us", lo * 1.1, hi * 1.1),
        series,
    );
    c.categories = phases;
    c.hline = Some(0.0);
    Some(c)
}
