//! `stackmeter fleet`'s flags, and the Kubernetes render's options made
//! from them (each bad value one line naming its flag).

use crate::error::Error;
use crate::flags::{DbFlags, FormatFlags};
use clap::{Args, Subcommand};
use stackmeter_fleet_node::{FileLocks, Loaded, Locks, PgLocks};
use stackmeter_k8s as k8s;
use std::path::PathBuf;

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
    Run(NodeArgs),
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
    pub file: String,
    /// Namespace of every object.
    #[arg(long, value_name = "NAME", default_value = "stackmeter")]
    pub namespace: String,
    /// Image of the responders and clients (default stackmeter:VERSION).
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// IfNotPresent, Always or Never.
    #[arg(long, value_name = "POLICY", default_value = "IfNotPresent")]
    pub pull_policy: String,
    /// The fleet run's name, given to every Job (default: the fleet's
    /// name and the UTC time, as NAME-20250102T030405Z).
    #[arg(long = "run", value_name = "NAME")]
    pub run_name: Option<String>,
    /// Pods on their node's network (dnsPolicy ClusterFirstWithHostNet).
    #[arg(long)]
    pub host_network: bool,
    /// Tolerate a taint: KEY=VALUE:EFFECT, KEY=VALUE, KEY:EFFECT or KEY (repeatable).
    #[arg(long, value_name = "TAINT")]
    pub toleration: Vec<String>,
    /// Tolerate every taint (control-plane and dedicated nodes included).
    #[arg(long)]
    pub tolerate_all: bool,
    /// Run responders only on nodes with this label: KEY=VALUE (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
    /// CPU request of each container.
    #[arg(long, value_name = "QUANTITY", default_value = "100m")]
    pub cpu: String,
    /// CPU limit (none by default: CFS throttling shows up as latency).
    #[arg(long, value_name = "QUANTITY")]
    pub cpu_limit: Option<String>,
    /// Memory request of each container.
    #[arg(long, value_name = "QUANTITY", default_value = "128Mi")]
    pub memory: String,
    /// Memory limit (none by default).
    #[arg(long, value_name = "QUANTITY")]
    pub memory_limit: Option<String>,
    /// The agents' metrics port, scraped by Prometheus [default: 24681].
    #[arg(long, value_name = "PORT", allow_hyphen_values = true)]
    pub metrics_port: Option<String>,
    /// A label on every object and pod: KEY=VALUE (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub label: Vec<String>,
    /// Secret whose key `dsn` is the PostgreSQL store's URL, given to the
    /// pods as STACKMETER_DB [default: stackmeter-db].
    #[arg(long, value_name = "NAME")]
    pub db_secret: Option<String>,
    /// No store: the Jobs run with --no-store and their results are only
    /// in `kubectl logs` (JSON lines).
    #[arg(long)]
    pub no_db: bool,
    /// Secret whose key `secret` is the responders' shared secret, given
    /// to every pod as STACKMETER_SECRET (none by default).
    #[arg(long, value_name = "NAME")]
    pub secret: Option<String>,
    /// Seconds a finished Job (and its pod's log) is kept [default: 86400].
    #[arg(long, value_name = "SECONDS", allow_hyphen_values = true)]
    pub job_ttl: Option<String>,
    /// One JSON `v1 List` instead of YAML documents.
    #[arg(long)]
    pub json: bool,
}

/// A numeric flag's value, or one line naming the flag.
fn number<T: std::str::FromStr>(flag: &str, s: &str, what: &str) -> Result<T, Error> {
    s.parse()
        .map_err(|_| Error::flag(format!("{flag} '{s}': expected {what}")))
}

/// The manifests' options from `fleet k8s`'s flags; one line naming the
/// flag that is wrong.
pub fn k8s_options(a: &K8sArgs, fleet: &str) -> Result<k8s::Options, Error> {
    let flag = |e: k8s::K8sError| Error::flag(e.to_string());
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
    o.pull_policy = k8s::PullPolicy::parse(&a.pull_policy).map_err(flag)?;
    o.host_network = a.host_network;
    o.tolerate = match (a.tolerate_all, a.toleration.is_empty()) {
        (true, false) => {
            return Err(Error::conflict(
                "--tolerate-all tolerates every taint already: drop --toleration",
            ))
        }
        (true, true) => k8s::Tolerate::All,
        (false, true) => k8s::Tolerate::None,
        (false, false) => k8s::Tolerate::These(
            a.toleration
                .iter()
                .map(|t| k8s::Toleration::parse(t))
                .collect::<Result<_, _>>()
                .map_err(flag)?,
        ),
    };
    o.node_selector = k8s::key_values("--node-selector", &a.node_selector).map_err(flag)?;
    o.labels = k8s::key_values("--label", &a.label).map_err(flag)?;
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
        (true, Some(_)) => {
            return Err(Error::conflict(
                "--no-db and --db-secret: give one (without a store no Secret is read)",
            ))
        }
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

/// How a fleet run orders its repetitions (`fleet run --order`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderArg {
    /// Rounds: every pair once per repetition, a random order each, the
    /// clients waiting for each other between rounds.
    Rounds,
    /// File order, no waiting (runs made before rounds).
    Fixed,
}

impl From<OrderArg> for stackmeter_fleet::Order {
    fn from(o: OrderArg) -> Self {
        match o {
            OrderArg::Rounds => stackmeter_fleet::Order::Rounds,
            OrderArg::Fixed => stackmeter_fleet::Order::Fixed,
        }
    }
}

/// `fleet run`'s flags.
#[derive(Args, Debug)]
pub struct NodeArgs {
    #[command(flatten)]
    pub attr: crate::flags::AttrFlags,
    /// The fleet file.
    pub file: String,
    /// The client node this process runs for (its name in the file).
    #[arg(long, value_name = "NAME")]
    pub node: String,
    /// The fleet run's name: every client of one run gives the same
    /// (`fleet report NAME` gathers them).
    #[arg(long = "run", value_name = "NAME")]
    pub run_name: String,
    /// Scale each test down, as `suite --quick` does.
    #[arg(long)]
    pub quick: bool,
    /// Longest wait for a test's locks, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600.0)]
    pub lock_wait: f64,
    /// rounds: each repetition visits every pair once in an order of its
    /// own, and each client waits for the round's tests (in the store)
    /// before the next; fixed: pairs in file order and no waiting, as
    /// runs were made before rounds. Give every client the same.
    #[arg(long, value_enum, value_name = "ORDER", default_value_t = OrderArg::Rounds)]
    pub order: OrderArg,
    /// Longest wait for the other clients to end a round, seconds (then
    /// the next round starts anyway, with a warning).
    #[arg(long, value_name = "SECONDS", default_value_t = 600.0)]
    pub round_wait: f64,
    /// Folder of file locks, in place of PostgreSQL's advisory locks
    /// (used anyway when the store is SQLite; every client must then
    /// run on this host). Default: the temporary folder.
    #[arg(long, value_name = "DIR")]
    pub lock_dir: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbFlags,
    /// Do not store the results (JSON lines only).
    #[arg(long)]
    pub no_store: bool,
}

/// What a node's run needs once its flags are checked: the plan, the
/// store's writer (none with --no-store), the locks, and where to wait
/// for the rounds.
pub struct NodeSetup {
    /// The fleet file, checked and planned.
    pub loaded: Loaded,
    /// Where results go, with the run's `--attr`s.
    pub store: Option<stackmeter_engine::record::Recording>,
    /// PostgreSQL's advisory locks, or file locks on this host.
    pub locks: Box<dyn Locks>,
    /// The store the clients write and the longest wait for a round
    /// (none: no waiting).
    pub rounds: Option<(stackmeter_store::Location, std::time::Duration)>,
}

/// Checks `fleet run`'s flags, loads the fleet, opens the store and
/// chooses the locks: the store's PostgreSQL database holds the locks
/// every host sees; without one, file locks on this host.
pub fn prepare_node(a: &NodeArgs) -> Result<NodeSetup, Error> {
    if a.run_name.trim().is_empty() || a.run_name.contains(char::is_whitespace) {
        return Err(Error::flag(format!(
            "--run '{}': give a name without spaces",
            a.run_name
        )));
    }
    if !(a.lock_wait.is_finite() && a.lock_wait > 0.0 && a.lock_wait <= 86_400.0) {
        return Err(Error::flag(format!(
            "--lock-wait {}: expected seconds above 0 and at most a day",
            a.lock_wait
        )));
    }
    if !(a.round_wait.is_finite() && a.round_wait > 0.0 && a.round_wait <= 86_400.0) {
        return Err(Error::flag(format!(
            "--round-wait {}: expected seconds above 0 and at most a day",
            a.round_wait
        )));
    }
    let loaded = stackmeter_fleet_node::load(&a.file, a.quick)?.ordered(a.order.into());
    let location = stackmeter_engine::record::location(a.db.db.as_deref())?;
    let flags = crate::flags::StoreFlags {
        db: a.db.clone(),
        label: None,
        no_store: a.no_store,
        attr: a.attr.clone(),
    };
    let store = stackmeter_engine::record::open_for_measuring(&flags.storing())?;
    let locks: Box<dyn Locks> = match (&location, a.lock_dir.clone()) {
        (stackmeter_store::Location::Postgres(_), None) => Box::new(PgLocks::new(location.clone())),
        (_, dir) => Box::new(FileLocks::new(dir)?),
    };
    let rounds = (a.order == OrderArg::Rounds && !a.no_store)
        .then(|| (location.clone(), std::time::Duration::from_secs_f64(a.round_wait)));
    Ok(NodeSetup {
        loaded,
        store,
        locks,
        rounds,
    })
}
