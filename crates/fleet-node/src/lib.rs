//! A client node's part of a fleet run (`stackmeter fleet run`): the
//! fleet file loaded for use (read, checked by `stackmeter_fleet`, its
//! tests resolved into specifications by the plan code, a built-in plan or
//! its own `[[step]]` tables, and planned; errors show the line and column
//! they are about), the locks that keep two throughput tests off one node
//! (lock files on one host, PostgreSQL advisory locks across hosts), and
//! the node's items run in waves through the engine, each stored as
//! `CLIENT->TARGET`. Reading fleet runs back is `stackmeter-query`'s.

use stackmeter_client::ClientError;
use stackmeter_engine::Error;
use stackmeter_fleet::{lock_key, Fleet, FleetPlan, Item, LockMode, StepInfo, StepSource};
use stackmeter_results::{Document, Target};
use stackmeter_spec::located::show;
use stackmeter_spec::plan::{self, Step};
use stackmeter_store::{NewTest, Run, Writer};
use std::time::{Duration, Instant};

/// A fleet file, checked and planned.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// As written.
    pub fleet: Fleet,
    /// Its tests as specifications.
    pub steps: Vec<Step>,
    /// What runs where and in which order.
    pub plan: FleetPlan,
}

impl Loaded {
    /// The same fleet planned with its repetitions ordered `order`.
    pub fn ordered(mut self, order: stackmeter_fleet::Order) -> Loaded {
        self.fleet.order = order;
        let infos: Vec<StepInfo> = self.plan.steps.clone();
        self.plan = self.fleet.plan(&infos);
        self
    }

    /// The step named `name`.
    pub fn step(&self, name: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.name == name)
    }
}

/// Reads fleet file `path`; `quick` scales its tests down as `suite
/// --quick` does.
pub fn load(path: &str, quick: bool) -> Result<Loaded, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::file(format!("cannot read fleet file {path}: {e}")))?;
    parse(path, &text, quick)
}

/// A fleet file's text, `name` naming it in errors.
pub fn parse(name: &str, text: &str, quick: bool) -> Result<Loaded, Error> {
    let fleet = Fleet::parse(text).map_err(|e| Error::file(show(name, text, &e.at, &e.message)))?;
    let steps = match &fleet.steps {
        StepSource::Plan(p) => match plan::builtin(p, quick) {
            Some(plan) => plan.steps,
            None => {
                let at = stackmeter_spec::located::At::Path(vec![stackmeter_spec::located::Key::Name("plan".into())]);
                let names: Vec<&str> = plan::BUILTIN.iter().map(|(n, _)| *n).collect();
                let msg = format!(
                    "'{p}' is not a built-in plan ({}); give the tests as [[step]] tables instead",
                    names.join(", ")
                );
                return Err(Error::file(show(name, text, &at, &msg)));
            }
        },
        StepSource::Steps(tables) => {
            let raw = tables.iter().cloned().map(toml::Value::Table).collect();
            plan::steps(raw, quick).map_err(|e| Error::file(e.show(name, text)))?
        }
    };
    let infos: Vec<StepInfo> = steps
        .iter()
        .map(|s| StepInfo {
            name: s.name.clone(),
            test: s.spec.kind(),
        })
        .collect();
    let plan = fleet.plan(&infos);
    Ok(Loaded { fleet, steps, plan })
}

/// The locks a node's work items take (docs/fleet.md "Exclusive class"):
/// PostgreSQL advisory locks when the store is PostgreSQL (every host of
/// the fleet sees them), else file locks on this host.
pub trait Locks {
    /// Takes every key of `keys` in `mode` (ascending, so two takers of
    /// overlapping sets cannot deadlock), waiting at most `wait` in all;
    /// the guard releases them when dropped. The error names the key that
    /// could not be had.
    fn hold(&mut self, keys: &[i64], mode: LockMode, wait: Duration) -> Result<Box<dyn Send>, HoldError>;
    /// Where the locks live, for the log.
    fn describe(&self) -> String;
}

/// Why a test's locks were not taken (the test is skipped with this line).
#[derive(Debug, thiserror::Error)]
pub enum HoldError {
    /// Another test held a lock file past the wait.
    #[error("lock {key} ({}) still held by another test after {wait:?}", path.display())]
    Busy {
        /// The key.
        key: i64,
        /// Its lock file.
        path: std::path::PathBuf,
        /// How long it was waited for.
        wait: Duration,
    },
    /// A lock file could not be opened or locked.
    #[error("lock {key} ({}): {err}", path.display())]
    File {
        /// The key.
        key: i64,
        /// Its lock file.
        path: std::path::PathBuf,
        /// What the system said.
        err: stackmeter_store::LockFileError,
    },
    /// PostgreSQL's advisory locks could not be taken in time.
    #[error("{0}")]
    Advisory(stackmeter_store::LockError),
}

/// Locks as files in a folder on this host (`flock`): enough when every
/// client of the fleet runs here; clients on other hosts do not see them.
pub struct FileLocks {
    dir: std::path::PathBuf,
}

impl FileLocks {
    /// Locks in `dir` (created if missing), or in the system's temporary
    /// folder under `stackmeter-fleet-locks`.
    pub fn new(dir: Option<std::path::PathBuf>) -> Result<FileLocks, Error> {
        let dir = dir.unwrap_or_else(|| std::env::temp_dir().join("stackmeter-fleet-locks"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::Local(format!("cannot make the lock folder {}: {e}", dir.display())))?;
        Ok(FileLocks { dir })
    }
}

impl Locks for FileLocks {
    fn hold(&mut self, keys: &[i64], mode: LockMode, wait: Duration) -> Result<Box<dyn Send>, HoldError> {
        let deadline = Instant::now() + wait;
        let mut sorted = keys.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut held = Vec::new();
        for k in sorted {
            let path = self.dir.join(format!("{k}.lock"));
            let share = match mode {
                LockMode::Exclusive => stackmeter_store::Share::Exclusive,
                LockMode::Shared => stackmeter_store::Share::Shared,
            };
            let left = deadline.saturating_duration_since(Instant::now());
            let f = stackmeter_store::lock_file(&path, share, left).map_err(|e| match e {
                stackmeter_store::LockFileError::Timeout(_) => HoldError::Busy {
                    key: k,
                    path: path.clone(),
                    wait,
                },
                err => HoldError::File {
                    key: k,
                    path: path.clone(),
                    err,
                },
            })?;
            held.push(f);
        }
        Ok(Box::new(held))
    }

    fn describe(&self) -> String {
        format!("file locks in {} (this host only)", self.dir.display())
    }
}

/// Locks as PostgreSQL advisory locks in the fleet's store: every host
/// that writes to the same database sees them, and a host that dies
/// loses its locks with its connection.
pub struct PgLocks {
    at: stackmeter_store::Location,
}

impl PgLocks {
    /// Locks in the PostgreSQL database at `at`.
    pub fn new(at: stackmeter_store::Location) -> PgLocks {
        PgLocks { at }
    }
}

impl Locks for PgLocks {
    fn hold(&mut self, keys: &[i64], mode: LockMode, wait: Duration) -> Result<Box<dyn Send>, HoldError> {
        let shared = mode == LockMode::Shared;
        stackmeter_store::Locks::acquire_as(&self.at, keys, shared, wait)
            .map(|l| Box::new(l) as Box<dyn Send>)
            .map_err(HoldError::Advisory)
    }

    fn describe(&self) -> String {
        format!("PostgreSQL advisory locks in {}", self.at)
    }
}

/// One node's part of a fleet run.
pub struct NodeRun<'a> {
    /// The fleet, checked and planned.
    pub loaded: &'a Loaded,
    /// The client node this process runs for.
    pub node: &'a str,
    /// The fleet run's name: every client of one run gives the same.
    pub run: &'a str,
    /// The longest wait for a lock.
    pub lock_wait: Duration,
    /// The shared secret the fleet's responders ask for, if any.
    pub secret: Option<stackmeter_client::auth::Key>,
    /// What the run measured (`--attr`), stored with the node's run.
    pub attrs: std::collections::BTreeMap<String, String>,
    /// Rounds: the store every client writes, read to wait for each round
    /// to end before the next, and the longest wait (none: no waiting,
    /// as with `--order fixed` or `--no-store`).
    pub rounds: Option<(stackmeter_store::Location, Duration)>,
}

/// What happens as a node's part runs.
pub enum FleetEvent<'a> {
    /// A test is about to wait for its locks.
    Waiting(&'a Item),
    /// A test ended (complete or not), with its document.
    Done(&'a Item, &'a Document),
    /// A test did not run or was not stored: one line saying why.
    Warning(String),
}

/// One finished test as a fleet run prints it (one JSON line each, so
/// `kubectl logs` of a client shows every result without a database).
#[derive(serde::Serialize)]
pub struct FleetLine<'a> {
    /// The fleet's name.
    pub fleet: &'a str,
    /// The fleet run's name.
    pub run: &'a str,
    /// The test: client, target, step, repetition, locks.
    #[serde(flatten)]
    pub item: &'a Item,
    /// The result.
    pub document: &'a Document,
}

/// What a node's part ended with.
#[derive(Debug, Default)]
pub struct NodeOutcome {
    /// Tests that ran to the end.
    pub complete: usize,
    /// Tests that stopped early or did not run, and the first error.
    pub failed: usize,
    /// The first failure, if any (the binary maps it to its exit code).
    pub first_failure: Option<Error>,
    /// The store's run id.
    pub stored_run: Option<i64>,
}

/// Runs `r.node`'s items of the plan in order, each after taking its
/// locks; stores each test (label "CLIENT->TARGET", the step, the
/// repetition) into `store` as it ends; a pair that fails is reported and
/// the rest go on.
pub fn run_node(
    r: &NodeRun<'_>,
    locks: &mut dyn Locks,
    mut store: Option<&mut Writer>,
    on: &mut dyn FnMut(FleetEvent<'_>),
) -> Result<NodeOutcome, Error> {
    let plan = &r.loaded.plan;
    let me = plan.node(r.node).ok_or_else(|| {
        Error::flag(format!(
            "--node {}: no node of fleet {} has this name",
            r.node, plan.fleet
        ))
    })?;
    if !me.client {
        return Err(Error::flag(format!(
            "--node {}: this node runs no client (client = false in the fleet file)",
            r.node
        )));
    }
    let mut out = NodeOutcome::default();
    let env = stackmeter_engine::execute::env(stackmeter_sys::unix_now_ms());
    let mut run_id = None;
    if let Some(s) = store.as_deref_mut() {
        let settings = serde_json::json!({ "fleet": plan.fleet, "node": r.node });
        let run = Run::start("fleet", Some(r.run), &env, settings, std::process::id()).with_attrs(r.attrs.clone());
        let key = s.begin_run(&run)?;
        out.stored_run = key.id;
        run_id = Some(key);
    }
    let mut round = 0;
    for item in plan.for_client(r.node) {
        if stackmeter_sys::interrupt::interrupted() {
            out.first_failure.get_or_insert(Error::Client(ClientError::Interrupted));
            break;
        }
        if item.repetition > round {
            if let Some((at, wait)) = &r.rounds {
                if let Err(why) = wait_for_round(at, plan, r.run, item.repetition - 1, *wait) {
                    on(FleetEvent::Warning(why));
                }
            }
            round = item.repetition;
        }
        let pair = format!("{}->{}", item.client, item.target);
        let Some(step) = r.loaded.step(&item.step) else {
            continue;
        };
        let Some(target) = plan.node(&item.target) else {
            continue;
        };
        let addr = match stackmeter_client::resolve(&target.target(), target.port) {
            Ok(a) => a,
            Err(e) => {
                on(FleetEvent::Warning(format!("{pair} {}: {e}", item.step)));
                out.failed += 1;
                out.first_failure.get_or_insert(Error::Client(e));
                continue;
            }
        };
        on(FleetEvent::Waiting(item));
        let keys = [lock_key(&plan.fleet, &item.client), lock_key(&plan.fleet, &item.target)];
        let guard = match locks.hold(&keys, item.lock, r.lock_wait) {
            Ok(g) => g,
            Err(e) => {
                let why = format!("{pair} {}: not run: {e}", item.step);
                on(FleetEvent::Warning(why.clone()));
                out.failed += 1;
                out.first_failure.get_or_insert(Error::Local(why));
                continue;
            }
        };
        let doc_target = Target {
            name: item.target.clone(),
            address: addr.to_string(),
            embedded: false,
            kind: step.spec.target_kind(),
        };
        let how = stackmeter_engine::execute::How {
            secret: r.secret,
            ..Default::default()
        };
        let m = stackmeter_engine::execute::execute(&step.spec, doc_target, addr, how, &mut |_| {});
        drop(guard);
        if let (Some(s), Some(run)) = (store.as_deref_mut(), &run_id) {
            let saved = s.add_test(
                run,
                &NewTest {
                    label: &pair,
                    repetition: item.repetition,
                    step: &item.step,
                    doc: &m.doc,
                    histograms: stackmeter_engine::record::histograms(&m.histograms),
                    intervals: stackmeter_engine::record::intervals(&m.doc),
                },
            );
            if let Err(e) = saved {
                on(FleetEvent::Warning(format!("{pair} {}: not stored: {e}", item.step)));
            }
        }
        on(FleetEvent::Done(item, &m.doc));
        match m.error {
            None => out.complete += 1,
            Some(e) => {
                on(FleetEvent::Warning(format!("{pair} {}: {e}", item.step)));
                out.failed += 1;
                out.first_failure.get_or_insert(Error::Client(e));
            }
        }
    }
    if let (Some(s), Some(run)) = (store, &run_id) {
        let status = match (out.failed, &out.first_failure) {
            (0, None) => "complete",
            _ => "partial",
        };
        s.finish_run(run, status, &stackmeter_engine::record::now())?;
    }
    Ok(out)
}

/// Waits until every client's tests of round `round` of fleet run `run`
/// are in the store at `at` (or the waiting is interrupted), at most
/// `wait`: the next round starts on a fleet that has finished this one.
/// An error is the one line saying what was not there in time (the round
/// then starts anyway).
fn wait_for_round(
    at: &stackmeter_store::Location,
    plan: &stackmeter_fleet::FleetPlan,
    run: &str,
    round: usize,
    wait: Duration,
) -> Result<(), String> {
    let want = plan.items().filter(|i| i.repetition == round).count();
    let store = stackmeter_store::Store::open(at)
        .map_err(|e| format!("round {round}: cannot read the store to wait for the other clients: {e}"))?;
    let deadline = std::time::Instant::now() + wait;
    loop {
        let have = store
            .count_repetition("fleet", run, round)
            .map_err(|e| format!("round {round}: cannot read the store to wait for the other clients: {e}"))?;
        if have >= want || stackmeter_sys::interrupt::interrupted() {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            return Err(format!(
                "round {round}: {have} of its {want} tests stored after {} s of waiting (a client failed or is slow); the next round starts anyway",
                wait.as_secs_f64()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example shipped in the repository reads and plans.
    #[test]
    fn the_example_fleet_file_plans() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/lab-fleet.toml");
        let l = load(path, false).unwrap();
        assert!(l.fleet.nodes.len() >= 4);
        assert!(!l.plan.pairs.is_empty());
        assert!(l.plan.items().all(|i| l.step(&i.step).is_some()));
    }

    #[test]
    fn step_errors_point_into_the_fleet_file() {
        let text = "name = \"f\"\n[[node]]\nname = \"a\"\naddress = \"h1\"\n[[node]]\nname = \"b\"\naddress = \"h2\"\n[[step]]\ntest = \"rr\"\niterations = 0\n";
        let e = parse("f.toml", text, false).unwrap_err().to_string();
        assert!(e.starts_with("f.toml:10:14: step 1 (rr): 'iterations' 0"), "{e}");
        let text = text
            .replace("[[step]]\ntest = \"rr\"\niterations = 0\n", "")
            .replace("name = \"f\"\n", "name = \"f\"\nplan = \"nope\"\n");
        let e = parse("f.toml", &text, false).unwrap_err().to_string();
        assert!(e.starts_with("f.toml:2:8: 'nope' is not a built-in plan"), "{e}");
    }
}
