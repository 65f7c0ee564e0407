//! What every test's body is: the [`TestBody`] trait each test implements
//! once, in its own module, and `declare_body!`, which lib.rs invokes with
//! the list of tests to declare [`crate::Body`] and the methods that
//! dispatch to the trait. A document asks its body these questions
//! whatever the test; the compiler asks a new test each required one.

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
    fn warnings(&self, run: &crate::warnings::RunContext) -> Vec<String>;

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

/// Declares [`crate::Body`], its dispatch macros and what needs a body
/// type per kind from the list; invoked once, in lib.rs, so this file
/// names no test module.
macro_rules! declare_body {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal, rows $row:literal, body $body:ident;)+) => {
        /// The test, with its parameters and results: the test's own body
        /// type, flattened into the document beside the `test` key.
        #[derive(Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        #[serde(tag = "test")]
        pub enum Body {
            $($(#[doc = $doc])* #[serde(rename = $name)] $variant($crate::$body),)+
        }

        /// `with_body!(body, b => expr)`: `expr` with `b` the test's own
        /// body (a reference when `body` is one), for every test.
        #[macro_export]
        macro_rules! with_body {
            ($on:expr, $b:ident => $e:expr) => {
                match $on {
                    $($crate::Body::$variant($b) => $e,)+
                }
            };
        }

        /// `with_kind!(kind, T => expr)`: `expr` with `T` the body type of
        /// the test `kind`, for every test.
        #[macro_export]
        macro_rules! with_kind {
            ($on:expr, $t:ident => $e:expr) => {
                match $on {
                    $($crate::TestKind::$variant => {
                        type $t = $crate::$body;
                        $e
                    })+
                }
            };
        }

        impl $crate::Body {
            /// Which test this is.
            pub fn kind(&self) -> $crate::TestKind {
                match self {
                    $($crate::Body::$variant(_) => $crate::TestKind::$variant,)+
                }
            }

            /// The test's name as in the JSON `test` key.
            pub fn test_name(&self) -> &'static str {
                self.kind().name()
            }

            /// True when not one row was measured (a test that failed at once).
            pub fn is_empty(&self) -> bool {
                with_body!(self, b => $crate::TestBody::is_empty(b))
            }

            /// The kind of target the test measured, from its parameters.
            pub fn target_kind(&self) -> $crate::TargetKind {
                with_body!(self, b => $crate::body::target_kind_of(b))
            }

            /// The figures this test would have from a stackmeter responder
            /// and cannot have from the plain target it measured (empty for
            /// a responder).
            pub fn not_measured(&self) -> Vec<$crate::NotMeasured> {
                with_body!(self, b => $crate::TestBody::not_measured(b))
            }

            /// What went unanswered when the target answered nothing at all.
            pub fn unanswered(&self) -> Option<String> {
                with_body!(self, b => $crate::TestBody::unanswered(b))
            }

            /// Every figure, row by row.
            pub(crate) fn figures(&self, f: &mut $crate::Figures) {
                with_body!(self, b => $crate::TestBody::figures(b, f));
            }

            /// The body's warnings (see [`TestBody::warnings`]).
            pub(crate) fn warnings(&self, run: &$crate::warnings::RunContext) -> Vec<String> {
                with_body!(self, b => $crate::TestBody::warnings(b, run))
            }
        }

        impl $crate::TestKind {
            /// Whether the test loads the link (a fleet's exclusive class is
            /// these tests unless its file names one).
            pub const fn loads_the_link(self) -> bool {
                match self {
                    $($crate::TestKind::$variant => <$crate::$body as $crate::TestBody>::LOADS_THE_LINK,)+
                }
            }
        }
    };
}

/// The kind of target body `b` measured.
pub(crate) fn target_kind_of<B: TestBody>(b: &B) -> TargetKind {
    B::target_kind(b.params())
}
