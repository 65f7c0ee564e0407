//! `stackmeter fleet ...`: a fleet file's plan printed; the work is the
//! engine's (`stackmeter_engine::fleet`) and the plan crate's.

use crate::out::{fail, finish};
use clap::{Args, Subcommand};
use stackmeter_engine::flags::{DbFlags, FormatFlags};
use stackmeter_engine::fleet::{FileLocks, FleetEvent, Locks, NodeRun, PgLocks};
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
}

pub fn run(a: FleetArgs) -> i32 {
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
        } => run_node(&file, &node, &run_name, quick, lock_wait, lock_dir, &db, no_store),
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
