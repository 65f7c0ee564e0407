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
