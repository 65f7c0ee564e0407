//! The types of a result document: envelope, parameters and per-test rows.

use serde::{Deserialize, Serialize};
use stackmeter_stats::Summary;

pub use crate::throughput::*;

/// One run of one test: what was measured, where, how, and the figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Document {
    /// Always [`crate::SCHEMA`].
    pub schema: String,
    /// What was measured.
    pub target: Target,
    /// The test, its parameters and its result rows.
    #[serde(flatten)]
    pub body: Body,
    /// Where the client and responder threads ran.
    pub placement: Placement,
    /// The host, tool and command line.
    pub env: Env,
    /// False when the test stopped early; `error` says why and `results`
    /// holds every row that finished.
    pub complete: bool,
    /// The error that stopped the test, if any.
    pub error: Option<String>,
    /// Things the reader must know to trust the figures.
    pub warnings: Vec<String>,
}

/// The address measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Target {
    /// As given on the command line (or the embedded responder's address).
    pub name: String,
    /// The resolved socket address.
    pub address: String,
    /// True when stackmeter started the responder itself, in-process.
    pub embedded: bool,
}

/// CPU placement in force.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Placement {
    /// CPU the measuring thread was pinned to (`None`: not pinned).
    pub client_cpu: Option<usize>,
    /// CPU the embedded responder was pinned to (`None`: not pinned or
    /// not known, as for an external responder).
    pub responder_cpu: Option<usize>,
}

/// Where and how the figures were made.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Env {
    /// "stackmeter".
    pub tool: String,
    /// Tool version.
    pub version: String,
    /// Start of the test, UTC, RFC 3339.
    pub time: String,
    /// Host name of the client.
    pub hostname: String,
    /// Client OS and kernel release.
    pub kernel: String,
    /// Client CPU model.
    pub cpu_model: String,
    /// CPUs online on the client.
    pub cpus: usize,
    /// The command line, one argument per element.
    pub command: Vec<String>,
}

/// The test, with its parameters and results.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "test", rename_all = "lowercase")]
pub enum Body {
    /// Request/response over one TCP connection per size pair.
    Rr {
        /// Parameters.
        params: RrParams,
        /// One row per size pair, in the order given.
        results: Vec<RrResult>,
    },
    /// Connect/request/response/close.
    Crr {
        /// Parameters.
        params: CrrParams,
        /// One row.
        results: Vec<CrrResult>,
    },
    /// UDP echo.
    Ping {
        /// Parameters.
        params: PingParams,
        /// One row.
        results: Vec<PingResult>,
    },
    /// Many clients listing and fetching objects (seed 003).
    Load {
        /// Parameters.
        params: crate::LoadParams,
        /// One entry per run.
        results: Vec<crate::LoadRun>,
        /// Means and intervals across runs, and merged latency.
        summary: Option<crate::LoadSummary>,
    },
    /// TCP or paced UDP throughput.
    Stream {
        /// Parameters.
        params: StreamParams,
        /// One row per interval, omitted ones included (flagged).
        intervals: Vec<Interval>,
        /// Totals over the measured window; None if the test failed before
        /// its first interval.
        summary: Option<Box<StreamSummary>>,
    },
    /// Highest UDP rate at a loss goal.
    #[serde(rename = "udp-max")]
    UdpMax {
        /// Parameters.
        params: UdpMaxParams,
        /// The answer and every trial; None if the search failed early.
        result: Option<UdpMaxResult>,
    },
}

impl Body {
    /// The test's name as in the JSON `test` key.
    pub fn test_name(&self) -> &'static str {
        match self {
            Body::Rr { .. } => "rr",
            Body::Crr { .. } => "crr",
            Body::Ping { .. } => "ping",
            Body::Load { .. } => "load",
            Body::Stream { .. } => "stream",
            Body::UdpMax { .. } => "udp-max",
        }
    }
}

/// One request/response size pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizePair {
    /// Request bytes.
    pub req: u32,
    /// Response bytes.
    pub resp: u32,
}

/// rr parameters.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
}

/// The schedule of an open-loop rr.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpenLoopParams {
    /// Requested requests per second, all connections together.
    pub rate: f64,
    /// Connections, each with its own sender and receiver thread.
    pub connections: u32,
    /// Length of the schedule, seconds.
    pub time_s: f64,
    /// "fixed" (evenly spaced, connections staggered) or "poisson".
    pub arrival: String,
}

/// Latency figures in microseconds (a [`Summary`] of nanoseconds / 1000).
pub type LatencyUs = Summary;

/// One rr row.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
}

/// Two levels in one distribution (see `stackmeter_stats::modality`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Levels {
    /// Centre of the lower level, microseconds.
    pub low_us: f64,
    /// Centre of the higher level, microseconds.
    pub high_us: f64,
    /// Share of samples in the lower level, 0..1.
    pub low_share: f64,
}

/// crr parameters.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
}

/// The crr row.
#[derive(Clone, Debug, Serialize, Deserialize)]
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

/// ping parameters.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
}

/// A slow answer, as seed 004 printed them.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Slow {
    /// Sequence number (0 = first timed datagram).
    pub seq: u64,
    /// Its round trip, microseconds.
    pub rtt_us: f64,
}

/// The ping row.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
        }
    }
}
