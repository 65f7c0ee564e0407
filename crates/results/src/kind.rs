//! The one list of tests.
//!
//! Adding a test is its own files and one line in the `for_each_test!`
//! list below (ARCHITECTURE.md, "Adding a test"). The list declares
//! [`TestKind`] here and, through `declare_body!` (body.rs), invoked in lib.rs
//! (so this file depends on no test's module), the document's
//! [`crate::Body`] (one variant per test, holding the test's body type)
//! and two macros the other crates dispatch with; so no crate names the
//! tests one by one:
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

/// The list of tests: calls the macro `m` with one
/// `Variant = "name", rows "Row label", body BodyType;` line per test
/// (its doc comment first), the body type being this crate's. This crate
/// declares [`TestKind`] (below) and [`crate::Body`] (in lib.rs) with it;
/// the engine its subcommands and specifications.
#[macro_export]
macro_rules! for_each_test {
    ($m:ident) => {
        $m! {
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
            /// Bursts of back-to-back UDP datagrams: the largest answered whole.
            UdpBurst = "udp-burst", rows "Burst", body UdpBurstBody;
        }
    };
}

/// Declares [`TestKind`] from the list.
macro_rules! declare_kind {
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
    };
}

for_each_test!(declare_kind);

impl TestKind {
    /// The test named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<TestKind> {
        TestKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// Every test's name, comma-separated (for error messages).
    pub fn names() -> String {
        TestKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
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
}
