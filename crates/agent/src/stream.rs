//! Throughput probes (`--tests` with `stream`): a short TCP stream to one
//! peer at a time, the peers in turn, one test every `--stream-every-s`.
//!
//! Throughput tests are the exclusive class: two at once share a link and
//! each measures half of it. Within one agent that cannot happen, since
//! one thread runs them one after another. Across agents it can (this
//! agent streaming to B while C streams to this agent, or to B), and only
//! something every agent sees can prevent it: the fleet's shared store
//! holds the locks (PostgreSQL advisory locks, one per node, taken for
//! both ends of a test). [`Exclusive`] is the hook: the agent asks it
//! before every test and tells it after. [`ThisAgentOnly`] always says
//! yes (the agent alone); [`FleetLocks`] takes the two nodes' locks of a
//! fleet exclusively in the PostgreSQL store (`--stream-locks FLEET`), the
//! same keys `stackmeter fleet run` takes, so an agent's throughput probe
//! never overlaps another's, nor a fleet run's test on either node (which
//! holds them shared for latency, exclusively for throughput). The locks
//! name nodes: the agents' `--name`s and their peers' labels must then be
//! the fleet's node names.
//!
//! Each test is `stackmeter stream` as a measuring command runs it (the
//! engine's stream with [`SECONDS`] seconds, up), so its document is
//! stored as one, labelled SOURCE->TARGET.

use crate::ctx::Ctx;
use crate::mesh::Pair;
use stackmeter_engine::execute::{execute, How, Measured};
use stackmeter_results::{Body, Target, TargetKind, TestKind};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

/// Length of one throughput probe, seconds.
pub const SECONDS: f64 = 2.0;

/// How long to wait before asking again when the class is taken.
const BUSY_RETRY: Duration = Duration::from_secs(5);

/// Who may run a throughput test now, across every agent that shares it.
pub trait Exclusive: Send {
    /// Asks for the class for a test from `source` to `target` (both
    /// agents' names). `Ok(true)`: run it now, and call [`Exclusive::release`]
    /// after; `Ok(false)`: one of them is in a test, try later; `Err`:
    /// the class cannot be asked (logged on one line).
    fn try_take(&mut self, source: &str, target: &str) -> Result<bool, stackmeter_store::LockError>;

    /// The test that [`Exclusive::try_take`] allowed has ended.
    fn release(&mut self, source: &str, target: &str);
}

/// The class as one agent sees it: its own tests never overlap (one
/// thread runs them), so every request is granted.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThisAgentOnly;

impl Exclusive for ThisAgentOnly {
    fn try_take(&mut self, _source: &str, _target: &str) -> Result<bool, stackmeter_store::LockError> {
        Ok(true)
    }

    fn release(&mut self, _source: &str, _target: &str) {}
}

/// The exclusive class in a PostgreSQL store: a test takes its two nodes'
/// keys of fleet `fleet` (`stackmeter_fleet::lock_key`) exclusively,
/// waiting at most [`FleetLocks::WAIT`]; a key another holds means "later".
pub struct FleetLocks {
    at: stackmeter_store::Location,
    fleet: String,
    held: Option<stackmeter_store::Locks>,
}

impl FleetLocks {
    /// Longest wait for the locks before the test is put off.
    pub const WAIT: Duration = Duration::from_secs(1);

    /// The locks of fleet `fleet` in the store at `at`, which must be a
    /// PostgreSQL database.
    pub fn new(at: stackmeter_store::Location, fleet: &str) -> Result<FleetLocks, crate::error::Setting> {
        if !matches!(at, stackmeter_store::Location::Postgres(_)) {
            return Err(crate::error::Setting::LocksNeedPostgres {
                fleet: fleet.to_string(),
                at: at.to_string(),
            });
        }
        Ok(FleetLocks {
            at,
            fleet: fleet.to_string(),
            held: None,
        })
    }
}

impl Exclusive for FleetLocks {
    fn try_take(&mut self, source: &str, target: &str) -> Result<bool, stackmeter_store::LockError> {
        let keys = [
            stackmeter_fleet::lock_key(&self.fleet, source),
            stackmeter_fleet::lock_key(&self.fleet, target),
        ];
        match stackmeter_store::Locks::acquire(&self.at, &keys, FleetLocks::WAIT) {
            Ok(l) => {
                self.held = Some(l);
                Ok(true)
            }
            Err(stackmeter_store::LockError::Timeout { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn release(&mut self, _source: &str, _target: &str) {
        self.held = None;
    }
}

/// A finished test for the store.
pub(crate) struct Finished {
    pub label: String,
    pub measured: Measured,
}

/// The engine's stream test as a throughput probe.
pub fn spec() -> Result<stackmeter_spec::Spec, stackmeter_spec::KeyError> {
    let mut t = toml::Table::new();
    t.insert("time".into(), toml::Value::Float(SECONDS));
    t.insert("interval".into(), toml::Value::Float(1.0));
    stackmeter_spec::from_table(TestKind::Stream, t, false)
}

/// Runs until the stop: one test every `every`, to the peers in turn.
pub(crate) fn run(ctx: Arc<Ctx>, every: Duration, mut class: Box<dyn Exclusive>, out: Sender<Finished>) {
    let spec = match spec() {
        Ok(s) => s,
        Err(e) => {
            crate::log::warn(&format!("stream: {e}; no throughput probes"));
            return;
        }
    };
    let mut turn = 0usize;
    let mut wait = every;
    let mut busy = false;
    loop {
        if ctx.stop.sleep(wait) {
            return;
        }
        wait = every;
        let pairs = ctx.mesh.pairs();
        if pairs.is_empty() {
            continue;
        }
        let pair = pairs[turn % pairs.len()].clone();
        match class.try_take(&ctx.source, &pair.label) {
            Ok(true) => {}
            Ok(false) => {
                if !busy {
                    crate::log::info(&format!(
                        "stream to {}: a node of it is in another test (the exclusive class); trying again every {} s",
                        pair.label,
                        BUSY_RETRY.as_secs()
                    ));
                    busy = true;
                }
                wait = BUSY_RETRY;
                continue;
            }
            Err(e) => {
                crate::log::warn(&format!("stream to {}: the exclusive class: {e}", pair.label));
                continue;
            }
        }
        busy = false;
        turn += 1;
        let measured = one(&spec, &pair, ctx.secret);
        class.release(&ctx.source, &pair.label);
        // The agent's throughput probe is always a stream.
        let mut rate = None;
        if let (None, Body::Stream(s)) = (&measured.error, &measured.doc.body) {
            rate = s.summary.as_ref().map(|s| s.total_mbps * 1e6 / 8.0);
        }
        let stopping = ctx.stop.is_set() || stackmeter_sys::interrupt::interrupted();
        if let (Some(e), false) = (&measured.error, stopping) {
            crate::log::warn(&format!("peer {} ({}): stream: {e}", pair.label, pair.addr));
        }
        pair.record(|| ctx.metrics.stream(&pair.label, rate));
        let _ = out.send(Finished {
            label: format!("{}->{}", ctx.source, pair.label),
            measured,
        });
    }
}

fn one(spec: &stackmeter_spec::Spec, pair: &Pair, secret: Option<stackmeter_proto::auth::Key>) -> Measured {
    let target = Target {
        name: pair.label.clone(),
        address: pair.addr.to_string(),
        embedded: false,
        kind: TargetKind::Stackmeter,
    };
    let how = How {
        secret,
        ..How::default()
    };
    execute(spec, target, pair.addr, how, &mut |_| {})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_is_a_short_stream_test_the_engine_accepts() {
        let Ok(stackmeter_spec::Spec::Stream(p)) = spec() else {
            panic!("a stream spec")
        };
        assert_eq!(p.time_s, SECONDS);
    }

    #[test]
    fn one_agent_alone_always_gets_the_class() {
        let mut c = ThisAgentOnly;
        assert!(matches!(c.try_take("a", "b"), Ok(true)));
        c.release("a", "b");
    }
}
