//! `stackmeter fleet ...`: a fleet file's plan printed, one client node's
//! part run, a fleet run's report and comparison, the fleet as Kubernetes
//! manifests. A node's part is `stackmeter_fleet_node`'s, reading a run
//! back is `stackmeter_query`'s, the plan is `stackmeter_fleet`'s and the
//! manifests `stackmeter_k8s`'s: here only flags and printing.

use crate::flags::fleet::{k8s_options, prepare_node, FleetAction, FleetArgs, K8sArgs, NodeArgs, NodeSetup};
use crate::out::{fail, finish};
use stackmeter_fleet_node::{FleetEvent, NodeRun};
use stackmeter_k8s as k8s;
use stackmeter_render::render;
use std::time::Duration;

pub fn run(a: FleetArgs, secret: Option<stackmeter_proto::auth::Key>) -> i32 {
    match a.action {
        FleetAction::Plan { file, quick, output } => {
            let format = crate::out::usage_or!(output.format());
            match stackmeter_fleet_node::load(&file, quick) {
                Ok(l) => finish(&render(&l.plan, format, &output.style())),
                Err(e) => crate::out::error(e),
            }
        }
        FleetAction::Run(n) => run_node(n, secret),
        FleetAction::Report { run, db, output } => {
            let format = crate::out::usage_or!(output.format());
            let store = match stackmeter_engine::record::open(db.db.as_deref()) {
                Ok(s) => s,
                Err(e) => return crate::out::error(e),
            };
            let tests = match stackmeter_query::fleet::stored_tests(&store, &run) {
                Ok(t) => t,
                Err(e) => return crate::out::error(e),
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
            let format = crate::out::usage_or!(output.format());
            let store = match stackmeter_engine::record::open(db.db.as_deref()) {
                Ok(s) => s,
                Err(e) => return crate::out::error(e),
            };
            match stackmeter_query::fleet::compare(&store, &a, &b, tolerance) {
                Ok(c) => finish(&render(&c, format, &output.style())),
                Err(e) => crate::out::error(e),
            }
        }
        FleetAction::K8s(a) => k8s(*a),
    }
}

fn k8s(a: K8sArgs) -> i32 {
    let text = match std::fs::read_to_string(&a.file) {
        Ok(t) => t,
        Err(e) => return fail(2, format!("cannot read fleet file {}: {e}", a.file)),
    };
    let loaded = match stackmeter_fleet_node::parse(&a.file, &text, false) {
        Ok(l) => l,
        Err(e) => return crate::out::error(e),
    };
    let o = match k8s_options(&a, &loaded.plan.fleet) {
        Ok(o) => o,
        Err(e) => return crate::out::error(e),
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

/// `fleet run`: one client node's part, each result printed as one JSON
/// line as it ends.
fn run_node(a: NodeArgs, secret: Option<stackmeter_proto::auth::Key>) -> i32 {
    let NodeSetup {
        loaded,
        mut store,
        mut locks,
        rounds,
    } = match prepare_node(&a) {
        Ok(s) => s,
        Err(e) => return crate::out::error(e),
    };
    let (node, run_name) = (a.node.as_str(), a.run_name.as_str());
    let lock_wait = a.lock_wait;
    if let Err(e) = crate::signal::catch() {
        return fail(1, e);
    }
    let r = NodeRun {
        loaded: &loaded,
        node,
        run: run_name,
        lock_wait: Duration::from_secs_f64(lock_wait),
        secret,
        attrs: store.as_ref().map(|r| r.attrs.clone()).unwrap_or_default(),
        rounds,
    };
    eprintln!(
        "stackmeter fleet {}: run {run_name}, node {node}: {} test(s); {}",
        loaded.plan.fleet,
        loaded.plan.for_client(node).count(),
        locks.describe()
    );
    let fleet = loaded.plan.fleet.clone();
    let writer = store.as_mut().map(|r| &mut r.writer);
    let outcome = stackmeter_fleet_node::run_node(&r, locks.as_mut(), writer, &mut |ev| match ev {
        FleetEvent::Waiting(_) => {}
        FleetEvent::Done(item, doc) => {
            let line = stackmeter_fleet_node::FleetLine {
                fleet: &fleet,
                run: run_name,
                item,
                document: doc,
            };
            let _ = crate::out::print(&stackmeter_render::json::line(&line));
        }
        FleetEvent::Warning(w) => eprintln!("stackmeter: warning: {w}"),
    });
    if let Some(note) = store.as_ref().and_then(|r| r.writer.note()) {
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
                Some(e) => fail(
                    crate::error::Error::from(e).exit_code(),
                    format!("{} of node {node}'s tests did not complete", o.failed),
                ),
            }
        }
        Err(e) => crate::out::error(e),
    }
}
