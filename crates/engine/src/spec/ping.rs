//! ping: UDP echo round trips with loss, order, payload checks and slow
//! answers (seed 004). Its options, checks and run.

use super::common::{at_least_one, scale_count, within, Options, Ran, SpecError, UDP_MAX, UDP_MIN};
use serde::Deserialize;
use stackmeter_results::{Body, PingParams};
use std::net::SocketAddr;

const SIZE: u32 = 64;
const COUNT: u64 = 1000;
const WARMUP: u64 = 10;
const SLOW_US: u64 = 1000;
/// A datagram unanswered this long is lost.
const TIMEOUT_MS: u64 = 1000;

/// ping's flags and plan keys.
#[derive(clap::Args, Deserialize, Clone, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct PingOptions {
    /// Datagram size in bytes (UDP payload, the 40-byte stackmeter header included).
    #[arg(long, default_value_t = SIZE)]
    pub size: u32,
    /// Timed datagrams.
    #[arg(long, short = 'c', default_value_t = COUNT)]
    pub count: u64,
    /// Untimed datagrams before the timed ones.
    #[arg(long, default_value_t = WARMUP)]
    pub warmup: u64,
    /// Microseconds between sends; 0 = back to back, one outstanding.
    #[arg(long, value_name = "US", default_value_t = 0)]
    pub interval_us: u64,
    /// Answers slower than this are counted and the first 10 listed.
    #[arg(long, value_name = "US", default_value_t = SLOW_US)]
    pub slow_us: u64,
    /// A datagram with no answer after this is lost.
    #[arg(long, value_name = "MS", default_value_t = TIMEOUT_MS)]
    pub timeout_ms: u64,
    /// Plain UDP echo server (RFC 862; default port 7): the client's own 24-byte header (sequence, send time)
    /// starts each datagram, and every reply must equal its request byte for byte.
    #[arg(long)]
    pub echo: bool,
}

super::common::defaults_from_flags!(PingOptions);

impl Options for PingOptions {
    const TEST: &'static str = "ping";

    type Params = PingParams;

    fn params(&self) -> Result<PingParams, SpecError> {
        Ok(PingParams {
            size: match self.echo {
                true => within("size", self.size, stackmeter_client::ECHO_HEADER_LEN as u32, UDP_MAX)?,
                false => within("size", self.size, UDP_MIN, UDP_MAX)?,
            } as usize,
            echo: self.echo,
            count: at_least_one("count", self.count)?,
            warmup: self.warmup,
            interval_us: self.interval_us,
            slow_us: self.slow_us,
            timeout_ms: self.timeout_ms,
        })
    }

    fn quick(&mut self) {
        self.count = scale_count(self.count);
    }
}

/// Runs ping against `addr`.
pub(crate) fn run(p: &PingParams, addr: SocketAddr) -> Ran {
    Ran::rows(stackmeter_client::ping(addr, p), |results| Body::Ping {
        params: p.clone(),
        results,
    })
}
