//! Byte I/O every test shares, and nothing of the protocol: sockets with
//! bounded waits (TCP with TCP_NODELAY and both timeouts, connected UDP
//! with a bounded send), the sends and receives of exact lengths that run
//! inside timed code, and the error of an exchange that broke. The
//! session handshake on top of them is `handshake.rs`.

use crate::error::ClientError;
use crate::error::{connect_reason, is_timeout};
use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
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

/// A connected [`tcp_socket`].
pub(crate) fn tcp_connect(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, ClientError> {
    let s = tcp_socket(addr, timeout)?;
    connect(&s, addr, timeout)?;
    Ok(TcpStream::from(s))
}

/// A UDP socket connected to `addr`, with a bounded send.
pub(crate) fn udp_socket(addr: SocketAddr, timeout: Duration) -> Result<UdpSocket, ClientError> {
    let bind: SocketAddr = if addr.is_ipv6() {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(bind)?;
    crate::tune::socket(std::os::fd::AsRawFd::as_raw_fd(&sock))?;
    sock.connect(addr).map_err(|e| ClientError::Unreachable {
        addr,
        reason: e.to_string(),
    })?;
    sock.set_write_timeout(Some(timeout))?;
    Ok(sock)
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
