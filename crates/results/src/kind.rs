//! The one list of tests.
//!
//! Adding a test is its own files and one line in the `tests!` list below
//! (ARCHITECTURE.md, "Adding a test"). The list declares [`TestKind`],
//! the document's [`Body`] (one variant per test, holding the test's body
//! type), and three macros the other crates dispatch with, so no crate
//! names the tests one by one:
//!
//! - [`with_body!`](crate::with_body): `with_body!(body, b => expr)`
//!   evaluates `expr` with `b` bound to the test's own body, whatever the
//!   test; `expr` is checked for every test's type, so a trait a new test
//!   has not implemented is a compile error that names it.
//! - [`with_kind!`](crate::with_kind): `with_kind!(kind, T => expr)`, the
//!   same with `T` the body type of a [`TestKind`] (for what a test does
//!   before it has a body: its flags, its plan keys).
//! - [`for_each_test!`](crate::for_each_test): `for_each_test!(m)` calls
//!   the macro `m` with the list itself, for the enums another crate
//!   declares per test (the engine's subcommands and specifications).
//!
//! What each test does is the [`crate::TestBody`] trait here, the engine's
//! `Measures` and the renderer's `TestView`, implemented once per test in
//! that test's files. No test is ever told apart by comparing its name as
//! a string.

use serde::{Deserialize, Serialize};

/// Declares [`TestKind`], [`Body`] and the dispatch macros from one list
/// of `Variant = "name", rows "Row label", body BodyType;` lines.
macro_rules! tests {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal, rows $row:literal, body $body:ident;)+) => {
        /// Which test a specification, a document or a comparison is of;
        /// serialised as the test's name (the JSON `test` key).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
        pub enum TestKind {
            $($(#[doc = $doc])* #[serde(rename = $name)] $variant,)+
        }

        impl TestKind {
            /// Every test, in the order of the list.
            pub const ALL: &'static [TestKind] = &[$(TestKind::$variant,)+];

            /// The test's name: its subcommand, plan `test = "..."` and JSON `test` key.
            pub const fn name(self) -> &'static str {
                match self {
                    $(TestKind::$variant => $name,)+
                }
            }

            /// What one row of the test's tables is (the first column of a
            /// comparison): a size pair or datagram size, or a phase.
            pub const fn row_label(self) -> &'static str {
                match self {
                    $(TestKind::$variant => $row,)+
                }
            }
        }

        /// The test, with its parameters and results: the test's own body
        /// type, flattened into the document beside the `test` key.
        #[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
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

        /// `for_each_test!(m)`: calls `m!` with the list of tests, as
        /// `Variant = "name", body BodyType;` lines (the doc comments
        /// first), the body types being this crate's.
        #[macro_export]
        macro_rules! for_each_test {
            ($m:ident) => {
                $m! { $($(#[doc = $doc])* $variant = $name, body $body;)+ }
            };
        }
    };
}

tests! {
    /// Request/response per size pair, closed or open loop.
    Rr = "rr", rows "Size", body RrBody;
    /// Connect/request/response/close.
    Crr = "crr", rows "Size", body CrrBody;
    /// UDP echo round trips.
    Ping = "ping", rows "Size", body PingBody;
    /// TCP or paced UDP throughput.
    Stream = "stream", rows "Size", body StreamBody;
    /// Highest UDP rate at a loss goal.
    UdpMax = "udp-max", rows "Size", body UdpMaxBody;
    /// Many clients listing and fetching objects.
    Load = "load", rows "Size", body LoadBody;
    /// Latency under load: phases of TCP load with probes through them.
    Rrul = "rrul", rows "Phase", body RrulBody;
}

impl TestKind {
    /// The test named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<TestKind> {
        TestKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// Every test's name, comma-separated (for error messages).
    pub fn names() -> String {
        TestKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
    }

    /// Whether the test loads the link (a fleet's exclusive class is these
    /// tests unless its file names one).
    pub const fn loads_the_link(self) -> bool {
        with_kind!(self, T => <T as crate::TestBody>::LOADS_THE_LINK)
    }
}

impl std::fmt::Display for TestKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        for k in TestKind::ALL {
            assert_eq!(TestKind::from_name(k.name()), Some(*k));
            assert_eq!(serde_json::to_string(k).unwrap(), format!("\"{}\"", k.name()));
        }
        assert_eq!(TestKind::from_name("nope"), None);
        let mut names: Vec<&str> = TestKind::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TestKind::ALL.len());
    }

    #[test]
    fn each_body_knows_its_kind() {
        for &k in TestKind::ALL {
            assert_eq!(with_kind!(k, T => <T as crate::TestBody>::KIND), k);
        }
    }
}
