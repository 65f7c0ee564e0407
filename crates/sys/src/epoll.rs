//! Readiness of many sockets from one thread: epoll, behind four safe calls.
//!
//! The responder's event loop (`stackmeter-responder`'s `events.rs`) holds
//! tens of thousands of idle sessions on one thread; this is the only
//! `unsafe` it needs. Level-triggered, one `u64` token per descriptor. The
//! sockets themselves stay plain sockets read and written with the usual
//! calls, so an LD_PRELOAD stack still intercepts every byte.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// Interest in reading (or a peer's close, or an error).
pub const READ: u32 = libc::EPOLLIN as u32 | libc::EPOLLRDHUP as u32;
/// Interest in writing.
pub const WRITE: u32 = libc::EPOLLOUT as u32;

/// One epoll instance; closed on drop.
#[derive(Debug)]
pub struct Epoll {
    fd: RawFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    /// A new instance returning up to `batch` events per wait.
    pub fn new(batch: usize) -> io::Result<Epoll> {
        // SAFETY: plain call, no pointers.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll {
            fd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; batch.max(1)],
        })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, interest: u32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: interest,
            u64: token,
        };
        // SAFETY: ev is a valid epoll_event for the duration of the call.
        if unsafe { libc::epoll_ctl(self.fd, op, fd, &mut ev) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Watches `fd` for `interest` (`READ`, `WRITE` or both), reported with `token`.
    pub fn add(&self, fd: RawFd, interest: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, interest, token)
    }

    /// Changes what `fd` is watched for.
    pub fn modify(&self, fd: RawFd, interest: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, interest, token)
    }

    /// Stops watching `fd` (closing it does too).
    pub fn remove(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Waits at most `wait` for readiness; returns the tokens ready with
    /// their event bits (any of `READ`, `WRITE`, hang-up, error). An
    /// interrupted wait returns no events.
    pub fn wait(&mut self, wait: Duration) -> io::Result<impl Iterator<Item = (u64, u32)> + '_> {
        let ms = wait.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: events is a valid, writable array of its length.
        let n = unsafe { libc::epoll_wait(self.fd, self.events.as_mut_ptr(), self.events.len() as libc::c_int, ms) };
        let n = if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
            0
        } else {
            n as usize
        };
        Ok(self.events[..n].iter().map(|e| (e.u64, e.events)))
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: fd is ours and closed once.
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn reports_a_readable_socket_with_its_token() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let mut ep = Epoll::new(8).unwrap();
        ep.add(s.as_raw_fd(), READ, 42).unwrap();
        assert_eq!(ep.wait(Duration::from_millis(10)).unwrap().count(), 0);
        c.write_all(b"x").unwrap();
        let got: Vec<_> = ep.wait(Duration::from_secs(5)).unwrap().collect();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, 42);
        assert_ne!(got[0].1 & libc::EPOLLIN as u32, 0);
        ep.modify(s.as_raw_fd(), WRITE, 7).unwrap();
        let got: Vec<_> = ep.wait(Duration::from_secs(5)).unwrap().collect();
        assert_eq!(got[0].0, 7);
        ep.remove(s.as_raw_fd()).unwrap();
        assert_eq!(ep.wait(Duration::from_millis(10)).unwrap().count(), 0);
    }
}
