//! The fleet plan, as pure code: which nodes there are, which pairs of
//! them are measured, and in what order, so that no node is in two
//! throughput tests at once and no latency test runs beside one.
//!
//! A fleet file (`fleet.toml`, docs/fleet.md) names the nodes (name,
//! address, labels, whether the node can run a client), how pairs are
//! chosen (a full mesh, a ring, an explicit list, or by a label such as
//! the rack, as Pingmesh chooses pairs at scale), the tests (a built-in
//! plan or `[[step]]` tables with a plan's keys), the repetitions, and the
//! exclusive class (by default the throughput tests). [`Fleet::parse`]
//! checks it; [`Fleet::plan`] turns it into a [`FleetPlan`]: waves of work
//! items, each with the lock it takes (`locks.rs`). Nothing here runs,
//! locks or reads a clock: the engine runs a node's part of the plan,
//! and PostgreSQL's advisory locks keep the exclusive class exclusive
//! across hosts; this crate only says which keys to take.
//!
//! Errors point at the place in the file they are about ([`FileError`]);
//! the engine turns that into a line, a column and a caret.
//!
//! [`k8s`] renders a plan as Kubernetes manifests (responders as a
//! DaemonSet, each client node's part as a Job pinned to its node), also
//! pure: `stackmeter fleet k8s` only parses flags and prints.

mod file;
mod locks;
mod pairs;
mod schedule;

pub use file::{Fleet, Node, Order, PairRule, Selection, StepSource, DEFAULT_PORT, MAX_REPEAT};
pub use locks::{lock_key, LockMode};
pub use pairs::{choose, Chosen};
pub use schedule::{FleetPlan, Item, Skipped, StepInfo, Wave};

/// Where in a fleet file (or a plan: the engine uses this type for both)
/// an error is: a byte range the TOML parser gave,
/// or a path of keys and indices (`node`, 3, `name`) the engine finds in
/// the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum At {
    /// Bytes of the file.
    Span(std::ops::Range<usize>),
    /// Keys and array indices from the top of the file.
    Path(Vec<Key>),
    /// The file as a whole.
    File,
}

/// One step of a path into a TOML document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    /// A table key.
    Name(String),
    /// An array index, from 0.
    Index(usize),
}

/// What is wrong with a fleet file, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileError {
    /// Where.
    pub at: At,
    /// What, in one line.
    pub message: String,
}

impl FileError {
    fn at(path: &[Key], message: impl Into<String>) -> FileError {
        FileError {
            at: At::Path(path.to_vec()),
            message: message.into(),
        }
    }
}

/// A path of keys, written briefly: `path!["node", 2, "name"]` (an array).
#[macro_export]
macro_rules! path {
    ($($k:expr),* $(,)?) => {
        [$($crate::Key::from($k)),*]
    };
}

impl From<&str> for Key {
    fn from(s: &str) -> Key {
        Key::Name(s.to_string())
    }
}

impl From<usize> for Key {
    fn from(i: usize) -> Key {
        Key::Index(i)
    }
}
