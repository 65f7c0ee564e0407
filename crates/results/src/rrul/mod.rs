//! rrul: latency under load (flent's RRUL, crusader). Phases of TCP load
//! (idle, down, up, both ways) with latency probes running through all of
//! them; per phase the throughput each way, the probes' round trip and
//! one-way delays, their loss, and the latency the load induced over the
//! idle baseline.
//!
//! This file holds the types a document carries and builds them from what
//! `stackmeter_recorder::phases::assemble` computed (the clock, each phase's
//! distributions, the induced latency: pure, and tested there);
//! `figures.rs` says which of its numbers are figures. Its view is the
//! render crate's (`views/rrul.rs`).

mod figures;

pub(crate) use figures::figures;

use crate::latency::{latency_text, LatencyUs};
use serde::{Deserialize, Serialize};
use stackmeter_recorder::phases::{Assembled, ClockFrom, ClockUsed};
use stackmeter_recorder::Summary;

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

/// An rrul document's body: parameters, the phases, the latency they
/// induced, and both on the time axis.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RrulBody {
    /// Parameters.
    pub params: RrulParams,
    /// One entry per phase that ran.
    pub phases: Vec<Phase>,
    /// Each phase against the first idle phase.
    pub induced: Vec<Induced>,
    /// How the one-way delays were made.
    pub clock: Option<ClockInfo>,
    /// Every probe on the time axis.
    pub series: Vec<ProbePoint>,
    /// Every load interval on the time axis.
    pub throughput: Vec<RatePoint>,
}

impl crate::TestBody for RrulBody {
    const KIND: crate::TestKind = crate::TestKind::Rrul;
    const LOADS_THE_LINK: bool = true;
    type Params = RrulParams;

    fn empty(params: RrulParams) -> RrulBody {
        RrulBody::new(params, RrulRows::default())
    }
    fn params(&self) -> &RrulParams {
        &self.params
    }
    fn is_empty(&self) -> bool {
        self.phases.is_empty()
    }
    fn figures(&self, f: &mut crate::Figures) {
        figures(f, &self.phases, &self.induced);
    }
    fn warnings(&self, _run: &crate::warnings::RunContext) -> Vec<crate::warnings::Warning> {
        warnings(&self.phases, self.clock.as_ref())
    }
}

impl RrulBody {
    /// The body of `params` with `rows`.
    pub fn new(params: RrulParams, rows: RrulRows) -> RrulBody {
        RrulBody {
            params,
            phases: rows.phases,
            induced: rows.induced,
            clock: rows.clock,
            series: rows.series,
            throughput: rows.throughput,
        }
    }
}

/// A document's rrul rows, built from the assembled stamps.
#[derive(Clone, Debug, Default)]
pub struct RrulRows {
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
}

impl RrulRows {
    /// The rows of `a`, in microseconds and seconds since `origin_ns`.
    pub fn build(a: &Assembled, origin_ns: u64) -> RrulRows {
        let secs = |ns: u64| ns.saturating_sub(origin_ns) as f64 / 1e9;
        let us = |r: &stackmeter_recorder::Recorder| Summary::of(r).map(|s| s.scaled(1e3));
        let phases: Vec<Phase> = a
            .phases
            .iter()
            .map(|p| Phase {
                name: p.raw.name.clone(),
                start_s: secs(p.raw.start_ns),
                end_s: secs(p.raw.end_ns),
                down_mbps: p.raw.down_mbps,
                up_mbps: p.raw.up_mbps,
                rtt_us: us(&p.rtt),
                owd_up_us: us(&p.up),
                owd_down_us: us(&p.down),
                tcp_rtt_us: us(&p.tcp),
                probes_sent: p.sent,
                probes_lost: p.lost,
                probe_loss: if p.sent > 0 { p.lost as f64 / p.sent as f64 } else { 0.0 },
                probe_loss_up: p.lost_each_way.map(|(up, _)| share(up, p.sent)),
                probe_loss_down: p.lost_each_way.map(|(_, down)| share(down, p.sent)),
            })
            .collect();
        let induced = a
            .induced
            .iter()
            .map(|d| Induced {
                phase: phase_label(d.phase, &a.phases[d.phase].raw.name),
                rtt_p50_us: d.rtt_p50 / 1e3,
                rtt_p99_us: d.rtt_p99 / 1e3,
                owd_up_p50_us: d.up_p50.map(|v| v / 1e3),
                owd_down_p50_us: d.down_p50.map(|v| v / 1e3),
            })
            .collect();
        let series = a
            .probes
            .iter()
            .map(|p| ProbePoint {
                t_s: p.t_ns as f64 / 1e9,
                rtt_us: p.rtt_ns.map(|r| r as f64 / 1e3),
                up_us: p.one_way_ns.map(|o| o.0 / 1e3),
                down_us: p.one_way_ns.map(|o| o.1 / 1e3),
            })
            .collect();
        let throughput = a
            .phases
            .iter()
            .flat_map(|p| p.raw.intervals.iter())
            .map(|&(t, d, u)| RatePoint {
                t_s: secs(t),
                down_mbps: d,
                up_mbps: u,
            })
            .collect();
        RrulRows {
            phases,
            induced,
            clock: Some(clock_info(&a.clock)),
            series,
            throughput,
        }
    }
}

/// `n` of `of`, as a fraction (0 of 0).
fn share(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 / of as f64
    }
}

/// How the one-way delays were made, in figures and words.
fn clock_info(c: &ClockUsed) -> ClockInfo {
    match c {
        ClockUsed::Synced => ClockInfo {
            method: "synced".into(),
            offset_us: 0.0,
            drift_ppm: 0.0,
            bound_us: None,
            text: "one-way delays: the client's and the responder's clocks are taken as one (loopback: the same host's monotonic clock; --clock synced: one host, or both disciplined by PTP); their error is the clocks' own".into(),
        },
        ClockUsed::None => ClockInfo {
            method: "none".into(),
            offset_us: 0.0,
            drift_ppm: 0.0,
            bound_us: None,
            text: "one-way delays: none (no probe came back with the responder's stamps)".into(),
        },
        ClockUsed::Estimated(c, from) => {
            let from = match from {
                ClockFrom::WholeTest => "the lowest-RTT probe of the whole test (no idle phase: the bound is loose)",
                ClockFrom::FirstIdle => {
                    "the lowest-RTT probe of the first idle phase (no idle phase at the end: offset only, no drift)"
                }
                ClockFrom::FirstAndLastIdle => {
                    "the lowest-RTT probes of the first and the last idle phase, drift a straight line between them"
                }
            };
            ClockInfo {
                method: "estimated".into(),
                offset_us: c.start.offset_ns / 1e3,
                drift_ppm: c.drift * 1e6,
                bound_us: Some(c.bound_ns / 1e3),
                text: format!(
                    "one-way delays: clock offset {} us, drift {:.2} ppm, from {from}; each one-way delay is within +/-{} us of the truth (half the round trip those probes spent outside the responder)",
                    latency_text(c.start.offset_ns / 1e3),
                    c.drift * 1e6,
                    latency_text(c.bound_ns / 1e3)
                ),
            }
        }
    }
}

/// The row label of phase `i` ("1 idle").
pub fn phase_label(i: usize, name: &str) -> String {
    format!("{} {name}", i + 1)
}

/// rrul's warnings: lost probes, no one-way delays.
fn warnings(phases: &[Phase], clock: Option<&ClockInfo>) -> Vec<crate::warnings::Warning> {
    let mut out = Vec::new();
    let lost: u64 = phases.iter().map(|p| p.probes_lost).sum();
    let sent: u64 = phases.iter().map(|p| p.probes_sent).sum();
    if sent > 0 && lost * 100 > sent {
        out.push(crate::warnings::Warning::RrulProbesLost { lost, sent });
    }
    if clock.is_some_and(|c| c.method == "none") {
        out.push(crate::warnings::Warning::RrulNoStamps);
    }
    out
}
