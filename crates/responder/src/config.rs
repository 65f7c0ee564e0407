//! How a responder is set up: the public [`Config`] and its defaults, which
//! come from the one limits table (`stackmeter_proto::limits`).

use crate::log::Log;
use crate::objects::ObjectSource;
use stackmeter_proto::admit::{Advertised, Cidr};
use stackmeter_proto::auth::Key;
use stackmeter_proto::limits;
use std::net::SocketAddr;
use std::time::Duration;

/// Default cap on one request or response: 64 MiB.
pub const DEFAULT_MAX_MSG: u32 = limits::MAX_MSG;
/// Default cap on concurrent TCP sessions of this responder: idle sessions
/// wait on the event loop at about 1.4 KiB each, so the open-files limit is
/// the real bound. The protocol's table value (`limits::MAX_SESSIONS`) is
/// what every responder holds at least, the C one's default.
pub const DEFAULT_MAX_SESSIONS: usize = 1 << 20;
/// Default number of latency sessions on threads of their own.
pub const DEFAULT_THREADS: usize = 64;
/// Default time a client has to send its whole session header.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_millis(limits::HEADER_TIMEOUT_MS);
/// Default time a session may sit without traffic before it is closed.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_millis(limits::IDLE_TIMEOUT_MS);

/// How a responder is set up.
#[derive(Clone, Debug)]
pub struct Config {
    /// Addresses to listen on, TCP and UDP each; port 0 picks a free port
    /// (the same one for TCP and UDP).
    pub listen: Vec<SocketAddr>,
    /// Concurrent TCP sessions; one more is refused as busy.
    pub max_sessions: usize,
    /// rr and object sessions given a thread of their own when their data
    /// starts, at most at once (a small-message rr one only when none has
    /// one), and as many sinks and sources; the rest run on the event loop.
    pub threads: usize,
    /// Largest request or response, in bytes.
    pub max_msg: u32,
    /// Deadline for the whole session header.
    pub header_timeout: Duration,
    /// Longest wait for the next byte (or for the client to take a byte).
    pub idle_timeout: Duration,
    /// CPU every responder thread pins itself to.
    pub cpu: Option<usize>,
    /// Where the one-line event log goes.
    pub log: Log,
    /// Object mode's catalogue (mode 16); off unless asked for.
    pub objects: ObjectSource,
    /// `SO_BUSY_POLL` microseconds on the listening and UDP sockets
    /// (accepted sockets inherit it); `None`: not set.
    pub busy_poll_us: Option<u32>,
    /// UDP messages per receive call (`recvmmsg`, with UDP GRO); 1: one
    /// `recvfrom` per datagram.
    pub udp_batch: usize,
    /// The shared secret: every TCP session authenticates and every UDP
    /// datagram carries a MAC (docs/protocol.md section 10).
    pub secret: Option<Key>,
    /// Limits of a test, advertised in every Welcome (0: none).
    pub limits: Advertised,
    /// Connections from one address still sending their header (or
    /// authenticating); more are closed at once (0: no limit).
    pub max_idle_per_client: usize,
    /// New connections per second from one address; more are closed at
    /// once (0: no limit).
    pub max_connects_per_second: u32,
    /// Client networks allowed; empty: every address. Others' connections
    /// are closed at once and their datagrams dropped, without a reply.
    pub allow: Vec<Cidr>,
    /// How long the event loop keeps looking for events without sleeping
    /// after its last one (zero: it sleeps at once). Small-message
    /// sessions then all stay on the loop.
    pub spin: Duration,
}

/// UDP messages per receive call by default.
pub const DEFAULT_UDP_BATCH: usize = 32;

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: vec![SocketAddr::from(([127, 0, 0, 1], 0))],
            max_sessions: DEFAULT_MAX_SESSIONS,
            threads: DEFAULT_THREADS,
            max_msg: DEFAULT_MAX_MSG,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            cpu: None,
            log: Log::Stderr,
            objects: ObjectSource::Off,
            busy_poll_us: None,
            udp_batch: DEFAULT_UDP_BATCH,
            secret: None,
            limits: Advertised::default(),
            max_idle_per_client: 0,
            max_connects_per_second: 0,
            allow: Vec::new(),
            spin: Duration::ZERO,
        }
    }
}

impl Config {
    /// The settings every session machine runs with.
    pub(crate) fn machine(&self, objects: bool, seed: [u8; 16]) -> stackmeter_proto::machine::Config {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        stackmeter_proto::machine::Config {
            max_sessions: self.max_sessions,
            max_msg: self.max_msg,
            header_timeout_ns: ns(self.header_timeout),
            idle_timeout_ns: ns(self.idle_timeout),
            objects,
            // Stamp blocks need kernel timestamps (SO_TIMESTAMPING).
            stamps: cfg!(target_os = "linux"),
            key: self.secret,
            seed,
            limits: self.limits,
        }
    }
}
