//! TCP plumbing shared by rr and crr: sockets with bounded waits, the
//! session handshake, and the send/receive loops used inside timed code.

use crate::error::ClientError;
use crate::error::{connect_reason, is_timeout};
use socket2::{Domain, Protocol, Socket, Type};
use stackmeter_proto::session::SessionHeader;
use stackmeter_proto::status::{Refusal, StatusPrefix, MAX_REASON_LEN, STATUS_PREFIX_LEN};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub(crate) use stackmeter_sys::AlignedBuf;

/// Receive buffers never need to be larger than this; bigger responses are
/// read in pieces of this size.
pub(crate) const CHUNK: usize = 1 << 20;

/// A TCP socket with TCP_NODELAY and both timeouts set. On Linux the send
/// timeout also bounds a blocking `connect`.
pub(crate) fn tcp_socket(addr: SocketAddr, timeout: Duration) -> Result<Socket, ClientError> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    crate::tune::socket(std::os::fd::AsRawFd::as_raw_fd(&s))?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    Ok(s)
}

/// `connect` with the error put in the user's terms.
pub(crate) fn connect(s: &Socket, addr: SocketAddr, timeout: Duration) -> Result<(), ClientError> {
    s.connect(&addr.into()).map_err(|e| ClientError::Unreachable {
        addr,
        reason: connect_reason(&e, timeout.as_millis() as u64),
    })
}

/// Connects, sends the session header and reads the status record: a
/// stream ready for the data phase.
pub(crate) fn open_session(addr: SocketAddr, h: &SessionHeader, timeout: Duration) -> Result<TcpStream, ClientError> {
    open_session_with(addr, h, timeout, true)
}

/// [`open_session`] with a choice of TCP_NODELAY for the data phase: a
/// throughput test's data connections leave Nagle on by default (a bulk
/// sender of small writes wants its segments coalesced, as iperf3 does).
/// The header and status exchange happen with NODELAY either way.
pub(crate) fn open_session_with(
    addr: SocketAddr,
    h: &SessionHeader,
    timeout: Duration,
    nodelay: bool,
) -> Result<TcpStream, ClientError> {
    let s = tcp_socket(addr, timeout)?;
    connect(&s, addr, timeout)?;
    let mut stream = TcpStream::from(s);
    handshake(&mut stream, addr, h)?;
    if !nodelay {
        stream.set_nodelay(false)?;
    }
    Ok(stream)
}

/// [`open_session`] for a session whose header asks for stamp blocks:
/// kernel timestamps are turned on after the connect and before the header
/// is sent, so a send stamp's key is the byte's offset in the stream.
pub(crate) fn open_stamped_session(
    addr: SocketAddr,
    h: &SessionHeader,
    timeout: Duration,
    p: &stackmeter_results::StampParams,
) -> Result<TcpStream, ClientError> {
    use std::os::fd::AsRawFd;
    let s = tcp_socket(addr, timeout)?;
    connect(&s, addr, timeout)?;
    let local = s.local_addr()?.as_socket().unwrap_or(addr);
    crate::stamps::enable(s.as_raw_fd(), p, local)?;
    let mut stream = TcpStream::from(s);
    handshake(&mut stream, addr, h)?;
    Ok(stream)
}

/// Sends the header (asking to authenticate when the client has a
/// secret), answers the challenge, reads the status record.
fn handshake(stream: &mut TcpStream, addr: SocketAddr, h: &SessionHeader) -> Result<(), ClientError> {
    let h = SessionHeader {
        flags: crate::auth::flags(h.flags),
        ..*h
    };
    let bytes = h.emit();
    send_all(stream, &bytes).map_err(|e| lost(addr, "sending the session header", &e))?;
    crate::auth::answer(stream, addr, &bytes, &[])?;
    read_status(stream, addr)
}

/// Reads a status record; a refusal becomes [`ClientError::Refused`].
pub(crate) fn read_status(stream: &mut TcpStream, addr: SocketAddr) -> Result<(), ClientError> {
    let mut prefix = [0u8; STATUS_PREFIX_LEN];
    recv_exact(stream, STATUS_PREFIX_LEN as u64, &mut prefix).map_err(|e| lost_status(addr, &e))?;
    finish_status(stream, addr, prefix)
}

/// A connection that broke before the status record: with a closed
/// connection and no byte, the responder may have turned the address away.
fn lost_status(addr: SocketAddr, e: &io::Error) -> ClientError {
    let mut err = lost(addr, "waiting for the session status", e);
    if let ClientError::Lost { what, .. } = &mut err {
        if e.kind() == io::ErrorKind::UnexpectedEof && e.to_string().starts_with("closed after 0 ") {
            what.push_str(
                " (a responder with limits closes connections from networks it does not allow, \
                 and beyond its connections per second or waiting sessions per address)",
            );
        }
    }
    err
}

/// The rest of a status record whose first 8 bytes are `prefix`.
pub(crate) fn finish_status(
    stream: &mut TcpStream,
    addr: SocketAddr,
    prefix: [u8; STATUS_PREFIX_LEN],
) -> Result<(), ClientError> {
    let mut rec = [0u8; STATUS_PREFIX_LEN + MAX_REASON_LEN];
    rec[..STATUS_PREFIX_LEN].copy_from_slice(&prefix);
    let p = StatusPrefix::parse(&rec).map_err(|_| ClientError::Lost {
        addr,
        what: "the peer is not a stackmeter responder (bad status record)".into(),
    })?;
    if p.accepted() {
        return Ok(());
    }
    let n = p.reason_len as usize;
    // A responder that closes before its whole reason still refused.
    let _ = recv_exact(stream, n as u64, &mut rec[STATUS_PREFIX_LEN..STATUS_PREFIX_LEN + n]);
    let reason = String::from_utf8_lossy(&rec[STATUS_PREFIX_LEN..STATUS_PREFIX_LEN + n]).into_owned();
    let code = match Refusal::from_u8(p.code) {
        Some(Refusal::UnsupportedVersion) => format!(
            "unsupported version (responder speaks v{}, this client v{})",
            p.version,
            stackmeter_proto::VERSION
        ),
        Some(r) => r.name().to_string(),
        None => format!("code {}", p.code),
    };
    Err(ClientError::Refused { addr, code, reason })
}

/// Writes all of `buf`.
#[inline]
pub(crate) fn send_all(stream: &mut TcpStream, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match stream.write(buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads exactly `total` bytes, reusing `buf` (its contents are
/// overwritten). EOF before the end is `UnexpectedEof`.
#[inline]
pub(crate) fn recv_exact(stream: &mut TcpStream, total: u64, buf: &mut [u8]) -> io::Result<()> {
    let mut left = total;
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        match stream.read(&mut buf[..want]) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("closed after {} of {total} bytes", total - left),
                ))
            }
            Ok(n) => left -= n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// [`recv_exact`] with `recvmsg`, returning the kernel receive stamp of the
/// last read (the segment holding the last byte). Reads fill `buf` from
/// its start and wrap only when the message is longer; the first
/// `block.len()` bytes of the message are copied to `block` as they come.
#[inline]
pub(crate) fn recv_exact_stamped(
    fd: std::os::fd::RawFd,
    total: u64,
    buf: &mut [u8],
    block: &mut [u8],
) -> io::Result<Option<u64>> {
    let mut got = 0u64;
    let mut stamp = None;
    while got < total {
        let at = (got % buf.len() as u64) as usize;
        let want = (total - got).min((buf.len() - at) as u64) as usize;
        match stackmeter_sys::tstamp::recv(fd, &mut buf[at..at + want], false) {
            Ok((0, _)) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("closed after {got} of {total} bytes"),
                ))
            }
            Ok((n, s)) => {
                if (got as usize) < block.len() {
                    let k = n.min(block.len() - got as usize);
                    block[got as usize..got as usize + k].copy_from_slice(&buf[at..at + k]);
                }
                got += n as u64;
                stamp = s.or(stamp);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(stamp)
}

/// A broken exchange, described with where it broke.
pub(crate) fn lost(addr: SocketAddr, during: &str, e: &io::Error) -> ClientError {
    let what = if is_timeout(e) {
        format!("no data for the whole timeout while {during} (responder stalled or gone)")
    } else if e.kind() == io::ErrorKind::UnexpectedEof {
        format!("responder closed the connection while {during} ({e})")
    } else if e.kind() == io::ErrorKind::ConnectionReset || e.kind() == io::ErrorKind::BrokenPipe {
        format!("connection reset while {during} (responder gone)")
    } else {
        format!("{during}: {e}")
    };
    ClientError::Lost { addr, what }
}
