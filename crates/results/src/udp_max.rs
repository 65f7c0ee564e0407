//! udp-max: the highest UDP rate whose loss stays at or under a goal,
//! found by MLRsearch-style trials (a link datasheet's "UDP throughput
//! at 0% loss"). Its parameters, answer, trials and view.

use crate::figures::Figures;
use crate::label::format_size;
use serde::{Deserialize, Serialize};

/// udp-max parameters.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UdpMaxParams {
    /// Datagram size (UDP payload, stackmeter header included).
    pub length: u32,
    /// Highest loss ratio a load may show and still pass (0 = none).
    pub loss_goal: f64,
    /// Seconds per trial.
    pub trial_s: f64,
    /// Trial seconds needed at one load before it is classified.
    pub duration_sum_s: f64,
    /// Share of the duration sum that must exceed the loss goal for a load
    /// to be an upper bound (MLRsearch exceed ratio).
    pub exceed_ratio: f64,
    /// Search ends when (upper - lower) / upper is at most this.
    pub width: f64,
    /// Highest load tried, datagrams per second (None: as fast as the
    /// client can send, measured by the warm-up trial).
    pub max_pps: Option<f64>,
    /// Wait after each trial for datagrams still in flight, ms.
    pub drain_ms: u64,
    /// Bound on every network wait, milliseconds.
    pub timeout_ms: u64,
    /// Most trials before the search stops, converged or not.
    #[serde(default = "default_max_trials")]
    pub max_trials: u32,
    /// Seconds of the final trial at the answer (0: none; documents from
    /// before it existed read 0).
    #[serde(default)]
    pub final_trial_s: f64,
    /// Datagrams per send call (UDP GSO, else sendmmsg); 1: one `send`
    /// each (documents stored before it read as 1).
    #[serde(default = "one")]
    pub batch: u32,
}

/// One datagram per call: what documents from before batching did.
fn one() -> u32 {
    1
}

/// Trials a stored document from before `max_trials` was recorded ran at most.
fn default_max_trials() -> u32 {
    200
}

/// One trial of the search.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Trial {
    /// Offered load, datagrams per second.
    pub offered_pps: f64,
    /// What the client managed to send, datagrams per second. Below
    /// [`SHORT_SEND`] of the offered load the trial counts as failing: the
    /// load was not carried (a full socket buffer held the sender back).
    pub achieved_pps: f64,
    /// Seconds the client sent for.
    pub duration_s: f64,
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams the target received.
    pub received: u64,
    /// Loss ratio (sent - received) / sent.
    pub loss: f64,
    /// The warm-up trial, not counted in any decision.
    pub warmup: bool,
    /// The final, longer trial that confirms (or rejects) the answer.
    #[serde(default)]
    pub final_trial: bool,
    /// Datagrams the target counted only after sending had stopped: held
    /// in a queue on the path (`None` in documents from before it was kept).
    #[serde(default)]
    pub drained: Option<u64>,
}

/// Share of the offered load a trial must actually send to count as having
/// offered it.
pub const SHORT_SEND: f64 = 0.95;

/// The udp-max answer.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UdpMaxResult {
    /// Relevant lower bound as UDP payload Mbit/s.
    pub rate_mbps: f64,
    /// The same as Ethernet frames: each datagram plus `overhead_bytes`
    /// (what the kernel's and a qdisc's byte counters count).
    pub wire_mbps: f64,
    /// The same on a physical Ethernet line: frames plus FCS (4), preamble
    /// (8) and inter-frame gap (12), the RFC 2544 line-rate view.
    pub line_mbps: f64,
    /// Relevant lower bound, thousands of datagrams per second.
    pub rate_kpps: f64,
    /// Per-datagram bytes added for `wire_mbps`: UDP 8 + IP 20 (IPv4) or
    /// 40 (IPv6) + Ethernet header 14.
    pub overhead_bytes: u32,
    /// The loss goal searched for.
    pub loss_goal: f64,
    /// Relevant lower bound (largest load classified as passing below the
    /// smallest failing one), kpps.
    pub lower_kpps: f64,
    /// Smallest load classified as failing, kpps (None: the highest load
    /// passed).
    pub upper_kpps: Option<f64>,
    /// Mean received rate of the passing trials at the lower bound
    /// (MLRsearch conditional throughput), kpps.
    pub conditional_kpps: f64,
    /// Whether the width goal was reached.
    pub converged: bool,
    /// Every trial, in order.
    pub trials: Vec<Trial>,
}

/// udp-max's figure: the rate found.
pub(crate) fn figures(f: &mut Figures, p: &UdpMaxParams, r: Option<&UdpMaxResult>) {
    if let Some(r) = r {
        f.rate(0, &format_size(p.length as u64), "max-rate", "kpps", r.rate_kpps, true);
    }
}

/// A udp-max document's body: parameters, the answer and every trial.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UdpMaxBody {
    /// Parameters.
    pub params: UdpMaxParams,
    /// The answer and every trial; None if the search failed early.
    pub result: Option<UdpMaxResult>,
}

impl crate::TestBody for UdpMaxBody {
    const KIND: crate::TestKind = crate::TestKind::UdpMax;
    const LOADS_THE_LINK: bool = true;
    type Params = UdpMaxParams;

    fn empty(params: UdpMaxParams) -> UdpMaxBody {
        UdpMaxBody { params, result: None }
    }
    fn params(&self) -> &UdpMaxParams {
        &self.params
    }
    fn is_empty(&self) -> bool {
        self.result.is_none()
    }
    fn figures(&self, f: &mut Figures) {
        figures(f, &self.params, self.result.as_ref());
    }
    fn warnings(&self, _run: &crate::warnings::RunContext) -> Vec<crate::warnings::Warning> {
        self.result.as_ref().map(warnings).unwrap_or_default()
    }
}

/// What a reader must know about a udp-max search: short sends, queues
/// that held datagrams, final trials that failed, no convergence.
fn warnings(r: &UdpMaxResult) -> Vec<crate::warnings::Warning> {
    let mut out = Vec::new();
    let short = r
        .trials
        .iter()
        .filter(|t| !t.warmup && t.achieved_pps < SHORT_SEND * t.offered_pps)
        .count();
    if short > 0 {
        out.push(crate::warnings::Warning::UdpMaxShortSend { trials: short });
    }
    // Datagrams that arrived only after the sending stopped sat
    // in a queue: a passing short trial may owe its pass to it.
    let held: Vec<f64> = r
        .trials
        .iter()
        .filter(|t| !t.warmup && !t.final_trial && t.sent > 0)
        .filter_map(|t| t.drained.map(|d| d as f64 / t.sent as f64))
        .filter(|share| *share > LATE_SHARE)
        .collect();
    if !held.is_empty() {
        let most = held.iter().fold(0.0f64, |m, s| m.max(*s));
        out.push(crate::warnings::Warning::UdpMaxHeld {
            trials: held.len(),
            share: LATE_SHARE,
            most,
        });
    }
    let failed: Vec<&Trial> = r
        .trials
        .iter()
        .filter(|t| t.final_trial && t.loss > r.loss_goal)
        .collect();
    if let Some(t) = failed.first() {
        out.push(crate::warnings::Warning::UdpMaxFinalFailed {
            trials: failed.len(),
            duration_s: t.duration_s,
            kpps: t.offered_pps / 1e3,
            loss: t.loss,
        });
    }
    if !r.converged {
        out.push(crate::warnings::Warning::UdpMaxNotConverged {
            lower_kpps: r.lower_kpps,
            upper_kpps: r.upper_kpps,
        });
    }
    out
}

/// Share of a trial's datagrams arriving after its sending stopped above
/// which a queue on the path is named.
const LATE_SHARE: f64 = 0.005;
