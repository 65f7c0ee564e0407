//! Command-line flags: one definition per flag, help text included.
//!
//! These are the raw values; `main.rs` turns them into the client's and
//! responder's typed specs (two stages, as in ripgrep).

use clap::{Args, Parser, Subcommand};
use stackmeter_results::SizePair;

/// Measure and compare network stacks: request/response latency, connect
/// time and UDP echo, against a stackmeter responder.
///
/// With no TARGET, rr, crr and ping start a responder inside this process on
/// 127.0.0.1 and measure it.
#[derive(Parser, Debug)]
#[command(name = "stackmeter", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a responder (TCP and UDP on each address) until killed.
    Serve(ServeArgs),
    /// Request/response latency over TCP for a grid of sizes (seed 000).
    Rr(RrArgs),
    /// Connect latency and connect+request+response+close time.
    Crr(CrrArgs),
    /// UDP echo round trips with loss, order, payload and slow answers (seed 004).
    Ping(PingArgs),
    /// Local lab: lwIP (raw and sockets API) on TAP devices and the C responder on the kernel stack (root).
    Lab(LabArgs),
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on, TCP and UDP; repeat for more. Default: 0.0.0.0:24680 and [::]:24680.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Vec<std::net::SocketAddr>,
    /// Concurrent TCP sessions; more are refused as busy.
    #[arg(long, default_value_t = stackmeter_responder::DEFAULT_MAX_SESSIONS)]
    pub max_sessions: usize,
    /// Largest request or response accepted (K = 1024).
    #[arg(long, value_name = "SIZE", default_value = "64M", value_parser = crate::sizes::size)]
    pub max_msg: u32,
    /// Time a client has to send its whole session header.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    pub header_timeout_ms: u64,
    /// Time a session may wait for the next byte before it is closed.
    #[arg(long, value_name = "MS", default_value_t = 60000)]
    pub idle_timeout_ms: u64,
    /// Pin every responder thread to this CPU.
    #[arg(long, value_name = "CPU")]
    pub affinity: Option<usize>,
    /// Log nothing (refusals are still answered on the wire).
    #[arg(long)]
    pub quiet: bool,
}

/// Flags every measuring command takes.
#[derive(Args, Debug)]
pub struct Common {
    /// Responder to measure: HOST, HOST:PORT, [IPV6]:PORT. Default port 24680.
    /// Omitted: a responder started in this process on 127.0.0.1.
    pub target: Option<String>,
    /// Print one JSON document (schema stackmeter/1, docs/json.md) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Pin the measuring thread to this CPU.
    #[arg(long, value_name = "CPU")]
    pub affinity: Option<usize>,
    /// Pin the embedded responder's threads to this CPU (no TARGET only).
    #[arg(long, value_name = "CPU")]
    pub responder_affinity: Option<usize>,
}

#[derive(Args, Debug)]
pub struct RrArgs {
    #[command(flatten)]
    pub common: Common,
    /// Comma-separated REQUEST:RESPONSE byte sizes, one connection each (K = 1024, M = 1048576).
    #[arg(long, value_name = "LIST", default_value = "1:1K,1:10K,1:100K,1:1M,1K:1,10K:1,100K:1,1M:1", value_parser = crate::sizes::pairs)]
    pub sizes: crate::sizes::SizeList,
    /// Timed transactions per size.
    #[arg(long, short = 'n', default_value_t = 100)]
    pub iterations: u64,
    /// Untimed transactions per size before the timed ones.
    #[arg(long, default_value_t = 10)]
    pub warmup: u64,
    /// Bound on every network wait.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    pub timeout_ms: u64,
}

#[derive(Args, Debug)]
pub struct CrrArgs {
    #[command(flatten)]
    pub common: Common,
    /// Timed connections.
    #[arg(long, short = 'n', default_value_t = 1000)]
    pub iterations: u64,
    /// Untimed connections before the timed ones.
    #[arg(long, default_value_t = 10)]
    pub warmup: u64,
    /// REQUEST:RESPONSE bytes per connection.
    #[arg(long, value_name = "REQ:RESP", default_value = "1:1", value_parser = crate::sizes::pair)]
    pub size: SizePair,
    /// Bound on every network wait, connect included.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    pub timeout_ms: u64,
}

#[derive(Args, Debug)]
pub struct PingArgs {
    #[command(flatten)]
    pub common: Common,
    /// Datagram size in bytes (UDP payload, the 40-byte stackmeter header included).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(40..=65507))]
    pub size: u16,
    /// Timed datagrams.
    #[arg(long, short = 'c', default_value_t = 1000)]
    pub count: u64,
    /// Untimed datagrams before the timed ones.
    #[arg(long, default_value_t = 10)]
    pub warmup: u64,
    /// Microseconds between sends; 0 = back to back, one outstanding.
    #[arg(long, value_name = "US", default_value_t = 0)]
    pub interval_us: u64,
    /// Answers slower than this are counted and the first 10 listed.
    #[arg(long, value_name = "US", default_value_t = 1000)]
    pub slow_us: u64,
    /// A datagram with no answer after this is lost.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub timeout_ms: u64,
}

#[derive(Args, Debug)]
pub struct LabArgs {
    #[command(subcommand)]
    pub action: LabAction,
}

#[derive(Subcommand, Debug)]
pub enum LabAction {
    /// Create the TAP devices, start the responders, print LABEL=ADDR:PORT once each answers.
    Up {
        /// Folder with stackmeter-responder, lwip-raw and lwip-sock (default: $STACKMETER_RESPONDER_DIR, else responder/ of this source tree).
        #[arg(long, value_name = "DIR")]
        bin_dir: Option<std::path::PathBuf>,
        /// CPU every responder is pinned to (default: the last one).
        #[arg(long, value_name = "CPU")]
        cpu: Option<usize>,
    },
    /// List the lab's targets and whether each answers.
    Status,
    /// Stop every responder and remove every device the lab made.
    Down,
}
