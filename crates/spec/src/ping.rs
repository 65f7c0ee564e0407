//! ping: UDP echo round trips with loss, order, payload checks and slow
//! answers (the UDP echo experiment). Its options, checks and run.

use super::common::{
    at_least_one, scale_count, stamp_params, within, ClockKind, Options, SpecError, StampKind, UDP_MAX, UDP_MIN,
};
use crate::time::{Micros, Millis};
use serde::Deserialize;
use stackmeter_results::PingParams;
use stackmeter_results::TestKind;

const SIZE: u32 = 64;
/// The default size with `--timestamps`: room for the stamp block.
const STAMPED_SIZE: u32 = stackmeter_proto::udp::STAMPED_MIN as u32;
const COUNT: u64 = 1000;
const WARMUP: u64 = 10;
const SLOW_US: u64 = 1000;
/// A datagram unanswered this long is lost.
const TIMEOUT_MS: u64 = 1000;

/// ping's flags and plan keys.
#[derive(clap::Args, Deserialize, Clone, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct PingOptions {
    /// Datagram size in bytes (UDP payload, the 40-byte stackmeter header included) [default: 64; 88 with --timestamps].
    #[arg(long)]
    pub size: Option<u32>,
    /// Timed datagrams.
    #[arg(long, short = 'c', default_value_t = COUNT)]
    pub count: u64,
    /// Untimed datagrams before the timed ones.
    #[arg(long, default_value_t = WARMUP)]
    pub warmup: u64,
    /// Microseconds between sends; 0 = back to back, one outstanding.
    #[arg(long, value_name = "US", default_value_t = Micros(0))]
    pub interval_us: Micros,
    /// Answers slower than this are counted and the first 10 listed.
    #[arg(long, value_name = "US", default_value_t = Micros(SLOW_US))]
    pub slow_us: Micros,
    /// A datagram with no answer after this is lost.
    #[arg(long, value_name = "MS", default_value_t = Millis(TIMEOUT_MS))]
    pub timeout_ms: Millis,
    /// Plain UDP echo server (RFC 862; default port 7): the client's own 24-byte header (sequence, send time)
    /// starts each datagram, and every reply must equal its request byte for byte.
    #[arg(long)]
    pub echo: bool,
    /// Split each round trip with kernel timestamps: software stamps (sw, the default) or the NIC's clock (hw). Needs datagrams of at least 88 bytes.
    #[arg(long, value_enum, value_name = "KIND", num_args = 0..=1, default_missing_value = "sw")]
    pub timestamps: Option<StampKind>,
    /// With --timestamps: how the two ends' clocks relate [default: same for an address of this host, else estimate].
    #[arg(long, value_enum)]
    pub clock: Option<ClockKind>,
    /// Time each round trip layer by layer from the kernel's tracepoints (Linux, root): device queues, drivers, receive backlogs, stacks, wake-ups and the responder's calls on this host, between the client's own clock reads. Runs the datagrams twice, untraced first, and prints the tracer's cost.
    #[arg(long)]
    pub layers: bool,
}

super::common::defaults_from_flags!(PingOptions);

impl Options for PingOptions {
    const KIND: TestKind = TestKind::Ping;

    type Params = PingParams;

    fn params(&self) -> Result<PingParams, SpecError> {
        let timestamps = stamp_params(self.timestamps, self.clock)?;
        if self.echo && self.layers {
            return Err(SpecError::new(
                "layers",
                "needs stackmeter's datagrams, whose sequence numbers the tracer reads (not with --echo)",
            ));
        }
        if self.echo && timestamps.is_some() {
            return Err(SpecError::new(
                "timestamps",
                "needs a stackmeter responder to carry its stamps (not with --echo)",
            ));
        }
        let size = match (self.size, &timestamps) {
            (Some(s), Some(_)) if s < STAMPED_SIZE => {
                return Err(SpecError::new(
                    "size",
                    format!("{s}: --timestamps needs datagrams of at least {STAMPED_SIZE} bytes (40-byte header + 48-byte stamp block)"),
                ))
            }
            (Some(s), _) => s,
            (None, Some(_)) => STAMPED_SIZE,
            (None, None) => SIZE,
        };
        Ok(PingParams {
            size: match self.echo {
                true => within(
                    "size",
                    size,
                    stackmeter_proto::limits::PLAIN_ECHO_HEADER_LEN as u32,
                    UDP_MAX,
                )?,
                false => within("size", size, UDP_MIN, UDP_MAX)?,
            } as usize,
            echo: self.echo,
            count: at_least_one("count", self.count)?,
            warmup: self.warmup,
            interval_us: self.interval_us.0,
            slow_us: self.slow_us.0,
            timeout_ms: self.timeout_ms.0,
            timestamps,
            layers: self.layers,
        })
    }

    fn quick(&mut self) {
        self.count = scale_count(self.count);
    }

    const ABOUT: &'static str =
        "UDP echo round trips: loss, order, payload checks, slow answers, time inside the responder";

    fn planned_seconds(p: &PingParams) -> Option<f64> {
        (p.interval_us > 0).then(|| (p.count + p.warmup) as f64 * p.interval_us as f64 / 1e6)
    }
}
