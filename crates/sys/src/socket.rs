//! Socket calls the standard library does not make: a wait with a
//! nanosecond timeout, a receive that never waits, TCP_INFO, and the
//! helpers other modules share (socket options, addresses the kernel wrote).

#![allow(unsafe_code)] // This module wraps C library calls.

use std::io;

/// Waits until `fd` is readable or `wait` has passed (`ppoll`, whose
/// timeout has nanosecond resolution; `SO_RCVTIMEO` is kept in scheduler
/// ticks of 1-4 ms and cannot pace a schedule). Returns whether it is
/// readable (or has an error to report on the next receive).
#[cfg(unix)]
pub fn wait_readable(fd: std::os::fd::RawFd, wait: std::time::Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_nsec: wait.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    match rc {
        0 => Ok(false),
        n if n > 0 => Ok(true),
        _ => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
    }
}

/// What [`wait_hangup`] saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waited {
    /// Nothing within the wait.
    Nothing,
    /// Data to read.
    Readable,
    /// The peer closed its side, or the socket has an error.
    HungUp,
}

/// Waits until the peer of `fd` hangs up or data arrives, at most `wait`
/// (`ppoll` for POLLRDHUP and POLLIN).
#[cfg(target_os = "linux")]
pub fn wait_hangup(fd: std::os::fd::RawFd, wait: std::time::Duration) -> io::Result<Waited> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN | libc::POLLRDHUP,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_nsec: wait.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::Interrupted => Ok(Waited::Nothing),
            _ => Err(e),
        };
    }
    let hup = libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR;
    Ok(match pfd.revents {
        0 => Waited::Nothing,
        r if r & hup != 0 => Waited::HungUp,
        _ => Waited::Readable,
    })
}

/// `recv(fd, buf, MSG_DONTWAIT)`: what has arrived, without waiting.
/// `WouldBlock` when nothing has; `Ok(0)` at end of stream.
#[cfg(unix)]
pub fn recv_nowait(fd: std::os::fd::RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of its length for the whole call.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT) };
    if n >= 0 {
        Ok(n as usize)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The sender-side TCP figures of a connection, from TCP_INFO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
    /// Congestion window in bytes (segments times the send MSS).
    pub cwnd_bytes: u32,
    /// Smoothed round-trip time, microseconds.
    pub rtt_us: u32,
    /// Bytes the peer's TCP acknowledged over the connection's life
    /// (`tcpi_bytes_acked`, Linux 4.1+; 0 where the kernel has none): what
    /// a receiver that counts nothing itself (a discard server) got.
    pub bytes_acked: u64,
}

/// TCP_INFO of socket `fd`, or `None` where the platform has none (or the
/// socket is not TCP).
#[cfg(target_os = "linux")]
pub fn tcp_info(fd: std::os::fd::RawFd) -> Option<TcpInfo> {
    // SAFETY: tcp_info is plain data; getsockopt writes at most `len` bytes.
    let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: valid pointers to a tcp_info and its length.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut ti as *mut libc::tcp_info as *mut libc::c_void,
            &mut len,
        )
    };
    (rc == 0).then(|| TcpInfo {
        total_retrans: ti.tcpi_total_retrans,
        cwnd_bytes: ti.tcpi_snd_cwnd.saturating_mul(ti.tcpi_snd_mss),
        rtt_us: ti.tcpi_rtt,
        bytes_acked: ti.tcpi_bytes_acked,
    })
}

/// The kernel's cookie of socket `fd` (SO_COOKIE): its key in a BPF
/// socket map.
#[cfg(target_os = "linux")]
pub fn socket_cookie(fd: std::os::fd::RawFd) -> std::io::Result<u64> {
    let mut cookie: u64 = 0;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: valid pointers to a u64 and its length.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_COOKIE,
            &mut cookie as *mut u64 as *mut libc::c_void,
            &mut len,
        )
    };
    match rc {
        0 => Ok(cookie),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// TCP_INFO is Linux's; elsewhere there is none.
#[cfg(not(target_os = "linux"))]
pub fn tcp_info(_fd: i32) -> Option<TcpInfo> {
    None
}

/// The socket address in `ss` (IPv4 or IPv6), as a kernel call filled it.
#[cfg(target_os = "linux")]
pub(crate) fn sockaddr(ss: &libc::sockaddr_storage) -> Option<std::net::SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a = unsafe { &*(ss as *const libc::sockaddr_storage as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(std::net::SocketAddr::from((ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a = unsafe { &*(ss as *const libc::sockaddr_storage as *const libc::sockaddr_in6) };
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(std::net::SocketAddr::V6(std::net::SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Sets an integer socket option.
#[cfg(target_os = "linux")]
pub(crate) fn setsockopt_int(
    fd: std::os::fd::RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: v lives across the call, which reads sizeof(int) bytes.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn ppoll_waits_about_as_asked() {
        use std::os::fd::AsRawFd;
        crate::tight_timers();
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let t = std::time::Instant::now();
        let ready = super::wait_readable(s.as_raw_fd(), std::time::Duration::from_micros(300)).unwrap();
        assert!(!ready);
        assert!(t.elapsed() >= std::time::Duration::from_micros(300));
        s.send_to(b"x", s.local_addr().unwrap()).unwrap();
        assert!(super::wait_readable(s.as_raw_fd(), std::time::Duration::from_secs(5)).unwrap());
    }
}
