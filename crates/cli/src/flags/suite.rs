//! `stackmeter suite`'s flags, checked before anything runs (the plan
//! loaded, `--variant`s and `--confidence` read), and the suite's
//! configuration: its targets found or its local responders started and
//! pinned, the measuring thread pinned.

use crate::flags::{FormatFlags, GateFlags, MetricArg, StoreFlags};
use clap::Args;
use stackmeter_engine::suite::{Member, SuiteConfig};
use stackmeter_engine::target::LocalResponders;
use stackmeter_proto::auth::Key;
use stackmeter_results::DecideSettings;
use stackmeter_results::Placement;
use stackmeter_statistics::decide::Budget;

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
    /// Repetitions per target, interleaved A B A B (a fixed design; the
    /// default with three or more members, 5).
    #[arg(long)]
    pub repeat: Option<usize>,
    /// `decided`: pairs of blocks in random order until every row is
    /// decided (faster, slower, equivalent within --tolerance) or the
    /// budget is spent, the default with two members and no --repeat;
    /// `repeat`: the fixed design.
    #[arg(long, value_enum, value_name = "WHEN")]
    pub until: Option<Until>,
    /// How long a run until decided may measure: a time with its units
    /// (60s, 2m, 1h30m) or a number of pairs (200) [default: 60s; 30s with --quick].
    #[arg(long, value_name = "TIME|PAIRS")]
    pub budget: Option<String>,
    /// The seed of the random A/B order of each pair [default: from the clock; stored with the run].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Scale counts and durations down (demos, CI).
    #[arg(long)]
    pub quick: bool,
    /// Removed: netperf's rule (look after every repetition, stop when the
    /// interval is narrow) misses the truth far more often than it says.
    #[arg(long, value_name = "CONF,WIDTH", hide = true)]
    pub confidence: Option<String>,
    /// Latency figure compared per repetition or pair [default: mean; p50 until decided].
    #[arg(long, value_enum)]
    pub metric: Option<MetricArg>,
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
    let names: Vec<&str> = stackmeter_spec::plan::BUILTIN.iter().map(|(n, _)| *n).collect();
    format!(
        "Built-in plan ({}) or a TOML plan file (docs/suite.md)",
        names.join(", ")
    )
}

/// When a suite stops.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// Every row decided, or the budget spent.
    Decided,
    /// A fixed number of repetitions (--repeat).
    Repeat,
}

/// The plan, and the budget of a run until decided if one was given.
pub type Checked = (stackmeter_spec::plan::Plan, Option<Budget>);

/// Checks the flags and loads the plan.
pub fn checks(a: &SuiteArgs) -> Result<Checked, crate::error::Error> {
    if a.confidence.is_some() {
        return Err(crate::error::Error::flag(
            "--confidence was removed: looking again after every repetition and stopping once the interval is narrow \
             (netperf's -I) misses the truth far more often than it says; --until decided stops on a bound that holds \
             however often it looks (docs/methods.md)",
        ));
    }
    if a.repeat == Some(0) {
        return Err(crate::error::Error::flag("--repeat must be at least 1"));
    }
    if a.until == Some(Until::Decided) && a.repeat.is_some() {
        return Err(crate::error::Error::conflict(
            "--repeat is the fixed design: it does not go with --until decided",
        ));
    }
    let budget = match &a.budget {
        Some(b) => Some(
            b.parse::<Budget>()
                .map_err(|e| crate::error::Error::flag(e.to_string()))?,
        ),
        None => None,
    };
    let mut plan = stackmeter_spec::plan::load(&a.plan, a.quick)?;
    if !a.variants.is_empty() {
        let variants = a
            .variants
            .iter()
            .map(|v| stackmeter_spec::plan::variant_flag(v))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| crate::error::Error::flag(e.to_string()))?;
        stackmeter_spec::plan::check_variants(&variants)
            .map_err(|e| crate::error::Error::flag(format!("--variant: {e}")))?;
        plan.variants = variants;
    }
    Ok((plan, budget))
}

/// Finds or starts the targets and pins the measuring thread.
pub fn config(
    a: &SuiteArgs,
    plan: stackmeter_spec::plan::Plan,
    budget: Option<Budget>,
    secret: Option<Key>,
) -> Result<(SuiteConfig, LocalResponders), crate::error::Error> {
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
            false => responders
                .start_one(placement.responder_cpu)
                .map(|l| stackmeter_engine::target::Started {
                    locals: vec![l],
                    note: None,
                }),
        };
        if let Some(cpu) = placement.client_cpu {
            stackmeter_sys::pin_current_thread(cpu).map_err(|e| {
                crate::error::Error::local(format!("cannot pin the measuring thread to CPU {cpu}: {e}"))
            })?;
        }
        let stackmeter_engine::target::Started { locals, note } = started?;
        let members = locals
            .iter()
            .map(|l| Member::new(&l.label, &l.addr.to_string(), l.addr))
            .collect();
        (members, note)
    } else {
        let members = stackmeter_engine::suite::targets(&a.targets, !plan.variants.is_empty())?;
        let infos: Vec<_> = members.iter().map(|m| m.info.clone()).collect();
        let client = stackmeter_sys::listener::allowed_cpus();
        let warning = stackmeter_results::shared_cpu_warning(&infos, &client, stackmeter_sys::host().cpus);
        (members, warning)
    };
    let targets = stackmeter_engine::suite::with_variants(targets, &plan.variants)?;
    let decide = decide_settings(a, targets.len(), budget)?;
    let metric = a.metric.unwrap_or(if decide.is_some() {
        MetricArg::P50
    } else {
        MetricArg::Mean
    });
    let cfg = SuiteConfig {
        plan,
        targets,
        repeat: a.repeat.unwrap_or(5),
        quick: a.quick,
        decide,
        metric: metric.name().into(),
        note,
        placement,
        secret,
    };
    Ok((cfg, responders))
}

/// A run until decided: explicitly (`--until decided`, which then needs
/// two members) or by default with two members and no `--repeat`; its
/// settings are the engine's, from the flags.
fn decide_settings(
    a: &SuiteArgs,
    members: usize,
    budget: Option<Budget>,
) -> Result<Option<DecideSettings>, crate::error::Error> {
    let asked = a.until == Some(Until::Decided);
    let wanted = asked || (a.until.is_none() && a.repeat.is_none() && members == 2);
    if !wanted {
        // The fixed design: --tolerance is the gate's, with --fail-on.
        if a.gate.tolerance.is_some() && a.gate.fail_on.is_none() {
            return Err(crate::error::Error::conflict(
                "--tolerance needs --fail-on here (or a run until decided, where it is the band)",
            ));
        }
        return Ok(None);
    }
    if let Some(t) = a.gate.tolerance {
        if !(t > 0.0 && t <= 100.0) {
            return Err(crate::error::Error::flag(format!(
                "--tolerance {t}: the band must be above 0 and at most 100 percent"
            )));
        }
    }
    if members != 2 {
        return Err(crate::error::Error::conflict(format!(
            "--until decided compares two members (A and B), this suite has {members}: give two --target LABEL=ADDR (or two variants)"
        )));
    }
    Ok(Some(stackmeter_engine::suite::decide_settings(
        a.gate.tolerance.map(|t| t / 100.0),
        budget,
        a.seed,
        a.quick,
    )))
}
