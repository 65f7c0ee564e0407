//! The document's [`Body`]: one variant per test, written out, each the
//! test's own body type; one `match` ([`Body::test`]) reaches the test's
//! body as [`AnyBody`], so a document asks its questions whatever the
//! test.

use crate::figures::Figures;
use crate::kind::TestKind;
use crate::plain::{NotMeasured, TargetKind};
use crate::test_body::{AnyBody, TestBody};
use crate::{CrrBody, LoadBody, PingBody, RrBody, RrulBody, StreamBody, UdpBurstBody, UdpMaxBody};

/// The test, with its parameters and results: the test's own body type,
/// flattened into the document beside the `test` key.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "test")]
pub enum Body {
    /// Request/response per size pair, closed or open loop.
    #[serde(rename = "rr")]
    Rr(crate::RrBody),
    /// Connect/request/response/close.
    #[serde(rename = "crr")]
    Crr(crate::CrrBody),
    /// UDP echo round trips.
    #[serde(rename = "ping")]
    Ping(crate::PingBody),
    /// TCP or paced UDP throughput.
    #[serde(rename = "stream")]
    Stream(crate::StreamBody),
    /// Highest UDP rate at a loss goal.
    #[serde(rename = "udp-max")]
    UdpMax(crate::UdpMaxBody),
    /// Many clients listing and fetching objects.
    #[serde(rename = "load")]
    Load(crate::LoadBody),
    /// Latency under load: phases of TCP load with probes through them.
    #[serde(rename = "rrul")]
    Rrul(crate::RrulBody),
    /// Bursts of back-to-back UDP datagrams: the largest answered whole.
    #[serde(rename = "udp-burst")]
    UdpBurst(crate::UdpBurstBody),
}

impl Body {
    /// The test's own body, as every test's is asked.
    pub fn test(&self) -> &dyn AnyBody {
        match self {
            Body::Rr(b) => b,
            Body::Crr(b) => b,
            Body::Ping(b) => b,
            Body::Stream(b) => b,
            Body::UdpMax(b) => b,
            Body::Load(b) => b,
            Body::Rrul(b) => b,
            Body::UdpBurst(b) => b,
        }
    }

    /// Which test this is.
    pub fn kind(&self) -> TestKind {
        match self {
            Body::Rr(_) => TestKind::Rr,
            Body::Crr(_) => TestKind::Crr,
            Body::Ping(_) => TestKind::Ping,
            Body::Stream(_) => TestKind::Stream,
            Body::UdpMax(_) => TestKind::UdpMax,
            Body::Load(_) => TestKind::Load,
            Body::Rrul(_) => TestKind::Rrul,
            Body::UdpBurst(_) => TestKind::UdpBurst,
        }
    }

    /// The test's name as in the JSON `test` key.
    pub fn test_name(&self) -> &'static str {
        self.kind().name()
    }

    /// True when not one row was measured (a test that failed at once).
    pub fn is_empty(&self) -> bool {
        self.test().is_empty()
    }

    /// The kind of target the test measured, from its parameters.
    pub fn target_kind(&self) -> TargetKind {
        self.test().target_kind()
    }

    /// The figures this test would have from a stackmeter responder and
    /// cannot have from the plain target it measured (empty for a
    /// responder).
    pub fn not_measured(&self) -> Vec<NotMeasured> {
        self.test().not_measured()
    }

    /// What went unanswered when the target answered nothing at all.
    pub fn unanswered(&self) -> Option<String> {
        self.test().unanswered()
    }

    /// Every figure, row by row.
    pub(crate) fn figures(&self, f: &mut Figures) {
        self.test().figures(f);
    }

    /// The body's warnings (see [`TestBody::warnings`]).
    pub(crate) fn warnings(&self, run: &crate::warnings::RunContext) -> Vec<crate::warnings::Warning> {
        self.test().warnings(run)
    }
}

impl TestKind {
    /// Whether the test loads the link (a fleet's exclusive class is
    /// these tests unless its file names one): each body type says.
    pub const fn loads_the_link(self) -> bool {
        match self {
            TestKind::Rr => RrBody::LOADS_THE_LINK,
            TestKind::Crr => CrrBody::LOADS_THE_LINK,
            TestKind::Ping => PingBody::LOADS_THE_LINK,
            TestKind::Stream => StreamBody::LOADS_THE_LINK,
            TestKind::UdpMax => UdpMaxBody::LOADS_THE_LINK,
            TestKind::Load => LoadBody::LOADS_THE_LINK,
            TestKind::Rrul => RrulBody::LOADS_THE_LINK,
            TestKind::UdpBurst => UdpBurstBody::LOADS_THE_LINK,
        }
    }
}
