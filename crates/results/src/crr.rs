//! crr: connect, request, response, close per connection (a link
//! datasheet's connection establish latency). Its parameters, row and view.

use crate::figures::Figures;
use crate::latency::LatencyUs;
use crate::rr::SizePair;
use serde::{Deserialize, Serialize};

/// crr parameters.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CrrParams {
    /// Timed connections.
    pub iterations: u64,
    /// Untimed connections before them.
    pub warmup: u64,
    /// Request bytes per connection.
    pub req_bytes: u32,
    /// Response bytes per connection.
    pub resp_bytes: u32,
    /// Bound on every network wait, milliseconds.
    pub timeout_ms: u64,
    /// A plain TCP echo server (`--echo`): no session header, the
    /// response is the request (documents stored before read as false).
    #[serde(default)]
    pub echo: bool,
    /// A plain server with its own reply rule (`--raw`): no session
    /// header, the sizes are the REQ:RESP pair given to `--raw`.
    #[serde(default)]
    pub raw: bool,
    /// The first bytes of every request, as hex (`--request-prefix`); the
    /// rest of the request is the payload pattern.
    #[serde(default)]
    pub request_prefix: Option<String>,
}

/// The crr row.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CrrResult {
    /// Request bytes.
    pub req_bytes: u32,
    /// Response bytes.
    pub resp_bytes: u32,
    /// Timed connections.
    pub samples: u64,
    /// Untimed connections before them.
    pub warmup: u64,
    /// connect() call to connection established.
    pub connect_us: LatencyUs,
    /// connect() call to close() returned, with the status record (8
    /// bytes), request and response in between.
    pub transaction_us: LatencyUs,
    /// Timed connections per second of the timed phase's wall time.
    pub cps: f64,
}

/// crr's figures: connect and transaction times, connections/s.
pub(crate) fn figures(f: &mut Figures, rows: &[CrrResult]) {
    for (i, r) in rows.iter().enumerate() {
        let label = SizePair {
            req: r.req_bytes,
            resp: r.resp_bytes,
        }
        .label();
        f.latency(i, &label, "connect", &r.connect_us, true);
        f.latency(i, &label, "transaction", &r.transaction_us, true);
        f.rate(i, &label, "rate", "cps", r.cps, true);
    }
}

/// A crr document's body: parameters and its one row.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CrrBody {
    /// Parameters.
    pub params: CrrParams,
    /// One row.
    pub results: Vec<CrrResult>,
}

impl crate::TestBody for CrrBody {
    const KIND: crate::TestKind = crate::TestKind::Crr;
    const LOADS_THE_LINK: bool = false;
    type Params = CrrParams;

    fn empty(params: CrrParams) -> CrrBody {
        CrrBody {
            params,
            results: Vec::new(),
        }
    }
    fn params(&self) -> &CrrParams {
        &self.params
    }
    fn is_empty(&self) -> bool {
        self.results.is_empty()
    }
    fn figures(&self, f: &mut Figures) {
        figures(f, &self.results);
    }
    fn warnings(&self, _run: &crate::warnings::RunContext) -> Vec<crate::warnings::Warning> {
        Vec::new()
    }
    fn target_kind(p: &CrrParams) -> crate::TargetKind {
        p.target_kind()
    }
    fn not_measured(&self) -> Vec<crate::NotMeasured> {
        crate::plain::no_status(self.params.target_kind())
    }
}

impl CrrParams {
    /// The kind of target these parameters measure.
    pub fn target_kind(&self) -> crate::TargetKind {
        crate::plain::kind_of_rr(self.echo, self.raw)
    }
}
