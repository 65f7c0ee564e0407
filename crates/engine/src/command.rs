//! The measuring commands (rr, crr, ping, stream, udp-max, load) as one
//! clap subcommand group: each is the shared [`RunFlags`] plus its test's
//! options, and turns into a checked [`Planned`] measurement. The binary
//! flattens this group into its command list, so a new test appears on the
//! command line without the binary changing.

use crate::error::Error;
use crate::flags::{ObjectFlags, RunFlags};
use crate::spec::{CrrOptions, LoadOptions, Options, PingOptions, RrOptions, Spec, StreamOptions, UdpMaxOptions};
use clap::{Args, Subcommand};
use stackmeter_responder::ObjectSource;

/// A measuring command.
#[derive(Subcommand, Debug)]
pub enum TestCommand {
    /// Request/response latency over TCP for a grid of sizes (seed 000).
    Rr(Measure<RrOptions>),
    /// Connect latency and connect+request+response+close time.
    Crr(Measure<CrrOptions>),
    /// UDP echo round trips with loss, order, payload and slow answers (seed 004).
    Ping(Measure<PingOptions>),
    /// Throughput per interval and in total: TCP up/down/bidir, or paced UDP (seed 001's bps).
    Stream(Measure<StreamOptions>),
    /// Highest UDP rate whose loss stays at or under a goal (MLRsearch-style trials).
    #[command(name = "udp-max")]
    UdpMax(Measure<UdpMaxOptions>),
    /// Many clients at once, each listing and fetching every object, every byte checked (seed 003).
    Load(LoadCommand),
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
            TestCommand::Rr(m) => (m.run, m.opts.spec()?),
            TestCommand::Crr(m) => (m.run, m.opts.spec()?),
            TestCommand::Ping(m) => (m.run, m.opts.spec()?),
            TestCommand::Stream(m) => (m.run, m.opts.spec()?),
            TestCommand::UdpMax(m) => (m.run, m.opts.spec()?),
            TestCommand::Load(l) => {
                let objects = objects(&l)?;
                let spec = l.opts.spec()?;
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
