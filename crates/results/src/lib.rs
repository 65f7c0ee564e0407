//! Results as typed values: what every test measured, and what comparisons,
//! suites, reports and fleets make of them. Their views and formats (text,
//! Markdown, JSON, HTML) are the `stackmeter-render` crate's, so the crates
//! that only need the values (the store, the client, the fleet plan) carry
//! no drawing.
//!
//! A test produces one [`Document`]: an envelope around the test's own
//! parameters and rows (one module per test: `rr`, `crr`, `ping`, `stream`,
//! `udp_max`, `udp_burst`, `load`, `rrul`, each with its types and its figures; the list
//! of tests is [`TestKind`]). A [`Comparison`], a [`SuiteOutcome`] and a
//! [`RunReport`] are typed values built from documents. Serialized, a value is
//! the versioned JSON schema `stackmeter/1` described in `docs/json.md`,
//! which later commands (store, compare, report) read back.
//!
//! Pure: no I/O, no clock (times arrive as values).

mod body;
mod comparison;
mod crr;
pub mod decision;
mod doc;
mod figures;
pub mod fleet;
pub mod history;
mod kind;
mod knobs;
mod label;
mod latency;
pub mod layers;
mod live;
mod load;
mod ping;
pub mod plain;
mod report;
mod rr;
pub mod rrul;
mod runs;
pub mod schema;
mod spectrum;
mod split;
mod stream;
mod suite;
mod test_body;
mod udp_burst;
mod udp_max;
pub mod warnings;

pub use body::Body;
pub use comparison::{build as compare, p_value, percent_words, Comparison, Row, Section, Side};
pub use crr::{CrrBody, CrrParams, CrrResult};
pub use decision::{DecideSettings, Decided, DecidedRow, Decider, Decision, SpellNote};
pub use doc::{figures, Document, Env, Placement, Target, SCHEMA};
pub use figures::{row_label, step_suffix, Figure, Figures};
pub use kind::TestKind;
pub use knobs::{KnobRequest, KnobState, Knobs};
pub use label::{format_size, num};
pub use latency::{latency_text, LatencyUs, Levels};
pub use live::{Live, TrialRow};
pub use load::{LoadBody, LoadParams, LoadRun, LoadSummary, ObjectInfo, ObjectLatency, TargetUse};
pub use ping::{LossSplit, PingBody, PingParams, PingResult, Slow};
pub use plain::{NotMeasured, TargetKind};
pub use report::{HistKey, ReportSource, ReportTest, RunReport, SeriesPoint};
pub use rr::{OpenLoopParams, RrBody, RrParams, RrResult, SizePair};
pub use rrul::{ClockInfo, Induced, Phase, ProbePoint, RatePoint, RrulBody, RrulParams};
pub use runs::{ListedRun, RunList};
pub use spectrum::{Spectrum, SpectrumPoint, SpectrumRow};
pub use split::{Share, SplitUs, StampParams, Timestamps};
pub use stackmeter_statistics::Direction;
pub use stream::{
    CpuShare, CpuUse, Flow, Interval, SenderBytes, Spread, StreamBody, StreamParams, StreamSummary, UdpFigures,
    Zerocopy,
};
pub use suite::{cpu_list, shared_cpu_warning, Finished, SuiteOutcome, SuiteSettings, SuiteTarget, TargetProcess};
pub use test_body::{AnyBody, TestBody};
pub use udp_burst::{UdpBurstBody, UdpBurstParams, UdpBurstResult};
pub use udp_max::{Trial, UdpMaxBody, UdpMaxParams, UdpMaxResult, SHORT_SEND};

#[cfg(test)]
mod tests {
    //! The written-out lists agree: every kind's body says it is of that
    //! kind, and every body of an empty document of each kind is of it.
    use crate::{
        CrrBody, LoadBody, PingBody, RrBody, RrulBody, StreamBody, TestBody, TestKind, UdpBurstBody, UdpMaxBody,
    };

    #[test]
    fn each_body_knows_its_kind() {
        let kinds = [
            (TestKind::Rr, RrBody::KIND),
            (TestKind::Crr, CrrBody::KIND),
            (TestKind::Ping, PingBody::KIND),
            (TestKind::Stream, StreamBody::KIND),
            (TestKind::UdpMax, UdpMaxBody::KIND),
            (TestKind::Load, LoadBody::KIND),
            (TestKind::Rrul, RrulBody::KIND),
            (TestKind::UdpBurst, UdpBurstBody::KIND),
        ];
        assert_eq!(kinds.len(), TestKind::ALL.len());
        for (k, of_body) in kinds {
            assert_eq!(k, of_body);
        }
    }
}
