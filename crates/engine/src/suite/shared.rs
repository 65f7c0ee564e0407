//! What both designs of a suite share: its configuration and members, the
//! events it reports, one test
//! measured and stored, and the end of a run (stored, read back, judged
//! into a typed [`SuiteOutcome`]); also the stored run begun, a stored
//! run shown again, and `--target` read.

use crate::error::Error;
use crate::execute::Event;
use crate::record::Recording;
use stackmeter_client::auth::Key;
use stackmeter_client::ClientError;
use stackmeter_results::{
    DecideSettings, Document, Finished, Placement, SuiteOutcome, SuiteSettings, SuiteTarget, Target,
};
use stackmeter_spec::plan::Plan;
use stackmeter_store::{NewTest, Run, RunKey, Writer};
use std::net::SocketAddr;

/// A target of a suite.
#[derive(Clone, Debug)]
pub struct Member {
    /// Label, name and address as the outcome shows them.
    pub info: SuiteTarget,
    /// Where to connect.
    pub addr: SocketAddr,
}

impl Member {
    /// A member labelled `label` at `addr`, named `name`.
    pub fn new(label: &str, name: &str, addr: SocketAddr) -> Member {
        Member {
            info: SuiteTarget {
                label: label.into(),
                name: name.into(),
                address: addr.to_string(),
                knobs: Default::default(),
                process: None,
            },
            addr,
        }
    }
}

/// What a suite runs.
pub struct SuiteConfig {
    /// The steps.
    pub plan: Plan,
    /// The targets, baseline first.
    pub targets: Vec<Member>,
    /// Repetitions per target (a fixed design).
    pub repeat: usize,
    /// The plan was scaled down.
    pub quick: bool,
    /// Run until decided (two members only): every rule's setting, the
    /// budget among them.
    pub decide: Option<DecideSettings>,
    /// Latency figure compared per repetition.
    pub metric: String,
    /// Something the reader must know.
    pub note: Option<String>,
    /// Where the measuring thread (already pinned by the caller) and the
    /// local responders run.
    pub placement: Placement,
    /// The shared secret the targets ask for, if any.
    pub secret: Option<Key>,
}

impl SuiteConfig {
    /// The settings kept with the run.
    pub fn settings(&self) -> SuiteSettings {
        SuiteSettings {
            plan: self.plan.name.clone(),
            targets: self.targets.iter().map(|t| t.info.clone()).collect(),
            repeat: self.repeat,
            quick: self.quick,
            confidence: None,
            metric: self.metric.clone(),
            note: self.note.clone(),
            decide: self.decide.clone(),
            stop: None,
        }
    }
}

/// What the suite reports while it runs.
pub enum SuiteEvent<'a> {
    /// A test starts: `done` of `total` finished so far.
    Test {
        done: usize,
        total: usize,
        step: &'a str,
        label: &'a str,
        repetition: usize,
    },
    /// Something that did not stop the suite (a test not stored).
    Warning(String),
    /// A decided run finished a pair: rows still open of all, time spent.
    Pair {
        pair: usize,
        open: usize,
        rows: usize,
        elapsed: std::time::Duration,
    },
    /// A row of a decided run was decided: its line.
    Decided(String),
}

/// A finished suite.
pub struct SuiteRun {
    /// The judged outcome.
    pub outcome: SuiteOutcome,
    /// The error that stopped it early, if one did.
    pub failure: Option<ClientError>,
    /// Tests measured but not stored, and the first reason (a full disk):
    /// the command fails after printing the outcome.
    pub not_stored: (usize, Option<String>),
    /// The run could not be ended, or did not read back as it was
    /// written (results lost): the command fails after printing.
    pub lost: Option<String>,
}

impl SuiteRun {
    /// What the store did not keep, in one line: tests not stored, a run
    /// that could not be ended or did not read back as written.
    pub fn store_failure(&self) -> Option<String> {
        let tests = self.outcome.tests;
        match (&self.not_stored, &self.lost) {
            ((0, _), None) => None,
            ((0, _), Some(lost)) => Some(format!("the suite's run was not kept as written: {lost}")),
            ((n, first), lost) => Some(format!(
                "{n} of {tests} test(s) not stored: {}{}",
                first.as_deref().unwrap_or(""),
                lost.as_ref()
                    .map_or_else(String::new, |l| format!("; the run could not be ended either: {l}"))
            )),
        }
    }

    /// True when Ctrl-C ended the suite (the run is partial).
    pub fn interrupted(&self) -> bool {
        matches!(self.failure, Some(ClientError::Interrupted))
    }
}

/// A finished test: target, step, repetition (pair), document.
pub(super) type Done = (usize, usize, usize, Document);

/// Measures step `si` on target `ti` as repetition `rep`, and stores it.
pub(super) fn measure(
    cfg: &SuiteConfig,
    si: usize,
    ti: usize,
    rep: usize,
    store: Option<&mut (&mut Writer, RunKey)>,
    not_stored: &mut (usize, Option<String>),
    on: &mut dyn FnMut(SuiteEvent),
) -> crate::execute::Measured {
    let (step, t) = (&cfg.plan.steps[si], &cfg.targets[ti]);
    let target = Target {
        name: t.info.name.clone(),
        address: t.addr.to_string(),
        embedded: false,
        kind: step.spec.target_kind(),
    };
    let how = crate::execute::How {
        placement: cfg.placement.clone(),
        knobs: t.info.knobs.clone(),
        secret: cfg.secret,
    };
    let m = crate::execute::execute(&step.spec, target, t.addr, how, &mut |_: Event| {});
    if matches!(m.error, Some(ClientError::Interrupted)) {
        return m;
    }
    if let Some((s, run)) = store {
        let saved = s.add_test(
            run,
            &NewTest {
                label: &t.info.label,
                repetition: rep,
                step: &step.name,
                doc: &m.doc,
                histograms: crate::record::histograms(&m.histograms),
                intervals: crate::record::intervals(&m.doc),
            },
        );
        if let Err(e) = saved {
            on(SuiteEvent::Warning(format!("test not stored: {e}")));
            not_stored.0 += 1;
            not_stored.1.get_or_insert(e.to_string());
        }
    }
    m
}

/// Ends the run in the store (read back) and judges what finished.
pub(super) fn end(
    cfg: &SuiteConfig,
    settings: SuiteSettings,
    store: Option<(&mut Writer, RunKey)>,
    done: Vec<Done>,
    failure: Option<ClientError>,
    not_stored: (usize, Option<String>),
) -> SuiteRun {
    let run_id = store.as_ref().and_then(|(_, key)| key.id);
    let lost = store.and_then(|(s, run)| {
        let status = if failure.is_some() { "partial" } else { "complete" };
        // What the run learnt (why a decided run stopped) goes with it.
        let learnt = match settings.stop {
            Some(_) => serde_json::to_value(&settings).map_err(|e| e.to_string()),
            None => Ok(serde_json::Value::Null),
        };
        let kept = learnt.and_then(|v| match v.is_null() {
            true => Ok(()),
            false => s.set_settings(&run, v).map_err(|e| e.to_string()),
        });
        // The run is ended (and read back) whatever happened to its settings.
        let ended = s
            .finish_run(&run, status, &crate::record::now())
            .map_err(|e| e.to_string());
        match (kept, ended) {
            (Ok(()), Ok(())) => None,
            (Err(a), Ok(())) => Some(format!("its settings were not kept: {a}")),
            (Ok(()), Err(b)) => Some(b),
            (Err(a), Err(b)) => Some(format!("{b}; its settings were not kept either: {a}")),
        }
    });
    let finished: Vec<Finished> = done
        .iter()
        .map(|(t, s, rep, doc)| Finished {
            label: &cfg.targets[*t].info.label,
            step: &cfg.plan.steps[*s].name,
            repetition: *rep,
            doc,
        })
        .collect();
    SuiteRun {
        outcome: SuiteOutcome::build(settings, run_id, &finished),
        failure,
        not_stored,
        lost,
    }
}

/// Starts a stored run for `cfg`.
pub fn begin_run(rec: &mut Recording, cfg: &SuiteConfig, env: &stackmeter_results::Env) -> Result<RunKey, Error> {
    let settings = serde_json::to_value(cfg.settings()).map_err(|e| Error::Local(e.to_string()))?;
    let run =
        Run::start("suite", Some(&cfg.plan.name), env, settings, std::process::id()).with_attrs(rec.attrs.clone());
    Ok(rec.writer.begin_run(&run)?)
}

/// `--target LABEL=ADDR` values: two or more (one is enough when the plan
/// has variants to compare), labels distinct.
pub fn targets(list: &[String], variants: bool) -> Result<Vec<Member>, Error> {
    let mut out: Vec<Member> = Vec::new();
    for t in list {
        let Some((label, addr)) = t.split_once('=').filter(|(l, a)| !l.is_empty() && !a.is_empty()) else {
            return Err(Error::flag(format!(
                "--target '{t}': expected LABEL=ADDR, e.g. app=192.0.2.7:5000"
            )));
        };
        if out.iter().any(|x| x.info.label == label) {
            return Err(Error::flag(format!("--target '{t}': label '{label}' given twice")));
        }
        let a = stackmeter_client::resolve(addr, stackmeter_client::DEFAULT_PORT)?;
        let mut m = Member::new(label, addr, a);
        // A target on this host: whose process, and where it may run.
        if stackmeter_sys::tstamp::is_local_ip(a.ip()) {
            m.info.process = stackmeter_sys::listener::listener(a).map(|l| stackmeter_results::TargetProcess {
                pid: l.pid,
                command: l.command,
                cpus: l.cpus,
                last_cpus: l.last_cpus,
            });
        }
        out.push(m);
    }
    if out.len() == 1 && !variants {
        return Err(Error::conflict(
            "suite compares targets: give two or more --target LABEL=ADDR, or none (or one, with two or more --variant)",
        ));
    }
    Ok(out)
}

/// Every target in every variant (targets outer, so one target's
/// variants sit side by side), each variant's knobs checked here first so
/// a refusal comes before any measuring. Labels: the variant's name with
/// one target, `TARGET/VARIANT` with several.
pub fn with_variants(targets: Vec<Member>, variants: &[stackmeter_spec::plan::Variant]) -> Result<Vec<Member>, Error> {
    if variants.is_empty() {
        return Ok(targets);
    }
    for v in variants {
        crate::knobs::check(&v.knobs).map_err(|e| match e {
            Error::Local(m) => Error::Local(format!("variant '{}': {m}", v.name)),
            e => e,
        })?;
    }
    let one = targets.len() == 1;
    let mut out = Vec::new();
    for t in &targets {
        for v in variants {
            let mut m = t.clone();
            m.info.label = match one {
                true => v.name.clone(),
                false => format!("{}/{}", t.info.label, v.name),
            };
            m.info.knobs = v.knobs.clone();
            out.push(m);
        }
    }
    Ok(out)
}
