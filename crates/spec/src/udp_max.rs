//! udp-max: the highest UDP rate whose loss stays at or under a goal,
//! MLRsearch-style (a link datasheet's UDP throughput at 0% loss). Its
//! options, checks and run.

use super::common::{seconds, Options, SpecError, TIMEOUT_MS, UDP_MAX, UDP_MIN};
use crate::time::{Millis, Secs};
use serde::Deserialize;
use stackmeter_results::TestKind;
use stackmeter_results::UdpMaxParams;

const LENGTH: &str = "1472";
const TRIAL: f64 = 1.0;
/// FD.io CSIT uses 21 s per load; 3 s keeps a search near a minute.
const DURATION_SUM: f64 = 3.0;
const WIDTH: f64 = 0.01;
const DRAIN_MS: u64 = 100;
/// A queue of 50 ms hides at most 0.5% of excess load from a 10 s trial.
const FINAL_TRIAL: f64 = 10.0;
const MAX_TRIALS: u32 = 200;
/// A load is classified by a duration-weighted vote with this exceed ratio.
const EXCEED_RATIO: f64 = 0.5;

/// udp-max's flags and plan keys.
#[derive(clap::Args, Deserialize, Clone, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct UdpMaxOptions {
    /// Datagram size in bytes (UDP payload, the 40-byte stackmeter header included).
    #[arg(long, short = 'l', value_name = "SIZE", default_value = LENGTH)]
    #[serde(deserialize_with = "super::common::size_text")]
    pub length: Option<String>,
    /// Highest loss ratio that still passes (0 = no loss at all; 0.001 = 0.1%).
    #[arg(long, value_name = "RATIO", default_value_t = 0.0)]
    pub loss: f64,
    /// Seconds per trial.
    #[arg(long, value_name = "S", default_value_t = Secs(TRIAL))]
    #[serde(alias = "trial_s")]
    pub trial: Secs,
    /// Trial seconds per load before it is classified (FD.io CSIT uses 21).
    #[arg(long, value_name = "S", default_value_t = Secs(DURATION_SUM))]
    #[serde(alias = "duration_sum_s")]
    pub duration_sum: Secs,
    /// Relative width at which the search stops: (upper - lower) / upper.
    #[arg(long, value_name = "RATIO", default_value_t = WIDTH)]
    pub width: f64,
    /// Highest load to try (bits/s or packets/s as for stream --rate). Default: as fast as the client sends.
    #[arg(long, value_name = "RATE")]
    pub max_rate: Option<String>,
    /// Seconds of a final trial at the answer (MLRsearch's final trial duration): a queue on the path
    /// can hide excess load from short trials, not from a long one; if it fails, the search goes on
    /// below it. 0: none.
    #[arg(long, value_name = "S", default_value_t = Secs(FINAL_TRIAL))]
    pub final_trial: Secs,
    /// Wait after each trial for datagrams still in flight.
    #[arg(long, value_name = "MS", default_value_t = Millis(DRAIN_MS))]
    pub drain_ms: Millis,
    /// Stop after this many trials, converged or not.
    #[arg(long, default_value_t = MAX_TRIALS)]
    pub max_trials: u32,
    /// Datagrams per send call (UDP GSO where the kernel has it, else sendmmsg); 1 = one send() per
    /// datagram, for user-space stacks without them.
    #[arg(long, value_name = "N", default_value_t = super::common::UDP_BATCH)]
    pub udp_batch: u32,
    /// Bound on every network wait.
    #[arg(long, value_name = "MS", default_value_t = Millis(TIMEOUT_MS))]
    pub timeout_ms: Millis,
}

super::common::defaults_from_flags!(UdpMaxOptions);

impl Options for UdpMaxOptions {
    const KIND: TestKind = TestKind::UdpMax;

    type Params = UdpMaxParams;

    fn params(&self) -> Result<UdpMaxParams, SpecError> {
        let length = crate::sizes::size(self.length.as_deref().unwrap_or(LENGTH))
            .map_err(|e| SpecError::new("length", e.to_string()))?;
        let length = super::common::within("length", length, UDP_MIN, UDP_MAX)?;
        if !(0.0..1.0).contains(&self.loss) {
            return Err(SpecError::new(
                "loss",
                format!("{}: a ratio from 0 up to (not including) 1", self.loss),
            ));
        }
        if !(self.width > 0.0 && self.width < 1.0) {
            return Err(SpecError::new(
                "width",
                format!("{}: a ratio between 0 and 1", self.width),
            ));
        }
        let trial_s = seconds("trial", self.trial.0, false)?;
        let duration_sum_s = seconds("duration_sum", self.duration_sum.0, false)?;
        if duration_sum_s < trial_s {
            return Err(SpecError::new(
                "duration_sum",
                format!("{duration_sum_s} is shorter than one trial ({trial_s} s)"),
            ));
        }
        let max_pps = match &self.max_rate {
            Some(r) => Some(
                crate::rate::rate(r)
                    .map_err(|e| SpecError::new("max_rate", e.to_string()))?
                    .pps(length),
            ),
            None => None,
        };
        Ok(UdpMaxParams {
            length,
            loss_goal: self.loss,
            trial_s,
            duration_sum_s,
            exceed_ratio: EXCEED_RATIO,
            width: self.width,
            max_pps,
            drain_ms: self.drain_ms.0,
            timeout_ms: self.timeout_ms.0,
            max_trials: super::common::at_least_one("max_trials", self.max_trials)?,
            final_trial_s: seconds("final_trial", self.final_trial.0, true)?,
            batch: super::common::udp_batch(self.udp_batch)?,
        })
    }

    fn quick(&mut self) {
        self.trial.0 = (self.trial.0 / 5.0).max(0.2);
        self.duration_sum.0 = (self.duration_sum.0 / 5.0).max(self.trial.0);
        self.width = self.width.max(0.1);
        self.final_trial.0 = self.final_trial.0.min(1.0);
    }

    const ABOUT: &'static str = "Highest UDP rate whose loss stays at or under a goal (MLRsearch-style trials)";

    const ALIASES: &'static [&'static str] = &["trial_s", "duration_sum_s"];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_name_their_flag() {
        let o = UdpMaxOptions {
            loss: 1.5,
            ..UdpMaxOptions::default()
        };
        assert!(o.params().unwrap_err().to_string().starts_with("--loss 1.5"));
        let o = UdpMaxOptions {
            trial: crate::time::Secs(2.0),
            duration_sum: crate::time::Secs(1.0),
            ..UdpMaxOptions::default()
        };
        assert!(o
            .params()
            .unwrap_err()
            .to_string()
            .starts_with("--duration-sum 1 is shorter"));
    }
}
