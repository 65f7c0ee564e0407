//! rr: request/response round trips per size pair (the latency grid),
//! closed loop (one outstanding) or open loop (`--rate`, latency from the
//! scheduled send time). Its options, checks and run.

use super::common::{at_least_one, scale_count, stamp_params, ClockKind, Options, SpecError, StampKind, TIMEOUT_MS};
use crate::time::{Millis, Secs};
use serde::Deserialize;
use stackmeter_results::TestKind;
use stackmeter_results::{OpenLoopParams, RrParams};

/// The latency grid (docs/scenarios.md): 1-byte requests with 1 KiB..1 MiB
/// replies, and back.
pub const GRID_SIZES: &str = "1:1K,1:10K,1:100K,1:1M,1K:1,10K:1,100K:1,1M:1";
const ITERATIONS: u64 = 100;
const WARMUP: u64 = 10;
const CONNECTIONS: u32 = 1;
const MAX_CONNECTIONS: u32 = 10_000;
const OPEN_LOOP_SECONDS: f64 = 10.0;
/// Most requests one open-loop schedule holds.
const MAX_SCHEDULE: f64 = 1e9;

/// How open-loop requests are spaced.
#[derive(clap::ValueEnum, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly spaced, connections staggered.
    #[default]
    Fixed,
    /// Poisson arrivals (exponential gaps).
    Poisson,
}

/// rr's flags and plan keys.
#[derive(clap::Args, Deserialize, Clone, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct RrOptions {
    /// Comma-separated REQUEST:RESPONSE byte sizes, one connection each (K = 1024, M = 1048576; KB and MB are refused: 1000 to some, 1024 to others).
    #[arg(long, value_name = "LIST", default_value = GRID_SIZES)]
    pub sizes: String,
    /// Timed transactions per size.
    #[arg(long, short = 'n', default_value_t = ITERATIONS)]
    pub iterations: u64,
    /// Untimed transactions per size before the timed ones.
    #[arg(long, default_value_t = WARMUP)]
    pub warmup: u64,
    /// Bound on every network wait.
    #[arg(long, value_name = "MS", default_value_t = Millis(TIMEOUT_MS))]
    pub timeout_ms: Millis,
    /// Open loop: send this many requests per second (all connections together) on a schedule, whatever the replies do.
    #[arg(long, value_name = "PER_S")]
    pub rate: Option<f64>,
    /// Open loop: connections the schedule's requests are dealt over, in turn.
    #[arg(long, value_name = "N", default_value_t = CONNECTIONS)]
    pub connections: u32,
    /// Open loop: seconds of schedule per size pair.
    #[arg(long, value_name = "S", default_value_t = Secs(OPEN_LOOP_SECONDS))]
    pub time: Secs,
    /// Open loop: evenly spaced sends, or Poisson arrivals.
    #[arg(long, value_enum, default_value_t = Arrival::Fixed)]
    pub arrival: Arrival,
    /// Plain TCP echo server (RFC 862; default port 7): no session header, the response is the request
    /// (equal sizes; default 1:1,64:64,1K:1K,64K:64K,1M:1M).
    #[arg(long)]
    pub echo: bool,
    /// Plain server with its own reply rule: no session header, send REQ bytes and read exactly RESP bytes
    /// (a list: one connection per pair). TARGET must name a port.
    #[arg(long, value_name = "REQ:RESP")]
    pub raw: Option<String>,
    /// With --echo or --raw: the first bytes of every request, hex (01, 0x01ff); the rest is the payload pattern.
    #[arg(long, value_name = "HEX")]
    pub request_prefix: Option<String>,
    /// Split each round trip with kernel timestamps: software stamps (sw, the default) or the NIC's clock (hw). Needs responses of at least 48 bytes (the stamp block); closed loop only.
    #[arg(long, value_enum, value_name = "KIND", num_args = 0..=1, default_missing_value = "sw")]
    pub timestamps: Option<StampKind>,
    /// With --timestamps: how the two ends' clocks relate [default: same for an address of this host, else estimate].
    #[arg(long, value_enum)]
    pub clock: Option<ClockKind>,
    /// Time each transaction layer by layer from the kernel's tracepoints (Linux, root; closed loop): device queues, drivers, stacks, wake-ups, the responder's read and write, between the client's own clock reads. Runs twice, untraced first, and prints the tracer's cost.
    #[arg(long)]
    pub layers: bool,
}

super::common::defaults_from_flags!(RrOptions);

impl Options for RrOptions {
    const KIND: TestKind = TestKind::Rr;

    type Params = RrParams;

    fn params(&self) -> Result<RrParams, SpecError> {
        let plain = super::plain::pairs(
            "sizes",
            &self.sizes,
            (GRID_SIZES, super::plain::ECHO_SIZES),
            self.echo,
            self.raw.as_deref(),
            self.request_prefix.as_deref(),
        )?;
        if (plain.echo || plain.raw) && self.rate.is_some() {
            return Err(SpecError::new(
                "rate",
                "the open loop needs a stackmeter responder (not with --echo or --raw)",
            ));
        }
        let sizes = plain.sizes;
        let timestamps = stamp_params(self.timestamps, self.clock)?;
        let open_loop = self.open_loop()?;
        if timestamps.is_some() {
            if plain.echo || plain.raw {
                return Err(SpecError::new(
                    "timestamps",
                    "needs a stackmeter responder to carry its stamps (not with --echo or --raw)",
                ));
            }
            if open_loop.is_some() {
                return Err(SpecError::new(
                    "timestamps",
                    "splits closed-loop round trips only: leave out --rate",
                ));
            }
            let min = stackmeter_proto::stamps::BLOCK_LEN as u32;
            if let Some(p) = sizes.iter().find(|p| p.resp < min) {
                return Err(SpecError::new(
                    "sizes",
                    format!(
                        "{}:{}: --timestamps needs responses of at least {min} bytes (the stamp block), e.g. --sizes 1:64",
                        p.req, p.resp
                    ),
                ));
            }
        }
        if self.layers && (open_loop.is_some() || timestamps.is_some()) {
            return Err(SpecError::new(
                "layers",
                "traces the closed loop without --timestamps: leave out --rate and --timestamps",
            ));
        }
        Ok(RrParams {
            layers: self.layers,
            open_loop,
            timestamps,
            sizes,
            echo: plain.echo,
            raw: plain.raw,
            request_prefix: plain.prefix,
            iterations: at_least_one("iterations", self.iterations)?,
            warmup: self.warmup,
            nodelay: true,
            timeout_ms: self.timeout_ms.0,
        })
    }

    fn quick(&mut self) {
        self.iterations = scale_count(self.iterations);
        if self.rate.is_some() {
            self.time.0 = (self.time.0 / 10.0).max(1.0).min(self.time.0);
        }
    }

    const ABOUT: &'static str = "Request/response latency over TCP for a grid of request and response sizes";

    fn planned_seconds(p: &RrParams) -> Option<f64> {
        p.open_loop.as_ref().map(|o| o.time_s * p.sizes.len() as f64)
    }

    fn descriptors(p: &RrParams) -> usize {
        p.open_loop.as_ref().map_or(0, |o| 2 * o.connections as usize)
    }
}

impl RrOptions {
    /// The open-loop schedule, or `None` for the closed loop.
    fn open_loop(&self) -> Result<Option<OpenLoopParams>, SpecError> {
        let Some(rate) = self.rate else {
            let defaults = RrOptions::default();
            if self.time != defaults.time
                || self.connections != defaults.connections
                || self.arrival != defaults.arrival
            {
                return Err(SpecError::new(
                    "rate",
                    "missing: time, connections and arrival belong to the open loop: give --rate too",
                ));
            }
            return Ok(None);
        };
        if !(rate.is_finite() && rate > 0.0) {
            return Err(SpecError::new(
                "rate",
                format!("{rate}: must be a positive number of requests per second"),
            ));
        }
        let time = super::common::seconds("time", self.time.0, false)?;
        let connections = super::common::within("connections", self.connections, 1, MAX_CONNECTIONS)?;
        if rate * time < connections as f64 {
            return Err(SpecError::new(
                "rate",
                format!("{rate} for {time} s is fewer requests than {connections} connections"),
            ));
        }
        if rate * time > MAX_SCHEDULE {
            return Err(SpecError::new(
                "rate",
                format!("{rate} for {time} s: more than 10^9 requests"),
            ));
        }
        Ok(Some(OpenLoopParams {
            rate,
            connections,
            time_s: time,
            arrival: match self.arrival {
                Arrival::Fixed => "fixed",
                Arrival::Poisson => "poisson",
            }
            .into(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_loop_needs_a_rate() {
        let o = RrOptions {
            time: crate::time::Secs(1.0),
            ..RrOptions::default()
        };
        assert!(o.params().unwrap_err().to_string().contains("give --rate too"));
        let o = RrOptions {
            rate: Some(0.0),
            ..RrOptions::default()
        };
        assert!(o.params().unwrap_err().to_string().starts_with("--rate 0"));
        let o = RrOptions {
            rate: Some(1000.0),
            connections: 4,
            ..RrOptions::default()
        };
        let p = o.params().unwrap();
        assert_eq!(p.open_loop.unwrap().connections, 4);
    }
}
