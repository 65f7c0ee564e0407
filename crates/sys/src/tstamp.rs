//! Kernel timestamps (Linux `SO_TIMESTAMPING`, kernel documentation
//! `networking/timestamping.rst`): turning them on, receiving with the
//! receive stamp, asking for one datagram's send stamp, reading send stamps
//! from the error queue, and whether a NIC has a clock of its own.
//!
//! Every stamp is nanoseconds since the Unix epoch: software stamps are on
//! CLOCK_REALTIME ([`crate::realtime_ns`]), hardware stamps on the NIC's
//! clock. Each function is one socket call (or a short loop of them) through
//! the C library, so an `LD_PRELOAD` stack still sees `recvmsg`/`sendmsg`.
//! On other systems every call fails with `Unsupported`.

#![allow(unsafe_code)] // This module wraps C library calls.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;

/// What kind of stamps a socket is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The kernel's software stamps (driver hand-off, receive entry).
    Software,
    /// The NIC's clock (`SOF_TIMESTAMPING_RAW_HARDWARE`).
    Hardware,
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{io, HwClockError, IpAddr, Kind, RawFd, SocketAddr};

    const SO_EE_ORIGIN_TIMESTAMPING: u8 = 4;
    const CONTROL: usize = 256;

    fn flags(kind: Kind, tx: bool) -> u32 {
        let common = libc::SOF_TIMESTAMPING_OPT_ID | libc::SOF_TIMESTAMPING_OPT_TSONLY;
        let (txf, rxf, report) = match kind {
            Kind::Software => (
                libc::SOF_TIMESTAMPING_TX_SOFTWARE,
                libc::SOF_TIMESTAMPING_RX_SOFTWARE,
                libc::SOF_TIMESTAMPING_SOFTWARE,
            ),
            Kind::Hardware => (
                libc::SOF_TIMESTAMPING_TX_HARDWARE,
                libc::SOF_TIMESTAMPING_RX_HARDWARE,
                libc::SOF_TIMESTAMPING_RAW_HARDWARE,
            ),
        };
        common | rxf | report | if tx { txf } else { 0 }
    }

    /// Turns stamps on for `fd`: receive stamps always, send stamps of every
    /// send when `tx` (else only of sends made with [`send_to_stamped`]).
    /// With OPT_ID each send stamp carries a key: the count of stamped
    /// datagrams before it (UDP), or the offset of the send's last byte
    /// from the first byte sent after this call (TCP; call it on a
    /// connected socket before it has sent anything).
    pub fn enable(fd: RawFd, kind: Kind, tx: bool) -> io::Result<()> {
        let v: libc::c_int = flags(kind, tx) as libc::c_int;
        // SAFETY: a valid pointer to an int and its size.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPING,
                &v as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The stamp of an SCM_TIMESTAMPING message: the software one, or the
    /// raw hardware one when that is the one set.
    ///
    /// # Safety
    /// `c` points at a control message inside a buffer the kernel filled.
    unsafe fn stamp_of(c: *const libc::cmsghdr) -> Option<u64> {
        let h = &*c;
        if h.cmsg_level != libc::SOL_SOCKET || h.cmsg_type != libc::SO_TIMESTAMPING {
            return None;
        }
        let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const [libc::timespec; 3]);
        let ns = |t: libc::timespec| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64;
        [ts[0], ts[2]]
            .into_iter()
            .find(|t| t.tv_sec != 0 || t.tv_nsec != 0)
            .map(ns)
    }

    /// Walks the control messages of `msg`, giving each to `f`.
    fn each_cmsg(msg: &libc::msghdr, mut f: impl FnMut(*const libc::cmsghdr)) {
        // SAFETY: CMSG_FIRSTHDR/NXTHDR walk the buffer the kernel filled,
        // within msg_controllen.
        let mut c = unsafe { libc::CMSG_FIRSTHDR(msg) };
        while !c.is_null() {
            f(c);
            // SAFETY: as above.
            c = unsafe { libc::CMSG_NXTHDR(msg, c) };
        }
    }

    fn rx(
        fd: RawFd,
        buf: &mut [u8],
        flags: libc::c_int,
        name: Option<&mut libc::sockaddr_storage>,
    ) -> io::Result<(usize, u32, Option<u64>)> {
        let mut control = [0u64; CONTROL / 8];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is plain data; zeroed is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = CONTROL as _;
        if let Some(n) = name {
            msg.msg_name = n as *mut libc::sockaddr_storage as *mut libc::c_void;
            msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        }
        // SAFETY: msg points at a valid buffer, iovec and control buffer.
        let n = unsafe { libc::recvmsg(fd, &mut msg, flags) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut stamp = None;
        // SAFETY: each c is a control message of the buffer just filled.
        each_cmsg(&msg, |c| stamp = stamp.or(unsafe { stamp_of(c) }));
        Ok((n as usize, msg.msg_namelen, stamp))
    }

    /// `recvmsg` into `buf` with the receive stamp (for TCP, the stamp of
    /// the last segment this call read). `dontwait` adds MSG_DONTWAIT.
    #[inline]
    pub fn recv(fd: RawFd, buf: &mut [u8], dontwait: bool) -> io::Result<(usize, Option<u64>)> {
        let flags = if dontwait { libc::MSG_DONTWAIT } else { 0 };
        rx(fd, buf, flags, None).map(|(n, _, s)| (n, s))
    }

    /// `recvmsg` of one datagram with its source address and receive stamp.
    pub fn recv_from(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, Option<u64>)> {
        // SAFETY: sockaddr_storage is plain data.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let (n, _, stamp) = rx(fd, buf, 0, Some(&mut ss))?;
        let addr = to_addr(&ss).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unknown address family"))?;
        Ok((n, addr, stamp))
    }

    fn to_addr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
        crate::socket::sockaddr(ss)
    }

    fn from_addr(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
        // SAFETY: sockaddr_storage is plain data.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let len = match a {
            SocketAddr::V4(v4) => {
                // SAFETY: storage is large enough for a sockaddr_in.
                let s = unsafe { &mut *(&mut ss as *mut libc::sockaddr_storage as *mut libc::sockaddr_in) };
                s.sin_family = libc::AF_INET as libc::sa_family_t;
                s.sin_port = v4.port().to_be();
                s.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
                std::mem::size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(v6) => {
                // SAFETY: storage is large enough for a sockaddr_in6.
                let s = unsafe { &mut *(&mut ss as *mut libc::sockaddr_storage as *mut libc::sockaddr_in6) };
                s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                s.sin6_port = v6.port().to_be();
                s.sin6_addr.s6_addr = v6.ip().octets();
                s.sin6_flowinfo = v6.flowinfo();
                s.sin6_scope_id = v6.scope_id();
                std::mem::size_of::<libc::sockaddr_in6>()
            }
        };
        (ss, len as libc::socklen_t)
    }

    /// `sendmsg` of one datagram to `to`, asking for its software send
    /// stamp (a control message, so only this datagram is stamped).
    pub fn send_to_stamped(fd: RawFd, buf: &[u8], to: &SocketAddr) -> io::Result<usize> {
        let (mut ss, len) = from_addr(to);
        let mut iov = libc::iovec {
            iov_base: buf.as_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let mut control = [0u64; 4];
        // SAFETY: msghdr is plain data; zeroed is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = &mut ss as *mut libc::sockaddr_storage as *mut libc::c_void;
        msg.msg_namelen = len;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        // SAFETY: CMSG_SPACE is a pure size computation.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(4) } as _;
        // SAFETY: the control buffer (32 bytes) holds one cmsg of 4 bytes
        // of data; CMSG_FIRSTHDR points into it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SO_TIMESTAMPING;
            (*c).cmsg_len = libc::CMSG_LEN(4) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut u32, libc::SOF_TIMESTAMPING_TX_SOFTWARE);
        }
        // SAFETY: every pointer in msg is valid for the call.
        let n = unsafe { libc::sendmsg(fd, &msg, 0) };
        if n >= 0 {
            Ok(n as usize)
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Reads every send stamp waiting on `fd`'s error queue without
    /// blocking, giving each key ([`enable`]) and stamp to `f`. Returns how
    /// many it read.
    pub fn drain_tx(fd: RawFd, mut f: impl FnMut(u32, u64)) -> usize {
        let mut got = 0;
        let mut data = [0u8; 64];
        loop {
            let mut control = [0u64; CONTROL / 8];
            let mut iov = libc::iovec {
                iov_base: data.as_mut_ptr() as *mut libc::c_void,
                iov_len: data.len(),
            };
            // SAFETY: msghdr is plain data; zeroed is a valid empty header.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
            msg.msg_controllen = CONTROL as _;
            // SAFETY: msg points at valid buffers of the given sizes.
            let rc = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
            if rc < 0 {
                return got;
            }
            let (mut stamp, mut key) = (None, None);
            each_cmsg(&msg, |c| {
                // SAFETY: c is a control message of the buffer just filled.
                if let Some(s) = unsafe { stamp_of(c) } {
                    stamp = Some(s);
                    return;
                }
                // SAFETY: as above; an IP(V6)_RECVERR message carries a
                // sock_extended_err.
                let h = unsafe { &*c };
                let recverr = (h.cmsg_level == libc::SOL_IP && h.cmsg_type == libc::IP_RECVERR)
                    || (h.cmsg_level == libc::SOL_IPV6 && h.cmsg_type == libc::IPV6_RECVERR);
                if recverr {
                    // SAFETY: as above.
                    let ee = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::sock_extended_err) };
                    if ee.ee_origin == SO_EE_ORIGIN_TIMESTAMPING {
                        key = Some(ee.ee_data);
                    }
                }
            });
            if let (Some(k), Some(s)) = (key, stamp) {
                f(k, s);
                got += 1;
            }
        }
    }

    /// Whether `ip` is an address of one of this host's interfaces.
    pub fn is_local_ip(ip: IpAddr) -> bool {
        if ip.is_loopback() {
            return true;
        }
        let mut found = false;
        each_ifaddr(|_, a| found |= a == ip);
        found
    }

    /// Calls `f` with each interface name and address (getifaddrs).
    fn each_ifaddr(mut f: impl FnMut(&str, IpAddr)) {
        let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
        // SAFETY: getifaddrs fills head with a list freed below.
        if unsafe { libc::getifaddrs(&mut head) } != 0 {
            return;
        }
        let mut p = head;
        while !p.is_null() {
            // SAFETY: p is a node of the list getifaddrs returned.
            let ifa = unsafe { &*p };
            if !ifa.ifa_addr.is_null() {
                // SAFETY: ifa_addr points at a sockaddr of its family, at
                // most a sockaddr_storage long; to_addr reads by family.
                let ss = unsafe {
                    let mut ss: libc::sockaddr_storage = std::mem::zeroed();
                    let len = match (*ifa.ifa_addr).sa_family as libc::c_int {
                        libc::AF_INET => std::mem::size_of::<libc::sockaddr_in>(),
                        libc::AF_INET6 => std::mem::size_of::<libc::sockaddr_in6>(),
                        _ => 0,
                    };
                    std::ptr::copy_nonoverlapping(ifa.ifa_addr as *const u8, &mut ss as *mut _ as *mut u8, len);
                    ss
                };
                // SAFETY: ifa_name is a NUL-terminated string of the list.
                let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }.to_string_lossy();
                if let Some(a) = to_addr(&ss) {
                    f(&name, a.ip());
                }
            }
            p = ifa.ifa_next;
        }
        // SAFETY: head came from getifaddrs and is freed once.
        unsafe { libc::freeifaddrs(head) };
    }

    /// The kernel's `struct ethtool_ts_info`.
    #[repr(C)]
    struct TsInfo {
        cmd: u32,
        so_timestamping: u32,
        phc_index: i32,
        tx_types: u32,
        tx_reserved: [u32; 3],
        rx_filters: u32,
        rx_reserved: [u32; 3],
    }

    /// For `--timestamps hw`: finds the interface that holds `local` (the
    /// socket's own address), checks that its driver stamps in hardware and
    /// has a clock, and turns hardware stamping on for it (SIOCSHWTSTAMP).
    /// The error says which interface lacks what.
    pub fn hardware_clock(fd: RawFd, local: IpAddr) -> Result<(), HwClockError> {
        let mut name = None;
        each_ifaddr(|n, a| {
            if a == local && name.is_none() {
                name = Some(n.to_string());
            }
        });
        let name = name.ok_or(HwClockError::NoInterface(local))?;
        // SAFETY: ifreq is plain data.
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes().take(libc::IFNAMSIZ - 1)) {
            *d = s as libc::c_char;
        }
        let mut info = TsInfo {
            cmd: 0x41, // ETHTOOL_GET_TS_INFO
            so_timestamping: 0,
            phc_index: -1,
            tx_types: 0,
            tx_reserved: [0; 3],
            rx_filters: 0,
            rx_reserved: [0; 3],
        };
        ifr.ifr_ifru.ifru_data = &mut info as *mut TsInfo as *mut libc::c_char;
        // SAFETY: ifr names the interface and points at a TsInfo that lives
        // for the call.
        let rc = unsafe { libc::ioctl(fd, libc::SIOCETHTOOL as _, &mut ifr) };
        let need = libc::SOF_TIMESTAMPING_TX_HARDWARE
            | libc::SOF_TIMESTAMPING_RX_HARDWARE
            | libc::SOF_TIMESTAMPING_RAW_HARDWARE;
        if rc != 0 || info.so_timestamping & need != need || info.phc_index < 0 {
            return Err(HwClockError::NoClock(name));
        }
        let mut cfg = libc::hwtstamp_config {
            flags: 0,
            tx_type: 1,   // HWTSTAMP_TX_ON
            rx_filter: 1, // HWTSTAMP_FILTER_ALL
        };
        ifr.ifr_ifru.ifru_data = &mut cfg as *mut libc::hwtstamp_config as *mut libc::c_char;
        // SAFETY: as above, with a hwtstamp_config.
        let rc = unsafe { libc::ioctl(fd, libc::SIOCSHWTSTAMP as _, &mut ifr) };
        if rc != 0 {
            return Err(HwClockError::TurnOn {
                iface: name,
                err: io::Error::last_os_error(),
            });
        }
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::*;

    fn unsupported<T>() -> io::Result<T> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "kernel timestamps need Linux (SO_TIMESTAMPING)",
        ))
    }

    pub fn enable(_fd: RawFd, _kind: Kind, _tx: bool) -> io::Result<()> {
        unsupported()
    }

    pub fn recv(_fd: RawFd, _buf: &mut [u8], _dontwait: bool) -> io::Result<(usize, Option<u64>)> {
        unsupported()
    }

    pub fn recv_from(_fd: RawFd, _buf: &mut [u8]) -> io::Result<(usize, SocketAddr, Option<u64>)> {
        unsupported()
    }

    pub fn send_to_stamped(_fd: RawFd, _buf: &[u8], _to: &SocketAddr) -> io::Result<usize> {
        unsupported()
    }

    pub fn drain_tx(_fd: RawFd, _f: impl FnMut(u32, u64)) -> usize {
        0
    }

    pub fn is_local_ip(ip: IpAddr) -> bool {
        ip.is_loopback()
    }

    pub fn hardware_clock(_fd: RawFd, _local: IpAddr) -> Result<(), HwClockError> {
        Err(HwClockError::NotLinux)
    }
}

pub use imp::{drain_tx, enable, hardware_clock, is_local_ip, recv, recv_from, send_to_stamped};

/// Why hardware timestamps cannot be had for a socket's interface.
#[derive(Debug)]
pub enum HwClockError {
    /// No interface holds the socket's local address.
    NoInterface(IpAddr),
    /// The interface's driver does not stamp in hardware, or has no clock.
    NoClock(String),
    /// The interface refused to turn stamping on (SIOCSHWTSTAMP).
    TurnOn {
        /// The interface.
        iface: String,
        /// What the kernel said.
        err: io::Error,
    },
    /// Not Linux.
    NotLinux,
}

impl std::fmt::Display for HwClockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HwClockError::NoInterface(ip) => write!(f, "no interface holds the local address {ip}"),
            HwClockError::NoClock(name) => write!(
                f,
                "interface {name} has no hardware clock for timestamps (see `ethtool -T {name}`); use --timestamps without hw for software stamps"
            ),
            HwClockError::TurnOn { iface, err } => write!(f, "cannot turn hardware timestamps on for {iface}: {err}"),
            HwClockError::NotLinux => f.write_str("hardware timestamps need Linux"),
        }
    }
}

impl std::error::Error for HwClockError {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn udp_send_and_receive_stamps_come_in_order() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        enable(a.as_raw_fd(), Kind::Software, true).unwrap();
        enable(b.as_raw_fd(), Kind::Software, false).unwrap();
        // The kernel turns receive stamping on from a work item.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let t0 = crate::realtime_ns();
        for _ in 0..3 {
            a.send(b"stamp me").unwrap();
        }
        let mut keys = Vec::new();
        drain_tx(a.as_raw_fd(), |k, ns| keys.push((k, ns)));
        assert_eq!(keys.iter().map(|k| k.0).collect::<Vec<_>>(), [0, 1, 2]);
        let mut buf = [0u8; 64];
        let (n, from, rx) = recv_from(b.as_raw_fd(), &mut buf).unwrap();
        assert_eq!((n, from), (8, a.local_addr().unwrap()));
        let rx = rx.expect("a receive stamp");
        assert!(t0 <= keys[0].1 && keys[0].1 <= rx && rx <= crate::realtime_ns());
        // Only the datagram that asks is stamped.
        b.send_to(b"plain", from).unwrap();
        send_to_stamped(b.as_raw_fd(), b"asks", &from).unwrap();
        let mut got = Vec::new();
        drain_tx(b.as_raw_fd(), |k, _| got.push(k));
        assert_eq!(got, [0]);
        assert!(is_local_ip("127.0.0.1".parse().unwrap()));
        assert!(!is_local_ip("192.0.2.77".parse().unwrap()));
    }
}
