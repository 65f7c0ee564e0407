//! ping: UDP echo round trips with loss, order, payload checks, slow
//! answers and the time inside the responder (the UDP echo scenario). Its
//! parameters, row and view.

use crate::figures::Figures;
use crate::label::format_size;
use crate::latency::{LatencyUs, Levels};
use crate::split::{SplitUs, StampParams, Timestamps};
use serde::{Deserialize, Serialize};

/// ping parameters.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PingParams {
    /// Datagram size (UDP payload, stackmeter header included).
    pub size: usize,
    /// Timed datagrams.
    pub count: u64,
    /// Untimed datagrams before them.
    pub warmup: u64,
    /// Send interval; 0 = back to back, one outstanding.
    pub interval_us: u64,
    /// RTT above which an answer counts as slow.
    pub slow_us: u64,
    /// Time after which a datagram counts as lost.
    pub timeout_ms: u64,
    /// A plain UDP echo server (`--echo`, RFC 862): each datagram starts
    /// with the client's own 24-byte echo header instead of the protocol's
    /// (documents stored before read as false).
    #[serde(default)]
    pub echo: bool,
    /// Kernel timestamps asked for (`--timestamps`), and the clock method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<StampParams>,
    /// Each round trip timed layer by layer from the kernel's tracepoints
    /// (`--layers`, Linux, root).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub layers: bool,
}

/// A slow answer: a round trip above the `--slow-us` threshold.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Slow {
    /// Sequence number (0 = first timed datagram).
    pub seq: u64,
    /// Its round trip, microseconds.
    pub rtt_us: f64,
}

/// The ping row.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PingResult {
    /// Datagram size.
    pub bytes: usize,
    /// Timed datagrams sent.
    pub sent: u64,
    /// Distinct replies received in time.
    pub received: u64,
    /// Sent minus received.
    pub lost: u64,
    /// Replies arriving after the timeout (also counted lost).
    pub late: u64,
    /// Second and later copies of a reply.
    pub duplicates: u64,
    /// Replies arriving after a reply to a later datagram.
    pub reordered: u64,
    /// Replies whose length, kind or payload differed from what was sent.
    pub mismatched: u64,
    /// Replies slower than `slow_us`.
    pub slow: u64,
    /// The first slow answers (at most 10), in order.
    pub slow_first: Vec<Slow>,
    /// Round-trip times of the replies received in time.
    pub rtt_us: Option<LatencyUs>,
    /// Time inside the responder, its receive to its send, from the
    /// timestamps it writes into every reply.
    pub server_us: Option<LatencyUs>,
    /// Replies per second of the timed phase's wall time.
    pub pps: f64,
    /// On a schedule: the latest any datagram left after its due time
    /// (0 back to back). Above the interval, the client fell behind.
    #[serde(default)]
    pub max_send_lag_us: f64,
    /// Two levels in the RTT distribution, if found.
    pub levels: Option<Levels>,
    /// With `--timestamps`: how the stamps were taken ("none" when the
    /// responder wrote none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<Timestamps>,
    /// With `--timestamps`: each round trip split into five parts that add
    /// up to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_us: Option<SplitUs>,
    /// Loss each way, where the responder counted what it received
    /// (docs/protocol.md 4.4); `None`: it did not count (an older
    /// responder, or a plain echo server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_split: Option<LossSplit>,
    /// With `--layers`: the round trip layer by layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<crate::layers::Layers>,
}

/// Timed datagrams lost each way, from the responder's count of what it
/// received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LossSplit {
    /// Lost on the way to the responder.
    pub up: u64,
    /// Received by the responder, lost on the way back (late replies
    /// included: they count as lost).
    pub down: u64,
    /// Of `down`, the replies that came back after the timeout.
    pub down_late: u64,
    /// Sent after the last reply that carried a count: lost, but no reply
    /// says which way.
    pub unknown: u64,
}

impl PingResult {
    /// A row for `bytes`-byte datagrams with nothing counted yet.
    pub fn empty(bytes: usize) -> PingResult {
        PingResult {
            bytes,
            sent: 0,
            received: 0,
            lost: 0,
            late: 0,
            duplicates: 0,
            reordered: 0,
            mismatched: 0,
            slow: 0,
            slow_first: Vec::new(),
            rtt_us: None,
            server_us: None,
            pps: 0.0,
            max_send_lag_us: 0.0,
            levels: None,
            timestamps: None,
            split_us: None,
            loss_split: None,
            layers: None,
        }
    }
}

/// ping's figures: RTT (compared), time inside the responder, replies/s.
pub(crate) fn figures(f: &mut Figures, rows: &[PingResult]) {
    for (i, r) in rows.iter().enumerate() {
        let label = format_size(r.bytes as u64);
        if let Some(s) = &r.rtt_us {
            f.latency(i, &label, "rtt", s, true);
        }
        if let Some(s) = &r.server_us {
            f.latency(i, &label, "server", s, false);
        }
        f.rate(i, &label, "rate", "pps", r.pps, false);
    }
}

/// A ping document's body: parameters and its one row.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PingBody {
    /// Parameters.
    pub params: PingParams,
    /// One row.
    pub results: Vec<PingResult>,
}

impl crate::TestBody for PingBody {
    const KIND: crate::TestKind = crate::TestKind::Ping;
    const LOADS_THE_LINK: bool = false;
    type Params = PingParams;

    fn empty(params: PingParams) -> PingBody {
        PingBody {
            params,
            results: Vec::new(),
        }
    }
    fn params(&self) -> &PingParams {
        &self.params
    }
    fn is_empty(&self) -> bool {
        self.results.iter().all(|r| r.sent == 0)
    }
    fn figures(&self, f: &mut Figures) {
        figures(f, &self.results);
    }
    fn warnings(&self, run: &crate::warnings::RunContext) -> Vec<crate::warnings::Warning> {
        warnings(&self.params, &self.results, run)
    }
    fn target_kind(p: &PingParams) -> crate::TargetKind {
        p.target_kind()
    }
    fn not_measured(&self) -> Vec<crate::NotMeasured> {
        not_measured(self.params.target_kind())
    }
    fn unanswered(&self) -> Option<String> {
        self.results
            .first()
            .filter(|r| r.received == 0)
            .map(|r| format!("no answer to any of {} pings", r.sent))
    }
}

impl PingParams {
    /// The kind of target these parameters measure.
    pub fn target_kind(&self) -> crate::TargetKind {
        match self.echo {
            true => crate::TargetKind::Echo,
            false => crate::TargetKind::Stackmeter,
        }
    }
}

/// What ping cannot measure of a plain target `kind`.
fn not_measured(kind: crate::TargetKind) -> Vec<crate::NotMeasured> {
    let item = crate::plain::not_measured;
    match kind {
        crate::TargetKind::Echo => vec![
            item(
                "server_us",
                "time inside the responder; an echo server writes no timestamps into its replies",
            ),
            item(
                "loss_split",
                "loss each way; an echo server keeps no count of what it received, so a lost round trip cannot be put on either way",
            ),
        ],
        _ => Vec::new(),
    }
}

/// ping's warnings: two levels, the timestamp split, a schedule the
/// client could not keep.
fn warnings(
    params: &PingParams,
    results: &[PingResult],
    run: &crate::warnings::RunContext,
) -> Vec<crate::warnings::Warning> {
    let mut out = Vec::new();
    for r in results {
        out.extend(crate::warnings::levels("rtt".into(), r.levels, run));
        out.extend(crate::warnings::split_warning(
            None,
            r.timestamps.as_ref(),
            r.split_us.as_ref(),
        ));
        if params.interval_us > 0 && r.max_send_lag_us > params.interval_us as f64 {
            out.push(crate::warnings::Warning::PingBehindSchedule {
                lag_us: r.max_send_lag_us,
                interval_us: params.interval_us,
            });
        }
    }
    out
}
