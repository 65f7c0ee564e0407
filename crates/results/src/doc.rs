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
use crate::view::{Block, View};
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
        match (body, body.target_kind()) {
            (Body::Ping { .. }, TargetKind::Echo) => vec![
                item(
                    "server_us",
                    "time inside the responder; an echo server writes no timestamps into its replies",
                ),
                item(
                    "loss_split",
                    "loss each way; an echo server keeps no count of what it received, so a lost round trip cannot be put on either way",
                ),
            ],
            (Body::Rr { .. } | Body::Crr { .. }, TargetKind::Echo | TargetKind::Raw) => vec![item(
                "status",
                "the responder's acceptance of the sizes, its status record; a plain server cannot refuse a size, so a wrong one shows as a timeout",
            )],
            (Body::Stream { params, .. }, TargetKind::Iperf2) if params.udp => vec![
                item(
                    "intervals[].udp",
                    "loss and jitter per interval; an iperf 2 server reports once, at the end, and summary.udp is that report, over the whole test",
                ),
                item("cpu.responder", "the responder's CPU time; only a stackmeter responder reports it"),
            ],
            (Body::Stream { .. }, kind @ (TargetKind::Discard | TargetKind::Iperf2)) => {
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

impl crate::render::Render for Document {
    fn view(&self, style: &crate::render::Style) -> View {
        let mut v = View::new();
        v.push(Block::Title(self.first_line()));
        if !self.knobs.requested.is_default()
            || self
                .knobs
                .client
                .as_ref()
                .is_some_and(|c| c.policy != "other" || c.nice != 0 || c.locked_kib > 0)
        {
            v.line(self.knobs.line());
        }
        if let (true, Some(e)) = (self.body.is_empty(), &self.error) {
            // Nothing was measured: no empty tables, only why.
            v.line(format!("nothing measured: {e}"));
            return v;
        }
        let counts = match &self.body {
            Body::Rr { params, results } => crate::rr::view(&mut v, params, results),
            Body::Crr { params, results } => crate::crr::view(&mut v, params, results),
            Body::Ping { params, results } => crate::ping::view(&mut v, params, results),
            Body::Load {
                params,
                results,
                summary,
            } => crate::load::view(&mut v, params, results, summary.as_ref(), style.units),
            Body::Stream {
                params,
                intervals,
                summary,
            } => crate::stream::view(&mut v, params, intervals, summary.as_deref(), style.units),
            Body::UdpMax { params, result } => crate::udp_max::view(&mut v, params, result.as_ref(), style.units),
            Body::Rrul {
                params,
                phases,
                induced,
                clock,
                series,
                throughput,
            } => crate::rrul::view(
                &mut v,
                params,
                phases,
                induced,
                clock.as_ref(),
                series,
                throughput,
                style.units,
            ),
        };
        tail_note(&mut v, &counts);
        if !self.not_measured.is_empty() {
            v.blank();
        }
        for n in &self.not_measured {
            v.push(Block::Note(format!(
                "not measured ({}): {}: {}",
                self.target.kind.describe(),
                n.figure,
                n.why
            )));
        }
        for w in &self.warnings {
            v.push(Block::Warning(w.clone()));
        }
        if let Some(e) = &self.error {
            v.line(format!(
                "incomplete: the test stopped early ({e}); the figures above cover what ran before that"
            ));
        }
        v
    }

    fn title(&self) -> String {
        self.first_line()
    }
}

/// Says when a tail percentile rests on one or two samples (docs/methods.md,
/// "Tails need samples");
/// `counts` are the sample counts behind the view's percentiles.
fn tail_note(v: &mut View, counts: &[u64]) {
    let Some(&n) = counts.iter().min() else { return };
    if n > 0 && n < 1000 {
        let above = ((1.0 - 0.99) * n as f64).floor() as u64;
        v.blank();
        v.push(Block::Note(format!(
            "with {n} samples, p99.9 is the largest sample and p99 has {above} sample(s) above it; use 1000+ samples before reading tails"
        )));
    }
}
