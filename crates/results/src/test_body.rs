//! What every test's body is: the [`TestBody`] trait each test implements
//! once, in its own module, and [`AnyBody`], its object-safe view, which
//! the document's `Body` hands out whatever the test; the compiler asks a
//! new test each required item of [`TestBody`].

use crate::figures::Figures;
use crate::kind::TestKind;
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
    /// Things the reader must know to trust the figures; `run` says what
    /// of the run bears on them (where client and responder ran, and what
    /// kind of target it was: see [`crate::warnings::levels`]).
    fn warnings(&self, run: &crate::warnings::RunContext) -> Vec<crate::warnings::Warning>;

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
    /// When the target answered nothing at all: what went unanswered (a
    /// fleet agent's summary line).
    fn unanswered(&self) -> Option<String> {
        None
    }
}

/// A test's body as the document asks it, whatever the test: the parts of
/// [`TestBody`] that need no type named (an object-safe view of it, which
/// every [`TestBody`] is).
pub trait AnyBody {
    /// True when not one row was measured.
    fn is_empty(&self) -> bool;
    /// Every figure, row by row.
    fn figures(&self, f: &mut Figures);
    /// Things the reader must know to trust the figures.
    fn warnings(&self, run: &crate::warnings::RunContext) -> Vec<crate::warnings::Warning>;
    /// The kind of target the test measured, from its parameters.
    fn target_kind(&self) -> TargetKind;
    /// What a plain target cannot give.
    fn not_measured(&self) -> Vec<NotMeasured>;
    /// What went unanswered when the target answered nothing at all.
    fn unanswered(&self) -> Option<String>;
}

impl<B: TestBody> AnyBody for B {
    fn is_empty(&self) -> bool {
        TestBody::is_empty(self)
    }
    fn figures(&self, f: &mut Figures) {
        TestBody::figures(self, f);
    }
    fn warnings(&self, run: &crate::warnings::RunContext) -> Vec<crate::warnings::Warning> {
        TestBody::warnings(self, run)
    }
    fn target_kind(&self) -> TargetKind {
        B::target_kind(self.params())
    }
    fn not_measured(&self) -> Vec<NotMeasured> {
        TestBody::not_measured(self)
    }
    fn unanswered(&self) -> Option<String> {
        TestBody::unanswered(self)
    }
}
