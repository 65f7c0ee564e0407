//! `stackmeter fleet ...`: a fleet file's plan printed, one client node's
//! part run, a fleet run's report and comparison, the fleet as Kubernetes
//! manifests; the work is the engine's
//! (`stackmeter_engine::fleet`) and the plan crate's (`stackmeter_fleet`,
//! whose `k8s` module renders the manifests: here only flags and printing).

use crate::out::{fail, finish};
use clap::{Args, Subcommand};
use stackmeter_engine::flags::{DbFlags, FormatFlags};
use stackmeter_engine::fleet::{FileLocks, FleetEvent, Locks, NodeRun, PgLocks};
use stackmeter_fleet::k8s;
use stackmeter_results::render;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct FleetArgs {
    #[command(subcommand)]
    pub action: FleetAction,
}

#[derive(Subcommand, Debug)]
pub enum FleetAction {
    /// Print what runs where and in which order (docs/fleet.md).
    Plan {
        /// The fleet file.
        file: String,
        /// The plan with each test scaled down, as `suite --quick` does.
        #[arg(long)]
        quick: bool,
        #[command(flatten)]
        output: FormatFlags,
    },
    /// Run one client node's part of the plan: each of its tests in order,
    /// after taking the tests' locks; every result stored and printed as
    /// one JSON line (docs/fleet.md).
    Run {
        /// The fleet file.
        file: String,
        /// The client node this process runs for (its name in the file).
        #[arg(long, value_name = "NAME")]
        node: String,
        /// The fleet run's name: every client of one run gives the same
        /// (`fleet report NAME` gathers them).
        #[arg(long = "run", value_name = "NAME")]
        run_name: String,
        /// Scale each test down, as `suite --quick` does.
        #[arg(long)]
        quick: bool,
        /// Longest wait for a test's locks, seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 600.0)]
        lock_wait: f64,
        /// Folder of file locks, in place of PostgreSQL's advisory locks
        /// (used anyway when the store is SQLite; every client must then
        /// run on this host). Default: the temporary folder.
        #[arg(long, value_name = "DIR")]
        lock_dir: Option<PathBuf>,
        #[command(flatten)]
        db: DbFlags,
        /// Do not store the results (JSON lines only).
        #[arg(long)]
        no_store: bool,
    },
    /// A fleet run's pair matrices (clients by targets: round trip p50 and
    /// p99, loss, throughput) with the worst pairs first.
    Report {
        /// The fleet run's name (as given to `fleet run --run`).
        run: String,
        #[command(flatten)]
        db: DbFlags,
        #[command(flatten)]
        output: FormatFlags,
    },
    /// Every pair's verdict between two fleet runs: A the baseline, B the
    /// candidate (a kernel or NIC change across the fleet).
    Compare {
        /// The baseline fleet run.
        a: String,
        /// The candidate fleet run.
        b: String,
        /// Flag a pair only when its change is larger than this, percent.
        #[arg(long, value_name = "PCT", default_value_t = 5.0)]
        tolerance: f64,
        #[command(flatten)]
        db: DbFlags,
        #[command(flatten)]
        output: FormatFlags,
    },
    /// Print the fleet as Kubernetes manifests (YAML on stdout): a
    /// Namespace, the fleet file as a ConfigMap, a DaemonSet of responders
    /// (`stackmeter agent`) with a headless Service, and one Job per client
    /// node pinned to that node (docs/fleet.md "Kubernetes").
    K8s(Box<K8sArgs>),
}

/// `stackmeter fleet k8s`'s flags. Values are checked by the renderer
/// (one line naming the flag), so they are read as text here.
#[derive(Args, Debug)]
pub struct K8sArgs {
    /// The fleet file (its node names are the Kubernetes nodes' names).
    file: String,
    /// Namespace of every object.
    #[arg(long, value_name = "NAME", default_value = "stackmeter")]
    namespace: String,
    /// Image of the responders and clients (default stackmeter:VERSION).
    #[arg(long, value_name = "IMAGE")]
    image: Option<String>,
    /// IfNotPresent, Always or Never.
    #[arg(long, value_name = "POLICY", default_value = "IfNotPresent")]
    pull_policy: String,
    /// The fleet run's name, given to every Job (default: the fleet's
    /// name and the UTC time, as NAME-20250102T030405Z).
    #[arg(long = "run", value_name = "NAME")]
    run_name: Option<String>,
    /// Pods on their node's network (dnsPolicy ClusterFirstWithHostNet).
    #[arg(long)]
    host_network: bool,
    /// Tolerate a taint: KEY=VALUE:EFFECT, KEY=VALUE, KEY:EFFECT or KEY (repeatable).
    #[arg(long, value_name = "TAINT")]
    toleration: Vec<String>,
    /// Tolerate every taint (control-plane and dedicated nodes included).
    #[arg(long)]
    tolerate_all: bool,
    /// Run responders only on nodes with this label: KEY=VALUE (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    node_selector: Vec<String>,
    /// CPU request of each container.
    #[arg(long, value_name = "QUANTITY", default_value = "100m")]
    cpu: String,
    /// CPU limit (none by default: CFS throttling shows up as latency).
    #[arg(long, value_name = "QUANTITY")]
    cpu_limit: Option<String>,
    /// Memory request of each container.
    #[arg(long, value_name = "QUANTITY", default_value = "128Mi")]
    memory: String,
    /// Memory limit (none by default).
    #[arg(long, value_name = "QUANTITY")]
    memory_limit: Option<String>,
    /// The agents' metrics port, scraped by Prometheus [default: 24681].
    #[arg(long, value_name = "PORT", allow_hyphen_values = true)]
    metrics_port: Option<String>,
    /// A label on every object and pod: KEY=VALUE (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    label: Vec<String>,
    /// Secret whose key `dsn` is the PostgreSQL store's URL, given to the
    /// pods as STACKMETER_DB [default: stackmeter-db].
    #[arg(long, value_name = "NAME")]
    db_secret: Option<String>,
    /// No store: the Jobs run with --no-store and their results are only
    /// in `kubectl logs` (JSON lines).
    #[arg(long)]
    no_db: bool,
    /// Secret whose key `secret` is the responders' shared secret, given
    /// to every pod as STACKMETER_SECRET (none by default).
    #[arg(long, value_name = "NAME")]
    secret: Option<String>,
    /// Seconds a finished Job (and its pod's log) is kept [default: 86400].
    #[arg(long, value_name = "SECONDS", allow_hyphen_values = true)]
    job_ttl: Option<String>,
    /// One JSON `v1 List` instead of YAML documents.
    #[arg(long)]
    json: bool,
}

pub fn run(a: FleetArgs, secret: Option<stackmeter_proto::auth::Key>) -> i32 {
    match a.action {
        FleetAction::Plan { file, quick, output } => {
            let format = match output.format() {
                Ok(f) => f,
                Err(e) => return fail(2, e),
            };
            match stackmeter_engine::fleet::load(&file, quick) {
                Ok(l) => finish(&render(&l.plan, format, &output.style())),
                Err(e) => crate::out::error(&e),
            }
        }
        FleetAction::Run {
            file,
            node,
            run_name,
            quick,
            lock_wait,
            lock_dir,
            db,
            no_store,
        } => run_node(
            &file, &node, &run_name, quick, lock_wait, lock_dir, &db, no_store, secret,
        ),
        FleetAction::Report { run, db, output } => {
            let format = match output.format() {
                Ok(f) => f,
                Err(e) => return fail(2, e),
            };
            let tests = match stackmeter_engine::record::open(&db)
                .and_then(|s| stackmeter_engine::fleet::stored_tests(&s, &run))
            {
                Ok(t) => t,
                Err(e) => return crate::out::error(&e),
            };
            let r = stackmeter_results::fleet::FleetReport::build(&run, &tests);
            finish(&render(&r, format, &output.style()))
        }
        FleetAction::Compare {
            a,
            b,
            tolerance,
            db,
            output,
        } => {
            let format = match output.format() {
                Ok(f) => f,
                Err(e) => return fail(2, e),
            };
            if !(tolerance.is_finite() && tolerance >= 0.0) {
                return fail(
                    2,
                    format!("--tolerance {tolerance}: expected a percentage of 0 or more"),
                );
            }
            let store = match stackmeter_engine::record::open(&db) {
                Ok(s) => s,
                Err(e) => return crate::out::error(&e),
            };
            let (ta, tb) = match (
                stackmeter_engine::fleet::stored_tests(&store, &a),
                stackmeter_engine::fleet::stored_tests(&store, &b),
            ) {
                (Ok(x), Ok(y)) => (x, y),
                (Err(e), _) | (_, Err(e)) => return crate::out::error(&e),
            };
            let c = stackmeter_results::fleet::FleetComparison::build(&a, &ta, &b, &tb, tolerance);
            if c.compared == 0 {
                return fail(
                    crate::out::NOTHING_TO_COMPARE,
                    format!("fleet runs {a} and {b} have no pair and figure in common"),
                );
            }
            finish(&render(&c, format, &output.style()))
        }
        FleetAction::K8s(a) => k8s(*a),
    }
}

/// A numeric flag's value, or one line naming the flag.
fn number<T: std::str::FromStr>(flag: &str, s: &str, what: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("{flag} '{s}': expected {what}"))
}

fn k8s_options(a: &K8sArgs, fleet: &str) -> Result<k8s::Options, String> {
    let run = match &a.run_name {
        Some(r) => r.clone(),
        None => {
            let stamp = stackmeter_sys::utc_rfc3339(stackmeter_sys::unix_now()).replace(['-', ':'], "");
            k8s::default_run(fleet, &stamp)
        }
    };
    let mut o = k8s::Options::new(run);
    o.namespace.clone_from(&a.namespace);
    if let Some(i) = &a.image {
        o.image.clone_from(i);
    }
    o.pull_policy = k8s::PullPolicy::parse(&a.pull_policy).map_err(|e| e.to_string())?;
    o.host_network = a.host_network;
    o.tolerate = match (a.tolerate_all, a.toleration.is_empty()) {
        (true, false) => return Err("--tolerate-all tolerates every taint already: drop --toleration".into()),
        (true, true) => k8s::Tolerate::All,
        (false, true) => k8s::Tolerate::None,
        (false, false) => k8s::Tolerate::These(
            a.toleration
                .iter()
                .map(|t| k8s::Toleration::parse(t))
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?,
        ),
    };
    o.node_selector = k8s::key_values("--node-selector", &a.node_selector).map_err(|e| e.to_string())?;
    o.labels = k8s::key_values("--label", &a.label).map_err(|e| e.to_string())?;
    o.cpu = Some(a.cpu.clone());
    o.cpu_limit.clone_from(&a.cpu_limit);
    o.memory = Some(a.memory.clone());
    o.memory_limit.clone_from(&a.memory_limit);
    if let Some(p) = &a.metrics_port {
        o.metrics_port = number("--metrics-port", p, "a port, 1-65535")?;
    }
    if let Some(t) = &a.job_ttl {
        o.job_ttl = number("--job-ttl", t, "seconds, a whole number")?;
    }
    o.store = match (a.no_db, &a.db_secret) {
        (true, Some(_)) => return Err("--no-db and --db-secret: give one (without a store no Secret is read)".into()),
        (true, None) => k8s::Store::None,
        (false, name) => k8s::Store::Secret {
            name: name.clone().unwrap_or_else(|| "stackmeter-db".into()),
            key: "dsn".into(),
        },
    };
    o.secret = a.secret.as_ref().map(|name| k8s::SecretKey {
        name: name.clone(),
        key: k8s::SECRET_KEY.into(),
    });
    Ok(o)
}

fn k8s(a: K8sArgs) -> i32 {
    let text = match std::fs::read_to_string(&a.file) {
        Ok(t) => t,
        Err(e) => return fail(2, format!("cannot read fleet file {}: {e}", a.file)),
    };
    let loaded = match stackmeter_engine::fleet::parse(&a.file, &text, false) {
        Ok(l) => l,
        Err(e) => return crate::out::error(&e),
    };
    let o = match k8s_options(&a, &loaded.plan.fleet) {
        Ok(o) => o,
        Err(e) => return fail(2, e),
    };
    match k8s::render(&loaded.plan, &text, &o) {
        Ok(m) => {
            for w in &m.warnings {
                eprintln!("stackmeter: warning: {w}");
            }
            eprintln!(
                "stackmeter fleet {}: run {}: {} object(s), namespace {}",
                loaded.plan.fleet,
                o.run,
                m.objects.len(),
                o.namespace
            );
            finish(&if a.json { m.json() } else { m.yaml() })
        }
        Err(e) if e.in_file => fail(2, format!("{}: {e}", a.file)),
        Err(e) => fail(2, e),
    }
}

#[allow(clippy::too_many_arguments)]
fn run_node(
    file: &str,
    node: &str,
    run_name: &str,
    quick: bool,
    lock_wait: f64,
    lock_dir: Option<PathBuf>,
    db: &DbFlags,
    no_store: bool,
    secret: Option<stackmeter_proto::auth::Key>,
) -> i32 {
    if run_name.trim().is_empty() || run_name.contains(char::is_whitespace) {
        return fail(2, format!("--run '{run_name}': give a name without spaces"));
    }
    if !(lock_wait.is_finite() && lock_wait > 0.0 && lock_wait <= 86_400.0) {
        return fail(
            2,
            format!("--lock-wait {lock_wait}: expected seconds above 0 and at most a day"),
        );
    }
    let loaded = match stackmeter_engine::fleet::load(file, quick) {
        Ok(l) => l,
        Err(e) => return crate::out::error(&e),
    };
    let location = match stackmeter_engine::record::location(db) {
        Ok(l) => l,
        Err(e) => return crate::out::error(&e),
    };
    let flags = stackmeter_engine::flags::StoreFlags {
        db: db.clone(),
        label: None,
        no_store,
    };
    let mut store = match stackmeter_engine::record::open_for_measuring(&flags) {
        Ok(s) => s,
        Err(e) => return crate::out::error(&e),
    };
    // The store's PostgreSQL database holds the locks every host sees;
    // without one, file locks on this host.
    let mut locks: Box<dyn Locks> = match (&location, lock_dir) {
        (stackmeter_store::Location::Postgres(_), None) => Box::new(PgLocks::new(location.clone())),
        (_, dir) => match FileLocks::new(dir) {
            Ok(l) => Box::new(l),
            Err(e) => return crate::out::error(&e),
        },
    };
    if let Err(e) = crate::signal::catch() {
        return fail(1, e);
    }
    let r = NodeRun {
        loaded: &loaded,
        node,
        run: run_name,
        lock_wait: Duration::from_secs_f64(lock_wait),
        secret,
    };
    eprintln!(
        "stackmeter fleet {}: run {run_name}, node {node}: {} test(s); {}",
        loaded.plan.fleet,
        loaded.plan.for_client(node).count(),
        locks.describe()
    );
    let fleet = loaded.plan.fleet.clone();
    let outcome = stackmeter_engine::fleet::run_node(&r, locks.as_mut(), store.as_mut(), &mut |ev| match ev {
        FleetEvent::Waiting(_) => {}
        FleetEvent::Done(item, doc) => {
            let line = stackmeter_engine::fleet::FleetLine {
                fleet: &fleet,
                run: run_name,
                item,
                document: doc,
            };
            let _ = crate::out::print(&stackmeter_results::render::json::line(&line));
        }
        FleetEvent::Warning(w) => eprintln!("stackmeter: warning: {w}"),
    });
    if let Some(note) = store.as_ref().and_then(stackmeter_store::Writer::note) {
        eprintln!("stackmeter: {note}");
    }
    match outcome {
        Ok(o) => {
            eprintln!(
                "stackmeter fleet {fleet}: node {node}: {} complete, {} failed{}",
                o.complete,
                o.failed,
                o.stored_run.map(|r| format!("; stored as run {r}")).unwrap_or_default()
            );
            match o.first_failure {
                None => 0,
                Some(code) => fail(code, format!("{} of node {node}'s tests did not complete", o.failed)),
            }
        }
        Err(e) => crate::out::error(&e),
    }
}
