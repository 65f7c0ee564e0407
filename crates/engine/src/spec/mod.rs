//! Test specifications: what to measure, checked once, and their
//! dispatch. The list of tests is `stackmeter_results::TestKind`; every
//! `match` here is exhaustive over it, over [`Spec`] or over
//! [`TestCommand`], so a new test is a compile error at each place that
//! must learn about it (and
//! `every_test_kind_has_a_command_keys_a_view_and_a_schema` below fails if
//! the subcommand is missing).
//!
//! Each test has one options struct (one file each: `rr.rs`, `crr.rs`,
//! `ping.rs`, `stream.rs`, `udp_max.rs`, `load.rs`, `rrul.rs`). It is both the
//! command's flags (`clap::Args`, the doc comments are the help text) and
//! a plan step's keys (`serde::Deserialize`, the same names in snake
//! case), every default is a constant written once beside it, and one
//! `spec()` checks every limit and turns the options into the typed
//! parameters the client runs and the document records. So a flag and a
//! plan key can never disagree about a default or a range.

mod common;
mod crr;
mod load;
mod ping;
pub mod plain;
mod rr;
mod rrul;
mod stream;
mod udp_max;

pub use common::{Options, SpecError, MAX_SECONDS, TIMEOUT_MS, UDP_MAX, UDP_MIN};
pub use crr::CrrOptions;
pub use load::LoadOptions;
pub use ping::PingOptions;
pub use rr::RrOptions;
pub use rrul::RrulOptions;
pub use stream::StreamOptions;
pub use udp_max::UdpMaxOptions;

use crate::error::Error;
use crate::flags::{ObjectFlags, RunFlags};
use clap::{Args, Subcommand};
use common::Ran;
use stackmeter_client::Endpoint;
use stackmeter_responder::ObjectSource;
use stackmeter_results::{
    Body, CrrParams, Live, LoadParams, PingParams, RrParams, RrulParams, StreamParams, TestKind, UdpMaxParams,
};

/// A checked test: the parameters its client runs and its document records.
#[derive(Clone, Debug)]
pub enum Spec {
    /// Request/response per size pair, closed or open loop.
    Rr(RrParams),
    /// Connect/request/response/close.
    Crr(CrrParams),
    /// UDP echo.
    Ping(PingParams),
    /// TCP or paced UDP throughput.
    Stream(StreamParams),
    /// Highest UDP rate at a loss goal.
    UdpMax(UdpMaxParams),
    /// Many clients fetching objects.
    Load(LoadParams),
    /// Latency under load.
    Rrul(RrulParams),
}

/// A measuring command.
#[derive(Subcommand, Debug)]
pub enum TestCommand {
    /// Request/response latency over TCP for a grid of request and response sizes.
    Rr(Measure<RrOptions>),
    /// Connect latency and connect+request+response+close time.
    Crr(Measure<CrrOptions>),
    /// UDP echo round trips: loss, order, payload checks, slow answers, time inside the responder.
    Ping(Measure<PingOptions>),
    /// Throughput per interval and in total (sent, received, both): TCP up/down/bidir, or paced UDP.
    Stream(Measure<StreamOptions>),
    /// Highest UDP rate whose loss stays at or under a goal (MLRsearch-style trials).
    #[command(name = "udp-max")]
    UdpMax(Measure<UdpMaxOptions>),
    /// Many clients at once, each listing and fetching every object, every byte checked (direct or through a proxy).
    Load(LoadCommand),
    /// Latency under load (RRUL): phases of TCP load (idle, down, up, both) with latency probes through them,
    /// one-way delays, and the latency each phase induces over idle.
    Rrul(Measure<RrulOptions>),
}

/// A measuring command's flags: how to run, and what to measure.
#[derive(Args, Debug)]
pub struct Measure<O: Options + std::fmt::Debug> {
    #[command(flatten)]
    pub opts: O,
    #[command(flatten)]
    pub run: RunFlags,
}

/// `load`'s flags: as any test's, plus the embedded responder's objects.
#[derive(Args, Debug)]
pub struct LoadCommand {
    #[command(flatten)]
    pub opts: LoadOptions,
    #[command(flatten)]
    pub run: RunFlags,
    #[command(flatten)]
    pub objects: ObjectFlags,
}

/// A measurement ready to run: how, what, and the embedded responder's
/// catalogue (object mode is off unless the test fetches objects).
#[derive(Debug)]
pub struct Planned {
    /// How to run and print.
    pub flags: RunFlags,
    /// What to measure.
    pub spec: Spec,
    /// Objects of an embedded responder.
    pub objects: ObjectSource,
}

impl TestCommand {
    /// Checks the flags into a [`Planned`] measurement.
    pub fn plan(self) -> Result<Planned, Error> {
        let (flags, spec) = match self {
            TestCommand::Rr(m) => (m.run, Spec::Rr(m.opts.params()?)),
            TestCommand::Crr(m) => (m.run, Spec::Crr(m.opts.params()?)),
            TestCommand::Ping(m) => (m.run, Spec::Ping(m.opts.params()?)),
            TestCommand::Stream(m) => (m.run, Spec::Stream(m.opts.params()?)),
            TestCommand::UdpMax(m) => (m.run, Spec::UdpMax(m.opts.params()?)),
            TestCommand::Rrul(m) => (m.run, Spec::Rrul(m.opts.params()?)),
            TestCommand::Load(l) => {
                let objects = objects(&l)?;
                let spec = Spec::Load(l.opts.params()?);
                return Ok(Planned {
                    flags: l.run,
                    spec,
                    objects,
                });
            }
        };
        Ok(Planned {
            flags,
            spec,
            objects: ObjectSource::Off,
        })
    }
}

/// The embedded responder's catalogue from `load`'s flags.
fn objects(l: &LoadCommand) -> Result<ObjectSource, Error> {
    let o = &l.objects;
    if l.run.target.is_some() && (o.objects.is_some() || o.objects_dir.is_some()) {
        return Err(Error::Usage(
            "--objects and --objects-dir set up the embedded responder (give no TARGET); a remote responder has its own (serve --objects)".into(),
        ));
    }
    match (&o.objects, &o.objects_dir) {
        (Some(_), Some(_)) => Err(Error::Usage("--objects and --objects-dir exclude each other".into())),
        (_, Some(d)) => Ok(ObjectSource::Dir(d.clone())),
        (Some(s), None) => Ok(ObjectSource::Synthetic(s.0.clone())),
        (None, None) => Ok(ObjectSource::Synthetic(stackmeter_responder::DEFAULT_SIZES.to_vec())),
    }
}

impl Spec {
    /// Which test this is.
    pub fn kind(&self) -> TestKind {
        match self {
            Spec::Rr(_) => TestKind::Rr,
            Spec::Crr(_) => TestKind::Crr,
            Spec::Ping(_) => TestKind::Ping,
            Spec::Stream(_) => TestKind::Stream,
            Spec::UdpMax(_) => TestKind::UdpMax,
            Spec::Load(_) => TestKind::Load,
            Spec::Rrul(_) => TestKind::Rrul,
        }
    }

    /// The test's name, as on the command line and in the JSON `test` key.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// What kind of target the test measures: a stackmeter responder, or a
    /// plain server (`--echo`, `--raw`, `--discard`, `--iperf2`).
    pub fn target_kind(&self) -> stackmeter_results::TargetKind {
        match self {
            Spec::Rr(p) => p.target_kind(),
            Spec::Crr(p) => p.target_kind(),
            Spec::Ping(p) => p.target_kind(),
            Spec::Stream(p) => p.target_kind(),
            Spec::UdpMax(_) | Spec::Load(_) | Spec::Rrul(_) => stackmeter_results::TargetKind::Stackmeter,
        }
    }

    /// How long the test is planned to run, seconds, when its parameters
    /// say (for a progress display): a stream's window, an open-loop
    /// schedule, a paced ping.
    pub fn planned_seconds(&self) -> Option<f64> {
        match self {
            Spec::Stream(p) => Some(p.omit_s + p.time_s),
            Spec::Rr(p) => p.open_loop.as_ref().map(|o| o.time_s * p.sizes.len() as f64),
            Spec::Ping(p) => (p.interval_us > 0).then(|| (p.count + p.warmup) as f64 * p.interval_us as f64 / 1e6),
            Spec::Rrul(p) => Some(p.phase_s * p.phases.len() as f64),
            Spec::Crr(_) | Spec::UdpMax(_) | Spec::Load(_) => None,
        }
    }

    /// The body before any row (the document a display prints the head of).
    pub(crate) fn empty_body(&self) -> Body {
        match self {
            Spec::Rr(p) => Body::Rr {
                params: p.clone(),
                results: Vec::new(),
            },
            Spec::Crr(p) => Body::Crr {
                params: p.clone(),
                results: Vec::new(),
            },
            Spec::Ping(p) => Body::Ping {
                params: p.clone(),
                results: Vec::new(),
            },
            Spec::Stream(p) => Body::Stream {
                params: p.clone(),
                intervals: Vec::new(),
                summary: None,
            },
            Spec::UdpMax(p) => Body::UdpMax {
                params: p.clone(),
                result: None,
            },
            Spec::Load(p) => Body::Load {
                params: p.clone(),
                results: Vec::new(),
                summary: None,
            },
            Spec::Rrul(p) => Body::Rrul {
                params: p.clone(),
                phases: Vec::new(),
                induced: Vec::new(),
                clock: None,
                series: Vec::new(),
                throughput: Vec::new(),
            },
        }
    }

    /// Runs the test against `endpoint` (the target's address and secret),
    /// the measuring thread already placed; `cpu` is passed to tests that
    /// start threads of their own; `live` sees rows as they finish.
    pub(crate) fn run(&self, endpoint: &Endpoint, cpu: Option<usize>, live: &mut dyn FnMut(Live)) -> Ran {
        match self {
            Spec::Rr(p) => rr::run(p, endpoint),
            Spec::Crr(p) => crr::run(p, endpoint),
            Spec::Ping(p) => ping::run(p, endpoint),
            Spec::Stream(p) => stream::run(p, endpoint, cpu, live),
            Spec::UdpMax(p) => udp_max::run(p, endpoint, cpu, live),
            Spec::Load(p) => load::run(p, endpoint),
            Spec::Rrul(p) => rrul::run(p, endpoint, cpu),
        }
    }
}

impl From<SpecError> for Error {
    /// A bad setting is a usage error (exit 2), named as a flag.
    fn from(e: SpecError) -> Error {
        Error::Usage(e.to_string())
    }
}

/// The keys a test's options take, in flag order.
pub fn keys<O: Options>() -> Vec<String> {
    O::augment_args(clap::Command::new(O::KIND.name()))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect()
}

/// A plan step's keys (without `name`, `test` and `quick`) as the
/// specification of a `kind` test; `quick` scales it down. Errors name the key.
pub fn from_table(kind: TestKind, table: toml::Table, quick: bool) -> Result<Spec, KeyError> {
    match kind {
        TestKind::Rr => table_params::<RrOptions>(table, quick).map(Spec::Rr),
        TestKind::Crr => table_params::<CrrOptions>(table, quick).map(Spec::Crr),
        TestKind::Ping => table_params::<PingOptions>(table, quick).map(Spec::Ping),
        TestKind::Stream => table_params::<StreamOptions>(table, quick).map(Spec::Stream),
        TestKind::UdpMax => table_params::<UdpMaxOptions>(table, quick).map(Spec::UdpMax),
        TestKind::Load => table_params::<LoadOptions>(table, quick).map(Spec::Load),
        TestKind::Rrul => table_params::<RrulOptions>(table, quick).map(Spec::Rrul),
    }
}

/// A plan step's keys that do not make a specification: which key (when
/// one is to blame) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyError {
    /// The key, as written in the step.
    pub key: Option<String>,
    /// What is wrong, naming the key as a plan does (`'time' 0: ...`).
    pub message: String,
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<SpecError> for KeyError {
    fn from(e: SpecError) -> KeyError {
        KeyError {
            key: Some(e.key.to_string()),
            message: e.as_key(),
        }
    }
}

fn table_params<O: Options>(table: toml::Table, quick: bool) -> Result<O::Params, KeyError> {
    let known = keys::<O>();
    if let Some(k) = table
        .keys()
        .find(|k| !known.contains(k) && !aliases::<O>().contains(&k.as_str()))
    {
        return Err(KeyError {
            key: Some(k.clone()),
            message: format!(
                "'{k}' does not apply to {} (its keys: {})",
                O::KIND.name(),
                known.join(", ")
            ),
        });
    }
    let mut o: O = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| KeyError {
            key: None,
            message: e.message().replace('`', "'"),
        })?;
    // Checked as written first, so a step is valid or not whatever --quick says.
    let params = o.params()?;
    if !quick {
        return Ok(params);
    }
    o.quick();
    Ok(o.params()?)
}

/// Plan keys of the first plan format that still work (seconds had an
/// `_s` suffix there).
fn aliases<O: Options>() -> &'static [&'static str] {
    match O::KIND {
        TestKind::Stream => &["time_s", "interval_s", "omit_s"],
        TestKind::UdpMax => &["trial_s", "duration_sum_s"],
        TestKind::Rr | TestKind::Crr | TestKind::Ping | TestKind::Load | TestKind::Rrul => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_flag_and_the_key() {
        let e = SpecError::new("duration_sum", "1: shorter than one trial");
        assert_eq!(e.to_string(), "--duration-sum 1: shorter than one trial");
        assert_eq!(e.as_key(), "'duration_sum' 1: shorter than one trial");
    }

    #[test]
    fn a_plan_step_takes_the_plain_target_keys() {
        let table: toml::Table = toml::from_str("echo = true\ncount = 50").unwrap();
        let Spec::Ping(p) = from_table(TestKind::Ping, table, false).unwrap() else {
            panic!("a ping step")
        };
        assert!(p.echo && p.count == 50);
        let table: toml::Table = toml::from_str("raw = \"1:1K\"\nrequest_prefix = \"01\"").unwrap();
        let spec = from_table(TestKind::Rr, table, false).unwrap();
        assert_eq!(spec.target_kind(), stackmeter_results::TargetKind::Raw);
        let table: toml::Table = toml::from_str("iperf2 = true\ndirection = \"down\"").unwrap();
        let e = from_table(TestKind::Stream, table, false).unwrap_err();
        assert_eq!(
            e.message,
            "'direction' down: a plain target (--iperf2) only receives: up only"
        );
        assert_eq!(e.key.as_deref(), Some("direction"));
    }

    /// The one list of tests is complete everywhere: each kind has a
    /// subcommand, plan keys that give a specification of that kind, an
    /// empty document that renders, and a place in the JSON Schema.
    #[test]
    fn every_test_kind_has_a_command_keys_a_view_and_a_schema() {
        let cmd = <TestCommand as clap::Subcommand>::augment_subcommands(clap::Command::new("stackmeter"));
        let schema = serde_json::to_string(&stackmeter_results::schema::schemas()).unwrap();
        for &kind in TestKind::ALL {
            assert!(
                cmd.find_subcommand(kind.name()).is_some(),
                "{kind}: no subcommand in TestCommand"
            );
            let spec = from_table(kind, toml::Table::new(), false).unwrap();
            assert_eq!(spec.kind(), kind);
            let body = spec.empty_body();
            assert_eq!(body.kind(), kind);
            let doc = stackmeter_results::Document {
                schema: stackmeter_results::SCHEMA.into(),
                target: stackmeter_results::Target {
                    name: "t".into(),
                    address: "127.0.0.1:1".into(),
                    embedded: false,
                    kind: spec.target_kind(),
                },
                body,
                placement: Default::default(),
                knobs: Default::default(),
                env: Default::default(),
                complete: true,
                error: None,
                warnings: Vec::new(),
                not_measured: Vec::new(),
            };
            let text = stackmeter_render::render(&doc, stackmeter_render::Format::Text, &Default::default());
            assert!(
                text.contains(&format!("stackmeter {kind} ")),
                "{kind}: its view:\n{text}"
            );
            assert!(
                schema.contains(&format!("\"{kind}\"")),
                "{kind}: not in the JSON Schema"
            );
        }
        assert_eq!(cmd.get_subcommands().count(), TestKind::ALL.len());
    }

    #[test]
    fn every_test_has_keys() {
        assert!(keys::<RrOptions>().contains(&"iterations".to_string()));
        assert!(keys::<StreamOptions>().contains(&"direction".to_string()));
        assert!(!keys::<LoadOptions>().contains(&"length".to_string()));
    }
}
