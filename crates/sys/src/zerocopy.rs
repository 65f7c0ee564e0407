//! MSG_ZEROCOPY sends: turning it on, sending, and reading the kernel's
//! completions from the error queue.

#![allow(unsafe_code)] // This module wraps C library calls.

use std::io;

/// Turns on MSG_ZEROCOPY for socket `fd` (SO_ZEROCOPY, Linux 4.14+).
#[cfg(target_os = "linux")]
pub fn enable_zerocopy(fd: std::os::fd::RawFd) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: a valid pointer to an int and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ZEROCOPY,
            &one as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `send(fd, buf, MSG_ZEROCOPY)`: the kernel pins the pages instead of
/// copying them and reports completion on the error queue
/// ([`drain_zerocopy`]). The caller must not change `buf` until then.
#[cfg(target_os = "linux")]
pub fn send_zerocopy(fd: std::os::fd::RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for reads of its length for the whole call.
    let n = unsafe { libc::send(fd, buf.as_ptr() as *const libc::c_void, buf.len(), libc::MSG_ZEROCOPY) };
    if n >= 0 {
        Ok(n as usize)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Zero-copy completions read from a socket's error queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZerocopyDone {
    /// Sends whose completion was reported.
    pub completed: u64,
    /// Of those, sends the kernel copied after all (loopback always does:
    /// SO_EE_CODE_ZEROCOPY_COPIED).
    pub copied: u64,
}

/// Reads every pending zero-copy completion of `fd` without blocking.
#[cfg(target_os = "linux")]
pub fn drain_zerocopy(fd: std::os::fd::RawFd) -> ZerocopyDone {
    const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
    const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;
    let mut done = ZerocopyDone::default();
    loop {
        let mut control = [0u64; 16];
        // SAFETY: msghdr is plain data; zeroed is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg points at a valid control buffer of the given size.
        let rc = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if rc < 0 {
            return done;
        }
        // SAFETY: CMSG_FIRSTHDR/NXTHDR walk the buffer the kernel filled,
        // within msg_controllen.
        let mut c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !c.is_null() {
            // SAFETY: c points at a cmsghdr inside the control buffer; the
            // data of an IP(V6)_RECVERR message is a sock_extended_err.
            let ee = unsafe { &*(libc::CMSG_DATA(c) as *const libc::sock_extended_err) };
            if ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY {
                // ee_info..ee_data is the inclusive range of send numbers.
                let n = ee.ee_data.wrapping_sub(ee.ee_info) as u64 + 1;
                done.completed += n;
                if ee.ee_code == SO_EE_CODE_ZEROCOPY_COPIED {
                    done.copied += n;
                }
            }
            // SAFETY: as above.
            c = unsafe { libc::CMSG_NXTHDR(&msg, c) };
        }
    }
}
