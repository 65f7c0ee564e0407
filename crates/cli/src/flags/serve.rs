//! `stackmeter serve`'s flags, mapped to what the engine starts
//! (`stackmeter_engine::serve`).

use crate::error::Error;
use clap::Args;
use stackmeter_engine::serve::{Mode, ServeSpec};
use stackmeter_proto::admit::Cidr;
use stackmeter_proto::limits;
use stackmeter_responder::{ObjectSource, DEFAULT_SIZES};
use stackmeter_spec::sizes::ObjectSizes;
use stackmeter_spec::time::{Micros, Millis, Secs};
use std::net::SocketAddr;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on, TCP and UDP; repeat for more. Default: 0.0.0.0:24680 and [::]:24680.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Vec<SocketAddr>,
    /// Concurrent TCP sessions; more are refused as busy. Default: as many as the open-files limit holds (idle sessions wait on an event loop, about 1.4 KiB each).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=(1 << 24)))]
    pub max_sessions: Option<u64>,
    /// rr and object sessions with 64 KiB messages or more given a thread of their own when their data starts (a small-message one only when none has one), and as many sinks and sources of throughput tests; the rest run on the event loop (0: all of them).
    #[arg(long, value_name = "N", default_value_t = stackmeter_responder::DEFAULT_THREADS)]
    pub threads: usize,
    /// Largest request or response accepted (K = 1024).
    #[arg(long, value_name = "SIZE", default_value_t = limits::MAX_MSG, value_parser = stackmeter_spec::sizes::size)]
    pub max_msg: u32,
    /// Time a client has to send its whole session header.
    #[arg(long, value_name = "MS", default_value_t = Millis(limits::HEADER_TIMEOUT_MS))]
    pub header_timeout_ms: Millis,
    /// Time a session may wait for the next byte before it is closed (0: no limit).
    #[arg(long, value_name = "MS", default_value_t = Millis(limits::IDLE_TIMEOUT_MS))]
    pub idle_timeout_ms: Millis,
    /// Pin every responder thread to this CPU.
    #[arg(long, value_name = "CPU")]
    pub affinity: Option<usize>,
    /// Log nothing (refusals are still answered on the wire).
    #[arg(long)]
    pub quiet: bool,
    /// Synthetic objects for object mode (load): comma-separated sizes, K = 1024.
    #[arg(long, value_name = "SIZES", default_value_t = ObjectSizes(DEFAULT_SIZES.to_vec()))]
    pub objects: ObjectSizes,
    /// Serve the regular files directly inside DIR as the objects instead (read-only, symlinks never followed).
    #[arg(long, value_name = "DIR")]
    pub objects_dir: Option<std::path::PathBuf>,
    /// UDP datagrams per receive call (recvmmsg, with UDP GRO where the kernel has it); 1 = one recvfrom() each.
    #[arg(long, value_name = "N", default_value_t = stackmeter_responder::DEFAULT_UDP_BATCH as u16, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub udp_batch: u16,
    /// Real-time knobs of every responder thread: --priority, --mlock,
    /// --busy-poll (on the listening and UDP sockets; sessions inherit it).
    #[command(flatten)]
    pub knobs: crate::flags::KnobFlags,
    /// Longest test in seconds (advertised; sessions end that long plus 5 s after acceptance; 0: none).
    #[arg(long, value_name = "S", default_value_t = Secs(0.0))]
    pub max_test_seconds: Secs,
    /// Highest rate of a test in bits/s, K M G = 10^3.. (advertised; sources are paced to it; 0: none).
    #[arg(long, value_name = "RATE", default_value = "0", value_parser = rate_bits)]
    pub max_source_rate: u64,
    /// Tests one client address may run at once (rr, crr, load sessions, throughput tests; 0: no limit).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_tests_per_client: u32,
    /// Connections one client address may have still sending their header; more are closed at once (0: no limit).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_idle_per_client: usize,
    /// Client networks allowed (repeatable), like 10.0.0.0/8 or fd00::/8; others are closed or dropped without a reply.
    #[arg(long = "allow", value_name = "CIDR", value_parser = cidr)]
    pub allow: Vec<Cidr>,
    /// New connections per second one address may open; more are closed at once (0: no limit).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_connects_per_second: u32,
    /// The event loop keeps looking for events this long after its last one instead of sleeping (no wake-up per request; a core busy while traffic lasts); small-message sessions then all stay on the loop. 0: sleep at once.
    #[arg(long, value_name = "US", default_value_t = Micros(0))]
    pub spin_us: Micros,
    /// Answer inside the kernel (root): xdp, an XDP program on --interface answers ping's UDP echo (the responder serves the rest); sockmap, a plain TCP echo whose bytes the kernel sends back (measure with rr --echo). Counters are printed on exit.
    #[arg(long, value_enum, value_name = "HOW", conflicts_with = "plain_echo")]
    pub in_kernel: Option<InKernel>,
    /// The interface the XDP program answers on (--in-kernel xdp), e.g. lo or a veth.
    #[arg(long, value_name = "IF")]
    pub interface: Option<String>,
    /// Where the XDP program runs: generic (any interface, loopback included) or native (in the driver; on veth the peer needs an XDP program too).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = XdpMode::Generic)]
    pub xdp_mode: XdpMode,
    /// Echo UDP datagrams of any content (ping --echo's), not only stackmeter's (--in-kernel xdp).
    #[arg(long)]
    pub xdp_plain: bool,
    /// A plain TCP echo in the application (every byte read is written back; no stackmeter protocol): the application side of --in-kernel sockmap.
    #[arg(long)]
    pub plain_echo: bool,
}

/// `serve --in-kernel`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum InKernel {
    /// An XDP program answers stackmeter's UDP echo at the driver.
    Xdp,
    /// A sockmap's verdict program echoes TCP data inside the kernel.
    Sockmap,
}

/// `serve --xdp-mode`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// The generic path: any interface.
    Generic,
    /// In the driver.
    Native,
}

fn cidr(s: &str) -> Result<Cidr, String> {
    Cidr::parse(s).map_err(|e| format!("'{s}': {e}"))
}

/// Bits per second: a number with an optional K, M or G (powers of 1000).
fn rate_bits(s: &str) -> Result<u64, String> {
    let (num, mult) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 1e3),
        Some(b'm' | b'M') => (&s[..s.len() - 1], 1e6),
        Some(b'g' | b'G') => (&s[..s.len() - 1], 1e9),
        _ => (s, 1.0),
    };
    match num.parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() && v * mult < u64::MAX as f64 => Ok((v * mult) as u64),
        _ => Err(format!("'{s}': a rate in bits/s like 100M or 1G")),
    }
}

/// What `a` asks `serve` for, as the engine starts it.
pub fn spec(a: ServeArgs) -> Result<ServeSpec, Error> {
    let mode = match (a.in_kernel, a.plain_echo) {
        (Some(InKernel::Sockmap), _) => Mode::PlainEcho { in_kernel: true },
        (None, true) => Mode::PlainEcho { in_kernel: false },
        (Some(InKernel::Xdp), _) => Mode::Xdp {
            interface: a.interface.ok_or_else(|| {
                Error::flag("--in-kernel xdp: give the --interface it answers on (lo, a veth, a NIC)")
            })?,
            plain: a.xdp_plain,
            native: a.xdp_mode == XdpMode::Native,
        },
        (None, false) => Mode::Responder,
    };
    Ok(ServeSpec {
        listen: a.listen,
        max_sessions: a.max_sessions.map(|n| n as usize),
        threads: a.threads,
        max_msg: a.max_msg,
        header_timeout: Duration::from_millis(a.header_timeout_ms.0),
        idle_timeout: Duration::from_millis(a.idle_timeout_ms.0),
        affinity: a.affinity,
        quiet: a.quiet,
        objects: match a.objects_dir {
            Some(d) => ObjectSource::Dir(d),
            None => ObjectSource::Synthetic(a.objects.0),
        },
        udp_batch: a.udp_batch as usize,
        knobs: a.knobs.request(),
        max_test_seconds: a.max_test_seconds.0,
        max_source_rate: a.max_source_rate,
        max_tests_per_client: a.max_tests_per_client,
        max_idle_per_client: a.max_idle_per_client,
        allow: a.allow,
        max_connects_per_second: a.max_connects_per_second,
        spin: Duration::from_micros(a.spin_us.0),
        mode,
    })
}
