//! rr and crr against plain targets: servers that speak no stackmeter
//! protocol (an RFC 862 echo server, a server with its own reply rule such
//! as the io-sock module of the latency-grid scenario, docs/scenarios.md).
//!
//! No session header and no status record: the data phase starts at
//! `connect`. The timed loops are rr's and crr's own (`rr::exchanges`,
//! `crr::connections`); what differs is the exchange: `--echo` sends the
//! request and reads it back (large requests in pieces, reading between
//! them), `--raw` sends the request and reads exactly the response size,
//! and the request may start with the user's prefix.

use crate::crr::{connections, Transaction};
use crate::error::ClientError;
use crate::outcome::Outcome;
use crate::rr::{exchanges, request, retransmitted, retransmitted_since, rx_len, Buffers, Exchange, NoTap, Tap};
use crate::sockets::{lost, send_all, tcp_connect, AlignedBuf, CHUNK};
use stackmeter_recorder::Recorder;
use stackmeter_results::{CrrParams, CrrResult, RrParams, RrResult, SizePair};
use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// An echo request larger than this is sent in pieces of this size, and
/// what has come back is read between pieces (without waiting): an echo
/// server writes back while the request still arrives, so neither side's
/// buffers fill and stall the exchange.
const ECHO_PIECE: usize = 64 << 10;

/// rr against a plain target: per size pair one connection, no header;
/// `--echo` sends REQ bytes and reads them back, `--raw` sends REQ bytes
/// and reads exactly RESP. Stops at the first error, keeping finished rows.
pub fn rr_plain(addr: SocketAddr, spec: &RrParams) -> Outcome<RrResult> {
    rr_plain_tapped(addr, spec, None::<&mut NoTap>)
}

/// [`rr_plain`], each pair's exchanges through `tap` when given (`rr
/// --layers`).
pub(crate) fn rr_plain_tapped<T: Tap>(addr: SocketAddr, spec: &RrParams, mut tap: Option<&mut T>) -> Outcome<RrResult> {
    let prefix = prefix(spec.request_prefix.as_deref());
    crate::outcome::per_pair(&spec.sizes, |pair| {
        rr_one(addr, pair, spec, &prefix, tap.as_deref_mut())
    })
}

/// The request's first bytes (checked by the engine: valid hex).
fn prefix(hex: Option<&str>) -> Vec<u8> {
    hex.and_then(|h| stackmeter_results::plain::prefix_bytes(h).ok())
        .unwrap_or_default()
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

/// The first reply, when it fits the buffer, is checked (after the clock
/// reads): a server that does not echo is named before anything is timed.
/// A reply that differs from its request: the target is no echo server
/// (or corrupts data).
fn not_an_echo(addr: SocketAddr, first: bool, req: &[u8], rx: &[u8]) -> Result<(), ClientError> {
    if !first || req.len() > rx.len() {
        return Ok(());
    }
    let Some(at) = req.iter().zip(rx).position(|(a, b)| a != b) else {
        return Ok(());
    };
    Err(ClientError::Lost {
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
    tap: Option<&mut impl Tap>,
) -> Result<(RrResult, Recorder), ClientError> {
    let mut s = tcp_connect(addr, Duration::from_millis(spec.timeout_ms))?;
    let port = s.local_addr()?.port();
    let before = retransmitted(&s);
    let mut rx = AlignedBuf::new(rx_len(pair));
    let mut x = Plain {
        b: Buffers::new(&mut s, pair, prefix, rx.bytes_mut()),
        echo: spec.echo,
        addr,
    };
    let (mut row, rec) = match tap {
        Some(t) => t.exchanges(port, addr, pair, spec, &mut x)?,
        None => exchanges(addr, pair, spec, &mut x)?,
    };
    row.retransmits = retransmitted_since(&s, before);
    Ok((row, rec))
}

/// rr's exchange with a plain target.
struct Plain<'a> {
    b: Buffers<'a>,
    echo: bool,
    addr: SocketAddr,
}

impl Exchange for Plain<'_> {
    type Out = ();

    #[inline(always)]
    fn once(&mut self) -> io::Result<()> {
        exchange(self.b.s, &self.b.req, self.b.resp, self.b.rx, self.echo)
    }

    fn after(&mut self, i: u64, timed: Option<(Instant, Instant)>, _: ()) -> Result<(), ClientError> {
        let first = self.echo && timed.is_none() && i == 0;
        not_an_echo(self.addr, first, &self.b.req, self.b.rx)
    }
}

/// crr against a plain target: per connection `connect`, the request, the
/// response, `close`; timed as `crr` times a responder (connect call to
/// established, and connect call to close returned), with no header and
/// no status record in between.
pub fn crr_plain(addr: SocketAddr, spec: &CrrParams) -> Outcome<CrrResult> {
    crate::crr::outcome(crr_run(addr, spec), spec)
}

fn crr_run(addr: SocketAddr, spec: &CrrParams) -> Result<(CrrResult, Recorder, Recorder), ClientError> {
    let mut rx = AlignedBuf::new((spec.resp_bytes as usize).min(CHUNK));
    let mut x = PlainCrr {
        req: request(spec.req_bytes, &prefix(spec.request_prefix.as_deref())),
        resp: spec.resp_bytes as u64,
        rx: rx.bytes_mut(),
        echo: spec.echo,
        addr,
    };
    connections(addr, spec, &mut x)
}

/// crr's transaction with a plain target.
struct PlainCrr<'a> {
    req: Vec<u8>,
    resp: u64,
    rx: &'a mut [u8],
    echo: bool,
    addr: SocketAddr,
}

impl Transaction for PlainCrr<'_> {
    #[inline(always)]
    fn carry(&mut self, s: &mut TcpStream, i: u64) -> Result<(), ClientError> {
        exchange(s, &self.req, self.resp, self.rx, self.echo).map_err(|e| {
            let during = format!("exchanging the request and response (connection {i})");
            lost(self.addr, &during, &e)
        })
    }

    fn after(&mut self, i: u64) -> Result<(), ClientError> {
        not_an_echo(self.addr, self.echo && i == 0, &self.req, self.rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_starts_with_its_prefix() {
        let r = request(4, &[0xde, 0xad]);
        assert_eq!(&r[..2], &[0xde, 0xad]);
        assert_eq!(r.len(), 4);
        assert_eq!(prefix(Some("01")), vec![1]);
    }
}
