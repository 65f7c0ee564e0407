//! rrul: latency under load (flent's RRUL test; crusader): phases of TCP
//! load with UDP latency probes through them. Its options, checks and run.

use super::common::{seconds, within, Options, SpecError, UDP_MAX, UDP_MIN};
use crate::time::{FracMillis, Millis, Secs};
use serde::Deserialize;
use stackmeter_results::RrulParams;
use stackmeter_results::TestKind;

const PHASES: &str = "idle,down,up,bidir,idle";
const PHASE_TIME: f64 = 5.0;
const PARALLEL: u32 = 4;
const LENGTH: &str = "128K";
const PROBE_INTERVAL_MS: f64 = 10.0;
const PROBE_SIZE: u32 = 64;
/// A probe unanswered this long is lost.
const TIMEOUT_MS: u64 = 1000;
/// Most phases one test runs.
const MAX_PHASES: usize = 64;
/// Most TCP streams per loaded direction.
const MAX_PARALLEL: u32 = 256;

/// Where the one-way delays' clock offset comes from.
#[derive(clap::ValueEnum, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ClockArg {
    /// synced on loopback (the responder stamps this host's monotonic
    /// clock), estimate otherwise.
    #[default]
    Auto,
    /// From the lowest-RTT probes of the first and the last idle phase
    /// (offset and drift), with the error bound stated.
    Estimate,
    /// Trust both clocks (one host, or both disciplined by PTP): no
    /// estimate.
    Synced,
}

/// rrul's flags and plan keys.
#[derive(clap::Args, Deserialize, Clone, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct RrulOptions {
    /// Phases in order, comma-separated: idle, down, up, bidir.
    #[arg(long, value_name = "LIST", default_value = PHASES)]
    pub phases: String,
    /// Seconds per phase.
    #[arg(long, value_name = "S", default_value_t = Secs(PHASE_TIME))]
    pub phase_time: Secs,
    /// TCP streams per loaded direction.
    #[arg(long, short = 'P', default_value_t = PARALLEL)]
    pub parallel: u32,
    /// Bytes per write of the load streams (K = 1024).
    #[arg(long, short = 'l', value_name = "SIZE", default_value = LENGTH)]
    #[serde(deserialize_with = "size_or_text")]
    pub length: String,
    /// Milliseconds between UDP latency probes.
    #[arg(long, value_name = "MS", default_value_t = FracMillis(PROBE_INTERVAL_MS))]
    pub probe_interval_ms: FracMillis,
    /// UDP probe size in bytes (the 40-byte header included).
    #[arg(long, value_name = "BYTES", default_value_t = PROBE_SIZE)]
    pub probe_size: u32,
    /// Also probe with 1-byte TCP request/response on its own connection.
    #[arg(long)]
    pub tcp_probe: bool,
    /// Clock offset for one-way delays: estimate (from idle probes), synced (trusted), auto (synced on loopback).
    #[arg(long, value_enum, default_value_t = ClockArg::Auto)]
    pub clock: ClockArg,
    /// A probe with no answer after this is lost; also bounds every network wait.
    #[arg(long, value_name = "MS", default_value_t = Millis(TIMEOUT_MS))]
    pub timeout_ms: Millis,
}

fn size_or_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(super::common::size_text(d)?.unwrap_or_else(|| LENGTH.into()))
}

super::common::defaults_from_flags!(RrulOptions);

impl Options for RrulOptions {
    const KIND: TestKind = TestKind::Rrul;

    type Params = RrulParams;

    fn params(&self) -> Result<RrulParams, SpecError> {
        let phases: Vec<String> = self.phases.split(',').map(|s| s.trim().to_string()).collect();
        if let Some(bad) = phases
            .iter()
            .find(|p| !["idle", "down", "up", "bidir"].contains(&p.as_str()))
        {
            return Err(SpecError::new(
                "phases",
                format!("'{bad}': each phase is idle, down, up or bidir"),
            ));
        }
        if phases.len() > MAX_PHASES {
            return Err(SpecError::new(
                "phases",
                format!("{}: at most {MAX_PHASES} phases", phases.len()),
            ));
        }
        let phase_s = seconds("phase_time", self.phase_time.0, false)?;
        let interval = self.probe_interval_ms.0;
        if !(interval.is_finite() && (0.1..=10_000.0).contains(&interval)) {
            return Err(SpecError::new(
                "probe_interval_ms",
                format!("{interval}: expected 0.1 to 10000 milliseconds"),
            ));
        }
        if phase_s * phases.len() as f64 * 1e3 / interval > 10_000_000.0 {
            return Err(SpecError::new(
                "probe_interval_ms",
                format!("{interval}: more than 10^7 probes"),
            ));
        }
        Ok(RrulParams {
            phases,
            phase_s,
            parallel: within("parallel", self.parallel, 1, MAX_PARALLEL)?,
            length: crate::sizes::size(&self.length).map_err(|e| SpecError::new("length", e.to_string()))?,
            probe_interval_ms: interval,
            probe_size: within("probe_size", self.probe_size, UDP_MIN, UDP_MAX)? as usize,
            tcp_probe: self.tcp_probe,
            clock: match self.clock {
                ClockArg::Auto => "auto",
                ClockArg::Estimate => "estimate",
                ClockArg::Synced => "synced",
            }
            .into(),
            timeout_ms: self.timeout_ms.0.max(1),
        })
    }

    fn quick(&mut self) {
        self.phase_time.0 = (self.phase_time.0 / 5.0).max(1.0).min(self.phase_time.0);
    }

    const ABOUT: &'static str = "Latency under load (RRUL): phases of TCP load (idle, down, up, both) with latency probes through them, one-way delays, and the latency each phase induces over idle";

    fn planned_seconds(p: &RrulParams) -> Option<f64> {
        Some(p.phase_s * p.phases.len() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_and_probes_are_checked() {
        let o = RrulOptions {
            phases: "idle,storm".into(),
            ..RrulOptions::default()
        };
        assert_eq!(
            o.params().unwrap_err().to_string(),
            "--phases 'storm': each phase is idle, down, up or bidir"
        );
        let o = RrulOptions {
            probe_interval_ms: crate::time::FracMillis(0.0),
            ..RrulOptions::default()
        };
        assert!(o.params().unwrap_err().to_string().starts_with("--probe-interval-ms 0"));
        let p = RrulOptions::default().params().unwrap();
        assert_eq!(p.phases, ["idle", "down", "up", "bidir", "idle"]);
        assert_eq!((p.parallel, p.length, p.probe_size), (4, 128 << 10, 64));
    }
}
