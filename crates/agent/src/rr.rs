//! The rr prober: a 1-byte request and a 1-byte response per round on a
//! TCP connection kept open to each peer, one thread per peer.
//!
//! Kept connection rather than a session per round: rr is meant to
//! measure the request/response path of an established connection (the
//! stacks and the scheduling on both hosts), which is what an
//! application's requests see; a new session per round would add the
//! handshake and the session header's round trip, which is what `crr`
//! measures, and would open a connection to every peer every second
//! (about 1,000 connections a second across a 32-node mesh, each leaving
//! a TIME_WAIT socket, and a peer with `--max-connects-per-second` would
//! turn them away). The cost is one idle session on each peer's responder
//! (about 1.4 KiB on its event loop). After a connect the agent makes one
//! untimed exchange first, so the timed one runs on an established
//! session wherever the responder placed it.
//!
//! One blocking thread per peer, like the client's closed loops: a
//! blocking `send` and `recv` on a dedicated thread is the shortest path
//! from request to response, and a peer that does not answer blocks only
//! its own thread, up to the timeout. A round with no answer within the
//! timeout is lost, and so is one whose connect or session fails; the
//! connection is then closed (a late response would be read as the next
//! round's) and opened again at the next round. A connection the peer
//! closed while it was idle (its idle timeout, a restart) is reopened and
//! the round tried once more before anything counts as lost; one idle
//! longer than half the default idle timeout is reopened before use.

use crate::ctx::Ctx;
use crate::mesh::{lock, Pair, RR};
use stackmeter_client::Endpoint;
use stackmeter_proto::header::{Mode, SessionHeader};
use stackmeter_sys::monotonic_ns;
use std::collections::HashMap;
use std::io;
use std::net::TcpStream;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A connection idle longer than this is reopened before a round: half a
/// responder's default idle timeout.
const REUSE_NS: u64 = stackmeter_proto::limits::IDLE_TIMEOUT_MS * 1_000_000 / 2;

/// How often the manager looks at the peer list and the stop flag.
const LOOK: Duration = Duration::from_millis(100);

/// Runs until the stop: one probing thread per pair, started when a peer
/// comes and ended when it leaves; returns when every one has ended.
pub(crate) fn manage(ctx: Arc<Ctx>) {
    let mut threads: HashMap<*const Pair, (Arc<Pair>, JoinHandle<()>)> = HashMap::new();
    let mut generation = None;
    loop {
        let g = ctx.mesh.generation();
        if generation != Some(g) {
            generation = Some(g);
            for pair in ctx.mesh.pairs() {
                let key = Arc::as_ptr(&pair);
                if threads.contains_key(&key) {
                    continue;
                }
                let (c, p) = (ctx.clone(), pair.clone());
                let name: String = format!("rr {}", pair.label).chars().take(15).collect();
                match std::thread::Builder::new()
                    .name(name)
                    .stack_size(256 << 10)
                    .spawn(move || probe(&p, &c))
                {
                    Ok(h) => {
                        threads.insert(key, (pair, h));
                    }
                    Err(e) => crate::log::warn(&format!(
                        "peer {} ({}): rr: cannot start its thread: {e}",
                        pair.label, pair.addr
                    )),
                }
            }
        }
        threads.retain(|_, (pair, h)| pair.is_live() || !h.is_finished());
        if ctx.stop.sleep(LOOK) {
            break;
        }
    }
    for (_, (_, h)) in threads {
        let _ = h.join();
    }
}

/// Probes `pair` once per round at its slot until it leaves or the agent
/// stops.
fn probe(pair: &Pair, ctx: &Ctx) {
    let interval = ctx.plan.interval_ns;
    let mut conn: Option<(TcpStream, u64)> = None;
    let mut last: Option<u64> = None;
    loop {
        let now = monotonic_ns();
        let from = last.map_or(now, |d| now.max(d + 1));
        let due = crate::schedule::next_due(ctx.epoch_ns, pair.offset(RR), interval, from);
        if ctx.stop.sleep(Duration::from_nanos(due.saturating_sub(now))) || !pair.is_live() {
            return;
        }
        last = Some(due);
        let m = &ctx.metrics;
        pair.record(|| {
            m.sent(&pair.label, RR);
            lock(&pair.rr).sent();
        });
        match round(pair, ctx, &mut conn) {
            Ok(rtt_ns) => {
                pair.record(|| {
                    m.answered(&pair.label, RR, rtt_ns);
                    lock(&pair.rr).answered(rtt_ns);
                });
                pair.health(RR, true, String::new);
            }
            Err(why) => {
                pair.record(|| m.lost(&pair.label, RR));
                pair.health(RR, false, || why.to_string());
            }
        }
    }
}

/// Why an rr round got no answer (a pair's health line is its text).
#[derive(Debug, thiserror::Error)]
enum Missed {
    /// The session could not be opened.
    #[error("{0}")]
    Open(stackmeter_client::ClientError),
    /// No response in time.
    #[error("no response within {0} ms")]
    Timeout(u128),
    /// The peer closed the connection.
    #[error("the connection was closed: {0}")]
    Closed(io::Error),
    /// Any other failure of the exchange.
    #[error("exchange failed: {0}")]
    Failed(io::Error),
}

/// One round: the connection opened if needed, one timed exchange.
fn round(pair: &Pair, ctx: &Ctx, conn: &mut Option<(TcpStream, u64)>) -> Result<u64, Missed> {
    if conn
        .as_ref()
        .is_some_and(|(_, used)| monotonic_ns().saturating_sub(*used) > REUSE_NS)
    {
        *conn = None;
    }
    let reused = conn.is_some();
    let mut s = match conn.take() {
        Some((s, _)) => s,
        None => open(pair, ctx)?,
    };
    let rtt = match exchange(&mut s) {
        Ok(rtt) => rtt,
        Err(e) if reused && closed(&e) => {
            s = open(pair, ctx)?;
            exchange(&mut s).map_err(|e| failed(e, ctx))?
        }
        Err(e) => return Err(failed(e, ctx)),
    };
    *conn = Some((s, monotonic_ns()));
    Ok(rtt)
}

/// A new rr session of 1-byte requests and responses, past one untimed
/// exchange.
fn open(pair: &Pair, ctx: &Ctx) -> Result<TcpStream, Missed> {
    let h = SessionHeader {
        mode: Mode::Rr,
        req_size: 1,
        resp_size: 1,
        flags: 0,
    };
    let at = Endpoint::new(pair.addr, ctx.secret);
    let mut s = stackmeter_client::open_session(&at, &h, ctx.timeout).map_err(Missed::Open)?;
    exchange(&mut s).map_err(|e| failed(e, ctx))?;
    Ok(s)
}

/// The timed exchange, 1 byte each way: the client's own
/// (`stackmeter_client::rr::timed_exchange`), nothing between the two
/// clock reads but the send and the receive.
fn exchange(s: &mut TcpStream) -> io::Result<u64> {
    let mut rx = [0u8; 1];
    stackmeter_client::rr::timed_exchange(s, &[0u8; 1], 1, &mut rx)
}

/// The peer closed the connection (rather than not answering).
fn closed(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted
    )
}

fn failed(e: io::Error, ctx: &Ctx) -> Missed {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Missed::Timeout(ctx.timeout.as_millis()),
        _ if closed(&e) => Missed::Closed(e),
        _ => Missed::Failed(e),
    }
}
