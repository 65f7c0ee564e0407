//! The stackmeter agent: a responder that also measures its peers, for a
//! fleet in which every node (or every chosen pair, as Pingmesh chooses
//! them) is measured all the time and Prometheus collects the figures.
//!
//! One agent is `stackmeter serve` (started through
//! `stackmeter_responder::start`, TCP and UDP on `--listen`) plus probers:
//! every interval each peer gets a UDP ping (`ping.rs`: stackmeter's echo
//! with the responder's stamps, so the round trip splits into one-way
//! delays) and a 1:1 rr round on a kept connection (`rr.rs`), spread over
//! the interval (`schedule.rs`); throughput probes only when asked
//! (`stream.rs`, one at a time, with a hook for the fleet's exclusive
//! class). Each pair's latency histograms, sent and lost counts, one-way
//! delays and clock offset are served as OpenMetrics on `/metrics`
//! (`metrics.rs`, `http.rs`, `exposition.rs`), and each period's summary
//! is stored as `ping` and `rr` documents (`store.rs`).
//!
//! The pure parts have no I/O and no clock: the peers file and the
//! self-exclusion rule (`peers.rs`), the schedule (`schedule.rs`), the
//! clock window (`window.rs`), the period tallies (`summary.rs`) and the
//! exposition formats (`exposition.rs`). Sockets, threads and HTTP are the
//! thin rest: `ping.rs`, `rr.rs`, `stream.rs`, `discover.rs`, `http.rs`,
//! `store.rs`, wired here.
//!
//! Failures: a bad configuration, peers file or start-up read, a metrics
//! or listen address that cannot be bound, stop [`run`] with one
//! [`StartError`]; everything after the start (a peer that does not
//! answer, a name that does not resolve, a store that cannot be written,
//! a peers file edited into a bad one) is one log line (`log.rs`) and the
//! agent goes on.

mod args;
mod ctx;
mod discover;
mod error;
mod exposition;
mod http;
mod log;
mod mesh;
mod metrics;
pub mod peers;
mod ping;
mod rr;
pub mod schedule;
mod store;
mod stream;
mod summary;
pub mod window;

pub use error::{PeersFile, Setting, StartError};
pub use exposition::{negotiate, to_text, Format};
pub use metrics::{buckets, Metrics};
pub use peers::PeerSource;
pub use store::Db;
pub use stream::{Exclusive, FleetLocks, ThisAgentOnly};

use ctx::Ctx;
use mesh::{Mesh, Plan, Stop};
use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use summary::Probing;

/// The defaults `stackmeter agent`'s flags show (declared with the flags).
pub use args::{AgentArgs, Probe, DEFAULT_INTERVAL, DEFAULT_STORE_EVERY, DEFAULT_STREAM_EVERY, DEFAULT_TIMEOUT};

/// Longest probe timeout (the top histogram bucket is about 10 s).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(10);
/// Shortest and longest interval.
pub const INTERVALS: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(3600));
/// A ping slower than this counts as slow in the stored summary, us (as
/// `stackmeter ping`'s default).
pub const SLOW_US: u64 = 1000;

/// How one agent runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Its responder's address (TCP and UDP); probes leave from its IP.
    pub listen: SocketAddr,
    /// Where `/metrics` is served.
    pub metrics: SocketAddr,
    /// Who it probes.
    pub peers: PeerSource,
    /// Its name: the `source` label.
    pub name: String,
    /// The node it runs on (the info metric).
    pub node: String,
    /// Time between two probes of one kind to one peer.
    pub interval: Duration,
    /// No answer within this is a lost probe.
    pub timeout: Duration,
    /// UDP echo probes.
    pub ping: bool,
    /// 1:1 rr probes on a kept connection.
    pub rr: bool,
    /// Throughput probes.
    pub stream: bool,
    /// Time between two throughput probes of this agent.
    pub stream_every: Duration,
    /// The results store (`None`: `--no-store`).
    pub store: Option<Db>,
    /// Summary period.
    pub store_every: Duration,
    /// The shared secret: its responder asks for it, its probes prove it.
    pub secret: Option<stackmeter_proto::auth::Key>,
    /// The responder's configuration (its `listen` and `secret` are set
    /// from `listen` and `secret`).
    pub responder: stackmeter_responder::Config,
}

impl Config {
    /// Checks the settings that flags alone cannot.
    pub fn check(&self) -> Result<(), Setting> {
        if !(self.ping || self.rr || self.stream) {
            return Err(Setting::NoTests);
        }
        let (lo, hi) = INTERVALS;
        if self.interval < lo || self.interval > hi {
            return Err(Setting::Interval {
                ms: self.interval.as_millis(),
                lo: lo.as_millis(),
                hi: hi.as_millis(),
            });
        }
        if self.timeout.is_zero() || self.timeout > MAX_TIMEOUT {
            return Err(Setting::Timeout {
                ms: self.timeout.as_millis(),
                max: MAX_TIMEOUT.as_millis(),
            });
        }
        if self.name.trim().is_empty() {
            return Err(Setting::EmptyName);
        }
        if self.name.contains("->") {
            return Err(Setting::Arrow(self.name.clone()));
        }
        if self.store_every < Duration::from_secs(1) {
            return Err(Setting::StoreEvery);
        }
        if self.stream && self.stream_every < Duration::from_secs(5) {
            return Err(Setting::StreamEvery);
        }
        if self.metrics == self.listen && self.listen.port() != 0 {
            return Err(Setting::MetricsIsListen(self.metrics));
        }
        Ok(())
    }
}

/// Starts the agent and runs it until `until()` says stop (looked at
/// every 100 ms); then stops every prober (each within its timeout),
/// stores the last summaries and returns. `class` guards throughput
/// probes ([`ThisAgentOnly`] until the fleet's locks).
pub fn run(cfg: Config, class: Box<dyn Exclusive>, until: impl Fn() -> bool) -> Result<(), StartError> {
    cfg.check()?;
    let (text, first) = match &cfg.peers {
        PeerSource::File(path) => {
            let (t, p) = discover::read_file(path)?;
            (t, Some(p))
        }
        PeerSource::Dns { .. } => (String::new(), None),
    };
    if let Some(db) = &cfg.store {
        // A store address that is not one stops here; one that cannot be
        // opened now is tried again every period.
        stackmeter_engine::record::location(db.0.as_deref()).map_err(StartError::Store)?;
    }
    let (server, metrics_at) = http::bind(cfg.metrics)?;
    let mut rcfg = cfg.responder.clone();
    rcfg.listen = vec![cfg.listen];
    rcfg.secret = cfg.secret;
    let responder = stackmeter_responder::start(rcfg).map_err(StartError::Responder)?;
    let listen = responder.local.first().copied().unwrap_or(cfg.listen);
    let sock = UdpSocket::bind(SocketAddr::new(listen.ip(), 0))
        .map_err(|err| StartError::PingSocket { ip: listen.ip(), err })?;
    let plan = Plan {
        ping: cfg.ping,
        rr: cfg.rr,
        interval_ns: cfg.interval.as_nanos() as u64,
    };
    let ctx = Arc::new(Ctx {
        source: cfg.name.clone(),
        listen,
        plan,
        timeout: cfg.timeout,
        secret: cfg.secret,
        epoch_ns: stackmeter_sys::monotonic_ns(),
        probing: Probing {
            interval_us: cfg.interval.as_micros() as u64,
            timeout_ms: cfg.timeout.as_millis() as u64,
            ping_size: ping::SIZE,
            slow_us: SLOW_US,
        },
        metrics: Arc::new(Metrics::new(
            &cfg.name,
            &cfg.node,
            env!("CARGO_PKG_VERSION"),
            cfg.stream,
        )),
        mesh: Mesh::new(),
        stop: Stop::new(),
        left_out: Mutex::new(Vec::new()),
    });
    let from = match &cfg.peers {
        PeerSource::File(p) => p.display().to_string(),
        PeerSource::Dns { name, port } => format!("{name}:{port}"),
    };
    if let Some(found) = first {
        discover::apply(&ctx, found, &from);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let mut joined: Vec<JoinHandle<()>> = Vec::new();
    let c = ctx.clone();
    let source = cfg.peers.clone();
    spawn("peers", move || discover::run(c, source, text))?;
    let c = ctx.clone();
    spawn("metrics", move || http::serve(&server, &c))?;
    if cfg.ping {
        let c = ctx.clone();
        joined.push(spawn("ping", move || ping::run(sock, c))?);
    }
    if cfg.rr {
        let c = ctx.clone();
        joined.push(spawn("rr", move || rr::manage(c))?);
    }
    if cfg.stream {
        let c = ctx.clone();
        let every = cfg.stream_every;
        joined.push(spawn("stream", move || stream::run(c, every, class, tx))?);
    } else {
        drop(tx);
    }
    let c = ctx.clone();
    let (db, every) = (cfg.store.clone(), cfg.store_every);
    joined.push(spawn("store", move || store::run(c, db, every, rx))?);
    log::info(&started_line(&cfg, &plan, listen, metrics_at, &from));
    if cfg.secret.is_some() {
        log::info("authentication on: peers must prove the shared secret, and the probes prove it to them");
    }
    while !until() {
        std::thread::sleep(Duration::from_millis(100));
    }
    log::info("stopping: ending the probes and storing the last summaries");
    ctx.stop.stop();
    for h in joined {
        let _ = h.join();
    }
    drop(responder);
    log::info("stopped");
    Ok(())
}

/// The line an agent logs when it starts: where it listens, what it
/// probes and how often, where its peers and summaries come and go.
fn started_line(cfg: &Config, plan: &Plan, listen: SocketAddr, metrics_at: SocketAddr, from: &str) -> String {
    let mut probing = Vec::new();
    if !plan.kinds().is_empty() {
        probing.push(format!(
            "{} every {} ms per peer (timeout {} ms)",
            plan.kinds().join(" and "),
            cfg.interval.as_millis(),
            cfg.timeout.as_millis()
        ));
    }
    if cfg.stream {
        probing.push(format!(
            "a {} s stream every {} s, one peer at a time",
            stream::SECONDS,
            cfg.stream_every.as_secs()
        ));
    }
    format!(
        "agent {} on node {}: responder on {listen}; probing {}; metrics on http://{metrics_at}/metrics; peers from {from}; summaries {}",
        cfg.name,
        cfg.node,
        probing.join(", "),
        match &cfg.store {
            Some(_) => format!("stored every {} s", cfg.store_every.as_secs()),
            None => "not stored (--no-store)".into(),
        }
    )
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, StartError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|err| StartError::Thread {
            name: name.to_string(),
            err,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Config {
        Config {
            listen: "127.0.0.1:7000".parse().unwrap(),
            metrics: "127.0.0.1:9100".parse().unwrap(),
            peers: PeerSource::File("peers.txt".into()),
            name: "a".into(),
            node: "n".into(),
            interval: DEFAULT_INTERVAL,
            timeout: DEFAULT_TIMEOUT,
            ping: true,
            rr: true,
            stream: false,
            stream_every: DEFAULT_STREAM_EVERY,
            store: None,
            store_every: DEFAULT_STORE_EVERY,
            secret: None,
            responder: stackmeter_responder::Config::default(),
        }
    }

    #[test]
    fn settings_are_checked_with_one_line_each() {
        assert_eq!(cfg().check(), Ok(()));
        let bad: Vec<(Config, &str)> = vec![
            (
                Config {
                    ping: false,
                    rr: false,
                    ..cfg()
                },
                "--tests",
            ),
            (
                Config {
                    interval: Duration::from_millis(5),
                    ..cfg()
                },
                "--interval-ms 5",
            ),
            (
                Config {
                    timeout: Duration::from_secs(11),
                    ..cfg()
                },
                "--timeout-ms 11000",
            ),
            (
                Config {
                    name: " ".into(),
                    ..cfg()
                },
                "--name",
            ),
            (
                Config {
                    name: "a->b".into(),
                    ..cfg()
                },
                "'->'",
            ),
            (
                Config {
                    metrics: "127.0.0.1:7000".parse().unwrap(),
                    ..cfg()
                },
                "--metrics",
            ),
            (
                Config {
                    stream: true,
                    stream_every: Duration::from_secs(1),
                    ..cfg()
                },
                "--stream-every-s",
            ),
        ];
        for (c, want) in bad {
            let e = c.check().unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            assert!(!e.contains('\n'));
        }
    }
}
