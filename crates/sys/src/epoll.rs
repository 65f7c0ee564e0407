//! Readiness of many sockets from one thread (Linux `epoll`).
//!
//! The open-loop rr client and the many-flow stream client drive hundreds
//! of connections from one thread (or a few); a thread per connection cost
//! more in context switches than the network stack it measured (a sender
//! and a receiver thread per open-loop connection let the schedule slip by
//! milliseconds at 100,000 requests/s; a thread per flow halved the total
//! at `-P 1000`). The responder's event loop (`stackmeter-responder`'s
//! `events.rs`) holds tens of thousands of idle sessions on one thread.
//! This is the one wrapper around `epoll_create1`, `epoll_ctl` and
//! `epoll_pwait2` (nanosecond timeouts: a schedule of 10 us gaps cannot
//! wait in milliseconds). The sockets themselves stay plain: data moves
//! with the ordinary `send`/`recv` calls, so an LD_PRELOAD stack still sees
//! them.

#![allow(unsafe_code)] // This module wraps C library calls.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// What a registered descriptor is watched for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interest {
    /// Data to read (or an error, or the end of the stream).
    Read,
    /// Room to write (or an error).
    Write,
    /// Both.
    ReadWrite,
    /// Nothing for now (the descriptor stays registered: a session waiting
    /// on a timer).
    Nothing,
}

impl Interest {
    fn bits(self) -> u32 {
        match self {
            Interest::Read => libc::EPOLLIN as u32,
            Interest::Write => libc::EPOLLOUT as u32,
            Interest::ReadWrite => (libc::EPOLLIN | libc::EPOLLOUT) as u32,
            Interest::Nothing => 0,
        }
    }
}

/// One epoll instance (level-triggered).
pub struct Epoll {
    fd: OwnedFd,
}

/// A buffer the kernel fills with ready descriptors.
pub struct Events {
    buf: Vec<libc::epoll_event>,
    n: usize,
}

/// One ready descriptor: the token it was registered with and what it is
/// ready for. An error or hang-up counts as both readable and writable, so
/// the next `recv`/`send` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ready {
    /// The token given to [`Epoll::add`].
    pub token: u64,
    /// A receive would not block.
    pub readable: bool,
    /// A send would not block.
    pub writable: bool,
}

impl Events {
    /// Room for `cap` ready descriptors per wait (at least 1).
    pub fn with_capacity(cap: usize) -> Events {
        Events {
            buf: vec![libc::epoll_event { events: 0, u64: 0 }; cap.max(1)],
            n: 0,
        }
    }

    /// The descriptors the last wait returned.
    pub fn iter(&self) -> impl Iterator<Item = Ready> + '_ {
        self.buf[..self.n].iter().map(ready)
    }

    /// The `i`-th descriptor the last wait returned.
    pub fn get(&self, i: usize) -> Option<Ready> {
        self.buf[..self.n].get(i).map(ready)
    }
}

fn ready(e: &libc::epoll_event) -> Ready {
    let ev = e.events;
    let bad = ev & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0;
    Ready {
        token: e.u64,
        readable: bad || ev & (libc::EPOLLIN | libc::EPOLLRDHUP) as u32 != 0,
        writable: bad || ev & libc::EPOLLOUT as u32 != 0,
    }
}

impl Epoll {
    /// A new instance, closed on exec.
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: no pointers; a negative return is an error.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor owned by nobody else.
        Ok(Epoll {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64, interest: Interest) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: interest.bits(),
            u64: token,
        };
        // SAFETY: ev is a valid epoll_event for the duration of the call.
        let rc = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Watches `fd` for `interest`, reporting it as `token`.
    pub fn add(&self, fd: RawFd, token: u64, interest: Interest) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, interest)
    }

    /// Changes what `fd` is watched for.
    pub fn modify(&self, fd: RawFd, token: u64, interest: Interest) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, token, interest)
    }

    /// Stops watching `fd`.
    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        // SAFETY: a null event is allowed for EPOLL_CTL_DEL since Linux 2.6.9.
        let rc = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits until a watched descriptor is ready or `timeout` has passed
    /// (`None`: forever; zero: just look). Returns how many are ready; a
    /// signal ends the wait early with 0.
    pub fn wait(&self, events: &mut Events, timeout: Option<Duration>) -> io::Result<usize> {
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: t.subsec_nanos() as libc::c_long,
        });
        let tp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: buf has room for its length in events; tp is null or a
        // valid timespec; no signal mask.
        let rc = unsafe {
            libc::epoll_pwait2(
                self.fd.as_raw_fd(),
                events.buf.as_mut_ptr(),
                events.buf.len() as libc::c_int,
                tp,
                std::ptr::null(),
            )
        };
        if rc < 0 {
            events.n = 0;
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(0),
                _ => Err(e),
            };
        }
        events.n = rc as usize;
        Ok(events.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::time::Instant;

    #[test]
    fn reports_readable_with_its_token_and_times_out_in_microseconds() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let ep = Epoll::new().unwrap();
        ep.add(b.as_raw_fd(), 7, Interest::Read).unwrap();
        let mut ev = Events::with_capacity(4);
        let t = Instant::now();
        assert_eq!(ep.wait(&mut ev, Some(Duration::from_micros(200))).unwrap(), 0);
        assert!(t.elapsed() >= Duration::from_micros(200));
        a.write_all(b"x").unwrap();
        assert_eq!(ep.wait(&mut ev, Some(Duration::from_secs(5))).unwrap(), 1);
        let r: Vec<Ready> = ev.iter().collect();
        assert_eq!(
            r,
            vec![Ready {
                token: 7,
                readable: true,
                writable: false
            }]
        );
        ep.modify(b.as_raw_fd(), 7, Interest::Write).unwrap();
        ep.wait(&mut ev, Some(Duration::ZERO)).unwrap();
        assert!(ev.iter().all(|r| r.writable && !r.readable));
        ep.delete(b.as_raw_fd()).unwrap();
        assert_eq!(ep.wait(&mut ev, Some(Duration::ZERO)).unwrap(), 0);
    }
}
