//! Test specifications: what to measure, checked once.
//!
//! Each test has one options struct (one file each: `rr.rs`, `crr.rs`,
//! `ping.rs`, `stream.rs`, `udp_max.rs`, `load.rs`). It is both the
//! command's flags (`clap::Args`, the doc comments are the help text) and
//! a plan step's keys (`serde::Deserialize`, the same names in snake
//! case), every default is a constant written once beside it, and one
//! `spec()` checks every limit and turns the options into the typed
//! parameters the client runs and the document records. So a flag and a
//! plan key can never disagree about a default or a range.

mod crr;
mod load;
mod ping;
pub mod rate;
mod rr;
pub mod sizes;
mod stream;
mod udp_max;

pub use crr::CrrOptions;
pub use load::LoadOptions;
pub use ping::PingOptions;
pub use rr::RrOptions;
pub use stream::StreamOptions;
pub use udp_max::UdpMaxOptions;

use serde::de::DeserializeOwned;
use stackmeter_client::{ClientError, RowHistogram};
use stackmeter_results::{Body, Live};
use stackmeter_results::{CrrParams, LoadParams, PingParams, RrParams, StreamParams, UdpMaxParams};
use std::net::SocketAddr;

/// Bound on every network wait unless a test says otherwise, ms.
pub const TIMEOUT_MS: u64 = 5_000;
/// Smallest UDP datagram a test sends: the 40-byte stackmeter header.
pub const UDP_MIN: u32 = stackmeter_proto::udp::HEADER_LEN as u32;
/// Largest UDP payload over IPv4.
pub const UDP_MAX: u32 = 65_507;
/// Longest duration any setting takes, seconds (a day).
pub const MAX_SECONDS: f64 = 86_400.0;

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
}

impl Spec {
    /// The test's name, as in the JSON `test` key.
    pub fn name(&self) -> &'static str {
        match self {
            Spec::Rr(_) => "rr",
            Spec::Crr(_) => "crr",
            Spec::Ping(_) => "ping",
            Spec::Stream(_) => "stream",
            Spec::UdpMax(_) => "udp-max",
            Spec::Load(_) => "load",
        }
    }
}

impl Spec {
    /// Runs the test against `addr`, the measuring thread already placed;
    /// `cpu` is passed to tests that start threads of their own; `live`
    /// sees rows as they finish.
    pub(crate) fn run(&self, addr: SocketAddr, cpu: Option<usize>, live: &mut dyn FnMut(Live)) -> Ran {
        match self {
            Spec::Rr(p) => rr::run(p, addr),
            Spec::Crr(p) => crr::run(p, addr),
            Spec::Ping(p) => ping::run(p, addr),
            Spec::Stream(p) => stream::run(p, addr, cpu, live),
            Spec::UdpMax(p) => udp_max::run(p, addr, cpu, live),
            Spec::Load(p) => load::run(p, addr),
        }
    }
}

/// What running one test produced, before it becomes a document.
pub(crate) struct Ran {
    /// The test's parameters and rows.
    pub body: Body,
    /// Why it stopped early, if it did.
    pub error: Option<ClientError>,
    /// The samples behind the rows' figures.
    pub histograms: Vec<RowHistogram>,
    /// Warnings only the run itself can know (not derived from figures).
    pub warnings: Vec<String>,
}

impl Ran {
    pub(crate) fn new(body: Body, error: Option<ClientError>, histograms: Vec<RowHistogram>) -> Ran {
        Ran {
            body,
            error,
            histograms,
            warnings: Vec::new(),
        }
    }
}

/// A setting that is out of range or does not fit the others. `key` is
/// the plan key (the flag is the same with dashes); `message` starts with
/// the value where there is one ("0: expected seconds above 0").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    /// The setting, as a plan key.
    pub key: &'static str,
    /// What is wrong with it.
    pub message: String,
}

impl SpecError {
    /// An error of `key`.
    pub fn new(key: &'static str, message: impl Into<String>) -> SpecError {
        SpecError {
            key,
            message: message.into(),
        }
    }

    /// As a plan names it: `'time' 0: expected ...`.
    pub fn as_key(&self) -> String {
        format!("'{}' {}", self.key, self.message)
    }
}

impl std::fmt::Display for SpecError {
    /// As the command line names it: `--time 0: expected ...`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--{} {}", self.key.replace('_', "-"), self.message)
    }
}

impl std::error::Error for SpecError {}

/// The options of one test: flags and plan keys in one struct.
pub trait Options: clap::Args + DeserializeOwned + Default {
    /// The test's name in plans and on the command line.
    const TEST: &'static str;
    /// Checks every setting and builds the specification.
    fn spec(&self) -> Result<Spec, SpecError>;
    /// Scales counts and durations down for `--quick` (demos, CI).
    fn quick(&mut self);
}

/// Test names a plan step may give.
pub const TESTS: [&str; 6] = [
    RrOptions::TEST,
    CrrOptions::TEST,
    PingOptions::TEST,
    StreamOptions::TEST,
    UdpMaxOptions::TEST,
    LoadOptions::TEST,
];

/// The keys a test's options take, in flag order.
pub fn keys<O: Options>() -> Vec<String> {
    O::augment_args(clap::Command::new(O::TEST))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect()
}

/// A plan step's keys (without `name`, `test` and `quick`) as the named
/// test's specification; `quick` scales it down. Errors name the key.
pub fn from_table(test: &str, table: toml::Table, quick: bool) -> Result<Spec, String> {
    match test {
        RrOptions::TEST => table_spec::<RrOptions>(table, quick),
        CrrOptions::TEST => table_spec::<CrrOptions>(table, quick),
        PingOptions::TEST => table_spec::<PingOptions>(table, quick),
        StreamOptions::TEST => table_spec::<StreamOptions>(table, quick),
        UdpMaxOptions::TEST => table_spec::<UdpMaxOptions>(table, quick),
        LoadOptions::TEST => table_spec::<LoadOptions>(table, quick),
        other => Err(format!("unknown test '{other}' ({})", TESTS.join(", "))),
    }
}

fn table_spec<O: Options>(table: toml::Table, quick: bool) -> Result<Spec, String> {
    let known = keys::<O>();
    if let Some(k) = table
        .keys()
        .find(|k| !known.contains(k) && !aliases::<O>().contains(&k.as_str()))
    {
        return Err(format!(
            "'{k}' does not apply to {} (its keys: {})",
            O::TEST,
            known.join(", ")
        ));
    }
    let mut o: O = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| e.message().replace('`', "'"))?;
    if quick {
        o.quick();
    }
    o.spec().map_err(|e| e.as_key())
}

/// Plan keys of the first plan format that still work (seconds had an
/// `_s` suffix there).
fn aliases<O: Options>() -> &'static [&'static str] {
    match O::TEST {
        StreamOptions::TEST => &["time_s", "interval_s", "omit_s"],
        UdpMaxOptions::TEST => &["trial_s", "duration_sum_s"],
        _ => &[],
    }
}

/// `v` seconds, finite, above 0 (or 0 when `zero_ok`), at most a day.
pub(crate) fn seconds(key: &'static str, v: f64, zero_ok: bool) -> Result<f64, SpecError> {
    if !v.is_finite() || v < 0.0 || (v == 0.0 && !zero_ok) || v > MAX_SECONDS {
        let least = if zero_ok { "0 or more" } else { "above 0" };
        return Err(SpecError::new(
            key,
            format!("{v}: expected seconds {least} and at most {MAX_SECONDS}"),
        ));
    }
    Ok(v)
}

/// `v`, at least 1.
pub(crate) fn at_least_one<T: Copy + PartialOrd + From<u8> + std::fmt::Display>(
    key: &'static str,
    v: T,
) -> Result<T, SpecError> {
    if v < T::from(1) {
        return Err(SpecError::new(key, format!("{v}: must be at least 1")));
    }
    Ok(v)
}

/// `v` within `lo..=hi`.
pub(crate) fn within<T: Copy + PartialOrd + std::fmt::Display>(
    key: &'static str,
    v: T,
    lo: T,
    hi: T,
) -> Result<T, SpecError> {
    if v < lo || v > hi {
        return Err(SpecError::new(key, format!("{v}: must be {lo} to {hi}")));
    }
    Ok(v)
}

/// `--quick` for a count: a tenth, at least 10, never more than given.
pub(crate) fn scale_count(n: u64) -> u64 {
    (n / 10).max(10).min(n)
}

/// A size given as a number of bytes (plan: `length = 64`) or a size
/// string (`length = "128K"`), kept as text for the one size parser.
pub(crate) fn size_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Size {
        Bytes(u64),
        Text(String),
    }
    Ok(Option::<Size>::deserialize(d)?.map(|s| match s {
        Size::Bytes(n) => n.to_string(),
        Size::Text(t) => t,
    }))
}

use serde::Deserialize as _;

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
    fn every_test_has_keys() {
        assert!(keys::<RrOptions>().contains(&"iterations".to_string()));
        assert!(keys::<StreamOptions>().contains(&"direction".to_string()));
        assert!(!keys::<LoadOptions>().contains(&"length".to_string()));
    }
}
