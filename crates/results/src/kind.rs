//! The one list of tests.
//!
//! Adding a test adds one line to the `tests!` list below, and its own
//! files (ARCHITECTURE.md, "Adding a test"). Every other place that
//! depends on which test it is matches exhaustively on [`TestKind`], on
//! the engine's `Spec` or on [`crate::Body`], so the compiler points at
//! each one; no test is ever told apart by comparing its name as a string.

use serde::{Deserialize, Serialize};

/// Declares [`TestKind`] and [`TestKind::ALL`] from one list of
/// `Variant = "name", rows "Row label";` lines.
macro_rules! tests {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal, rows $row:literal;)+) => {
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

tests! {
    /// Request/response per size pair, closed or open loop.
    Rr = "rr", rows "Size";
    /// Connect/request/response/close.
    Crr = "crr", rows "Size";
    /// UDP echo round trips.
    Ping = "ping", rows "Size";
    /// TCP or paced UDP throughput.
    Stream = "stream", rows "Size";
    /// Highest UDP rate at a loss goal.
    UdpMax = "udp-max", rows "Size";
    /// Many clients listing and fetching objects.
    Load = "load", rows "Size";
    /// Latency under load: phases of TCP load with probes through them.
    Rrul = "rrul", rows "Phase";
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
