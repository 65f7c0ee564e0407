//! What to measure: one typed specification per test, checked once, from
//! flags and from plan steps alike, and the plans themselves.
//!
//! Each test has one options struct (one file each: `rr.rs`, `crr.rs`,
//! `ping.rs`, `stream.rs`, `udp_max.rs`, `load.rs`, `rrul.rs`,
//! `udp_burst.rs`). It is both the command's flags (`clap::Args`, its doc
//! comments the help text) and a plan step's keys (`serde::Deserialize`,
//! the same names in snake case); every default is written once, in its
//! `#[arg]`, and one `params()` checks every limit and turns the options
//! into the typed parameters the client runs and the document records. So
//! a flag and a plan key can never disagree about a default or a range.
//! [`Spec`] is a checked test, one variant per test, written out.
//!
//! Beside them, the syntax every flag and plan shares: sizes ([`sizes`]),
//! rates ([`rate`]), times ([`time`]); plans and their steps ([`plan`],
//! with errors at their place in the file: [`located`]); and what a plain
//! target (no stackmeter responder) changes ([`plain`]). Nothing here runs
//! a test or opens a socket: the engine does (`stackmeter-engine`).

mod common;
mod crr;
mod load;
pub mod located;
mod ping;
pub mod plain;
pub mod plan;
pub mod rate;
mod rr;
mod rrul;
pub mod sizes;
mod stream;
pub mod time;
mod udp_burst;
mod udp_max;

pub use common::{Options, SpecError, CLOCK_AUTO, MAX_SECONDS, TIMEOUT_MS, UDP_MAX, UDP_MIN};
pub use crr::CrrOptions;
pub use load::LoadOptions;
pub use ping::PingOptions;
pub use rr::RrOptions;
pub use rrul::RrulOptions;
pub use stream::StreamOptions;
pub use udp_burst::UdpBurstOptions;
pub use udp_max::UdpMaxOptions;

use stackmeter_results::{
    Body, CrrBody, CrrParams, LoadBody, LoadParams, PingBody, PingParams, RrBody, RrParams, RrulBody, RrulParams,
    StreamBody, StreamParams, TargetKind, TestBody, TestKind, UdpBurstBody, UdpBurstParams, UdpMaxBody, UdpMaxParams,
};

/// A checked test: the parameters its client runs and its document records.
#[derive(Clone, Debug)]
pub enum Spec {
    /// Request/response per size pair, closed or open loop.
    Rr(RrParams),
    /// Connect/request/response/close.
    Crr(CrrParams),
    /// UDP echo round trips.
    Ping(PingParams),
    /// TCP or paced UDP throughput.
    Stream(StreamParams),
    /// Highest UDP rate at a loss goal.
    UdpMax(UdpMaxParams),
    /// Many clients listing and fetching objects.
    Load(LoadParams),
    /// Latency under load.
    Rrul(RrulParams),
    /// Bursts of back-to-back UDP datagrams.
    UdpBurst(UdpBurstParams),
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
            Spec::UdpBurst(_) => TestKind::UdpBurst,
        }
    }

    /// The test's name, as on the command line and in the JSON `test` key.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// The body before any row (the document a display prints the head of).
    pub fn empty_body(&self) -> Body {
        match self {
            Spec::Rr(p) => Body::Rr(RrBody::empty(p.clone())),
            Spec::Crr(p) => Body::Crr(CrrBody::empty(p.clone())),
            Spec::Ping(p) => Body::Ping(PingBody::empty(p.clone())),
            Spec::Stream(p) => Body::Stream(StreamBody::empty(p.clone())),
            Spec::UdpMax(p) => Body::UdpMax(UdpMaxBody::empty(p.clone())),
            Spec::Load(p) => Body::Load(LoadBody::empty(p.clone())),
            Spec::Rrul(p) => Body::Rrul(RrulBody::empty(p.clone())),
            Spec::UdpBurst(p) => Body::UdpBurst(UdpBurstBody::empty(p.clone())),
        }
    }

    /// What kind of target the test measures: a stackmeter responder, or a
    /// plain server (`--echo`, `--raw`, `--discard`, `--iperf2`).
    pub fn target_kind(&self) -> TargetKind {
        match self {
            Spec::Rr(p) => RrBody::target_kind(p),
            Spec::Crr(p) => CrrBody::target_kind(p),
            Spec::Ping(p) => PingBody::target_kind(p),
            Spec::Stream(p) => StreamBody::target_kind(p),
            Spec::UdpMax(p) => UdpMaxBody::target_kind(p),
            Spec::Load(p) => LoadBody::target_kind(p),
            Spec::Rrul(p) => RrulBody::target_kind(p),
            Spec::UdpBurst(p) => UdpBurstBody::target_kind(p),
        }
    }

    /// How long the test is planned to run, seconds, when its parameters
    /// say (for a progress display): a stream's window, an open-loop
    /// schedule, a paced ping.
    pub fn planned_seconds(&self) -> Option<f64> {
        match self {
            Spec::Rr(p) => RrOptions::planned_seconds(p),
            Spec::Crr(p) => CrrOptions::planned_seconds(p),
            Spec::Ping(p) => PingOptions::planned_seconds(p),
            Spec::Stream(p) => StreamOptions::planned_seconds(p),
            Spec::UdpMax(p) => UdpMaxOptions::planned_seconds(p),
            Spec::Load(p) => LoadOptions::planned_seconds(p),
            Spec::Rrul(p) => RrulOptions::planned_seconds(p),
            Spec::UdpBurst(p) => UdpBurstOptions::planned_seconds(p),
        }
    }

    /// Whether the test's workers pin themselves ([`Options::PINS_ITS_WORKERS`]).
    pub fn pins_its_workers(&self) -> bool {
        match self {
            Spec::Rr(_) => RrOptions::PINS_ITS_WORKERS,
            Spec::Crr(_) => CrrOptions::PINS_ITS_WORKERS,
            Spec::Ping(_) => PingOptions::PINS_ITS_WORKERS,
            Spec::Stream(_) => StreamOptions::PINS_ITS_WORKERS,
            Spec::UdpMax(_) => UdpMaxOptions::PINS_ITS_WORKERS,
            Spec::Load(_) => LoadOptions::PINS_ITS_WORKERS,
            Spec::Rrul(_) => RrulOptions::PINS_ITS_WORKERS,
            Spec::UdpBurst(_) => UdpBurstOptions::PINS_ITS_WORKERS,
        }
    }

    /// Whether the test traces its round trips layer by layer (`--layers`):
    /// its tracer's cost is read against an untraced run beside it, which
    /// means something only where the client and the responder stay put.
    pub fn traces_layers(&self) -> bool {
        match self {
            Spec::Rr(p) => p.layers,
            Spec::Ping(p) => p.layers,
            Spec::Crr(_) | Spec::Stream(_) | Spec::UdpMax(_) | Spec::Load(_) | Spec::Rrul(_) | Spec::UdpBurst(_) => {
                false
            }
        }
    }

    /// Descriptors the test holds at once ([`Options::descriptors`]).
    pub fn descriptors(&self) -> usize {
        match self {
            Spec::Rr(p) => RrOptions::descriptors(p),
            Spec::Crr(p) => CrrOptions::descriptors(p),
            Spec::Ping(p) => PingOptions::descriptors(p),
            Spec::Stream(p) => StreamOptions::descriptors(p),
            Spec::UdpMax(p) => UdpMaxOptions::descriptors(p),
            Spec::Load(p) => LoadOptions::descriptors(p),
            Spec::Rrul(p) => RrulOptions::descriptors(p),
            Spec::UdpBurst(p) => UdpBurstOptions::descriptors(p),
        }
    }
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
        TestKind::UdpBurst => table_params::<UdpBurstOptions>(table, quick).map(Spec::UdpBurst),
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

fn table_params<O: Options>(table: toml::Table, quick: bool) -> Result<O::Params, KeyError> {
    let known = keys::<O>();
    if let Some(k) = table
        .keys()
        .find(|k| !known.contains(k) && !O::ALIASES.contains(&k.as_str()))
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

    #[test]
    fn every_test_has_keys() {
        assert!(keys::<RrOptions>().contains(&"iterations".to_string()));
        assert!(keys::<StreamOptions>().contains(&"direction".to_string()));
        assert!(!keys::<LoadOptions>().contains(&"length".to_string()));
    }
}
