//! Which test a specification, a document or a comparison is of: the
//! list of tests, written out.
//!
//! Adding a test is its own files, a variant here and in the document's
//! [`crate::Body`] (body.rs), and the arms the compiler then asks for in
//! every `match` over them (ARCHITECTURE.md, "Adding a test"); what each
//! test does is the [`crate::TestBody`] trait, the renderer's
//! `TestView`, and the engine's run of it, implemented once per test in
//! that test's files. No test is ever told apart by comparing its name as
//! a string.

use serde::{Deserialize, Serialize};

/// Which test a specification, a document or a comparison is of;
/// serialised as the test's name (the JSON `test` key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum TestKind {
    /// Request/response per size pair, closed or open loop.
    #[serde(rename = "rr")]
    Rr,
    /// Connect/request/response/close.
    #[serde(rename = "crr")]
    Crr,
    /// UDP echo round trips.
    #[serde(rename = "ping")]
    Ping,
    /// TCP or paced UDP throughput.
    #[serde(rename = "stream")]
    Stream,
    /// Highest UDP rate at a loss goal.
    #[serde(rename = "udp-max")]
    UdpMax,
    /// Many clients listing and fetching objects.
    #[serde(rename = "load")]
    Load,
    /// Latency under load: phases of TCP load with probes through them.
    #[serde(rename = "rrul")]
    Rrul,
    /// Bursts of back-to-back UDP datagrams: the largest answered whole.
    #[serde(rename = "udp-burst")]
    UdpBurst,
}

impl TestKind {
    /// Every test, in the order of the list.
    pub const ALL: &'static [TestKind] = &[
        TestKind::Rr,
        TestKind::Crr,
        TestKind::Ping,
        TestKind::Stream,
        TestKind::UdpMax,
        TestKind::Load,
        TestKind::Rrul,
        TestKind::UdpBurst,
    ];

    /// The test's name: its subcommand, plan `test = "..."` and JSON `test` key.
    pub const fn name(self) -> &'static str {
        match self {
            TestKind::Rr => "rr",
            TestKind::Crr => "crr",
            TestKind::Ping => "ping",
            TestKind::Stream => "stream",
            TestKind::UdpMax => "udp-max",
            TestKind::Load => "load",
            TestKind::Rrul => "rrul",
            TestKind::UdpBurst => "udp-burst",
        }
    }

    /// What one row of the test's tables is (the first column of a
    /// comparison): a size pair or datagram size, a phase, a burst.
    pub const fn row_label(self) -> &'static str {
        match self {
            TestKind::Rrul => "Phase",
            TestKind::UdpBurst => "Burst",
            TestKind::Rr | TestKind::Crr => "Request:response",
            TestKind::Ping | TestKind::Stream | TestKind::UdpMax | TestKind::Load => "Size",
        }
    }

    /// What its rows are, in the plural ("sizes", "phases", "bursts").
    pub const fn rows_noun(self) -> &'static str {
        match self {
            TestKind::Rrul => "phases",
            TestKind::UdpBurst => "bursts",
            TestKind::Rr | TestKind::Crr | TestKind::Ping | TestKind::Stream | TestKind::UdpMax | TestKind::Load => {
                "sizes"
            }
        }
    }
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
