//! What every responder thread shares: the configuration, the live
//! counters, the payload buffer, the catalogue, the registry of throughput
//! tests and the source sockets it reads TCP_INFO from.

use crate::clients::Clients;
use crate::config::Config;
use crate::objects::Objects;
use crate::sources::Sources;
use stackmeter_proto::machine::{self, Registry};
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Size of the shared send buffer and the cap on a session's receive buffer.
pub(crate) const CHUNK: usize = 1 << 20;

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
    /// UDP datagrams dropped for a missing or wrong MAC, or as replays.
    pub udp_unauthenticated: AtomicU64,
    /// TCP connections closed at once, before any byte was read: from a
    /// network not allowed, over the connections per second or the
    /// connections waiting for their header of their address.
    pub turned_away: AtomicU64,
    /// Lingering closes after busy refusals running now.
    pub lingering: AtomicUsize,
    /// rr and object sessions moved to threads of their own,
    /// running now (at most `Config::threads`).
    pub threaded: AtomicUsize,
    /// Sink and source sessions on threads of their own, running now (at
    /// most `Config::threads`; more stay on the loop).
    pub bulk: AtomicUsize,
    /// Most TCP sessions running at once since start.
    pub peak: AtomicUsize,
    /// Object-mode requests answered (added when each session ends).
    pub object_requests: AtomicU64,
    /// Object bytes sent (added when each session ends).
    pub object_bytes: AtomicU64,
}

/// State every session thread shares.
pub(crate) struct Shared {
    pub cfg: Config,
    /// The same settings, as the session machines take them.
    pub machine: machine::Config,
    pub counters: Arc<Counters>,
    /// Response bytes: sessions send from this one read-only buffer, in
    /// chunks, so a 64 MiB response costs no per-session memory.
    pub tx: stackmeter_sys::AlignedBuf,
    /// Object mode's catalogue, if enabled.
    pub store: Option<Objects>,
    /// Open throughput tests (an `Arc`, so a lingering refusal can carry
    /// its session to a thread of its own).
    pub registry: Arc<Registry>,
    /// Source sockets of open tests, for TCP_INFO.
    pub sources: Sources,
    /// What each client address has open (the per-address limits).
    pub clients: Clients,
}

impl Shared {
    pub(crate) fn new(cfg: Config, counters: Arc<Counters>, store: Option<Objects>) -> io::Result<Shared> {
        // Page-aligned like every receive buffer: the kernel's copy out of a
        // misaligned buffer is as slow on AMD Zen as the copy into one.
        let mut tx = stackmeter_sys::AlignedBuf::new(CHUNK);
        stackmeter_proto::pattern::fill(0, tx.bytes_mut());
        let mut seed = [0u8; 16];
        if cfg.secret.is_some() {
            // The nonces of challenges must not repeat across restarts.
            use std::io::Read;
            std::fs::File::open("/dev/urandom")
                .and_then(|mut f| f.read_exact(&mut seed))
                .map_err(|e| io::Error::new(e.kind(), format!("cannot read /dev/urandom for challenge nonces: {e}")))?;
        }
        Ok(Shared {
            machine: cfg.machine(store.is_some(), seed),
            clients: Clients::default(),
            cfg,
            counters,
            tx,
            store,
            registry: Arc::new(Registry::new()),
            sources: Sources::default(),
        })
    }

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

/// Starts a named responder thread with a small stack.
pub(crate) fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> io::Result<()> {
    std::thread::Builder::new()
        .name(format!("stackmeter-{name}"))
        .stack_size(256 << 10)
        .spawn(f)
        .map(|_| ())
}

/// A CPU time as the machine takes it.
pub(crate) fn cpu(c: stackmeter_sys::CpuTime) -> machine::CpuTime {
    machine::CpuTime {
        user_ns: c.user_ns,
        sys_ns: c.sys_ns,
    }
}
