//! The stackmeter responder for hosts: the target side of every test.
//!
//! It listens on TCP and UDP at the same address and port, speaks protocol
//! v1 (`stackmeter-proto`), and must outlive any client: every wait has a
//! deadline, every size is capped, every refusal is answered with the
//! protocol's status record and logged in one line, and a client vanishing
//! mid-transfer only ends its own session.
//!
//! Threading: one blocking thread per TCP session and one per UDP socket.
//! Blocking `recv`/`send` on a dedicated thread is the shortest path a reply
//! can take (no readiness call between data and reply), so the responder
//! adds as little as the minimal C ping-pong that bench/ uses as the floor.
//! The number of sessions is capped (`max_sessions`).

mod log;
mod monitor;
mod objects;
mod stream;
mod tcp;
mod udp;

pub use log::Log;
pub use objects::{ObjectSource, DEFAULT_SIZES, MAX_SYNTHETIC_BYTES};

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Default cap on one request or response: 64 MiB.
pub const DEFAULT_MAX_MSG: u32 = 64 << 20;
/// Default cap on concurrent TCP sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 1024;
/// Default time a client has to send its whole session header.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Default time a session may sit without traffic before it is closed.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How a responder is set up.
#[derive(Clone, Debug)]
pub struct Config {
    /// Addresses to listen on, TCP and UDP each; port 0 picks a free port
    /// (the same one for TCP and UDP).
    pub listen: Vec<SocketAddr>,
    /// Concurrent TCP sessions; one more is refused as busy.
    pub max_sessions: usize,
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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: vec![SocketAddr::from(([127, 0, 0, 1], 0))],
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_msg: DEFAULT_MAX_MSG,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            cpu: None,
            log: Log::Stderr,
            objects: ObjectSource::Off,
        }
    }
}

/// Running totals, readable while the responder runs.
#[derive(Debug, Default)]
pub struct Counters {
    /// TCP sessions accepted since start.
    pub sessions: AtomicU64,
    /// TCP sessions running now.
    pub active: AtomicUsize,
    /// Sessions refused (any code).
    pub refused: AtomicU64,
    /// Sessions that ended with the client gone mid-transfer or timed out.
    pub aborted: AtomicU64,
    /// UDP datagrams answered.
    pub udp_replies: AtomicU64,
    /// UDP datagrams dropped (short, foreign, or not a request).
    pub udp_dropped: AtomicU64,
    /// Lingering closes after busy refusals running now.
    pub lingering: AtomicUsize,
    /// Most TCP sessions running at once since start.
    pub peak: AtomicUsize,
    /// Object-mode requests answered (added when each session ends).
    pub object_requests: AtomicU64,
    /// Object bytes sent (added when each session ends).
    pub object_bytes: AtomicU64,
}

/// A started responder. Its threads run until the process exits.
#[derive(Debug)]
pub struct Responder {
    /// The addresses actually bound (port 0 resolved).
    pub local: Vec<SocketAddr>,
    /// Live counters.
    pub counters: Arc<Counters>,
}

/// State every session thread shares.
pub(crate) struct Shared {
    pub cfg: Config,
    pub counters: Arc<Counters>,
    /// Response bytes: sessions send from this one read-only buffer, in
    /// chunks, so a 64 MiB response costs no per-session memory.
    pub tx: stackmeter_sys::AlignedBuf,
    /// Object mode's catalogue, if enabled.
    pub store: Option<objects::Store>,
    /// Open throughput tests.
    pub tests: stream::Tests,
}

/// Size of the shared send buffer and the cap on a session's receive buffer.
pub(crate) const CHUNK: usize = 1 << 20;

/// Binds every listen address (TCP, then UDP on the same port) and starts
/// the threads. Fails, naming the address, if any bind fails.
pub fn start(cfg: Config) -> io::Result<Responder> {
    if cfg.listen.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no address to listen on"));
    }
    // Page-aligned like every receive buffer: the kernel's copy out of a
    // misaligned buffer is as slow on AMD Zen as the copy into one.
    let mut tx = stackmeter_sys::AlignedBuf::new(CHUNK);
    stackmeter_proto::pattern::fill(0, tx.bytes_mut());
    let counters = Arc::new(Counters::default());
    let store = objects::Store::build(&cfg.objects, cfg.log)?;
    if let Some(s) = &store {
        cfg.log.line(format_args!("objects: {} in the catalogue", s.len()));
    }
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        counters: counters.clone(),
        tx,
        store,
        tests: stream::Tests::default(),
    });
    let mut bound = Vec::new();
    for addr in &cfg.listen {
        let (tcp, udp) =
            bind_pair(*addr).map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
        bound.push((tcp, udp));
    }
    let mut local = Vec::new();
    for (tcp, udp) in bound {
        local.push(tcp.local_addr()?);
        let s = shared.clone();
        spawn("accept", move || tcp::accept_loop(tcp, s))?;
        let s = shared.clone();
        spawn("udp", move || udp::echo_loop(udp, s))?;
    }
    if cfg.log == Log::Stderr {
        let s = shared.clone();
        spawn("monitor", move || monitor::run(&s))?;
    }
    Ok(Responder { local, counters })
}

/// Binds TCP then UDP on one port. With port 0 the UDP bind on the port the
/// kernel gave TCP can collide; try a few times.
fn bind_pair(addr: SocketAddr) -> io::Result<(TcpListener, UdpSocket)> {
    let mut last = None;
    for _ in 0..16 {
        let tcp = bind_tcp(addr)?;
        let port = tcp.local_addr()?.port();
        let mut uaddr = addr;
        uaddr.set_port(port);
        match bind_udp(uaddr) {
            Ok(udp) => return Ok((tcp, udp)),
            Err(e) if addr.port() == 0 && e.kind() == io::ErrorKind::AddrInUse => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::AddrInUse, "no free port for TCP and UDP")))
}

fn socket_for(addr: SocketAddr, ty: Type, proto: Protocol) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), ty, Some(proto))?;
    if addr.is_ipv6() {
        // An IPv6 address serves IPv6 only, so "0.0.0.0:P" and "[::]:P" can
        // both be given and both work.
        s.set_only_v6(true)?;
    }
    Ok(s)
}

fn bind_tcp(addr: SocketAddr) -> io::Result<TcpListener> {
    let s = socket_for(addr, Type::STREAM, Protocol::TCP)?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s.into())
}

/// Receive buffer asked for on the UDP socket: a UDP stream at a few
/// hundred thousand datagrams per second outruns the 208 KiB default
/// during a scheduling hiccup of a millisecond. The kernel caps it at
/// net.core.rmem_max.
const UDP_RCVBUF: usize = 4 << 20;

fn bind_udp(addr: SocketAddr) -> io::Result<UdpSocket> {
    let s = socket_for(addr, Type::DGRAM, Protocol::UDP)?;
    // Best effort: a smaller buffer is still a working responder.
    let _ = s.set_recv_buffer_size(UDP_RCVBUF);
    s.bind(&addr.into())?;
    Ok(s.into())
}

/// Starts a named responder thread with a small stack.
pub(crate) fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> io::Result<()> {
    std::thread::Builder::new()
        .name(format!("stackmeter-{name}"))
        .stack_size(256 << 10)
        .spawn(f)
        .map(|_| ())
}

impl Shared {
    /// Pins the calling thread if the configuration asks; logs a failure once
    /// per thread and carries on unpinned.
    pub(crate) fn pin(&self) {
        if let Some(cpu) = self.cfg.cpu {
            if let Err(e) = stackmeter_sys::pin_current_thread(cpu) {
                self.cfg.log.line(format_args!("warning: {e}"));
            }
        }
    }

    pub(crate) fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}
