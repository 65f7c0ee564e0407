//! Kernel timestamps in a ping or rr row: how they were taken, and the
//! round trip split into client stack, paths, responder application and
//! client stack again (docs/tests.md, "Timestamps"). The parameters, the
//! row fields and the split table both tests show.

use crate::latency::LatencyUs;
use serde::{Deserialize, Serialize};
use stackmeter_recorder::split::Split;
use stackmeter_recorder::Summary;

/// What `--timestamps` and `--clock` asked for (ping and rr parameters).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StampParams {
    /// "software" or "hardware" (`--timestamps hw`).
    pub kind: String,
    /// How the two ends' clocks relate: "same" (one host), "synced"
    /// (synchronised, or one clock seen from two namespaces) or "estimate"
    /// (an offset estimated from the stamps).
    pub clock: String,
}

/// How a row's stamps were taken.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Timestamps {
    /// "software", "hardware", or "none": the responder wrote no stamps
    /// (it does not know the flag, or has no kernel timestamps), so there
    /// is no split.
    pub mode: String,
    /// The clock method the split used: "same", "synced" or "estimate".
    pub clock: String,
    /// With "estimate": the offset used, responder clock minus client
    /// clock, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_us: Option<f64>,
    /// With "estimate": the true offset is within this of `offset_us`
    /// (half the two paths' time on the fastest exchange), microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_bound_us: Option<f64>,
}

/// A share of the round trip: median and mean over the exchanges, 0..1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Share {
    /// Median share.
    pub median: f64,
    /// Mean share.
    pub mean: f64,
}

/// The round trip of every timed exchange split in five parts that add up
/// to it, each a distribution in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SplitUs {
    /// The client's send call to its kernel's send stamp.
    pub client_send_stack: LatencyUs,
    /// The client kernel's send stamp to the responder application's
    /// receive: the wire and the responder's stack on the way in.
    pub out_path: LatencyUs,
    /// The responder's application: its receive to its send.
    pub responder_app: LatencyUs,
    /// The responder application's send to the client kernel's receive
    /// stamp: the responder's stack on the way out and the wire.
    pub back_path: LatencyUs,
    /// The client kernel's receive stamp to the client's application
    /// receive.
    pub client_recv_stack: LatencyUs,
    /// The responder's kernel receive stamp to its application receive
    /// (part of `out_path`), when the responder sent its kernel stamps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responder_stack_in: Option<LatencyUs>,
    /// The responder's application send to its kernel's send stamp (part
    /// of `back_path`), when the responder sent its kernel stamps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responder_stack_out: Option<LatencyUs>,
    /// `responder_app` as a share of each exchange's round trip.
    pub responder_app_share: Share,
    /// Timed exchanges split.
    pub samples: u64,
    /// Timed exchanges without a complete set of stamps (not split).
    pub incomplete: u64,
    /// Exchanges with a negative part (recorded as 0).
    pub negative: u64,
    /// Exchanges whose parts missed their measured round trip by more than
    /// 1% of it.
    pub unbalanced: u64,
}

fn us(r: &stackmeter_recorder::Recorder) -> Option<LatencyUs> {
    Summary::of(r).map(|s| s.scaled(1000.0))
}

impl SplitUs {
    /// The split of `s` in microseconds, or `None` when it holds no
    /// exchange; `incomplete` exchanges had no complete set of stamps.
    pub fn of(s: &Split, incomplete: u64) -> Option<SplitUs> {
        let [a, b, c, d, e] = &s.parts;
        let share = Summary::of(&s.responder_share_ppm)?;
        Some(SplitUs {
            client_send_stack: us(a)?,
            out_path: us(b)?,
            responder_app: us(c)?,
            back_path: us(d)?,
            client_recv_stack: us(e)?,
            responder_stack_in: us(&s.responder_stack_in),
            responder_stack_out: us(&s.responder_stack_out),
            responder_app_share: Share {
                median: share.p50 / 1e6,
                mean: share.mean / 1e6,
            },
            samples: s.samples,
            incomplete,
            negative: s.negative,
            unbalanced: s.unbalanced,
        })
    }
}
