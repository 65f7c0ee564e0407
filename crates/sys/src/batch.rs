//! Many UDP datagrams per system call, for packet rates one call per
//! datagram cannot reach: `recvmmsg` (with the segment size the kernel's
//! UDP GRO reports for a coalesced receive), `sendmmsg`, and UDP GSO
//! (`UDP_SEGMENT`: one send of k equal-sized datagrams that the kernel
//! cuts apart). All are plain C library calls, so an `LD_PRELOAD` stack
//! that implements them still sees every datagram; one that refuses the
//! socket options makes the caller fall back. Linux only; elsewhere the
//! calls fail with `Unsupported`.

#![allow(unsafe_code)] // This module wraps C library calls.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// `SOL_UDP` and its options (linux/udp.h).
#[cfg(target_os = "linux")]
const SOL_UDP: libc::c_int = 17;
#[cfg(target_os = "linux")]
const UDP_SEGMENT: libc::c_int = 103;
#[cfg(target_os = "linux")]
const UDP_GRO: libc::c_int = 104;

/// Most datagrams one UDP GSO send may carry (the kernel's UDP_MAX_SEGMENTS).
pub const GSO_MAX_SEGMENTS: usize = 64;

/// Receive buffers for up to `n` messages of up to `size` bytes each.
pub struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
    segs: Vec<u16>,
    #[cfg(target_os = "linux")]
    addrs: Vec<libc::sockaddr_storage>,
    #[cfg(target_os = "linux")]
    ctrl: Vec<[u64; 8]>,
}

impl RecvBatch {
    /// Room for `n` messages of `size` bytes.
    pub fn new(n: usize, size: usize) -> RecvBatch {
        let n = n.max(1);
        RecvBatch {
            bufs: (0..n).map(|_| vec![0u8; size]).collect(),
            lens: vec![0; n],
            segs: vec![0; n],
            #[cfg(target_os = "linux")]
            // SAFETY: sockaddr_storage is plain data; all zeroes is valid.
            addrs: vec![unsafe { std::mem::zeroed() }; n],
            #[cfg(target_os = "linux")]
            ctrl: vec![[0u64; 8]; n],
        }
    }

    /// Blocks until at least one datagram is there and takes as many as
    /// are waiting, up to the batch size (`MSG_WAITFORONE`). Returns how
    /// many messages arrived.
    #[cfg(target_os = "linux")]
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        let n = self.bufs.len();
        let mut iov: Vec<libc::iovec> = self
            .bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: mmsghdr is plain data; zeroes are valid before filling.
        let mut msgs: Vec<libc::mmsghdr> = (0..n).map(|_| unsafe { std::mem::zeroed() }).collect();
        for (i, m) in msgs.iter_mut().enumerate() {
            m.msg_hdr.msg_name = &mut self.addrs[i] as *mut libc::sockaddr_storage as *mut libc::c_void;
            m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            m.msg_hdr.msg_iov = &mut iov[i];
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_control = self.ctrl[i].as_mut_ptr() as *mut libc::c_void;
            m.msg_hdr.msg_controllen = std::mem::size_of::<[u64; 8]>() as _;
        }
        // SAFETY: every pointer in msgs points into buffers owned by self
        // or by iov, all alive and unaliased for the call; n fits.
        let got = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        let got = got as usize;
        for (i, m) in msgs.iter().enumerate().take(got) {
            self.lens[i] = m.msg_len as usize;
            self.segs[i] = gro_size(&m.msg_hdr);
        }
        Ok(got)
    }

    /// Only Linux has recvmmsg.
    #[cfg(not(target_os = "linux"))]
    pub fn recv(&mut self, _fd: RawFd) -> io::Result<usize> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "recvmmsg is Linux only"))
    }

    /// Message `i` of the last receive: its bytes, its sender, and the
    /// size of each datagram in it when the kernel coalesced several (GRO;
    /// 0: one datagram).
    pub fn message(&mut self, i: usize) -> (&mut [u8], Option<SocketAddr>, usize) {
        #[cfg(target_os = "linux")]
        let peer = crate::socket::sockaddr(&self.addrs[i]);
        #[cfg(not(target_os = "linux"))]
        let peer = None;
        let len = self.lens[i];
        (&mut self.bufs[i][..len], peer, self.segs[i] as usize)
    }
}

/// The UDP_GRO control message's segment size, or 0.
#[cfg(target_os = "linux")]
fn gro_size(h: &libc::msghdr) -> u16 {
    // SAFETY: CMSG_FIRSTHDR/CMSG_NXTHDR walk the control buffer the kernel
    // filled, within msg_controllen; CMSG_DATA of a UDP_GRO message holds
    // an int.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == SOL_UDP && (*c).cmsg_type == UDP_GRO {
                let v = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::c_int);
                return v.clamp(0, u16::MAX as libc::c_int) as u16;
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    0
}

/// Asks the kernel to hand several datagrams of one flow over as one
/// receive when it can (UDP GRO); [`RecvBatch::message`] says their size.
#[cfg(target_os = "linux")]
pub fn enable_gro(fd: RawFd) -> io::Result<()> {
    crate::socket::setsockopt_int(fd, SOL_UDP, UDP_GRO, 1)
}

/// Makes each send on `fd` a train of `size`-byte datagrams (UDP GSO):
/// a buffer of k * size bytes leaves as k datagrams.
#[cfg(target_os = "linux")]
pub fn set_gso(fd: RawFd, size: u16) -> io::Result<()> {
    crate::socket::setsockopt_int(fd, SOL_UDP, UDP_SEGMENT, size as libc::c_int)
}

/// Sends each of `bufs` as one datagram on the connected socket `fd` with
/// one `sendmmsg`; returns how many left (the rest did not fit: a full
/// buffer, or an error after the first).
#[cfg(target_os = "linux")]
pub fn send_many(fd: RawFd, bufs: &[&[u8]]) -> io::Result<usize> {
    let mut iov: Vec<libc::iovec> = bufs
        .iter()
        .map(|b| libc::iovec {
            iov_base: b.as_ptr() as *mut libc::c_void,
            iov_len: b.len(),
        })
        .collect();
    // SAFETY: zeroed mmsghdr is valid; each points at one iovec below.
    let mut msgs: Vec<libc::mmsghdr> = (0..bufs.len()).map(|_| unsafe { std::mem::zeroed() }).collect();
    for (m, v) in msgs.iter_mut().zip(iov.iter_mut()) {
        m.msg_hdr.msg_iov = v;
        m.msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: msgs and iov live across the call; the kernel only reads the
    // buffers (sendmmsg), which outlive it.
    let n = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), msgs.len() as libc::c_uint, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Only Linux is supported.
#[cfg(not(target_os = "linux"))]
pub fn enable_gro(_fd: RawFd) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "UDP GRO is Linux only"))
}

/// Only Linux is supported.
#[cfg(not(target_os = "linux"))]
pub fn set_gso(_fd: RawFd, _size: u16) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "UDP GSO is Linux only"))
}

/// Only Linux is supported.
#[cfg(not(target_os = "linux"))]
pub fn send_many(_fd: RawFd, _bufs: &[&[u8]]) -> io::Result<usize> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "sendmmsg is Linux only"))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn gso_trains_and_mmsg_batches_arrive_as_separate_datagrams() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        // Three datagrams of 100 bytes in one GSO send, then two by sendmmsg.
        let mut train = vec![0u8; 300];
        for (k, chunk) in train.chunks_mut(100).enumerate() {
            chunk.fill(k as u8);
        }
        set_gso(tx.as_raw_fd(), 100).unwrap();
        assert_eq!(tx.send(&train).unwrap(), 300);
        set_gso(tx.as_raw_fd(), 0).unwrap();
        assert_eq!(send_many(tx.as_raw_fd(), &[&[7u8; 10][..], &[8u8; 20][..]]).unwrap(), 2);
        let mut batch = RecvBatch::new(8, 2048);
        let mut seen = Vec::new();
        while seen.len() < 5 {
            let n = batch.recv(rx.as_raw_fd()).unwrap();
            for i in 0..n {
                let (bytes, peer, seg) = batch.message(i);
                assert_eq!(peer, Some(tx.local_addr().unwrap()));
                let seg = if seg == 0 { bytes.len() } else { seg };
                for d in bytes.chunks(seg) {
                    seen.push((d.len(), d[0]));
                }
            }
        }
        assert_eq!(seen, [(100, 0), (100, 1), (100, 2), (10, 7), (20, 8)]);
    }

    #[test]
    fn with_gro_a_gso_train_may_arrive_whole_and_still_splits() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        if enable_gro(rx.as_raw_fd()).is_err() {
            return; // a kernel without UDP GRO
        }
        set_gso(tx.as_raw_fd(), 64).unwrap();
        let train: Vec<u8> = (0..64 * 10).map(|i| (i / 64) as u8).collect();
        tx.send(&train).unwrap();
        let mut batch = RecvBatch::new(4, 65536);
        let mut got = Vec::new();
        while got.len() < 10 {
            let n = batch.recv(rx.as_raw_fd()).unwrap();
            for i in 0..n {
                let (bytes, _, seg) = batch.message(i);
                let seg = if seg == 0 { bytes.len() } else { seg };
                got.extend(bytes.chunks(seg).map(|d| d[0]));
            }
        }
        assert_eq!(got, (0..10).collect::<Vec<u8>>());
    }
}
