//! Test specifications: what to measure, checked once, and their
//! dispatch. The list of tests is `stackmeter_results::for_each_test!`;
//! the enums here ([`Spec`], [`TestCommand`]) are declared from it, and
//! what a test does here is its [`Measures`] implementation, in its own
//! file. So a new test adds only its `mod` and `pub use` lines here, and
//! the compiler asks it for each item of `Measures` (and
//! `every_test_kind_has_a_command_keys_a_view_and_a_schema` below checks
//! the result).
//!
//! Each test has one options struct (one file each: `rr.rs`, `crr.rs`,
//! `ping.rs`, `stream.rs`, `udp_max.rs`, `load.rs`, `rrul.rs`, `udp_burst.rs`). It is both the
//! command's flags (`clap::Args`, the doc comments are the help text) and
//! a plan step's keys (`serde::Deserialize`, the same names in snake
//! case), every default is a constant written once beside it, and one
//! `params()` checks every limit and turns the options into the typed
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
mod udp_burst;
mod udp_max;

pub use common::{Options, SpecError, MAX_SECONDS, TIMEOUT_MS, UDP_MAX, UDP_MIN};
pub use crr::CrrOptions;
pub use load::LoadOptions;
pub use ping::PingOptions;
pub use rr::RrOptions;
pub use rrul::RrulOptions;
pub use stream::StreamOptions;
pub use udp_burst::UdpBurstOptions;
pub use udp_max::UdpMaxOptions;

use crate::error::Error;
use crate::flags::{ObjectFlags, RunFlags};
use clap::{Args, Subcommand};
pub use common::Ran;
use stackmeter_client::Endpoint;
use stackmeter_responder::ObjectSource;
use stackmeter_results::{Body, Live, TargetKind, TestBody, TestKind};

/// What the engine does with one test, implemented once per test on its
/// body type, in the test's file here.
pub trait Measures: TestBody {
    /// Its options: flags and plan keys in one struct.
    type Options: Options<Params = Self::Params>;
    /// Its subcommand's flags: the options and how to run ([`Measure`]),
    /// and for `load` the embedded responder's objects.
    type Command: TestArgs<Params = Self::Params>;
    /// Its subcommand's help line.
    const ABOUT: &'static str;
    /// Plan keys of the first plan format that still work (seconds had an
    /// `_s` suffix there).
    const ALIASES: &'static [&'static str] = &[];
    /// Its workers pin themselves: the measuring thread only checks
    /// `--affinity` and stays off their CPU's queue.
    const PINS_ITS_WORKERS: bool = false;

    /// Runs the test against `endpoint` (the target's address and secret),
    /// the measuring thread already placed; `cpu` is passed to tests that
    /// start threads of their own; `live` sees rows as they finish.
    fn run(p: &Self::Params, endpoint: &Endpoint, cpu: Option<usize>, live: &mut dyn FnMut(Live)) -> Ran;

    /// How long the test is planned to run, seconds, when its parameters
    /// say (for a progress display).
    fn planned_seconds(p: &Self::Params) -> Option<f64> {
        let _ = p;
        None
    }

    /// Descriptors the test holds at once beyond a few (each connection
    /// one; the command raises its limit to fit).
    fn descriptors(p: &Self::Params) -> usize {
        let _ = p;
        0
    }
}

/// A measuring subcommand's flags, checked into what runs.
pub trait TestArgs: Args + std::fmt::Debug {
    /// The test's checked parameters.
    type Params;
    /// How to run, what to measure, and the embedded responder's objects.
    fn split(self) -> Result<(RunFlags, Self::Params, ObjectSource), Error>;
}

impl<O: Options + std::fmt::Debug> TestArgs for Measure<O> {
    type Params = O::Params;
    fn split(self) -> Result<(RunFlags, O::Params, ObjectSource), Error> {
        Ok((self.run, self.opts.params()?, ObjectSource::Off))
    }
}

impl TestArgs for LoadCommand {
    type Params = stackmeter_results::LoadParams;
    fn split(self) -> Result<(RunFlags, Self::Params, ObjectSource), Error> {
        let objects = objects(&self)?;
        Ok((self.run, self.opts.params()?, objects))
    }
}

/// Declares [`Spec`], [`TestCommand`] and their per-test dispatch from
/// the list of tests.
macro_rules! engine_tests {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal, rows $row:literal, body $body:ident;)+) => {
        /// A checked test: the parameters its client runs and its document records.
        #[derive(Clone, Debug)]
        pub enum Spec {
            $($(#[doc = $doc])* $variant(<stackmeter_results::$body as TestBody>::Params),)+
        }

        /// A measuring command.
        #[derive(Subcommand, Debug)]
        pub enum TestCommand {
            $(
                #[command(name = $name, about = <stackmeter_results::$body as Measures>::ABOUT, long_about = None)]
                $variant(<stackmeter_results::$body as Measures>::Command),
            )+
        }

        impl TestCommand {
            /// Checks the flags into a [`Planned`] measurement.
            pub fn plan(self) -> Result<Planned, Error> {
                let (flags, spec, objects) = match self {
                    $(TestCommand::$variant(c) => {
                        let (flags, p, objects) = c.split()?;
                        (flags, Spec::$variant(p), objects)
                    })+
                };
                Ok(Planned { flags, spec, objects })
            }
        }

        /// `with_spec!(spec, p, T => expr)`: `expr` with `p` the
        /// parameters and `T` the body type of `spec`'s test.
        macro_rules! with_spec {
            ($on:expr, $p:ident, $t:ident => $e:expr) => {
                match $on {
                    $(Spec::$variant($p) => {
                        type $t = stackmeter_results::$body;
                        $e
                    })+
                }
            };
        }

        impl Spec {
            /// Which test this is.
            pub fn kind(&self) -> TestKind {
                match self {
                    $(Spec::$variant(_) => TestKind::$variant,)+
                }
            }

            /// The body before any row (the document a display prints the head of).
            pub(crate) fn empty_body(&self) -> Body {
                match self {
                    $(Spec::$variant(p) => Body::$variant(<stackmeter_results::$body as TestBody>::empty(p.clone())),)+
                }
            }
        }

        /// A plan step's keys (without `name`, `test` and `quick`) as the
        /// specification of a `kind` test; `quick` scales it down. Errors name the key.
        pub fn from_table(kind: TestKind, table: toml::Table, quick: bool) -> Result<Spec, KeyError> {
            match kind {
                $(TestKind::$variant => table_params::<stackmeter_results::$body>(table, quick).map(Spec::$variant),)+
            }
        }
    };
}

stackmeter_results::for_each_test!(engine_tests);

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

/// The embedded responder's catalogue from `load`'s flags.
fn objects(l: &LoadCommand) -> Result<ObjectSource, Error> {
    let o = &l.objects;
    if l.run.target.is_some() && (o.objects.is_some() || o.objects_dir.is_some()) {
        return Err(Error::conflict(
            "--objects and --objects-dir set up the embedded responder (give no TARGET); a remote responder has its own (serve --objects)",
        ));
    }
    match (&o.objects, &o.objects_dir) {
        (Some(_), Some(_)) => Err(Error::conflict("--objects and --objects-dir exclude each other")),
        (_, Some(d)) => Ok(ObjectSource::Dir(d.clone())),
        (Some(s), None) => Ok(ObjectSource::Synthetic(s.0.clone())),
        (None, None) => Ok(ObjectSource::Synthetic(stackmeter_responder::DEFAULT_SIZES.to_vec())),
    }
}

impl Spec {
    /// The test's name, as on the command line and in the JSON `test` key.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// What kind of target the test measures: a stackmeter responder, or a
    /// plain server (`--echo`, `--raw`, `--discard`, `--iperf2`).
    pub fn target_kind(&self) -> TargetKind {
        with_spec!(self, p, T => T::target_kind(p))
    }

    /// How long the test is planned to run, seconds, when its parameters
    /// say (for a progress display): a stream's window, an open-loop
    /// schedule, a paced ping.
    pub fn planned_seconds(&self) -> Option<f64> {
        with_spec!(self, p, T => T::planned_seconds(p))
    }

    /// Whether the test's workers pin themselves ([`Measures::PINS_ITS_WORKERS`]).
    pub(crate) fn pins_its_workers(&self) -> bool {
        with_spec!(self, _p, T => T::PINS_ITS_WORKERS)
    }

    /// Descriptors the test holds at once ([`Measures::descriptors`]).
    pub(crate) fn descriptors(&self) -> usize {
        with_spec!(self, p, T => T::descriptors(p))
    }

    /// Runs the test against `endpoint` ([`Measures::run`]).
    pub(crate) fn run(&self, endpoint: &Endpoint, cpu: Option<usize>, live: &mut dyn FnMut(Live)) -> Ran {
        with_spec!(self, p, T => T::run(p, endpoint, cpu, live))
    }
}

impl From<SpecError> for Error {
    /// A bad setting is a usage error (exit 2), named as a flag.
    fn from(e: SpecError) -> Error {
        Error::Usage(crate::error::Usage::Setting(e))
    }
}

/// The keys a test's options take, in flag order.
pub fn keys<O: Options>() -> Vec<String> {
    O::augment_args(clap::Command::new(O::KIND.name()))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect()
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

fn table_params<T: Measures>(table: toml::Table, quick: bool) -> Result<T::Params, KeyError> {
    let known = keys::<T::Options>();
    if let Some(k) = table
        .keys()
        .find(|k| !known.contains(k) && !T::ALIASES.contains(&k.as_str()))
    {
        return Err(KeyError {
            key: Some(k.clone()),
            message: format!(
                "'{k}' does not apply to {} (its keys: {})",
                T::KIND.name(),
                known.join(", ")
            ),
        });
    }
    let mut o: T::Options = toml::Value::Table(table)
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
