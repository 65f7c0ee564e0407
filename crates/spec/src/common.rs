//! What every test's specification shares: the options trait, the error a
//! setting gives, and the checks and defaults several tests use.

use serde::de::DeserializeOwned;
use serde::Deserialize as _;
use stackmeter_results::TestKind;

/// Bound on every network wait unless a test says otherwise, ms.
pub const TIMEOUT_MS: u64 = 5_000;
/// Smallest UDP datagram a test sends: the 40-byte stackmeter header.
pub const UDP_MIN: u32 = stackmeter_proto::udp::HEADER_LEN as u32;
/// Largest UDP payload over IPv4.
pub const UDP_MAX: u32 = 65_507;
/// UDP datagrams per send call by default (GSO or sendmmsg).
pub const UDP_BATCH: u32 = 32;

/// `--udp-batch`: 1 to 64 (the most one UDP GSO send carries).
pub(crate) fn udp_batch(n: u32) -> Result<u32, SpecError> {
    within("udp_batch", n, 1, stackmeter_sys::batch::GSO_MAX_SEGMENTS as u32)
}

/// Longest duration any setting takes, seconds (a day).
pub const MAX_SECONDS: f64 = 86_400.0;

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

/// The options of one test: flags and plan keys in one struct, and what
/// a test's specification says of itself before it runs.
pub trait Options: clap::Args + DeserializeOwned + Default {
    /// Which test these options are of (its name in plans and on the command line).
    const KIND: TestKind;
    /// Its subcommand's help line.
    const ABOUT: &'static str;
    /// Plan keys of the first plan format that still work (seconds had an
    /// `_s` suffix there).
    const ALIASES: &'static [&'static str] = &[];
    /// Its workers pin themselves: the measuring thread only checks
    /// `--affinity` and stays off their CPU's queue.
    const PINS_ITS_WORKERS: bool = false;
    /// The checked parameters (what the client runs and the document records).
    type Params;
    /// Checks every setting and builds the parameters.
    fn params(&self) -> Result<Self::Params, SpecError>;
    /// Scales counts and durations down for `--quick` (demos, CI).
    fn quick(&mut self);

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

/// `impl Default` for an options struct: every setting at its flag's
/// default ([`clap_defaults`]).
macro_rules! defaults_from_flags {
    ($t:ty) => {
        impl Default for $t {
            fn default() -> Self {
                super::common::clap_defaults()
            }
        }
    };
}
pub(crate) use defaults_from_flags;

/// Options with every setting at its flag's default: the defaults are
/// written once, in the `#[arg]` attributes, and a plan step's missing keys
/// take them from here.
pub(crate) fn clap_defaults<O: clap::Args + clap::FromArgMatches>() -> O {
    let cmd = O::augment_args(clap::Command::new("defaults").no_binary_name(true));
    // Cannot fail: no option of a test is required, and defaults parse.
    let m = cmd
        .try_get_matches_from(std::iter::empty::<&str>())
        .expect("every option has a default");
    O::from_arg_matches(&m).expect("defaults convert")
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

/// `--timestamps [KIND]`: which kernel timestamps split the round trip.
#[derive(clap::ValueEnum, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StampKind {
    /// The kernel's software stamps (the default).
    #[value(alias = "software")]
    #[serde(alias = "software")]
    Sw,
    /// The NIC's clock; an error when the interface has none.
    #[value(alias = "hardware")]
    #[serde(alias = "hardware")]
    Hw,
}

/// `--clock`: how the client's and the responder's clocks relate.
#[derive(clap::ValueEnum, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ClockKind {
    /// One host, one clock.
    Same,
    /// Synchronised clocks (PTP), or one clock seen from two namespaces.
    Synced,
    /// Estimate the offset from the stamps (NTP-style).
    Estimate,
}

/// The clock method still to be chosen from the target (`--clock` not
/// given): `same` for an address of this host, else `estimate`.
pub const CLOCK_AUTO: &str = "auto";

/// The stamp parameters of `--timestamps`/`--clock`, or `None` without
/// `--timestamps` (then `--clock` is an error).
pub(crate) fn stamp_params(
    ts: Option<StampKind>,
    clock: Option<ClockKind>,
) -> Result<Option<stackmeter_results::StampParams>, SpecError> {
    let Some(kind) = ts else {
        if clock.is_some() {
            return Err(SpecError::new(
                "clock",
                "belongs to --timestamps: give --timestamps too",
            ));
        }
        return Ok(None);
    };
    Ok(Some(stackmeter_results::StampParams {
        kind: match kind {
            StampKind::Sw => "software",
            StampKind::Hw => "hardware",
        }
        .into(),
        clock: match clock {
            None => CLOCK_AUTO,
            Some(ClockKind::Same) => "same",
            Some(ClockKind::Synced) => "synced",
            Some(ClockKind::Estimate) => "estimate",
        }
        .into(),
    }))
}
