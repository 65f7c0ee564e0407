//! The TCP accept loop where there is no epoll (not Linux): one thread per
//! session up to the session limit, a `Busy` refusal beyond it. On Linux
//! the event loop (`events.rs`) does this job. A connection its address may not open now
//! (`--allow`, `--max-connects-per-second`, `--max-idle-per-client`) is
//! closed at once, before a byte is read or written.
//!
//! Each accepted connection gets its own thread running the session driver
//! (`conn.rs`). A connection beyond `max_sessions` is refused from the
//! accept thread without blocking it: the status record (at most 263 bytes,
//! which a new socket's send buffer takes whole) goes out non-blocking, and
//! the lingering close runs on a short-lived thread of its own, at most
//! [`MAX_LINGERING`] at once.

use crate::conn::{self, Conn, Drive, Stop, SMALL};
use crate::shared::{spawn, Shared};
use stackmeter_proto::machine::Session;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Lingering closes running at once for busy refusals; beyond this the
/// accept thread closes at once (the refusal may then be lost to a reset).
const MAX_LINGERING: usize = 64;

pub(crate) fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    shared.pin();
    let log = shared.cfg.log;
    log.line(format_args!(
        "listening on tcp {}",
        listener.local_addr().map(|a| a.to_string()).unwrap_or_default()
    ));
    loop {
        let (stream, peer) = match listener.accept() {
            Ok(x) => x,
            Err(e) => {
                // Out of descriptors or memory: say so and keep accepting.
                log.line(format_args!("accept failed: {e}"));
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        // Turned away before any byte is read or written: no log line
        // (a flood would fill the log), a counter.
        if shared
            .clients
            .admit(&shared.cfg, peer.ip(), stackmeter_sys::monotonic_ns())
            .is_err()
        {
            Shared::bump(&shared.counters.turned_away);
            drop(stream);
            continue;
        }
        let active = shared.counters.active.fetch_add(1, Ordering::AcqRel);
        if active >= shared.cfg.max_sessions {
            shared.counters.active.fetch_sub(1, Ordering::AcqRel);
            refuse_busy(stream, peer, &shared);
            continue;
        }
        shared.counters.peak.fetch_max(active + 1, Ordering::Relaxed);
        let s = shared.clone();
        let spawned = spawn("session", move || {
            s.pin();
            conn::run(stream, peer, &s);
            s.counters.active.fetch_sub(1, Ordering::AcqRel);
        });
        if let Err(e) = spawned {
            shared.counters.active.fetch_sub(1, Ordering::AcqRel);
            shared.clients.judged(&shared.cfg, peer.ip(), false);
            log.line(format_args!("cannot start a session thread for {peer}: {e}"));
        }
    }
}

/// Refuses a connection beyond the session limit: the record now, from
/// this thread (a non-blocking drive stops at the first read); the linger
/// on a thread of its own, which takes the session machine along.
fn refuse_busy(stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>) {
    let mut s = Session::busy(shared.registry.clone(), shared.machine, stackmeter_sys::monotonic_ns());
    let _ = stream.set_nonblocking(true);
    let mut c = Conn::new(stream, peer, shared, Drive::Loop);
    let mut small = [0u8; SMALL];
    if c.drive(&mut s, &mut small) == Stop::Closed {
        return;
    }
    let lingering = &shared.counters.lingering;
    if lingering.fetch_add(1, Ordering::AcqRel) >= MAX_LINGERING {
        lingering.fetch_sub(1, Ordering::AcqRel);
        return;
    }
    let link = c.into_link();
    let sh = shared.clone();
    let spawned = spawn("linger", move || {
        if let Ok(c) = Conn::from_link(link, &sh) {
            conn::finish(c, s);
        }
        sh.counters.lingering.fetch_sub(1, Ordering::AcqRel);
    });
    if spawned.is_err() {
        lingering.fetch_sub(1, Ordering::AcqRel);
    }
}
