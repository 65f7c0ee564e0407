//! What every test's body is: the [`TestBody`] trait each test implements
//! once, in its own module, and the [`Body`] methods that dispatch to it.
//! A document asks its body these questions whatever the test; the
//! compiler asks a new test each required one.

use crate::figures::Figures;
use crate::kind::{Body, TestKind};
use crate::plain::{NotMeasured, TargetKind};

/// One test's parameters and rows, as its document holds them.
pub trait TestBody: Sized {
    /// Which test this is.
    const KIND: TestKind;
    /// Whether the test loads the link: a fleet runs such tests one at a
    /// time unless its file says otherwise.
    const LOADS_THE_LINK: bool;
    /// The checked parameters (what the client runs and the document records).
    type Params: Clone + std::fmt::Debug;

    /// The body before any row: what a display prints the head of.
    fn empty(params: Self::Params) -> Self;
    /// The parameters.
    fn params(&self) -> &Self::Params;
    /// True when not one row was measured (a test that failed at once).
    fn is_empty(&self) -> bool;
    /// Every figure, row by row, for comparisons and history.
    fn figures(&self, f: &mut Figures);
    /// Things the reader must know to trust the figures; `why` says what
    /// two latency levels most likely come from on this run's placement.
    fn warnings(&self, why: &str) -> Vec<String>;

    /// The kind of target parameters `p` measure: a stackmeter responder
    /// unless the test also measures plain servers.
    fn target_kind(p: &Self::Params) -> TargetKind {
        let _ = p;
        TargetKind::Stackmeter
    }
    /// The figures the test would have from a stackmeter responder and
    /// cannot have from the plain target it measured.
    fn not_measured(&self) -> Vec<NotMeasured> {
        Vec::new()
    }
    /// Throughput intervals the store keeps as series (a stream's).
    fn intervals(&self) -> &[crate::Interval] {
        &[]
    }
    /// The latency a load induced, per phase (rrul's).
    fn induced(&self) -> Option<&[crate::Induced]> {
        None
    }
    /// When the target answered nothing at all: what went unanswered (a
    /// fleet agent's summary line).
    fn unanswered(&self) -> Option<String> {
        None
    }
}

/// The test of body `b` (for [`with_body!`], where `b`'s type is
/// not written).
pub fn kind_of<B: TestBody>(_: &B) -> TestKind {
    B::KIND
}

impl Body {
    /// Which test this is.
    pub fn kind(&self) -> TestKind {
        with_body!(self, b => kind_of(b))
    }

    /// The test's name as in the JSON `test` key.
    pub fn test_name(&self) -> &'static str {
        self.kind().name()
    }

    /// A stream's intervals (every other test has none): what the store
    /// keeps as series beside the document.
    pub fn intervals(&self) -> &[crate::Interval] {
        with_body!(self, b => b.intervals())
    }

    /// The latency an RRUL test's load induced, per phase (none for the
    /// other tests).
    pub fn induced(&self) -> Option<&[crate::Induced]> {
        with_body!(self, b => b.induced())
    }

    /// True when not one row was measured (a test that failed at once).
    pub fn is_empty(&self) -> bool {
        with_body!(self, b => b.is_empty())
    }

    /// The kind of target the test measured, from its parameters.
    pub fn target_kind(&self) -> TargetKind {
        with_body!(self, b => target_kind_of(b))
    }

    /// The figures this test would have from a stackmeter responder and
    /// cannot have from the plain target it measured (empty for a responder).
    pub fn not_measured(&self) -> Vec<NotMeasured> {
        with_body!(self, b => b.not_measured())
    }

    /// What went unanswered when the target answered nothing at all.
    pub fn unanswered(&self) -> Option<String> {
        with_body!(self, b => b.unanswered())
    }

    /// Every figure, row by row.
    pub(crate) fn figures(&self, f: &mut Figures) {
        with_body!(self, b => b.figures(f));
    }

    /// The body's warnings (see [`TestBody::warnings`]).
    pub(crate) fn warnings(&self, why: &str) -> Vec<String> {
        with_body!(self, b => b.warnings(why))
    }
}

fn target_kind_of<B: TestBody>(b: &B) -> TargetKind {
    B::target_kind(b.params())
}

/// One "not measured" entry.
pub(crate) fn not_measured(figure: &str, why: &str) -> NotMeasured {
    NotMeasured {
        figure: figure.into(),
        why: why.into(),
    }
}
