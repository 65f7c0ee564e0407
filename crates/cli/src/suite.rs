//! `stackmeter suite`: flags to a suite configuration, local responders
//! when no target is given (started and pinned by the engine), a progress
//! bar on a terminal, Ctrl-C that keeps what finished, and the outcome
//! rendered at the end.

use crate::out::{fail, finish};
use clap::Args;
use stackmeter_engine::flags::{FormatFlags, GateFlags, MetricArg, StoreFlags};
use stackmeter_engine::suite::{Member, SuiteConfig, SuiteEvent};
use stackmeter_engine::target::LocalResponders;
use stackmeter_proto::auth::Key;
use stackmeter_results::{render, Format, Placement};

#[derive(Args, Debug)]
pub struct SuiteArgs {
    /// A built-in plan or a TOML plan file (the help lists the built-in ones: [`plan_help`]).
    #[arg(default_value = "latency-grid")]
    pub plan: String,
    /// A target as LABEL=ADDR (HOST, HOST:PORT); two or more. The first is the baseline.
    /// None: responders started here on loopback.
    #[arg(long = "target", value_name = "LABEL=ADDR")]
    pub targets: Vec<String>,
    /// A client configuration to compare, as NAME[,priority=rr:99][,mlock][,busy_poll=50];
    /// two or more, the first the baseline (replaces the plan's [[variant]] tables).
    #[arg(long = "variant", value_name = "NAME,KNOBS")]
    pub variants: Vec<String>,
    /// Repetitions per target (interleaved).
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Scale counts and durations down (demos, CI).
    #[arg(long)]
    pub quick: bool,
    /// Repeat until the CONF% confidence interval of the mean is within
    /// +/-WIDTH/2 % for every compared figure (netperf -I), e.g. 99,5.
    #[arg(long, value_name = "CONF,WIDTH")]
    pub confidence: Option<String>,
    /// Most repetitions with --confidence.
    #[arg(long, default_value_t = 30)]
    pub max_repeat: usize,
    /// Latency figure compared per repetition.
    #[arg(long, value_enum, default_value_t = MetricArg::Mean)]
    pub metric: MetricArg,
    /// How to print the outcome (a progress bar shows on a terminal with text only).
    #[command(flatten)]
    pub output: FormatFlags,
    #[command(flatten)]
    pub gate: GateFlags,
    #[command(flatten)]
    pub store: StoreFlags,
}

/// The plan argument's help, naming every built-in plan.
pub fn plan_help() -> String {
    let names: Vec<&str> = stackmeter_engine::plan::BUILTIN.iter().map(|(n, _)| *n).collect();
    format!(
        "Built-in plan ({}) or a TOML plan file (docs/suite.md)",
        names.join(", ")
    )
}

pub fn run(a: SuiteArgs, secret: Option<Key>) -> i32 {
    let format = match a.output.format() {
        Ok(f) => f,
        Err(e) => return fail(2, e),
    };
    if a.store.label.is_some() {
        return fail(2, "--label does not apply to suite: label each --target as LABEL=ADDR");
    }
    if let Err(e) = a.gate.check() {
        return fail(2, e);
    }
    // The flags and the plan first, then the store (a bad --db costs no
    // measurement), then the targets.
    let checked = checks(&a);
    let store = match checked.and_then(|c| Ok((c, stackmeter_engine::record::open_for_measuring(&a.store)?))) {
        Ok(s) => s,
        Err(e) => return crate::out::error(&e),
    };
    // The Ctrl-C watcher and the progress bar's thread start before
    // `config` pins this thread, so neither shares the client's CPU.
    if let Err(e) = crate::signal::catch() {
        return fail(1, e);
    }
    let progress = crate::progress::Progress::suite(format == Format::Text, 0);
    let ((plan, conf), store) = store;
    match config(&a, plan, conf, secret) {
        Ok((cfg, responders)) => execute(&a, format, store, cfg, responders, progress),
        Err(e) => {
            progress.finish();
            crate::out::error(&e)
        }
    }
}

type Checked = (stackmeter_engine::plan::Plan, Option<(f64, f64)>);

/// Checks the flags and loads the plan.
fn checks(a: &SuiteArgs) -> Result<Checked, stackmeter_engine::Error> {
    use stackmeter_engine::Error::Usage;
    if a.repeat == 0 {
        return Err(Usage("--repeat must be at least 1".into()));
    }
    let confidence = a
        .confidence
        .as_deref()
        .map(stackmeter_engine::suite::confidence)
        .transpose()?;
    if confidence.is_some() && a.max_repeat < a.repeat {
        return Err(Usage("--max-repeat must be at least --repeat".into()));
    }
    let mut plan = stackmeter_engine::plan::load(&a.plan, a.quick)?;
    if !a.variants.is_empty() {
        let variants = a
            .variants
            .iter()
            .map(|v| stackmeter_engine::plan::variant_flag(v))
            .collect::<Result<Vec<_>, _>>()
            .map_err(Usage)?;
        stackmeter_engine::plan::check_variants(&variants).map_err(|e| Usage(format!("--variant: {e}")))?;
        plan.variants = variants;
    }
    Ok((plan, confidence))
}

/// Finds or starts the targets and pins the measuring thread.
fn config(
    a: &SuiteArgs,
    plan: stackmeter_engine::plan::Plan,
    confidence: Option<(f64, f64)>,
    secret: Option<Key>,
) -> Result<(SuiteConfig, LocalResponders), stackmeter_engine::Error> {
    let responders = LocalResponders::default();
    let mut placement = Placement::default();
    let (targets, note) = if a.targets.is_empty() {
        // Responders on CPU 0, client on CPU 1: on 2 vCPUs unpinned
        // placement flips loopback RTT between two levels.
        if stackmeter_sys::host().cpus >= 2 {
            placement = Placement {
                client_cpu: Some(1),
                responder_cpu: Some(0),
            };
        }
        // Variants compare client configurations against one responder.
        let started = match plan.variants.is_empty() {
            true => responders.start(placement.responder_cpu),
            false => responders.start_one(placement.responder_cpu).map(|l| (vec![l], None)),
        };
        if let Some(cpu) = placement.client_cpu {
            stackmeter_sys::pin_current_thread(cpu).map_err(|e| {
                stackmeter_engine::Error::Local(format!("cannot pin the measuring thread to CPU {cpu}: {e}"))
            })?;
        }
        let (locals, note) = started?;
        let members = locals
            .iter()
            .map(|l| Member::new(&l.label, &l.addr.to_string(), l.addr))
            .collect();
        (members, note)
    } else {
        (
            stackmeter_engine::suite::targets(&a.targets, !plan.variants.is_empty())?,
            None,
        )
    };
    let targets = stackmeter_engine::suite::with_variants(targets, &plan.variants)?;
    let cfg = SuiteConfig {
        plan,
        targets,
        repeat: a.repeat,
        quick: a.quick,
        confidence,
        max_repeat: a.max_repeat,
        metric: a.metric.name().into(),
        note,
        placement,
        secret,
    };
    Ok((cfg, responders))
}

fn execute(
    a: &SuiteArgs,
    format: Format,
    mut store: Option<stackmeter_store::Writer>,
    cfg: SuiteConfig,
    responders: LocalResponders,
    progress: crate::progress::Progress,
) -> i32 {
    if let Some(n) = &cfg.note {
        progress.print_err(&format!("stackmeter: warning: {n}"));
    }
    let env = stackmeter_engine::execute::env(stackmeter_sys::unix_now());
    let run = match store
        .as_mut()
        .map(|s| stackmeter_engine::suite::begin_run(s, &cfg, &env))
    {
        Some(Ok(key)) => Some(key),
        Some(Err(e)) => {
            progress.finish();
            return crate::out::error(&e);
        }
        None => None,
    };
    let run_id = run.and_then(|k| k.id);
    let done = stackmeter_engine::suite::run(&cfg, store.as_mut().zip(run), &mut |ev| match ev {
        SuiteEvent::Test {
            done,
            total,
            step,
            label,
            repetition,
        } => progress.set(done, total, format!("{step} on {label}, repetition {}", repetition + 1)),
        SuiteEvent::Warning(w) => progress.print_err(&format!("stackmeter: warning: {w}")),
    });
    progress.finish();
    responders.kill_all();
    let o = &done.outcome;
    if let (Some((c, w)), false) = (cfg.confidence, o.not_converged.is_empty()) {
        eprintln!(
            "stackmeter: WARNING: confidence goal {}% +/-{}% NOT reached after {} repetitions for {} figure(s) (see the end of the output)",
            c * 100.0,
            w * 50.0,
            o.repetitions,
            o.not_converged.len()
        );
    }
    let code = finish(&render(o, format, &a.output.style()));
    // Spooled: kept on this host, not lost; the line says how to send it.
    if let Some(note) = store.as_ref().and_then(stackmeter_store::Writer::note) {
        eprintln!("stackmeter: {note}");
    }
    match done.failure {
        Some(_) if done.interrupted() => {
            let kept = match run_id {
                Some(id) => format!("; run {id} kept its {} finished test(s) and is marked partial", o.tests),
                None => String::new(),
            };
            fail(130, format!("interrupted{kept}"))
        }
        Some(e) => fail(e.exit_code(), e),
        None if code != 0 => code,
        None if done.not_stored.0 > 0 => fail(
            1,
            format!(
                "{} of {} test(s) not stored: {}",
                done.not_stored.0,
                o.tests,
                done.not_stored.1.as_deref().unwrap_or("")
            ),
        ),
        None => crate::out::gate(&a.gate.failures(&o.comparisons)),
    }
}
