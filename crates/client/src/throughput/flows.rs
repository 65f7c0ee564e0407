//! The TCP flows of a stream test, many per thread (`stream -P 1000`).
//!
//! A thread per flow measured the scheduler more than the stack: at 1000
//! flows pinned to one CPU the total fell to about half of `-P 8` and the
//! intervals swung by orders of magnitude (measured when `-P` went to
//! 1000, bench/openloop.sh). Here a few threads (one when the client is
//! pinned, else one per CPU, never more than the flows) each drive their
//! share of the flows from one `epoll` set: a
//! sender writes `length` bytes with one `send` whenever a flow has room, a
//! receiver reads `length` bytes with one `recv` whenever a flow has data.
//! The sockets are non-blocking but otherwise plain, so an LD_PRELOAD
//! stack still sees every call. Every wait is bounded: a flow that moves
//! no byte for the whole timeout fails the test, as the blocking sockets'
//! timeouts did.

use crate::sockets::AlignedBuf;
use stackmeter_sys::epoll::{Epoll, Events, Interest};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Which way a group's flows move data.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    /// Client to responder (its sinks).
    Send,
    /// Responder to client (its sources), until each flow's end of stream.
    Recv,
}

/// How often a group looks at the stop flag and its flows' progress.
const TICK: Duration = Duration::from_millis(50);

/// How many threads carry `flows` flows: one when the client is pinned to
/// a CPU (more threads there would only take turns), else one per CPU.
pub(crate) fn group_count(flows: usize, pinned: bool) -> usize {
    let cpus = match pinned {
        true => 1,
        false => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
    };
    cpus.min(flows).max(1)
}

/// Deals `socks` round-robin into `groups` shares, each made non-blocking.
pub(crate) fn deal(socks: Vec<TcpStream>, groups: usize) -> io::Result<Vec<Vec<TcpStream>>> {
    let g = groups.max(1);
    let mut shares: Vec<Vec<TcpStream>> = (0..g).map(|_| Vec::new()).collect();
    for (i, s) in socks.into_iter().enumerate() {
        s.set_nonblocking(true)?;
        shares[i % g].push(s);
    }
    Ok(shares)
}

/// Moves data on `flows` until `stop` (sending) or every flow's end of
/// stream (receiving); `count` gets every byte moved. `ready` is called
/// once the set is built, and returns at the start of the test.
pub(crate) fn run(
    flows: &[TcpStream],
    way: Way,
    length: usize,
    timeout: Duration,
    ready: &dyn Fn(),
    stop: &dyn Fn() -> bool,
    count: &dyn Fn(u64),
) -> Result<(), (&'static str, io::Error)> {
    let what = match way {
        Way::Send => "sending stream data",
        Way::Recv => "receiving stream data",
    };
    let interest = match way {
        Way::Send => Interest::Write,
        Way::Recv => Interest::Read,
    };
    let ep = Epoll::new().map_err(|e| (what, e))?;
    for (k, s) in flows.iter().enumerate() {
        ep.add(s.as_raw_fd(), k as u64, interest).map_err(|e| (what, e))?;
    }
    let mut buf = AlignedBuf::new(length);
    stackmeter_proto::pattern::fill(0, buf.bytes_mut());
    let mut ev = Events::with_capacity(flows.len().min(256));
    ready();
    let now = Instant::now();
    // The last progress of each flow; None once it has ended.
    let mut since: Vec<Option<Instant>> = vec![Some(now); flows.len()];
    let mut open = flows.len();
    let mut check = now + TICK;
    while open > 0 && !(way == Way::Send && stop()) {
        ep.wait(&mut ev, Some(TICK)).map_err(|e| (what, e))?;
        let now = Instant::now();
        for r in ev.iter() {
            let k = r.token as usize;
            let mut s = &flows[k];
            let got = match way {
                Way::Send => s.write(buf.bytes()),
                Way::Recv => s.read(buf.bytes_mut()),
            };
            match got {
                Ok(0) if way == Way::Recv => {
                    ep.delete(s.as_raw_fd()).map_err(|e| (what, e))?;
                    since[k] = None;
                    open -= 1;
                }
                Ok(0) => return Err((what, io::ErrorKind::WriteZero.into())),
                Ok(n) => {
                    count(n as u64);
                    since[k] = Some(now);
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
                // After the stop, the stream was ended under this send.
                Err(_) if way == Way::Send && stop() => return Ok(()),
                Err(e) => return Err((what, e)),
            }
        }
        if now >= check {
            check = now + TICK;
            if since.iter().flatten().any(|&t| now.duration_since(t) > timeout) {
                return Err((what, io::ErrorKind::TimedOut.into()));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn one_group_when_pinned_and_never_more_than_flows() {
        assert_eq!(group_count(1000, true), 1);
        assert_eq!(group_count(1, false), 1);
        assert!(group_count(1000, false) >= 1);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let socks: Vec<_> = (0..5)
            .map(|_| TcpStream::connect(l.local_addr().unwrap()).unwrap())
            .collect();
        let shares = deal(socks, 2).unwrap();
        assert_eq!(shares.iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 2]);
    }

    #[test]
    fn receives_every_byte_of_many_flows_until_each_ends() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for _ in 0..50 {
            let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            c.set_nonblocking(true).unwrap();
            ours.push(c);
            theirs.push(l.accept().unwrap().0);
        }
        let writer = std::thread::spawn(move || {
            for (i, mut s) in theirs.into_iter().enumerate() {
                s.write_all(&vec![7u8; 1000 + i]).unwrap();
            }
        });
        let total = AtomicU64::new(0);
        let r = run(
            &ours,
            Way::Recv,
            4096,
            Duration::from_secs(5),
            &|| {},
            &|| false,
            &|n| {
                total.fetch_add(n, Ordering::Relaxed);
            },
        );
        writer.join().unwrap();
        assert!(r.is_ok());
        assert_eq!(total.load(Ordering::Relaxed), (0..50).map(|i| 1000 + i).sum::<u64>());
    }

    #[test]
    fn a_silent_flow_fails_after_the_timeout() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        c.set_nonblocking(true).unwrap();
        let _peer = l.accept().unwrap();
        let t = Instant::now();
        let r = run(
            &[c],
            Way::Recv,
            4096,
            Duration::from_millis(100),
            &|| {},
            &|| false,
            &|_| {},
        );
        let (what, e) = r.unwrap_err();
        assert_eq!((what, e.kind()), ("receiving stream data", io::ErrorKind::TimedOut));
        assert!(t.elapsed() < Duration::from_secs(2));
    }
}
