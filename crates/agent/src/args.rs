//! `stackmeter agent`'s flags (docs/fleet.md, "Agent mesh"), and the
//! agent's defaults they show: the agent's own, beside its configuration;
//! the binary turns them into a [`crate::Config`].

use clap::Args;
use stackmeter_spec::time::{Millis, Secs};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Default time between two probes of one kind to one peer.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(1000);
/// Default probe timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(1000);
/// Default summary period.
pub const DEFAULT_STORE_EVERY: Duration = Duration::from_secs(60);
/// Default time between two throughput probes of this agent.
pub const DEFAULT_STREAM_EVERY: Duration = Duration::from_secs(60);

/// A probe kind of `--tests`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// UDP echo with the responder's stamps (RTT, loss, one-way delays).
    Ping,
    /// 1-byte request and response on a kept TCP connection.
    Rr,
    /// A short TCP throughput test, one peer at a time.
    Stream,
}

/// `stackmeter agent`'s flags.
#[derive(Args, Debug)]
pub struct AgentArgs {
    /// The responder's address, TCP and UDP (as serve --listen); the probes leave from its IP.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: SocketAddr,
    /// Where Prometheus scrapes: http://ADDR:PORT/metrics.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: SocketAddr,
    /// The peers: one ADDR:PORT or NAME ADDR:PORT a line, # comments; read again when it changes.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "peers_dns",
        conflicts_with = "peers_dns"
    )]
    pub peers: Option<PathBuf>,
    /// The peers: every address NAME resolves to (a headless Service), on PORT; resolved again every 30 s.
    #[arg(long, value_name = "NAME:PORT")]
    pub peers_dns: Option<String>,
    /// This agent's name, the source label of its series. Default: the host name.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Time between two probes of one kind to one peer (spread over it across the peers).
    #[arg(long, value_name = "MS", default_value_t = Millis(DEFAULT_INTERVAL.as_millis() as u64))]
    pub interval_ms: Millis,
    /// A probe with no answer within this is lost (at most 10000).
    #[arg(long, value_name = "MS", default_value_t = Millis(DEFAULT_TIMEOUT.as_millis() as u64))]
    pub timeout_ms: Millis,
    /// The probes, comma-separated: ping, rr, stream (throughput, one at a time).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "ping,rr")]
    pub tests: Vec<Probe>,
    /// With stream: take fleet FLEET's locks of both nodes in the PostgreSQL store (--db) before each throughput probe, as fleet run does, so no node is in two throughput tests at once across agents and fleet runs (names must be the fleet's node names).
    #[arg(long, value_name = "FLEET")]
    pub stream_locks: Option<String>,
    /// With stream: seconds between two throughput probes of this agent.
    #[arg(long, value_name = "S", default_value_t = Secs(DEFAULT_STREAM_EVERY.as_secs_f64()))]
    pub stream_every_s: Secs,
    /// Seconds of probes summarised into one stored ping and one rr document per pair.
    #[arg(long, value_name = "S", default_value_t = Secs(DEFAULT_STORE_EVERY.as_secs_f64()))]
    pub store_every_s: Secs,
    /// Results store for the summaries: an SQLite file, or a PostgreSQL
    /// database (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE). Default:
    /// $STACKMETER_DB, else $XDG_DATA_HOME/stackmeter/results.db, else
    /// ~/.local/share/stackmeter/results.db.
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    /// Do not store the summaries (metrics only).
    #[arg(long)]
    pub no_store: bool,
}
