//! rr: request/response round trips over one TCP connection per size
//! pair (the latency grid's two tables), closed loop or on an open-loop
//! schedule. Its parameters, rows and view.

use crate::figures::Figures;
use crate::label::format_size;
use crate::latency::{LatencyUs, Levels};
use crate::split::{SplitUs, StampParams, Timestamps};
use serde::{Deserialize, Serialize};

/// One request/response size pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SizePair {
    /// Request bytes.
    pub req: u32,
    /// Response bytes.
    pub resp: u32,
}

/// rr parameters.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RrParams {
    /// Size pairs, in order.
    pub sizes: Vec<SizePair>,
    /// Timed iterations per size.
    pub iterations: u64,
    /// Untimed iterations before them, per size.
    pub warmup: u64,
    /// TCP_NODELAY on the client socket (always true today).
    pub nodelay: bool,
    /// Bound on every network wait, milliseconds.
    pub timeout_ms: u64,
    /// Open loop: requests on a schedule, independent of the replies
    /// (`--rate`); `None` for the closed loop (one outstanding).
    #[serde(default)]
    pub open_loop: Option<OpenLoopParams>,
    /// A plain TCP echo server (`--echo`): no session header, the
    /// response is the request (documents stored before read as false).
    #[serde(default)]
    pub echo: bool,
    /// A plain server with its own reply rule (`--raw`): no session
    /// header, `sizes` are the REQ:RESP pairs given to `--raw`.
    #[serde(default)]
    pub raw: bool,
    /// The first bytes of every request, as hex (`--request-prefix`); the
    /// rest of the request is the payload pattern.
    #[serde(default)]
    pub request_prefix: Option<String>,
    /// Kernel timestamps asked for (`--timestamps`), and the clock method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<StampParams>,
    /// Each transaction timed layer by layer from the kernel's tracepoints
    /// (`--layers`, Linux, root).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub layers: bool,
}

/// The schedule of an open-loop rr.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpenLoopParams {
    /// Requested requests per second, all connections together.
    pub rate: f64,
    /// Connections the requests are dealt over in turn (request i on
    /// connection i mod connections), all driven by one client thread.
    pub connections: u32,
    /// Length of the schedule, seconds.
    pub time_s: f64,
    /// "fixed" (evenly spaced) or "poisson".
    pub arrival: String,
}

/// One rr row.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RrResult {
    /// Request size.
    pub req_bytes: u32,
    /// Response size.
    pub resp_bytes: u32,
    /// Timed transactions.
    pub samples: u64,
    /// Untimed warm-up transactions before them.
    pub warmup: u64,
    /// Round-trip time: first request byte handed to the kernel to last
    /// response byte received.
    pub rtt_us: LatencyUs,
    /// Timed transactions per second of the timed phase's wall time.
    pub tps: f64,
    /// Two levels in the RTT distribution, if found.
    pub levels: Option<Levels>,
    /// Open loop: the requested rate (requests/s); `None` closed loop.
    #[serde(default)]
    pub requested_rate: Option<f64>,
    /// Open loop: responses received per second of the schedule (or until
    /// the last response, if later).
    #[serde(default)]
    pub achieved_rate: Option<f64>,
    /// Open loop: how late each request left after its scheduled time.
    #[serde(default)]
    pub send_lag_us: Option<LatencyUs>,
    /// Open loop: requests that left more than one per-connection interval
    /// after their scheduled time.
    #[serde(default)]
    pub late_sends: Option<u64>,
    /// With `--timestamps`: how the stamps were taken ("none" when the
    /// responder wrote none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<Timestamps>,
    /// With `--timestamps`: each round trip split into five parts that add
    /// up to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_us: Option<SplitUs>,
    /// Segments the client's TCP retransmitted on the row's connection,
    /// warm-up included (TCP_INFO, closed loop; none where it cannot be
    /// read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u32>,
    /// With `--layers`: the transaction layer by layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<crate::layers::Layers>,
}

impl SizePair {
    /// "1 B:1 KiB".
    pub fn label(&self) -> String {
        format!("{}:{}", format_size(self.req as u64), format_size(self.resp as u64))
    }
}

impl RrResult {
    /// The row's size pair.
    pub fn pair(&self) -> SizePair {
        SizePair {
            req: self.req_bytes,
            resp: self.resp_bytes,
        }
    }
}

/// rr's figures: RTT per size pair (compared) and transactions/s.
pub(crate) fn figures(f: &mut Figures, rows: &[RrResult]) {
    for (i, r) in rows.iter().enumerate() {
        let label = r.pair().label();
        f.latency(i, &label, "rtt", &r.rtt_us, true);
        f.rate(i, &label, "rate", "tps", r.tps, false);
    }
}

/// An rr document's body: parameters and one row per size pair.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RrBody {
    /// Parameters.
    pub params: RrParams,
    /// One row per size pair, in the order given.
    pub results: Vec<RrResult>,
}

impl crate::TestBody for RrBody {
    const KIND: crate::TestKind = crate::TestKind::Rr;
    const LOADS_THE_LINK: bool = false;
    type Params = RrParams;

    fn empty(params: RrParams) -> RrBody {
        RrBody {
            params,
            results: Vec::new(),
        }
    }
    fn params(&self) -> &RrParams {
        &self.params
    }
    fn is_empty(&self) -> bool {
        self.results.is_empty()
    }
    fn figures(&self, f: &mut Figures) {
        figures(f, &self.results);
    }
    fn warnings(&self, run: &crate::warnings::RunContext) -> Vec<crate::warnings::Warning> {
        warnings(&self.results, run)
    }
    fn target_kind(p: &RrParams) -> crate::TargetKind {
        p.target_kind()
    }
    fn not_measured(&self) -> Vec<crate::NotMeasured> {
        crate::plain::no_status(self.params.target_kind())
    }
    fn unanswered(&self) -> Option<String> {
        self.results
            .is_empty()
            .then(|| format!("no answer to any of {} rr rounds", self.params.iterations))
    }
}

impl RrParams {
    /// The kind of target these parameters measure.
    pub fn target_kind(&self) -> crate::TargetKind {
        crate::plain::kind_of_rr(self.echo, self.raw)
    }
}

/// rr's warnings: two levels, a timestamp split that does not hold, an
/// open loop that fell behind its schedule.
fn warnings(results: &[RrResult], run: &crate::warnings::RunContext) -> Vec<crate::warnings::Warning> {
    let mut out = Vec::new();
    for r in results {
        let name = r.pair().label();
        out.extend(crate::warnings::levels(name.clone(), r.levels, run));
        out.extend(crate::warnings::split_warning(
            Some(name.clone()),
            r.timestamps.as_ref(),
            r.split_us.as_ref(),
        ));
        out.extend(behind_schedule(&name, r));
        if let Some(n) = r.retransmits.filter(|&n| n > 0) {
            out.push(crate::warnings::Warning::RrRetransmits {
                row: name.clone(),
                retransmits: n,
                transactions: r.samples + r.warmup,
                max_us: r.rtt_us.max,
            });
        }
    }
    out
}

/// An open-loop rr row whose client fell behind its schedule.
fn behind_schedule(name: &str, r: &RrResult) -> Option<crate::warnings::Warning> {
    let (req, got) = (r.requested_rate?, r.achieved_rate?);
    let late = r.late_sends.unwrap_or(0);
    if got >= 0.99 * req && late * 100 <= r.samples {
        return None;
    }
    Some(crate::warnings::Warning::RrBehindSchedule {
        row: name.to_string(),
        requested: req,
        achieved: got,
        late,
        samples: r.samples,
        lag_us: r.send_lag_us.as_ref().map(|l| (l.p99, l.max)),
    })
}
