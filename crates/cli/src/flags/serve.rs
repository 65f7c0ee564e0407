//! `stackmeter serve`'s flags and the responder they start: the address
//! list, the knobs applied to the process before any thread starts (every
//! responder thread inherits them), the session limit from the open-files
//! limit, and IPv4 alone when the host has no IPv6.

use crate::error::Error;
use clap::Args;
use stackmeter_proto::admit::{Advertised, Cidr};
use stackmeter_proto::auth::Key;
use stackmeter_proto::limits;
use stackmeter_responder::{Config, Log, ObjectSource, Responder, DEFAULT_SIZES};
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

/// Starts the responder `a` asks for (with the shared secret, if any);
/// it serves until the process ends.
pub fn start(a: ServeArgs, secret: Option<Key>) -> Result<Responder, Error> {
    let port = stackmeter_proto::DEFAULT_PORT;
    let defaults = a.listen.is_empty();
    let listen = match defaults {
        true => vec![
            SocketAddr::from(([0, 0, 0, 0], port)),
            SocketAddr::from(([0u16; 8], port)),
        ],
        false => a.listen,
    };
    if let Some(cpu) = a.affinity {
        // Checked here so a bad CPU is a usage error, not a log line.
        if let Err(e) = stackmeter_sys::pin_current_thread(cpu) {
            return Err(Error::flag(format!("--affinity {cpu}: {e}")));
        }
    }
    // Before any thread starts, so every responder thread inherits the
    // priority; refused knobs stop here with one line.
    let knobs = a.knobs.request();
    let busy_poll_us = knobs.busy_poll_us;
    let no_poll = stackmeter_results::KnobRequest {
        busy_poll_us: None,
        ..knobs
    };
    // Kept for the life of the process: never undone.
    // Never undone: dropping what apply changed keeps it.
    drop(stackmeter_engine::knobs::apply(&no_poll)?);
    if a.spin_us.0 > 1_000_000 {
        return Err(Error::flag(format!("--spin-us {}: at most 1000000 (1 s)", a.spin_us)));
    }
    let max_test_s = u32::try_from(a.max_test_seconds.0.round() as u64)
        .map_err(|_| Error::flag(format!("--max-test-seconds {}: too long", a.max_test_seconds)))?;
    let mut cfg = Config {
        listen,
        max_sessions: a
            .max_sessions
            .map_or(stackmeter_responder::DEFAULT_MAX_SESSIONS, |n| n as usize),
        threads: a.threads,
        max_msg: a.max_msg,
        header_timeout: Duration::from_millis(a.header_timeout_ms.0),
        idle_timeout: Duration::from_millis(a.idle_timeout_ms.0),
        cpu: a.affinity,
        log: if a.quiet { Log::Quiet } else { Log::Stderr },
        objects: match a.objects_dir {
            Some(d) => ObjectSource::Dir(d),
            None => ObjectSource::Synthetic(a.objects.0),
        },
        busy_poll_us,
        udp_batch: a.udp_batch as usize,
        secret,
        limits: Advertised {
            max_test_s,
            max_tests_per_client: a.max_tests_per_client,
            max_rate_bps: a.max_source_rate,
        },
        max_idle_per_client: a.max_idle_per_client,
        max_connects_per_second: a.max_connects_per_second,
        allow: a.allow,
        spin: Duration::from_micros(a.spin_us.0),
    };
    if cfg.secret.is_some() {
        cfg.log
            .line(format_args!("authentication on: clients must prove the shared secret"));
    }
    if !no_poll.is_default() {
        let k = stackmeter_engine::knobs::in_force();
        cfg.log.line(format_args!("knobs in force: {}", k.describe()));
    }
    let room = stackmeter_engine::target::FD_ROOM;
    let want = a.max_sessions.map_or(0, |n| n as usize);
    let nofile = stackmeter_engine::target::raise_fd_limit(cfg.log, want);
    if a.max_sessions.is_none() {
        if let Some(n) = nofile {
            cfg.max_sessions = (n as usize).saturating_sub(room).max(1);
            cfg.log.line(format_args!(
                "at most {} sessions (the open-files limit {n} less {room})",
                cfg.max_sessions
            ));
        }
    }
    let started = match stackmeter_responder::start(cfg.clone()) {
        // A host without IPv6 still serves IPv4 on the default addresses.
        Err(e) if defaults => {
            cfg.log.line(format_args!("warning: {e}; serving IPv4 only"));
            cfg.listen.truncate(1);
            stackmeter_responder::start(cfg)
        }
        r => r,
    };
    started.map_err(|e| Error::local(e.to_string()))
}
