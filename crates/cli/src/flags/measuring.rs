//! The measuring commands: one subcommand per test, each its options
//! (`stackmeter_spec`, which are also a plan step's keys) and the flags
//! of how to run ([`RunFlags`]), checked into the engine's
//! [`Planned`] measurement. Adding a test adds a variant here and one arm
//! to each `match`; the test at the bottom checks that every test kind
//! has its subcommand.

use crate::error::Error;
use crate::flags::{ObjectFlags, RunFlags};
use clap::{Args, Subcommand};
use stackmeter_engine::single::Planned;
use stackmeter_responder::ObjectSource;
use stackmeter_spec::{
    CrrOptions, LoadOptions, Options, PingOptions, RrOptions, RrulOptions, Spec, StreamOptions, UdpBurstOptions,
    UdpMaxOptions,
};

/// A measuring command.
#[derive(Subcommand, Debug)]
pub enum TestCommand {
    #[command(name = "rr", about = RrOptions::ABOUT, long_about = None)]
    Rr(Measure<RrOptions>),
    #[command(name = "crr", about = CrrOptions::ABOUT, long_about = None)]
    Crr(Measure<CrrOptions>),
    #[command(name = "ping", about = PingOptions::ABOUT, long_about = None)]
    Ping(Measure<PingOptions>),
    #[command(name = "stream", about = StreamOptions::ABOUT, long_about = None)]
    Stream(Measure<StreamOptions>),
    #[command(name = "udp-max", about = UdpMaxOptions::ABOUT, long_about = None)]
    UdpMax(Measure<UdpMaxOptions>),
    #[command(name = "load", about = LoadOptions::ABOUT, long_about = None)]
    Load(LoadCommand),
    #[command(name = "rrul", about = RrulOptions::ABOUT, long_about = None)]
    Rrul(Measure<RrulOptions>),
    #[command(name = "udp-burst", about = UdpBurstOptions::ABOUT, long_about = None)]
    UdpBurst(Measure<UdpBurstOptions>),
}

/// A measuring command's flags: what to measure, and how to run.
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

impl TestCommand {
    /// How to run and print (the flags beside the test's options).
    pub fn run_flags(&self) -> &RunFlags {
        match self {
            TestCommand::Rr(m) => &m.run,
            TestCommand::Crr(m) => &m.run,
            TestCommand::Ping(m) => &m.run,
            TestCommand::Stream(m) => &m.run,
            TestCommand::UdpMax(m) => &m.run,
            TestCommand::Load(l) => &l.run,
            TestCommand::Rrul(m) => &m.run,
            TestCommand::UdpBurst(m) => &m.run,
        }
    }

    /// Checks the flags into a [`Planned`] measurement.
    pub fn plan(&self) -> Result<Planned, Error> {
        let spec = match self {
            TestCommand::Rr(m) => Spec::Rr(m.opts.params()?),
            TestCommand::Crr(m) => Spec::Crr(m.opts.params()?),
            TestCommand::Ping(m) => Spec::Ping(m.opts.params()?),
            TestCommand::Stream(m) => Spec::Stream(m.opts.params()?),
            TestCommand::UdpMax(m) => Spec::UdpMax(m.opts.params()?),
            TestCommand::Load(l) => Spec::Load(l.opts.params()?),
            TestCommand::Rrul(m) => Spec::Rrul(m.opts.params()?),
            TestCommand::UdpBurst(m) => Spec::UdpBurst(m.opts.params()?),
        };
        let mut objects = ObjectSource::Off;
        if let TestCommand::Load(l) = self {
            objects = load_objects(l)?;
        }
        Ok(Planned {
            setup: self.run_flags().setup(),
            spec,
            objects,
        })
    }
}

/// The embedded responder's catalogue from `load`'s flags.
fn load_objects(l: &LoadCommand) -> Result<ObjectSource, Error> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use stackmeter_results::TestKind;

    /// Every test is complete everywhere: each kind has a subcommand
    /// whose options give a specification of that kind, plan keys that
    /// do too, an empty document that renders, and a place in the JSON
    /// Schema.
    #[test]
    fn every_test_kind_has_a_command_keys_a_view_and_a_schema() {
        let cmd = TestCommand::augment_subcommands(clap::Command::new("stackmeter"));
        let schema = serde_json::to_string(&stackmeter_results::schema::schemas()).unwrap();
        for &kind in TestKind::ALL {
            assert!(
                cmd.find_subcommand(kind.name()).is_some(),
                "{kind}: no subcommand in TestCommand"
            );
            let line = ["stackmeter", kind.name()];
            let planned = <Wrap as clap::Parser>::try_parse_from(line)
                .unwrap()
                .test
                .plan()
                .unwrap();
            assert_eq!(planned.spec.kind(), kind, "{kind}: its command plans another test");
            let spec = stackmeter_spec::from_table(kind, toml::Table::new(), false).unwrap();
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

    /// The measuring commands as the binary parses them.
    #[derive(clap::Parser, Debug)]
    struct Wrap {
        #[command(subcommand)]
        test: TestCommand,
    }
}
