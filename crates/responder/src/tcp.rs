//! TCP sessions: header, status, then the data phase of the mode.
//!
//! Each accepted connection gets its own thread. The session reads the
//! header against a deadline, refuses what it cannot serve (status record,
//! one log line, close), and otherwise runs rr (read request, write
//! response, until the client closes) or crr (one transaction, status and
//! response written together, then wait for the client's close).

use crate::{spawn, Shared, CHUNK};
use stackmeter_proto::session::{Mode, Prefix, SessionHeader, PREFIX_LEN};
use stackmeter_proto::status::{self, Refusal, MAX_STATUS_LEN, STATUS_PREFIX_LEN};
use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
        let active = shared.counters.active.fetch_add(1, Ordering::AcqRel);
        if active >= shared.cfg.max_sessions {
            shared.counters.active.fetch_sub(1, Ordering::AcqRel);
            let reason = format!("{} sessions running, the limit", shared.cfg.max_sessions);
            refuse_quick(stream, peer, Refusal::Busy, &reason, &shared);
            continue;
        }
        shared.counters.peak.fetch_max(active + 1, Ordering::Relaxed);
        let s = shared.clone();
        let spawned = spawn("session", move || {
            s.pin();
            session(stream, peer, &s);
            s.counters.active.fetch_sub(1, Ordering::AcqRel);
        });
        if let Err(e) = spawned {
            shared.counters.active.fetch_sub(1, Ordering::AcqRel);
            log.line(format_args!("cannot start a session thread for {peer}: {e}"));
        }
    }
}

/// Lingering closes running at once for busy refusals; beyond this the
/// accept thread closes at once (the refusal may then be lost to a reset).
const MAX_LINGERING: usize = 64;

/// Refuses from the accept thread without blocking it: the record is at
/// most 263 bytes and a new socket's send buffer takes it whole; the
/// lingering close runs on a short-lived thread of its own.
fn refuse_quick(stream: TcpStream, peer: SocketAddr, why: Refusal, reason: &str, shared: &Arc<Shared>) {
    let _ = stream.set_nonblocking(true);
    send_refusal(&stream, peer, why, reason, shared);
    let _ = stream.set_nonblocking(false);
    let lingering = &shared.counters.lingering;
    if lingering.fetch_add(1, Ordering::AcqRel) < MAX_LINGERING {
        let s = shared.clone();
        let spawned = spawn("linger", move || {
            linger_close(stream);
            s.counters.lingering.fetch_sub(1, Ordering::AcqRel);
        });
        if spawned.is_err() {
            lingering.fetch_sub(1, Ordering::AcqRel);
        }
    } else {
        lingering.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Refuses from a session thread: the record, then a lingering close.
pub(crate) fn refuse(stream: TcpStream, peer: SocketAddr, why: Refusal, reason: &str, shared: &Shared) {
    send_refusal(&stream, peer, why, reason, shared);
    linger_close(stream);
}

fn send_refusal(mut stream: &TcpStream, peer: SocketAddr, why: Refusal, reason: &str, shared: &Shared) {
    Shared::bump(&shared.counters.refused);
    shared
        .cfg
        .log
        .line(format_args!("refused {peer}: {}: {reason}", why.name()));
    let mut rec = [0u8; MAX_STATUS_LEN];
    let n = status::emit_refusal(why, reason, &mut rec);
    let _ = stream.write_all(&rec[..n]);
}

/// Half-closes, then reads and discards what the client still sends (at
/// most 64 KiB, at most 500 ms) before closing. Closing with unread bytes
/// queued makes the kernel send a reset, which can destroy the refusal
/// record before the client has read it.
fn linger_close(mut stream: TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let deadline = Instant::now() + Duration::from_millis(500);
    let mut sink = [0u8; 4096];
    let mut total = 0;
    while total < 64 << 10 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(n) => total += n,
        }
    }
}

/// How a deadline-bounded read ended short.
enum Short {
    /// The deadline passed.
    Timeout,
    /// The peer closed after `got` bytes.
    Eof(usize),
    /// Any other socket error.
    Io(io::Error),
}

/// Reads exactly `buf.len()` bytes before `deadline`.
fn read_by(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<(), Short> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Short::Timeout);
        }
        stream.set_read_timeout(Some(left)).map_err(Short::Io)?;
        match stream.read(&mut buf[got..]) {
            Ok(0) => return Err(Short::Eof(got)),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => return Err(Short::Timeout),
            Err(e) => return Err(Short::Io(e)),
        }
    }
    Ok(())
}

/// Sources writing less than this per call run with Nagle on.
const NODELAY_FROM: u32 = 16 << 10;

/// A sink reads in pieces of this size (iperf3's default TCP length).
const SINK_BUF: usize = 128 << 10;

pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

fn session(mut stream: TcpStream, peer: SocketAddr, shared: &Shared) {
    let log = shared.cfg.log;
    let _ = stream.set_nodelay(true);
    let deadline = Instant::now() + shared.cfg.header_timeout;
    let mut hdr = [0u8; stackmeter_proto::session::MAX_HEADER_LEN as usize];
    let header = match read_header(&mut stream, &mut hdr, deadline) {
        Ok(h) => h,
        Err(HeaderFail::Refuse(why, reason)) => return refuse(stream, peer, why, &reason, shared),
        Err(HeaderFail::Objects) => return crate::objects::run(stream, peer, shared),
        Err(HeaderFail::Gone(what)) => {
            Shared::bump(&shared.counters.aborted);
            return log.line(format_args!("{peer}: {what} before the session header was complete"));
        }
    };
    let max = shared.cfg.max_msg;
    let sizes = match header.mode {
        Mode::Rr | Mode::Crr => [("request", header.req_size), ("response", header.resp_size)],
        Mode::Source => [("write", header.resp_size), ("write", 0)],
        Mode::Sink | Mode::Control => [("none", 0), ("none", 0)],
    };
    for (what, size) in sizes {
        if size > max {
            let reason = format!("{what} size {size} exceeds limit {max}");
            return refuse(stream, peer, Refusal::TooLarge, &reason, shared);
        }
    }
    Shared::bump(&shared.counters.sessions);
    let idle = shared.cfg.idle_timeout;
    if stream
        .set_read_timeout(Some(idle))
        .and_then(|_| stream.set_write_timeout(Some(idle)))
        .is_err()
    {
        return;
    }
    let rx_len = match header.mode {
        Mode::Rr | Mode::Crr => (header.req_size as usize).min(CHUNK),
        _ => 0,
    };
    let mut rx = stackmeter_sys::AlignedBuf::new(rx_len);
    let result = match header.mode {
        Mode::Rr => rr(&mut stream, &header, rx.bytes_mut(), shared),
        Mode::Crr => crr(&mut stream, &header, rx.bytes_mut(), shared),
        Mode::Control => crate::stream::control(&mut stream, shared),
        Mode::Sink | Mode::Source => {
            let Some(test) = shared.tests.get(header.test_id()) else {
                let reason = format!("no open test {}", header.test_id());
                return refuse(stream, peer, Refusal::UnknownTest, &reason, shared);
            };
            if header.mode == Mode::Sink {
                // The client's write size as the read size, so both ends
                // move the same messages (seed 001's 64-byte test); capped.
                let hint = header.resp_size as usize;
                let mut rx = stackmeter_sys::AlignedBuf::new(if hint == 0 { SINK_BUF } else { hint.min(CHUNK) });
                crate::stream::sink(&mut stream, test, rx.bytes_mut())
            } else {
                if header.resp_size < NODELAY_FROM {
                    // Small writes are meant to be coalesced, as a bulk
                    // sender's are (docs/protocol.md, mode 5).
                    let _ = stream.set_nodelay(false);
                }
                crate::stream::source(&mut stream, test, header.resp_size as usize, shared.tx.bytes(), idle)
            }
        }
    };
    if let Err(what) = result {
        Shared::bump(&shared.counters.aborted);
        log.line(format_args!("{peer}: session ended: {what}"));
    }
}

enum HeaderFail {
    Refuse(Refusal, String),
    Gone(String),
    /// A valid object-mode header (mode 16): not a rr/crr session.
    Objects,
}

fn read_header(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<SessionHeader, HeaderFail> {
    let short = |s: Short| match s {
        Short::Timeout => HeaderFail::Refuse(Refusal::HeaderTimeout, "session header not complete in time".into()),
        Short::Eof(got) => HeaderFail::Gone(format!("client closed after {got} header bytes")),
        Short::Io(e) => HeaderFail::Gone(format!("connection failed ({e})")),
    };
    let refuse = |e: stackmeter_proto::session::HeaderError| {
        HeaderFail::Refuse(e.refusal().unwrap_or(Refusal::BadHeader), e.to_string())
    };
    read_by(stream, &mut buf[..PREFIX_LEN], deadline).map_err(short)?;
    let prefix = Prefix::parse(&buf[..PREFIX_LEN]).map_err(refuse)?;
    if prefix.version != stackmeter_proto::VERSION {
        // Judge the version before reading on: a later version may lay out
        // the rest differently.
        let e = stackmeter_proto::session::HeaderError::UnsupportedVersion(prefix.version);
        return Err(refuse(e));
    }
    let len = prefix.header_len as usize;
    if len > PREFIX_LEN {
        read_by(stream, &mut buf[PREFIX_LEN..len], deadline).map_err(short)?;
    }
    if prefix.mode == stackmeter_proto::objects::MODE {
        stackmeter_proto::objects::parse_header(&buf[..len]).map_err(refuse)?;
        return Err(HeaderFail::Objects);
    }
    SessionHeader::parse(&buf[..len]).map_err(refuse)
}

/// rr data phase: request in, response out, until the client closes.
fn rr(stream: &mut TcpStream, h: &SessionHeader, rx: &mut [u8], shared: &Shared) -> Result<(), String> {
    let mut acc = [0u8; STATUS_PREFIX_LEN];
    status::emit_accepted(&mut acc);
    stream.write_all(&acc).map_err(|e| format!("cannot send status: {e}"))?;
    loop {
        match read_request(stream, h.req_size as u64, rx)? {
            Request::Complete => {}
            Request::ClosedBetween => return Ok(()),
        }
        send_response(stream, &[], h.resp_size as u64, shared.tx.bytes())?;
    }
}

/// crr: one transaction with the status record in front of the response,
/// then wait for the client to close (so TIME_WAIT stays on its side).
fn crr(stream: &mut TcpStream, h: &SessionHeader, rx: &mut [u8], shared: &Shared) -> Result<(), String> {
    match read_request(stream, h.req_size as u64, rx)? {
        Request::Complete => {}
        Request::ClosedBetween => return Err("client closed before its request".into()),
    }
    let mut acc = [0u8; STATUS_PREFIX_LEN];
    status::emit_accepted(&mut acc);
    send_response(stream, &acc, h.resp_size as u64, shared.tx.bytes())?;
    let mut b = [0u8; 64];
    loop {
        match stream.read(&mut b) {
            Ok(0) => return Ok(()),
            Ok(_) => return Err("data after the crr transaction".into()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // The client may reset instead of closing: that is an end too.
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(()),
            Err(e) => return Err(format!("waiting for close: {e}")),
        }
    }
}

enum Request {
    Complete,
    ClosedBetween,
}

/// Reads one request of `size` bytes into `rx` (reused, overwritten).
fn read_request(stream: &mut TcpStream, size: u64, rx: &mut [u8]) -> Result<Request, String> {
    let mut got = 0u64;
    while got < size {
        let want = (size - got).min(rx.len() as u64) as usize;
        match stream.read(&mut rx[..want]) {
            Ok(0) if got == 0 => return Ok(Request::ClosedBetween),
            Ok(0) => return Err(format!("client vanished mid-request ({got} of {size} bytes)")),
            Ok(n) => got += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => return Err(format!("idle timeout mid-request ({got} of {size} bytes)")),
            Err(e) => return Err(format!("receive failed: {e}")),
        }
    }
    Ok(Request::Complete)
}

/// Writes `prefix` then `size` bytes taken from `tx` (cycled), with as few
/// calls as the kernel allows.
fn send_response(stream: &mut TcpStream, prefix: &[u8], size: u64, tx: &[u8]) -> Result<(), String> {
    let mut pre = prefix;
    let mut left = size;
    while !pre.is_empty() || left > 0 {
        let body = &tx[..left.min(tx.len() as u64) as usize];
        let r = if pre.is_empty() {
            stream.write(body)
        } else {
            stream.write_vectored(&[IoSlice::new(pre), IoSlice::new(body)])
        };
        match r {
            Ok(0) => return Err("client stopped taking data".into()),
            Ok(mut n) => {
                let p = n.min(pre.len());
                pre = &pre[p..];
                n -= p;
                left -= n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => {
                return Err(format!(
                    "idle timeout mid-response ({} of {size} bytes sent)",
                    size - left
                ))
            }
            Err(e) => {
                return Err(format!(
                    "client vanished mid-response ({} of {size} bytes sent): {e}",
                    size - left
                ))
            }
        }
    }
    Ok(())
}
