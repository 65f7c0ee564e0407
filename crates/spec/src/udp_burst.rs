//! udp-burst: bursts of back-to-back UDP datagrams, the largest a target
//! answers whole (an embedded stack's packet pool). Its options, checks
//! and run.

use super::common::{at_least_one, scale_count, within, Options, SpecError, UDP_MAX, UDP_MIN};
use crate::time::Millis;
use serde::Deserialize;
use stackmeter_results::{TestKind, UdpBurstParams};

const SIZE: u32 = 64;
const BURSTS: &str = "1,2,4,8,16,32,64";
const ROUNDS: u64 = 20;
const WARMUP: u64 = 5;
/// A reply this late after its burst's last send is lost.
const TIMEOUT_MS: u64 = 200;
/// The largest burst: more than any small stack's receive pool. The
/// client's socket queues the replies while it sends; past a few hundred
/// small ones that needs net.core.rmem_max raised (its drops are counted).
const MAX_BURST: u32 = 1024;

/// udp-burst's flags and plan keys.
#[derive(clap::Args, Deserialize, Clone, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct UdpBurstOptions {
    /// Datagram size in bytes (UDP payload, the 40-byte stackmeter header included).
    #[arg(long, default_value_t = SIZE)]
    pub size: u32,
    /// Burst sizes to run, in order: datagrams sent back to back, comma-separated.
    #[arg(long, value_name = "N,N,...", default_value = BURSTS)]
    pub bursts: String,
    /// Rounds per burst size; each sends one burst and waits for its replies.
    #[arg(long, short = 'n', default_value_t = ROUNDS)]
    pub rounds: u64,
    /// Untimed single round trips before the first burst.
    #[arg(long, default_value_t = WARMUP)]
    pub warmup: u64,
    /// A reply not back this long after its burst's last send is lost.
    #[arg(long, value_name = "MS", default_value_t = Millis(TIMEOUT_MS))]
    pub timeout_ms: Millis,
}

super::common::defaults_from_flags!(UdpBurstOptions);

impl Options for UdpBurstOptions {
    const KIND: TestKind = TestKind::UdpBurst;

    type Params = UdpBurstParams;

    fn params(&self) -> Result<UdpBurstParams, SpecError> {
        let bursts = self
            .bursts
            .split(',')
            .map(|b| match b.trim().parse::<u32>() {
                Ok(n) if (1..=MAX_BURST).contains(&n) => Ok(n),
                _ => Err(SpecError::new(
                    "bursts",
                    format!(
                        "{}: '{}' is not a burst of 1 to {MAX_BURST} datagrams",
                        self.bursts,
                        b.trim()
                    ),
                )),
            })
            .collect::<Result<Vec<u32>, SpecError>>()?;
        Ok(UdpBurstParams {
            size: within("size", self.size, UDP_MIN, UDP_MAX)?,
            bursts,
            rounds: at_least_one("rounds", self.rounds)?,
            warmup: self.warmup,
            timeout_ms: within("timeout_ms", self.timeout_ms.0, 1, 60_000)?,
        })
    }

    fn quick(&mut self) {
        self.rounds = scale_count(self.rounds);
    }

    const ABOUT: &'static str =
        "Bursts of back-to-back UDP datagrams: how many of each the target answers, and the largest it answers whole";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_are_checked_one_by_one() {
        let o = UdpBurstOptions {
            bursts: "1, 8,2000".into(),
            ..Default::default()
        };
        let e = o.params().unwrap_err();
        assert_eq!(
            e.to_string(),
            "--bursts 1, 8,2000: '2000' is not a burst of 1 to 1024 datagrams"
        );
        let p = UdpBurstOptions::default().params().unwrap();
        assert_eq!((p.size, p.bursts.len(), p.rounds), (64, 7, 20));
        let o = UdpBurstOptions {
            size: 39,
            ..Default::default()
        };
        assert!(o.params().unwrap_err().to_string().starts_with("--size 39"));
    }
}
