//! `stackmeter suite`'s flags, checked before anything runs (the plan
//! loaded, `--variant`s and `--confidence` read), and the suite's
//! configuration: its targets found or its local responders started and
//! pinned, the measuring thread pinned.

use crate::flags::{FormatFlags, GateFlags, MetricArg, StoreFlags};
use crate::suite::{Member, SuiteConfig};
use crate::target::LocalResponders;
use clap::Args;
use stackmeter_proto::auth::Key;
use stackmeter_results::Placement;

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
    let names: Vec<&str> = crate::plan::BUILTIN.iter().map(|(n, _)| *n).collect();
    format!(
        "Built-in plan ({}) or a TOML plan file (docs/suite.md)",
        names.join(", ")
    )
}

pub type Checked = (crate::plan::Plan, Option<(f64, f64)>);

/// Checks the flags and loads the plan.
pub fn checks(a: &SuiteArgs) -> Result<Checked, crate::Error> {
    use crate::Error::Usage;
    if a.repeat == 0 {
        return Err(Usage("--repeat must be at least 1".into()));
    }
    let confidence = a.confidence.as_deref().map(crate::suite::confidence).transpose()?;
    if confidence.is_some() && a.max_repeat < a.repeat {
        return Err(Usage("--max-repeat must be at least --repeat".into()));
    }
    let mut plan = crate::plan::load(&a.plan, a.quick)?;
    if !a.variants.is_empty() {
        let variants = a
            .variants
            .iter()
            .map(|v| crate::plan::variant_flag(v))
            .collect::<Result<Vec<_>, _>>()
            .map_err(Usage)?;
        crate::plan::check_variants(&variants).map_err(|e| Usage(format!("--variant: {e}")))?;
        plan.variants = variants;
    }
    Ok((plan, confidence))
}

/// Finds or starts the targets and pins the measuring thread.
pub fn config(
    a: &SuiteArgs,
    plan: crate::plan::Plan,
    confidence: Option<(f64, f64)>,
    secret: Option<Key>,
) -> Result<(SuiteConfig, LocalResponders), crate::Error> {
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
            stackmeter_sys::pin_current_thread(cpu)
                .map_err(|e| crate::Error::Local(format!("cannot pin the measuring thread to CPU {cpu}: {e}")))?;
        }
        let (locals, note) = started?;
        let members = locals
            .iter()
            .map(|l| Member::new(&l.label, &l.addr.to_string(), l.addr))
            .collect();
        (members, note)
    } else {
        (crate::suite::targets(&a.targets, !plan.variants.is_empty())?, None)
    };
    let targets = crate::suite::with_variants(targets, &plan.variants)?;
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
        attrs: a.store.attrs().map_err(crate::error::Error::Usage)?,
    };
    Ok((cfg, responders))
}
