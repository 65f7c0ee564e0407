//! `stackmeter agent`: the flags of the agent mesh, wired to
//! `stackmeter_agent::run` (docs/fleet.md, "Agent mesh"). It parses and
//! prints; the agent is the library.

use crate::out::fail;
use clap::Args;
use stackmeter_agent::{Config, Exclusive, FleetLocks, PeerSource, ThisAgentOnly};
use stackmeter_engine::flags::DbFlags;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

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
    #[arg(long, value_name = "MS", default_value_t = stackmeter_agent::DEFAULT_INTERVAL.as_millis() as u64)]
    pub interval_ms: u64,
    /// A probe with no answer within this is lost (at most 10000).
    #[arg(long, value_name = "MS", default_value_t = stackmeter_agent::DEFAULT_TIMEOUT.as_millis() as u64)]
    pub timeout_ms: u64,
    /// The probes, comma-separated: ping, rr, stream (throughput, one at a time).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "ping,rr")]
    pub tests: Vec<Probe>,
    /// With stream: take fleet FLEET's locks of both nodes in the PostgreSQL store (--db) before each throughput probe, as fleet run does, so no node is in two throughput tests at once across agents and fleet runs (names must be the fleet's node names).
    #[arg(long, value_name = "FLEET")]
    pub stream_locks: Option<String>,
    /// With stream: seconds between two throughput probes of this agent.
    #[arg(long, value_name = "S", default_value_t = stackmeter_agent::DEFAULT_STREAM_EVERY.as_secs())]
    pub stream_every_s: u64,
    /// Seconds of probes summarised into one stored ping and one rr document per pair.
    #[arg(long, value_name = "S", default_value_t = stackmeter_agent::DEFAULT_STORE_EVERY.as_secs())]
    pub store_every_s: u64,
    #[command(flatten)]
    pub db: DbFlags,
    /// Do not store the summaries (metrics only).
    #[arg(long)]
    pub no_store: bool,
}

pub fn run(a: AgentArgs, secret: Option<stackmeter_proto::auth::Key>) -> i32 {
    let peers = match (a.peers, a.peers_dns) {
        (Some(f), _) => PeerSource::File(f),
        (None, Some(d)) => match stackmeter_agent::peers::dns_target(&d) {
            Ok((name, port)) => PeerSource::Dns { name, port },
            Err(e) => return fail(2, e),
        },
        (None, None) => return fail(2, "--peers FILE or --peers-dns NAME:PORT"),
    };
    if a.no_store && a.db.db.is_some() {
        return fail(2, "--db and --no-store exclude each other");
    }
    let class: Box<dyn Exclusive> = match &a.stream_locks {
        None => Box::new(ThisAgentOnly),
        Some(_) if !a.tests.contains(&Probe::Stream) => {
            return fail(2, "--stream-locks: throughput probes only (--tests ...,stream)")
        }
        Some(fleet) => {
            let at = match stackmeter_engine::record::location(&a.db) {
                Ok(at) => at,
                Err(e) => return fail(2, format!("--stream-locks {fleet}: {e}")),
            };
            match FleetLocks::new(at, fleet) {
                Ok(l) => Box::new(l),
                Err(e) => return fail(2, e),
            }
        }
    };
    let host = stackmeter_sys::host().hostname;
    let node = std::env::var("NODE_NAME")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| host.clone());
    let mut responder = stackmeter_responder::Config::default();
    if let Some(n) = stackmeter_engine::target::raise_fd_limit(responder.log, 0) {
        responder.max_sessions = (n as usize).saturating_sub(stackmeter_engine::target::FD_ROOM).max(1);
    }
    let cfg = Config {
        listen: a.listen,
        metrics: a.metrics,
        peers,
        name: a.name.unwrap_or(host),
        node,
        interval: Duration::from_millis(a.interval_ms),
        timeout: Duration::from_millis(a.timeout_ms),
        ping: a.tests.contains(&Probe::Ping),
        rr: a.tests.contains(&Probe::Rr),
        stream: a.tests.contains(&Probe::Stream),
        stream_every: Duration::from_secs(a.stream_every_s),
        store: (!a.no_store).then_some(a.db),
        store_every: Duration::from_secs(a.store_every_s),
        secret,
        responder,
    };
    // SIGTERM (a pod stopped) and Ctrl-C end the agent cleanly.
    if let Err(e) = stackmeter_sys::interrupt::catch_interrupts() {
        return fail(1, format!("cannot catch SIGTERM and Ctrl-C: {e}"));
    }
    match stackmeter_agent::run(cfg, class, stackmeter_sys::interrupt::interrupted) {
        Ok(()) => 0,
        Err(e) => fail(e.exit_code(), e),
    }
}
