//! A round trip layer by layer (`ping --layers`, `rr --layers`): where its
//! time went on Linux, from the kernel's own tracepoints on both sides of
//! the exchange (the device queue and driver, the receive backlog, the
//! stack, the socket's wake-up, the responder's read and write, and back),
//! between the client's own two clock reads. Each segment runs from one
//! point of the path to the next one seen; their means add up to the mean
//! of the traced round trips, the client's own times of those exchanges.

use serde::{Deserialize, Serialize};

/// One segment of the round trip: from one point of the path to the next.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LayerSegment {
    /// Where it starts ("client send call", "request queued", ...).
    pub from: String,
    /// Where it ends.
    pub to: String,
    /// Round trips that had both points.
    pub count: u64,
    /// Median, microseconds.
    pub p50_us: f64,
    /// Mean, microseconds (the means add up; the medians need not).
    pub mean_us: f64,
}

/// The round trips of a ping, layer by layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Layers {
    /// Round trips whose first and last points were both seen.
    pub round_trips: u64,
    /// The segments, in the order of the path.
    pub segments: Vec<LayerSegment>,
    /// Mean of the traced round trips (client send call entered to client
    /// receive call returned), microseconds: the sum of the segments' means.
    pub traced_mean_us: f64,
    /// Mean of the client's own round trips, measured around its calls,
    /// microseconds (a little longer: it also holds the calls' entries and
    /// exits).
    pub rtt_mean_us: f64,
    /// The client's median round trip without the tracer (a run of the
    /// same datagrams just before), microseconds: the tracer's overhead is
    /// the traced median less this.
    pub untraced_p50_us: Option<f64>,
    /// The client's median round trip with it.
    pub traced_p50_us: f64,
    /// Records the kernel dropped because the buffer was full (their round
    /// trips are not traced).
    pub lost_records: u64,
    /// The client's timed exchanges in the traced run (0 in documents
    /// stored before it was kept).
    #[serde(default)]
    pub exchanges: u64,
    /// Round trips the kernel began and never finished (a lost packet).
    #[serde(default)]
    pub unfinished: u64,
    /// Round trips left out because their points were out of order.
    #[serde(default)]
    pub unordered: u64,
    /// The client's median round trip without the tracer, microseconds
    /// (`untraced_p50_us`), and its mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untraced_mean_us: Option<f64>,
    /// What each probe cost in the kernel, when the run counted it
    /// (`STACKMETER_LAYERS_STATS=1`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<LayerProbe>,
}

/// One probe's runs and time in the kernel during a traced run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LayerProbe {
    /// The tracepoint ("net_dev_queue").
    pub tracepoint: String,
    /// Times it ran: on every packet, socket or system call of the
    /// machine that reaches it, not only the run's.
    pub runs: u64,
    /// Mean time per run, nanoseconds.
    pub ns_per_run: f64,
    /// Time per traced round trip, nanoseconds: all its runs, ours and
    /// others', over the round trips the whole run traced (every row: the
    /// probes serve them all).
    pub ns_per_round_trip: f64,
}

impl Layers {
    /// The share of the client's mean round trip that the segments cover.
    pub fn coverage(&self) -> f64 {
        self.traced_mean_us / self.rtt_mean_us
    }

    /// The traced median round trip over the untraced one (the tracer's
    /// cost as a ratio), where both were measured.
    pub fn cost_ratio(&self) -> Option<f64> {
        self.untraced_p50_us
            .filter(|u| *u > 0.0)
            .map(|u| self.traced_p50_us / u)
    }
}
