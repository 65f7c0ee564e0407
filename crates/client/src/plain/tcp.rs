//! Plain targets for rr, crr and ping: servers that speak no stackmeter
//! protocol (an RFC 862 echo server, a server with its own reply rule such
//! as seed 000's io-sock module, a 20-line `recvfrom`/`sendto` loop).
//!
//! No session header and no status record: the data phase starts at
//! `connect`. The timed loops have the shape of `rr.rs` and `crr.rs`: the
//! clock read right before the first byte is handed to the kernel and
//! right after the last byte is back, nothing allocated or formatted in
//! between, the sample recorded after the second read.
//!
//! ping's datagrams to a UDP echo server carry the client's own header
//! ([`EchoFrames`]) in place of the protocol's: the server sends back what
//! it got, so sequence numbers and send stamps travel in the payload and
//! loss, duplicates, reordering and late replies are counted as against a
//! responder; a reply that differs from its request in any byte is
//! mismatched.

use crate::error::ClientError;
use crate::outcome::{levels, summary_us, Outcome};
use crate::sockets::{connect, lost, send_all, tcp_socket, AlignedBuf, CHUNK};
use stackmeter_results::{CrrParams, CrrResult, RrParams, RrResult, SizePair};
use stackmeter_stats::Recorder;
use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Bytes of the client's own header at the start of each datagram sent to
/// a plain UDP echo server.
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 4 | magic `53 4D 54 45` ("SMTE") |
/// | 4 | 4 | run tag: chosen per test, so replies to another run are mismatched |
/// | 8 | 8 | sequence number, big-endian |
/// | 16 | 8 | send stamp: ns since the test's start, big-endian |
/// | 24 | .. | payload pattern of the sequence number (docs/protocol.md 4.2) |
pub const ECHO_HEADER_LEN: usize = 24;
const ECHO_MAGIC: [u8; 4] = *b"SMTE";

/// An echo request larger than this is sent in pieces of this size, and
/// what has come back is read between pieces (without waiting): an echo
/// server writes back while the request still arrives, so neither side's
/// buffers fill and stall the exchange.
const ECHO_PIECE: usize = 64 << 10;

/// The client's framing of ping datagrams to a plain echo server: what
/// it wrote into each, so each reply can be compared with its request.
pub(crate) struct EchoFrames {
    tag: u32,
    stamps: Vec<u64>,
}

impl EchoFrames {
    /// Framing for `total` datagrams.
    pub(crate) fn new(total: usize) -> EchoFrames {
        // Any value that differs between runs will do: the low bits of the
        // clock and the process id.
        let tag = (stackmeter_sys::monotonic_ns() as u32) ^ std::process::id().rotate_left(16);
        EchoFrames {
            tag,
            stamps: vec![0; total],
        }
    }

    /// Writes datagram `seq` (sent at `stamp` ns) into `buf`.
    pub(crate) fn build(&mut self, seq: u64, stamp: u64, buf: &mut [u8]) {
        buf[0..4].copy_from_slice(&ECHO_MAGIC);
        buf[4..8].copy_from_slice(&self.tag.to_be_bytes());
        buf[8..16].copy_from_slice(&seq.to_be_bytes());
        buf[16..24].copy_from_slice(&stamp.to_be_bytes());
        stackmeter_proto::pattern::fill(seq, &mut buf[ECHO_HEADER_LEN..]);
        if let Some(s) = self.stamps.get_mut(seq as usize) {
            *s = stamp;
        }
    }

    /// The sequence number a reply answers, and whether it equals that
    /// request byte for byte (`size` bytes); `None` when it names no
    /// datagram of this run (too short, another magic or run tag, a
    /// sequence number never sent).
    pub(crate) fn check(&self, reply: &[u8], size: usize) -> Option<(u64, bool)> {
        if reply.len() < ECHO_HEADER_LEN || reply[0..4] != ECHO_MAGIC || reply[4..8] != self.tag.to_be_bytes() {
            return None;
        }
        let seq = u64::from_be_bytes(reply[8..16].try_into().ok()?);
        let stamp = *self.stamps.get(seq as usize)?;
        let intact = reply.len() == size
            && reply[16..24] == stamp.to_be_bytes()
            && stackmeter_proto::pattern::matches(seq, &reply[ECHO_HEADER_LEN..]);
        Some((seq, intact))
    }
}

/// rr against a plain target: per size pair one connection, no header;
/// `--echo` sends REQ bytes and reads them back, `--raw` sends REQ bytes
/// and reads exactly RESP. Stops at the first error, keeping finished rows.
pub fn rr_plain(addr: SocketAddr, spec: &RrParams) -> Outcome<RrResult> {
    let prefix = prefix(spec.request_prefix.as_deref());
    crate::outcome::per_pair(&spec.sizes, |pair| rr_one(addr, pair, spec, &prefix))
}

/// The request's first bytes (checked by the engine: valid hex).
fn prefix(hex: Option<&str>) -> Vec<u8> {
    hex.and_then(|h| stackmeter_results::plain::prefix_bytes(h).ok())
        .unwrap_or_default()
}

/// A request of `len` bytes: the prefix, then the payload pattern.
fn request(len: u32, prefix: &[u8]) -> Vec<u8> {
    let mut req = vec![0u8; len as usize];
    stackmeter_proto::pattern::fill(0, &mut req);
    let n = prefix.len().min(req.len());
    req[..n].copy_from_slice(&prefix[..n]);
    req
}

/// One exchange with a plain target: the measured path. `echo` interleaves
/// sending and reading for requests above [`ECHO_PIECE`]; up to that it is
/// rr's exchange (send all, then read all, with the same calls), the
/// response kept in order in `rx` when it fits.
#[inline(always)]
fn exchange(s: &mut TcpStream, req: &[u8], resp: u64, rx: &mut [u8], echo: bool) -> io::Result<()> {
    if !echo || req.len() <= ECHO_PIECE {
        send_all(s, req)?;
        return recv_rest(s, resp, 0, rx);
    }
    let fd = s.as_raw_fd();
    let (mut sent, mut got) = (0usize, 0u64);
    while sent < req.len() {
        let end = (sent + ECHO_PIECE).min(req.len());
        send_all(s, &req[sent..end])?;
        sent = end;
        loop {
            let at = (got % rx.len() as u64) as usize;
            match stackmeter_sys::recv_nowait(fd, &mut rx[at..]) {
                Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed mid-echo")),
                Ok(n) => got += n as u64,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    recv_rest(s, resp, got, rx)
}

/// Reads the bytes of a `total`-byte response after the first `got`,
/// continuing where they ended in `rx` (so a response that fits holds all
/// of it in order).
fn recv_rest(s: &mut TcpStream, total: u64, mut got: u64, rx: &mut [u8]) -> io::Result<()> {
    while got < total {
        let at = (got % rx.len() as u64) as usize;
        let want = ((total - got) as usize).min(rx.len() - at);
        match s.read(&mut rx[at..at + want]) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("closed after {got} of {total} bytes"),
                ))
            }
            Ok(n) => got += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A connected TCP socket to a plain target: TCP_NODELAY, bounded waits.
fn plain_stream(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, ClientError> {
    let s = tcp_socket(addr, timeout)?;
    connect(&s, addr, timeout)?;
    Ok(TcpStream::from(s))
}

/// An echo reply that differs from its request: the target is no echo
/// server (or corrupts data).
fn not_an_echo(addr: SocketAddr, req: &[u8], rx: &[u8]) -> Option<ClientError> {
    let at = req.iter().zip(rx).position(|(a, b)| a != b)?;
    Some(ClientError::Lost {
        addr,
        what: format!(
            "the reply differs from the request at byte {at} of {} (sent {:#04x}, got {:#04x}): not an echo server",
            req.len(),
            req[at],
            rx[at]
        ),
    })
}

fn rr_one(
    addr: SocketAddr,
    pair: SizePair,
    spec: &RrParams,
    prefix: &[u8],
) -> Result<(RrResult, Recorder), ClientError> {
    let mut s = plain_stream(addr, Duration::from_millis(spec.timeout_ms))?;
    let req = request(pair.req, prefix);
    let mut rx_buf = AlignedBuf::new((pair.resp as usize).min(CHUNK));
    let rx = rx_buf.bytes_mut();
    let resp = pair.resp as u64;
    let broke = |i: u64, e: io::Error| {
        let during = format!("exchanging {}:{} (transaction {i})", pair.req, pair.resp);
        lost(addr, &during, &e)
    };
    for i in 0..spec.warmup {
        crate::error::check_interrupt()?;
        exchange(&mut s, &req, resp, rx, spec.echo).map_err(|e| broke(i, e))?;
        // The first reply, when it fits the buffer, is checked: a server
        // that does not echo is named before anything is timed.
        if i == 0 && spec.echo && req.len() <= rx.len() {
            if let Some(e) = not_an_echo(addr, &req, rx) {
                return Err(e);
            }
        }
    }
    let mut rec = Recorder::new();
    let start = Instant::now();
    let mut end = start;
    for i in 0..spec.iterations {
        let t0 = Instant::now();
        let r = exchange(&mut s, &req, resp, rx, spec.echo);
        let t1 = Instant::now();
        r.map_err(|e| broke(spec.warmup + i, e))?;
        rec.record(t1.duration_since(t0).as_nanos() as u64);
        end = t1;
        if stackmeter_sys::interrupt::interrupted() {
            break;
        }
    }
    if rec.count() == 0 {
        crate::error::check_interrupt()?;
    }
    let wall = end.duration_since(start).as_secs_f64();
    let row = RrResult {
        req_bytes: pair.req,
        resp_bytes: pair.resp,
        samples: rec.count(),
        warmup: spec.warmup,
        rtt_us: summary_us(&rec).ok_or_else(|| ClientError::Lost {
            addr,
            what: "no timed transaction (iterations is 0)".into(),
        })?,
        tps: if wall > 0.0 { rec.count() as f64 / wall } else { 0.0 },
        levels: levels(&rec),
        requested_rate: None,
        achieved_rate: None,
        send_lag_us: None,
        late_sends: None,
        timestamps: None,
        split_us: None,
    };
    Ok((row, rec))
}

/// crr against a plain target: per connection `connect`, the request, the
/// response, `close`; timed as `crr` times a responder (connect call to
/// established, and connect call to close returned), with no header and
/// no status record in between.
pub fn crr_plain(addr: SocketAddr, spec: &CrrParams) -> Outcome<CrrResult> {
    crate::crr::outcome(crr_run(addr, spec), spec)
}

fn crr_run(addr: SocketAddr, spec: &CrrParams) -> Result<(CrrResult, Recorder, Recorder), ClientError> {
    let timeout = Duration::from_millis(spec.timeout_ms);
    let req = request(spec.req_bytes, &prefix(spec.request_prefix.as_deref()));
    let mut rx_buf = AlignedBuf::new((spec.resp_bytes as usize).min(CHUNK));
    let rx = rx_buf.bytes_mut();
    let (mut connect_rec, mut total_rec) = (Recorder::new(), Recorder::new());
    let mut start = None;
    let mut end = Instant::now();
    for i in 0..spec.warmup + spec.iterations {
        if stackmeter_sys::interrupt::interrupted() && total_rec.count() > 0 {
            break;
        }
        crate::error::check_interrupt()?;
        let sock = tcp_socket(addr, timeout)?;
        let t0 = Instant::now();
        connect(&sock, addr, timeout)?;
        let t1 = Instant::now();
        let mut s = TcpStream::from(sock);
        exchange(&mut s, &req, spec.resp_bytes as u64, rx, spec.echo).map_err(|e| {
            lost(
                addr,
                &format!("exchanging the request and response (connection {i})"),
                &e,
            )
        })?;
        drop(s);
        let t2 = Instant::now();
        if i == 0 && spec.echo && req.len() <= rx.len() {
            if let Some(e) = not_an_echo(addr, &req, rx) {
                return Err(e);
            }
        }
        if i >= spec.warmup {
            start.get_or_insert(t0);
            connect_rec.record(t1.duration_since(t0).as_nanos() as u64);
            total_rec.record(t2.duration_since(t0).as_nanos() as u64);
            end = t2;
        }
    }
    let none = || ClientError::Lost {
        addr,
        what: "no timed connection (iterations is 0)".into(),
    };
    let wall = start.map(|s| end.duration_since(s).as_secs_f64()).unwrap_or(0.0);
    let row = CrrResult {
        req_bytes: spec.req_bytes,
        resp_bytes: spec.resp_bytes,
        samples: total_rec.count(),
        warmup: spec.warmup,
        connect_us: summary_us(&connect_rec).ok_or_else(none)?,
        transaction_us: summary_us(&total_rec).ok_or_else(none)?,
        cps: if wall > 0.0 {
            total_rec.count() as f64 / wall
        } else {
            0.0
        },
    };
    Ok((row, connect_rec, total_rec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_echoed_datagram_checks_and_any_changed_byte_does_not() {
        let mut f = EchoFrames::new(4);
        let mut buf = vec![0u8; 64];
        f.build(2, 12345, &mut buf);
        assert_eq!(&buf[0..4], b"SMTE");
        assert_eq!(f.check(&buf, 64), Some((2, true)));
        for at in [5, 9, 17, 30, 63] {
            let mut bad = buf.clone();
            bad[at] ^= 1;
            let r = f.check(&bad, 64);
            assert!(r.is_none() || r == Some((2, false)), "byte {at}: {r:?}");
        }
        assert_eq!(f.check(&buf[..63], 64), Some((2, false)), "short reply");
        assert_eq!(f.check(&buf[..20], 64), None, "shorter than the header");
        let mut other = buf.clone();
        other[8..16].copy_from_slice(&9u64.to_be_bytes());
        assert_eq!(f.check(&other, 64), None, "never sent");
    }

    #[test]
    fn a_request_starts_with_its_prefix() {
        let r = request(4, &[0xde, 0xad]);
        assert_eq!(&r[..2], &[0xde, 0xad]);
        assert_eq!(r.len(), 4);
        assert_eq!(prefix(Some("01")), vec![1]);
    }
}
