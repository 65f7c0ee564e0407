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
    /// Many clients at once, each listing and fetching every object, every byte checked (seed 003).
    Load(crate::load::LoadArgs),
    /// Run a plan of tests against two or more labelled targets, interleaved,
    /// and print the comparison. No --target: compares responders it starts itself.
    Suite(crate::suite::SuiteArgs),
    /// Compare stored results: A is the baseline, B the candidate (labels or run ids).
    Compare(crate::compare_cmd::CompareArgs),
    /// List the stored runs.
    Runs(crate::store_cmd::RunsArgs),
    /// Print a stored run again, as its command printed it.
    Show(crate::store_cmd::ShowArgs),
    /// Write stored results as CSV or JSON.
    Export(crate::store_cmd::ExportArgs),
    /// Write one self-contained HTML report (charts, comparison, environment).
    Report(crate::report_cmd::ReportArgs),
    /// Throughput per interval and in total: TCP up/down/bidir, or paced UDP (seed 001's bps).
    Stream(StreamArgs),
    /// Highest UDP rate whose loss stays at or under a goal (MLRsearch-style trials).
    #[command(name = "udp-max")]
    UdpMax(UdpMaxArgs),
    /// Local lab: lwIP (raw and sockets API) on TAP devices and the C responder on the kernel stack (root).
    Lab(LabArgs),
}

/// Where results are stored (every command that reads or writes them).
#[derive(Args, Debug, Clone, Default)]
pub struct DbArgs {
    /// Results store (SQLite file). Default: $STACKMETER_DB, else
    /// $XDG_DATA_HOME/stackmeter/results.db, else ~/.local/share/stackmeter/results.db.
    #[arg(long, value_name = "PATH")]
    pub db: Option<std::path::PathBuf>,
}

/// Storing flags of the measuring commands.
#[derive(Args, Debug, Clone, Default)]
pub struct StoreArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Name these results (for `compare`, `report`); default: the target as given, or "embedded".
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// Do not store the results.
    #[arg(long)]
    pub no_store: bool,
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
    /// Synthetic objects for object mode (load): comma-separated sizes, K = 1024.
    #[arg(long, value_name = "SIZES", default_value = "4K,64K,1M,8800K", value_parser = crate::load::size_list)]
    pub objects: crate::load::Sizes,
    /// Serve the regular files directly inside DIR as the objects instead (read-only, symlinks never followed).
    #[arg(long, value_name = "DIR")]
    pub objects_dir: Option<std::path::PathBuf>,
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
    #[command(flatten)]
    pub store: StoreArgs,
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
    /// Open loop: send this many requests per second (all connections together) on a schedule, whatever the replies do.
    #[arg(long, value_name = "PER_S")]
    pub rate: Option<f64>,
    /// Open loop: connections, each with a sender and a receiver thread.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub connections: u32,
    /// Open loop: seconds of schedule per size pair.
    #[arg(long, value_name = "S")]
    pub time: Option<f64>,
    /// Open loop: evenly spaced sends, or Poisson arrivals.
    #[arg(long, value_name = "KIND", default_value = "fixed", value_parser = ["fixed", "poisson"])]
    pub arrival: String,
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
pub struct StreamArgs {
    #[command(flatten)]
    pub common: Common,
    /// up = client to target, down = target to client, bidir = both at once.
    #[arg(long, value_enum, default_value = "up")]
    pub direction: DirectionArg,
    /// Connections (or UDP sockets) per direction.
    #[arg(long, short = 'P', default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub parallel: u32,
    /// Bytes per send call, and per receive; the "message" of kpps. UDP: datagram size, header included.
    /// Default 128K for TCP, 1472 for UDP.
    #[arg(long, short = 'l', value_name = "SIZE", value_parser = crate::sizes::size)]
    pub length: Option<u32>,
    /// Seconds measured (after --omit).
    #[arg(long, short = 't', value_name = "S", default_value_t = 10.0)]
    pub time: f64,
    /// Seconds per interval row.
    #[arg(long, short = 'i', value_name = "S", default_value_t = 1.0)]
    pub interval: f64,
    /// Seconds at the start shown but left out of the summary (TCP slow start).
    #[arg(long, short = 'O', value_name = "S", default_value_t = 0.0)]
    pub omit: f64,
    /// Paced UDP, client to target, instead of TCP.
    #[arg(long, short = 'u')]
    pub udp: bool,
    /// UDP offered rate, all sockets together: bits/s (200M, 1.5G) or packets/s (50kpps, 2Mpps).
    #[arg(long, short = 'b', value_name = "RATE", default_value = "10M")]
    pub rate: String,
    /// MSG_ZEROCOPY on the client's TCP sends (Linux).
    #[arg(long)]
    pub zerocopy: bool,
    /// TCP_NODELAY on the data connections. auto: on for writes of 16K and more (Nagle would only hold
    /// each write's last partial segment), off below (Nagle coalesces small writes, as in iperf3).
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    pub nodelay: NodelayArg,
    /// Print one JSON object per interval as it ends, then the document (with --json).
    #[arg(long)]
    pub json_lines: bool,
    /// Bound on every network wait.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    pub timeout_ms: u64,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum NodelayArg {
    Auto,
    On,
    Off,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum DirectionArg {
    Up,
    Down,
    Bidir,
}

#[derive(Args, Debug)]
pub struct UdpMaxArgs {
    #[command(flatten)]
    pub common: Common,
    /// Datagram size in bytes (UDP payload, the 40-byte stackmeter header included).
    #[arg(long, short = 'l', default_value_t = 1472, value_parser = clap::value_parser!(u32).range(40..=65507))]
    pub length: u32,
    /// Highest loss ratio that still passes (0 = no loss at all; 0.001 = 0.1%).
    #[arg(long, value_name = "RATIO", default_value_t = 0.0)]
    pub loss: f64,
    /// Seconds per trial.
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub trial: f64,
    /// Trial seconds per load before it is classified (FD.io CSIT uses 21).
    #[arg(long, value_name = "S", default_value_t = 3.0)]
    pub duration_sum: f64,
    /// Relative width at which the search stops: (upper - lower) / upper.
    #[arg(long, value_name = "RATIO", default_value_t = 0.01)]
    pub width: f64,
    /// Highest load to try (bits/s or packets/s as for stream --rate). Default: as fast as the client sends.
    #[arg(long, value_name = "RATE")]
    pub max_rate: Option<String>,
    /// Wait after each trial for datagrams still in flight.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub drain_ms: u64,
    /// Stop after this many trials, converged or not.
    #[arg(long, default_value_t = 200)]
    pub max_trials: u32,
    /// Bound on every network wait.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
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
        /// Folder with stackmeter-responder, lwip-raw and lwip-sock (default: $STACKMETER_RESPONDER_DIR, else c-responder/ of this source tree).
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
