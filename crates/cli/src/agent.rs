//! `stackmeter agent`: its flags (`stackmeter_agent::args`)
//! wired to `stackmeter_agent::run` (docs/fleet.md, "Agent mesh"). It
//! checks what only the binary can and prints; the agent is the library.

use crate::out::fail;
use stackmeter_agent::{AgentArgs, Probe};
use stackmeter_agent::{Config, Exclusive, FleetLocks, PeerSource, ThisAgentOnly};
use std::time::Duration;

pub fn run(a: AgentArgs, secret: Option<stackmeter_proto::auth::Key>) -> i32 {
    let peers = match (a.peers, a.peers_dns) {
        (Some(f), _) => PeerSource::File(f),
        (None, Some(d)) => match stackmeter_agent::peers::dns_target(&d) {
            Ok((name, port)) => PeerSource::Dns { name, port },
            Err(e) => return fail(2, e),
        },
        (None, None) => return fail(2, "--peers FILE or --peers-dns NAME:PORT"),
    };
    if a.no_store && a.db.is_some() {
        return fail(2, "--db and --no-store exclude each other");
    }
    let class: Box<dyn Exclusive> = match &a.stream_locks {
        None => Box::new(ThisAgentOnly),
        Some(_) if !a.tests.contains(&Probe::Stream) => {
            return fail(2, "--stream-locks: throughput probes only (--tests ...,stream)")
        }
        Some(fleet) => {
            let at = match stackmeter_engine::record::location(a.db.as_deref()) {
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
        interval: Duration::from_millis(a.interval_ms.0),
        timeout: Duration::from_millis(a.timeout_ms.0),
        ping: a.tests.contains(&Probe::Ping),
        rr: a.tests.contains(&Probe::Rr),
        stream: a.tests.contains(&Probe::Stream),
        stream_every: a.stream_every_s.duration(),
        store: (!a.no_store).then_some(stackmeter_agent::Db(a.db)),
        store_every: a.store_every_s.duration(),
        secret,
        responder,
    };
    // SIGTERM (a pod stopped) and Ctrl-C end the agent cleanly.
    if let Err(e) = stackmeter_sys::interrupt::catch_interrupts() {
        return fail(1, format!("cannot catch SIGTERM and Ctrl-C: {e}"));
    }
    match stackmeter_agent::run(cfg, class, stackmeter_sys::interrupt::interrupted) {
        Ok(()) => 0,
        Err(e) => crate::out::error(e),
    }
}
