//! The result document every test produces: the envelope (target,
//! placement, environment, completeness, warnings) around one [`Body`],
//! the test's parameters and rows. Each test's own types and view live in
//! its module (`rr.rs`, `crr.rs`, `ping.rs`, `stream.rs`, `udp_max.rs`,
//! `load.rs`, `rrul/`); this file ties them together and adds what every test's
//! view ends with.

use crate::crr::{CrrParams, CrrResult};
use crate::figures::{Figure, Figures};
use crate::kind::TestKind;
use crate::load::{LoadParams, LoadRun, LoadSummary};
use crate::ping::{PingParams, PingResult};
use crate::plain::{NotMeasured, TargetKind};
use crate::rr::{RrParams, RrResult};
use crate::rrul::{ClockInfo, Induced, Phase, ProbePoint, RatePoint, RrulParams};
use crate::stream::{Interval, StreamParams, StreamSummary};
use crate::udp_max::{UdpMaxParams, UdpMaxResult};
use serde::{Deserialize, Serialize};

/// The schema name every JSON document carries (docs/json.md).
pub const SCHEMA: &str = "stackmeter/1";

/// One run of one test: what was measured, where, how, and the figures.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Document {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// What was measured.
    pub target: Target,
    /// The test, its parameters and its result rows.
    #[serde(flatten)]
    pub body: Body,
    /// Where the client and responder threads ran.
    pub placement: Placement,
    /// Real-time knobs asked for and in force (absent in documents from
    /// before they were recorded).
    #[serde(default)]
    pub knobs: crate::knobs::Knobs,
    /// The host, tool and command line.
    pub env: Env,
    /// False when the test stopped early; `error` says why and `results`
    /// holds every row that finished.
    pub complete: bool,
    /// The error that stopped the test, if any.
    pub error: Option<String>,
    /// Things the reader must know to trust the figures.
    pub warnings: Vec<String>,
    /// Figures this test gives against a stackmeter responder that the
    /// plain target measured could not (empty for a responder; documents
    /// stored before the key read as empty).
    #[serde(default)]
    pub not_measured: Vec<NotMeasured>,
}

/// The address measured.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Target {
    /// As given on the command line (or the embedded responder's address).
    pub name: String,
    /// The resolved socket address.
    pub address: String,
    /// True when stackmeter started the responder itself, in-process.
    pub embedded: bool,
    /// What kind of server it is: a stackmeter responder or a plain one
    /// (documents stored before the key read as `stackmeter`).
    #[serde(default)]
    pub kind: TargetKind,
}

/// CPU placement in force.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Placement {
    /// CPU the measuring thread was pinned to (`None`: not pinned).
    pub client_cpu: Option<usize>,
    /// CPU the embedded responder was pinned to (`None`: not pinned or
    /// not known, as for an external responder).
    pub responder_cpu: Option<usize>,
}

/// Where and how the figures were made.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Many clients listing and fetching objects (through a proxy, if the
    /// target is one).
    Load {
        /// Parameters.
        params: LoadParams,
        /// One entry per run.
        results: Vec<LoadRun>,
        /// Means and intervals across runs, and merged latency.
        summary: Option<LoadSummary>,
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
    /// Latency under load: phases of TCP load with probes through them.
    Rrul {
        /// Parameters.
        params: RrulParams,
        /// One entry per phase that ran.
        phases: Vec<Phase>,
        /// Each phase against the first idle phase.
        induced: Vec<Induced>,
        /// How the one-way delays were made.
        clock: Option<ClockInfo>,
        /// Every probe on the time axis.
        series: Vec<ProbePoint>,
        /// Every load interval on the time axis.
        throughput: Vec<RatePoint>,
    },
}

impl Body {
    /// Which test this is.
    pub fn kind(&self) -> TestKind {
        match self {
            Body::Rr { .. } => TestKind::Rr,
            Body::Crr { .. } => TestKind::Crr,
            Body::Ping { .. } => TestKind::Ping,
            Body::Load { .. } => TestKind::Load,
            Body::Stream { .. } => TestKind::Stream,
            Body::UdpMax { .. } => TestKind::UdpMax,
            Body::Rrul { .. } => TestKind::Rrul,
        }
    }

    /// The test's name as in the JSON `test` key.
    pub fn test_name(&self) -> &'static str {
        self.kind().name()
    }

    /// A stream's intervals (every other test has none): what the store
    /// keeps as series beside the document.
    pub fn intervals(&self) -> &[crate::Interval] {
        match self {
            Body::Stream { intervals, .. } => intervals,
            Body::Rr { .. }
            | Body::Crr { .. }
            | Body::Ping { .. }
            | Body::Load { .. }
            | Body::UdpMax { .. }
            | Body::Rrul { .. } => &[],
        }
    }

    /// The latency an RRUL test's load induced, per phase (none for the
    /// other tests).
    pub fn induced(&self) -> Option<&[crate::Induced]> {
        match self {
            Body::Rrul { induced, .. } => Some(induced),
            Body::Rr { .. }
            | Body::Crr { .. }
            | Body::Ping { .. }
            | Body::Load { .. }
            | Body::Stream { .. }
            | Body::UdpMax { .. } => None,
        }
    }

    /// True when not one row was measured (a test that failed at once).
    pub fn is_empty(&self) -> bool {
        match self {
            Body::Rr { results, .. } => results.is_empty(),
            Body::Crr { results, .. } => results.is_empty(),
            Body::Ping { results, .. } => results.iter().all(|r| r.sent == 0),
            Body::Load { results, .. } => results.is_empty(),
            Body::Stream { intervals, summary, .. } => intervals.is_empty() && summary.is_none(),
            Body::UdpMax { result, .. } => result.is_none(),
            Body::Rrul { phases, .. } => phases.is_empty(),
        }
    }
}

impl Body {
    /// The kind of target the test measured, from its parameters.
    pub fn target_kind(&self) -> TargetKind {
        match self {
            Body::Rr { params, .. } => params.target_kind(),
            Body::Crr { params, .. } => params.target_kind(),
            Body::Ping { params, .. } => params.target_kind(),
            Body::Stream { params, .. } => params.target_kind(),
            Body::Load { .. } | Body::UdpMax { .. } | Body::Rrul { .. } => TargetKind::Stackmeter,
        }
    }

    /// The figures `body`'s test would have from a stackmeter responder and
    /// cannot have from the plain target it measured (empty for a responder).
    pub fn not_measured(&self) -> Vec<NotMeasured> {
        let body = self;
        let item = |figure: &str, why: &str| NotMeasured {
            figure: figure.into(),
            why: why.into(),
        };
        let kind = body.target_kind();
        match body {
            Body::Ping { .. } => match kind {
                TargetKind::Echo => vec![
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
            },
            Body::Rr { .. } | Body::Crr { .. } => match kind {
                TargetKind::Echo | TargetKind::Raw => vec![item(
                    "status",
                    "the responder's acceptance of the sizes, its status record; a plain server cannot refuse a size, so a wrong one shows as a timeout",
                )],
                _ => Vec::new(),
            },
            Body::Stream { params, .. } => match kind {
                TargetKind::Iperf2 if params.udp => vec![
                    item(
                        "intervals[].udp",
                        "loss and jitter per interval; an iperf 2 server reports once, at the end, and summary.udp is that report, over the whole test",
                    ),
                    item("cpu.responder", "the responder's CPU time; only a stackmeter responder reports it"),
                ],
                TargetKind::Discard | TargetKind::Iperf2 => {
                    let counter = match kind {
                        TargetKind::Discard => "a discard server counts nothing it can report",
                        _ => "an iperf 2 server prints its own count on its side (lwiperf hands it to a callback); stackmeter does not read it",
                    };
                    vec![
                        item(
                            "target-counted bytes",
                            &format!("{counter}; sent_* here are the client's send calls, and acked_* what the target's TCP acknowledged (TCP_INFO), the closest figure to what it received"),
                        ),
                        item("cpu.responder", "the responder's CPU time; only a stackmeter responder reports it"),
                    ]
                }
                _ => Vec::new(),
            },
            // Tests that measure only a stackmeter responder.
            Body::Load { .. } | Body::UdpMax { .. } | Body::Rrul { .. } => Vec::new(),
        }
    }
}

impl Document {
    /// The first line of every test's text: test, target, placement.
    pub fn first_line(&self) -> String {
        let target = if self.target.embedded {
            format!("{} (embedded responder)", self.target.address)
        } else if self.target.kind.is_plain() {
            let name = match self.target.name == self.target.address {
                true => String::new(),
                false => format!("{}, ", self.target.name),
            };
            format!("{} ({name}{})", self.target.address, self.target.kind.describe())
        } else if self.target.name == self.target.address {
            self.target.address.clone()
        } else {
            format!("{} ({})", self.target.name, self.target.address)
        };
        let cpu = |c: Option<usize>| c.map(|c| format!("CPU {c}")).unwrap_or_else(|| "not pinned".into());
        let mut placement = format!("client {}", cpu(self.placement.client_cpu));
        if self.target.embedded {
            placement.push_str(&format!(", responder {}", cpu(self.placement.responder_cpu)));
        }
        format!("stackmeter {} -> {target}; {placement}", self.body.test_name())
    }
}

/// Every figure of `doc`, row by row (see [`Figures`] for the order).
pub fn figures(doc: &Document) -> Vec<Figure> {
    let mut f = Figures::default();
    match &doc.body {
        Body::Rr { results, .. } => crate::rr::figures(&mut f, results),
        Body::Crr { results, .. } => crate::crr::figures(&mut f, results),
        Body::Ping { results, .. } => crate::ping::figures(&mut f, results),
        Body::Load { results, .. } => crate::load::figures(&mut f, results),
        Body::Stream { params, summary, .. } => crate::stream::figures(&mut f, params, summary.as_deref()),
        Body::UdpMax { params, result } => crate::udp_max::figures(&mut f, params, result.as_ref()),
        Body::Rrul { phases, induced, .. } => crate::rrul::figures(&mut f, phases, induced),
    }
    f.finish()
}
