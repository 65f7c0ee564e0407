//! stream: TCP up, down or both ways, or paced UDP, per interval and in
//! total (the bps tool's table). Its options, checks and run.

use super::common::{seconds, within, Options, SpecError, TIMEOUT_MS, UDP_MAX, UDP_MIN};
use crate::time::{Millis, Secs};
use serde::Deserialize;
use stackmeter_results::TestKind;
use stackmeter_results::{Flow, StreamParams};

const TCP_LENGTH: u32 = 128 << 10;
const UDP_LENGTH: u32 = 1472;
const TIME: f64 = 10.0;
const INTERVAL: f64 = 1.0;
const UDP_RATE: &str = "10M";
/// Most connections per direction. Each is a session on the responder,
/// and every responder holds at least `limits::MAX_SESSIONS` (1024) with
/// the control session; the
/// client carries them on one thread per CPU (client/flows.rs).
const MAX_PARALLEL: u32 = 1000;
/// Most interval rows one test prints.
const MAX_INTERVALS: f64 = 100_000.0;

/// Which way the data flows.
#[derive(clap::ValueEnum, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Way {
    /// Client to target.
    #[default]
    Up,
    /// Target to client.
    Down,
    /// Both at once.
    Bidir,
}

/// When the data connections set TCP_NODELAY.
#[derive(clap::ValueEnum, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Nodelay {
    /// On for writes of 16K and more (Nagle would only hold each write's
    /// last partial segment), off below (Nagle coalesces small writes, as
    /// in iperf3).
    #[default]
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

/// stream's flags and plan keys.
#[derive(clap::Args, Deserialize, Clone, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct StreamOptions {
    /// up = client to target, down = target to client, bidir = both at once.
    #[arg(long, value_enum, default_value_t = Way::Up)]
    pub direction: Way,
    /// Connections (or UDP sockets) per direction.
    #[arg(long, short = 'P', default_value_t = 1)]
    pub parallel: u32,
    /// Bytes per send call, and per receive; the "message" of kpps. UDP: datagram size, header included.
    /// Default 128K for TCP, 1472 for UDP.
    #[arg(long, short = 'l', value_name = "SIZE")]
    #[serde(deserialize_with = "super::common::size_text")]
    pub length: Option<String>,
    /// Seconds measured (after --omit).
    #[arg(long, short = 't', value_name = "S", default_value_t = Secs(TIME))]
    #[serde(alias = "time_s")]
    pub time: Secs,
    /// Seconds per interval row.
    #[arg(long, short = 'i', value_name = "S", default_value_t = Secs(INTERVAL))]
    #[serde(alias = "interval_s")]
    pub interval: Secs,
    /// Seconds at the start shown but left out of the summary (TCP slow start).
    #[arg(long, short = 'O', value_name = "S", default_value_t = Secs(0.0))]
    #[serde(alias = "omit_s")]
    pub omit: Secs,
    /// Paced UDP, client to target, instead of TCP.
    #[arg(long, short = 'u')]
    pub udp: bool,
    /// UDP offered rate, all sockets together: bits/s (200M, 1.5G) or packets/s (50kpps, 2Mpps).
    /// Default 10M.
    #[arg(long, short = 'b', value_name = "RATE")]
    pub rate: Option<String>,
    /// MSG_ZEROCOPY on the client's TCP sends (Linux).
    #[arg(long)]
    pub zerocopy: bool,
    /// TCP_NODELAY on the data connections.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = Nodelay::Auto)]
    pub nodelay: Nodelay,
    /// UDP: datagrams per send call (UDP GSO where the kernel has it, else sendmmsg); 1 = one send() per
    /// datagram, for user-space stacks without them.
    #[arg(long, value_name = "N", default_value_t = super::common::UDP_BATCH)]
    pub udp_batch: u32,
    /// Bound on every network wait.
    #[arg(long, value_name = "MS", default_value_t = Millis(TIMEOUT_MS))]
    pub timeout_ms: Millis,
    /// Plain TCP discard server (RFC 863; default port 9): TCP up, no control session; the client counts what it
    /// sent and what the target's TCP acknowledged.
    #[arg(long)]
    pub discard: bool,
    /// iperf 2 server (iperf -s, lwIP's lwiperf, Zephyr's zperf; default port 5001): TCP up, each connection opened
    /// with iperf 2's settings header; the client counts what it sent. With --udp: iperf 2 datagrams, and the server's
    /// report at the end.
    #[arg(long)]
    pub iperf2: bool,
}

super::common::defaults_from_flags!(StreamOptions);

impl Options for StreamOptions {
    const KIND: TestKind = TestKind::Stream;

    type Params = StreamParams;

    fn params(&self) -> Result<StreamParams, SpecError> {
        let direction = match self.direction {
            Way::Up => Flow::Up,
            Way::Down => Flow::Down,
            Way::Bidir => Flow::Bidir,
        };
        self.plain_checks(direction)?;
        if self.udp && direction != Flow::Up {
            return Err(SpecError::new(
                "direction",
                format!(
                    "{}: UDP streams go client to target only (a responder never sends unasked UDP; see docs/tests.md)",
                    direction.name()
                ),
            ));
        }
        if self.udp && self.zerocopy {
            return Err(SpecError::new("zerocopy", "applies to TCP streams only"));
        }
        if !self.udp && self.rate.is_some() {
            return Err(SpecError::new(
                "rate",
                "applies to UDP streams only (--udp; in a plan, udp = true)",
            ));
        }
        let rate = self.rate.as_deref().unwrap_or(UDP_RATE);
        let length = match &self.length {
            Some(l) => crate::sizes::size(l).map_err(|e| SpecError::new("length", e.to_string()))?,
            None if self.udp => UDP_LENGTH,
            None => TCP_LENGTH,
        };
        let parallel = if self.udp {
            let streams = stackmeter_proto::limits::MAX_UDP_STREAMS as u32;
            within("parallel", self.parallel, 1, streams).map_err(|e| SpecError {
                message: format!("{} (UDP streams per test, docs/protocol.md section 5)", e.message),
                ..e
            })?
        } else {
            within("parallel", self.parallel, 1, MAX_PARALLEL)?
        };
        let sessions = stackmeter_proto::limits::MAX_SESSIONS as u32;
        if direction == Flow::Bidir && 2 * parallel >= sessions {
            return Err(SpecError::new(
                "parallel",
                format!(
                    "{parallel} both ways is {} data sessions and a control session; a responder holds {sessions} (docs/protocol.md section 5): at most {}",
                    2 * parallel,
                    (sessions - 1) / 2
                ),
            ));
        }
        if self.udp && !(UDP_MIN..=UDP_MAX).contains(&length) {
            return Err(SpecError::new(
                "length",
                format!("{length}: a UDP datagram holds {UDP_MIN} to {UDP_MAX} bytes"),
            ));
        }
        let time_s = seconds("time", self.time.0, false)?;
        let interval_s = seconds("interval", self.interval.0, false)?;
        let omit_s = seconds("omit", self.omit.0, true)?;
        if (time_s + omit_s) / interval_s > MAX_INTERVALS {
            return Err(SpecError::new(
                "interval",
                format!("{interval_s}: more than 100000 intervals"),
            ));
        }
        let rate_pps = match self.udp {
            true => Some(
                crate::rate::rate(rate)
                    .map_err(|e| SpecError::new("rate", e.to_string()))?
                    .pps(length),
            ),
            false => None,
        };
        Ok(StreamParams {
            direction,
            parallel,
            length,
            time_s,
            interval_s,
            omit_s,
            udp: self.udp,
            rate: self.udp.then(|| rate.to_string()),
            rate_pps,
            zerocopy: self.zerocopy,
            nodelay: match self.nodelay {
                Nodelay::On => true,
                Nodelay::Off => false,
                Nodelay::Auto => !self.udp && length >= stackmeter_proto::limits::NODELAY_FROM,
            },
            timeout_ms: self.timeout_ms.0,
            batch: super::common::udp_batch(self.udp_batch)?,
            discard: self.discard,
            iperf2: self.iperf2,
        })
    }

    fn quick(&mut self) {
        self.time.0 = (self.time.0 / 10.0).max(0.5).min(self.time.0);
    }

    const ABOUT: &'static str =
        "Throughput per interval and in total (sent, received, both): TCP up/down/bidir, or paced UDP";

    const ALIASES: &'static [&'static str] = &["time_s", "interval_s", "omit_s"];

    const PINS_ITS_WORKERS: bool = true;

    fn planned_seconds(p: &StreamParams) -> Option<f64> {
        Some(p.omit_s + p.time_s)
    }

    /// A stream's senders keep a duplicate of each connection for TCP_INFO.
    fn descriptors(p: &StreamParams) -> usize {
        match p.parallel > 64 {
            true => 3 * p.parallel as usize,
            false => 0,
        }
    }
}

impl StreamOptions {
    /// `--discard` and `--iperf2`: one of them, client to target; UDP
    /// for iperf 2 only.
    fn plain_checks(&self, direction: Flow) -> Result<(), SpecError> {
        let flag = match (self.discard, self.iperf2) {
            (true, true) => {
                return Err(SpecError::new(
                    "discard",
                    "and --iperf2 exclude each other (two kinds of target)",
                ))
            }
            (true, false) => "discard",
            (false, true) => "iperf2",
            (false, false) => return Ok(()),
        };
        if self.udp && self.discard {
            return Err(SpecError::new(
                "discard",
                "with --udp: a UDP discard server answers nothing the client could count; use --iperf2 or a responder",
            ));
        }
        if direction != Flow::Up {
            return Err(SpecError::new(
                "direction",
                format!("{}: a plain target (--{flag}) only receives: up only", direction.name()),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_checks() {
        let udp = |f: fn(&mut StreamOptions)| {
            let mut o = StreamOptions {
                udp: true,
                ..StreamOptions::default()
            };
            f(&mut o);
            o.params()
        };
        let e = udp(|o| o.direction = Way::Down).unwrap_err().to_string();
        assert!(
            e.starts_with("--direction down: UDP streams go client to target only"),
            "{e}"
        );
        assert!(udp(|o| o.rate = Some("fast".into()))
            .unwrap_err()
            .to_string()
            .contains("--rate 'fast'"));
        assert!(udp(|o| o.length = Some("20".into()))
            .unwrap_err()
            .to_string()
            .contains("--length 20"));
        let e = udp(|o| o.parallel = 33).unwrap_err().to_string();
        assert!(e.contains("--parallel 33") && e.contains("UDP streams per test"), "{e}");
        let p = udp(|o| o.rate = Some("50kpps".into())).unwrap();
        assert_eq!((p.length, p.rate_pps, p.nodelay), (1472, Some(50_000.0), false));
    }

    #[test]
    fn parallel_goes_to_1000_one_way_and_511_both_ways() {
        let tcp = |p: u32, d: Way| {
            StreamOptions {
                parallel: p,
                direction: d,
                ..StreamOptions::default()
            }
            .params()
        };
        assert_eq!(tcp(1000, Way::Up).unwrap().parallel, 1000);
        assert_eq!(tcp(1000, Way::Down).unwrap().parallel, 1000);
        assert!(tcp(1001, Way::Up).unwrap_err().to_string().contains("--parallel 1001"));
        assert_eq!(tcp(511, Way::Bidir).unwrap().parallel, 511);
        let e = tcp(512, Way::Bidir).unwrap_err().to_string();
        assert!(e.contains("1024 data sessions") && e.contains("at most 511"), "{e}");
    }

    #[test]
    fn nodelay_auto_follows_the_write_size() {
        for (len, on) in [("64", false), ("16K", true), ("128K", true)] {
            let o = StreamOptions {
                length: Some(len.into()),
                ..StreamOptions::default()
            };
            let p = o.params().unwrap();
            assert_eq!(p.nodelay, on, "{len}");
        }
        let o = StreamOptions {
            rate: Some("10M".into()),
            ..StreamOptions::default()
        };
        assert!(o
            .params()
            .unwrap_err()
            .as_key()
            .contains("'rate' applies to UDP streams"));
    }
}
