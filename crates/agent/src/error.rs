//! Why the agent did not start, as values: a setting out of range
//! ([`Setting`]), a peers file that cannot be read or has a bad line, or a
//! store address that is not one, all exit 2; an address, socket or
//! thread the system refused, exit 1.

use crate::peers::LineError;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

/// A setting of [`crate::Config`] that flags alone cannot check.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Setting {
    /// `--tests` named nothing.
    #[error("--tests: name at least one of ping, rr, stream")]
    NoTests,
    /// `--interval-ms` out of its range.
    #[error("--interval-ms {ms}: between {lo} and {hi}")]
    Interval { ms: u128, lo: u128, hi: u128 },
    /// `--timeout-ms` out of its range.
    #[error("--timeout-ms {ms}: between 1 and {max}")]
    Timeout { ms: u128, max: u128 },
    /// `--name` empty.
    #[error("--name must not be empty")]
    EmptyName,
    /// `--name` holds `->`, which separates source and target in labels.
    #[error("--name {0}: '->' separates source and target in stored labels")]
    Arrow(String),
    /// `--store-every-s` under 1.
    #[error("--store-every-s: at least 1")]
    StoreEvery,
    /// `--stream-every-s` under 5 with throughput probes.
    #[error("--stream-every-s: at least 5")]
    StreamEvery,
    /// `--metrics` on `--listen`'s address.
    #[error("--metrics {0}: the same address as --listen")]
    MetricsIsListen(SocketAddr),
    /// `--stream-locks` with a store that has no advisory locks.
    #[error("--stream-locks {fleet}: the locks need a PostgreSQL store (--db postgres://...), not {at}")]
    LocksNeedPostgres { fleet: String, at: String },
}

/// Why the peers file could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum PeersFile {
    /// It could not be read.
    #[error("--peers {}: cannot read: {err}", path.display())]
    Read { path: PathBuf, err: io::Error },
    /// A line of it is not a peer.
    #[error("--peers {}: {err}", path.display())]
    Line { path: PathBuf, err: LineError },
}

/// Why the agent did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A bad setting (exit 2).
    #[error(transparent)]
    Setting(#[from] Setting),
    /// The peers file (exit 2).
    #[error(transparent)]
    Peers(#[from] PeersFile),
    /// `--db` is not a store address (exit 2).
    #[error("--db: {0}")]
    Store(stackmeter_engine::Error),
    /// The metrics address cannot be listened on (exit 1).
    #[error("--metrics {addr}: cannot listen: {err}")]
    Metrics {
        addr: SocketAddr,
        err: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The responder did not start (exit 1).
    #[error("{0}")]
    Responder(io::Error),
    /// The ping socket could not be opened (exit 1).
    #[error("cannot open the ping socket on {ip}: {err}")]
    PingSocket { ip: IpAddr, err: io::Error },
    /// A thread could not be started (exit 1).
    #[error("cannot start the {name} thread: {err}")]
    Thread { name: String, err: io::Error },
}

impl StartError {
    /// Whether it is what the user gave (a setting, the peers file, the
    /// store's address), not what the system refused.
    pub fn is_usage(&self) -> bool {
        match self {
            StartError::Setting(_) | StartError::Peers(_) | StartError::Store(_) => true,
            StartError::Metrics { .. }
            | StartError::Responder(_)
            | StartError::PingSocket { .. }
            | StartError::Thread { .. } => false,
        }
    }
}
