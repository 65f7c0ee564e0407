//! The result document every test produces: the envelope (target,
//! placement, environment, completeness, warnings) around one [`Body`],
//! the test's parameters and rows. Each test's own types and view live in
//! its module (`rr.rs`, `crr.rs`, `ping.rs`, `stream.rs`, `udp_max.rs`,
//! `load.rs`, `rrul/`); this file ties them together and adds what every test's
//! view ends with.

use crate::figures::{Figure, Figures};
use crate::plain::{NotMeasured, TargetKind};
use crate::Body;
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
    /// When the test started, unix milliseconds (`time` to the second is
    /// for people; this orders and spaces the blocks of a decided suite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_ms: Option<u64>,
}

impl Document {
    /// Every warning the document's figures call for, in row order, as
    /// the document stores them.
    pub fn derive_warnings(&self) -> Vec<String> {
        self.body
            .warnings(&crate::warnings::RunContext {
                pinned: self.pinned(),
                plain: self.target.kind != crate::TargetKind::Stackmeter,
            })
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// True when the measuring thread was pinned and so was the responder
    /// (as far as stackmeter knows: an external responder's placement is
    /// its own).
    fn pinned(&self) -> bool {
        self.placement.client_cpu.is_some() && (self.placement.responder_cpu.is_some() || !self.target.embedded)
    }

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
    doc.body.figures(&mut f);
    f.finish()
}
