//! crr: connect, request, response, close, one connection per transaction
//! (the connection establish latency of a link's datasheet). Its options,
//! checks and run.

use super::common::{at_least_one, scale_count, Options, SpecError, TIMEOUT_MS};
use crate::time::Millis;
use serde::Deserialize;
use stackmeter_results::CrrParams;
use stackmeter_results::TestKind;

const ITERATIONS: u64 = 1000;
const WARMUP: u64 = 10;
const SIZE: &str = "1:1";

/// crr's flags and plan keys.
#[derive(clap::Args, Deserialize, Clone, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct CrrOptions {
    /// Timed connections.
    #[arg(long, short = 'n', default_value_t = ITERATIONS)]
    pub iterations: u64,
    /// Untimed connections before the timed ones.
    #[arg(long, default_value_t = WARMUP)]
    pub warmup: u64,
    /// REQUEST:RESPONSE bytes per connection.
    #[arg(long, value_name = "REQ:RESP", default_value = SIZE)]
    pub size: String,
    /// Bound on every network wait, connect included.
    #[arg(long, value_name = "MS", default_value_t = Millis(TIMEOUT_MS))]
    pub timeout_ms: Millis,
    /// Plain TCP echo server (RFC 862; default port 7): no session header, the response is the request
    /// (equal --size; default 1:1).
    #[arg(long)]
    pub echo: bool,
    /// Plain server with its own reply rule: no session header, send REQ bytes and read exactly RESP bytes
    /// (one pair). TARGET must name a port.
    #[arg(long, value_name = "REQ:RESP")]
    pub raw: Option<String>,
    /// With --echo or --raw: the first bytes of every request, hex (01, 0x01ff); the rest is the payload pattern.
    #[arg(long, value_name = "HEX")]
    pub request_prefix: Option<String>,
}

super::common::defaults_from_flags!(CrrOptions);

impl Options for CrrOptions {
    const KIND: TestKind = TestKind::Crr;

    type Params = CrrParams;

    fn params(&self) -> Result<CrrParams, SpecError> {
        let plain = super::plain::pairs(
            "size",
            &self.size,
            (SIZE, SIZE),
            self.echo,
            self.raw.as_deref(),
            self.request_prefix.as_deref(),
        )?;
        let pair = match plain.sizes[..] {
            [p] => p,
            _ => {
                let (key, v) = match &self.raw {
                    Some(r) => ("raw", r.as_str()),
                    None => ("size", self.size.as_str()),
                };
                return Err(SpecError::new(key, format!("{v}: crr takes one REQ:RESP pair")));
            }
        };
        Ok(CrrParams {
            echo: plain.echo,
            raw: plain.raw,
            request_prefix: plain.prefix,
            iterations: at_least_one("iterations", self.iterations)?,
            warmup: self.warmup,
            req_bytes: pair.req,
            resp_bytes: pair.resp,
            timeout_ms: self.timeout_ms.0,
        })
    }

    fn quick(&mut self) {
        self.iterations = scale_count(self.iterations);
    }

    const ABOUT: &'static str = "Connect latency and connect+request+response+close time";
}
