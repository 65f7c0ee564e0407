//! A round trip layer by layer (`ping --layers`): where its time went on
//! Linux, from the kernel's own tracepoints on both sides of the exchange
//! (the client's system calls, its device queue and driver, the receive
//! backlog, the stack, the socket's wake-up, the responder's calls, and
//! back). Each segment runs from one point of a datagram's path to the
//! next one seen; their means add up to the mean of the traced round
//! trips (client send call entered to client receive call returned),
//! which lies inside the client's own round trip.

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
    /// trips may lack points).
    pub lost_records: u64,
}

impl Layers {
    /// The share of the client's mean round trip that the segments cover.
    pub fn coverage(&self) -> f64 {
        self.traced_mean_us / self.rtt_mean_us
    }
}
