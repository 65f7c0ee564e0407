//! udp-burst: bursts of back-to-back UDP echo datagrams, and how many of
//! each burst the target answers.
//!
//! Each round builds its `burst` datagrams first, then sends them with no
//! pause (plain `send` calls, one per datagram, so an `LD_PRELOAD` stack
//! sees ordinary sockets), then reads their replies until every one is
//! back or `timeout` has passed since the last send. The clock is read
//! right before the first send and after each reply is read; the round's
//! drain time runs from the one to the last of the other, and counts only
//! for rounds that came back whole. It includes the client's own sends
//! and reads (replies queue while the burst is still being sent), so it
//! compares targets measured by the same client; it is not the target's
//! time alone. A reply to an earlier round that comes late is not this
//! round's: it is counted as mismatched, never as received.

use crate::endpoint::Endpoint;
use crate::error::{check_interrupt, ClientError};
use crate::outcome::{summary_us, Outcome, RowHistogram};
use stackmeter_proto::pattern;
use stackmeter_proto::udp::{Header, Kind, HEADER_LEN};
use stackmeter_recorder::Recorder;
use stackmeter_results::{UdpBurstParams, UdpBurstResult};
use std::io;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

/// Runs the bursts, one row per burst size. A test with no reply at all
/// ends with an error next to its rows.
pub fn udp_burst(endpoint: &Endpoint, p: &UdpBurstParams) -> Outcome<UdpBurstResult> {
    let mut st = match Bursts::new(endpoint, p) {
        Ok(s) => s,
        Err(e) => return Outcome::failed(e),
    };
    let mut rows = Vec::new();
    let mut histograms = Vec::new();
    let mut error = st.warm_up().err();
    for (i, &burst) in p.bursts.iter().enumerate() {
        if error.is_some() {
            break;
        }
        let mut row = UdpBurstResult {
            burst,
            ..Default::default()
        };
        let mut drain = Recorder::new();
        let drops = st.drops();
        for _ in 0..p.rounds {
            if let Err(e) = check_interrupt().and_then(|()| st.round(burst, &mut row, &mut drain)) {
                error = Some(e);
                break;
            }
        }
        row.lost = row.sent - row.received;
        row.client_drops = st.drops().zip(drops).map(|(b, a)| b.saturating_sub(a));
        row.drain_us = summary_us(&drain);
        if drain.count() > 0 {
            histograms.push(RowHistogram {
                row: i,
                metric: "drain_us",
                ns: drain,
            });
        }
        rows.push(row);
    }
    let sent: u64 = rows.iter().map(|r| r.sent).sum();
    let received: u64 = rows.iter().map(|r| r.received).sum();
    if error.is_none() && sent > 0 && received == 0 {
        error = Some(ClientError::Lost {
            addr: endpoint.addr,
            what: format!(
                "no reply to any of {sent} datagrams within {} ms{}",
                p.timeout_ms,
                crate::control::why_silent(endpoint, Duration::from_millis(p.timeout_ms))
            ),
        });
    }
    Outcome {
        rows,
        error,
        histograms,
    }
}

struct Bursts<'a> {
    endpoint: Endpoint,
    p: &'a UdpBurstParams,
    timeout: Duration,
    sock: UdpSocket,
    /// A datagram's length on the wire (with the MAC trailer when sealed).
    len: usize,
    /// The round's datagrams, built before its first send.
    tx: Vec<u8>,
    rx: Vec<u8>,
    /// With a secret: datagrams carry a MAC trailer, and sequence numbers
    /// start at the wall clock (ahead of the responder's replay window).
    sealed: bool,
    /// The next datagram's sequence number on the wire.
    next: u64,
    /// The current round's first sequence number, and which of its
    /// datagrams have been answered.
    first: u64,
    seen: Vec<bool>,
    origin: Instant,
    /// Whether any datagram of the test, warm-up included, was answered
    /// (a port unreachable after that is a responder gone).
    answered_any: bool,
}

impl<'a> Bursts<'a> {
    fn new(endpoint: &Endpoint, p: &'a UdpBurstParams) -> Result<Bursts<'a>, ClientError> {
        let timeout = Duration::from_millis(p.timeout_ms);
        let sock = crate::sockets::udp_socket(endpoint.addr, timeout)?;
        // Replies pile up here while the burst is still being sent: room
        // for many small ones (the kernel caps it at net.core.rmem_max;
        // what it still drops is counted).
        let _ = socket2::SockRef::from(&sock).set_recv_buffer_size(RCVBUF);
        let sealed = endpoint.secret.is_some();
        let size = p.size as usize;
        Ok(Bursts {
            endpoint: *endpoint,
            p,
            timeout,
            sock,
            len: size + if sealed { endpoint.trailer() } else { 0 },
            tx: Vec::new(),
            rx: vec![0u8; 65536],
            sealed,
            next: if sealed { stackmeter_sys::wall_ns() } else { 0 },
            first: 0,
            seen: Vec::new(),
            origin: Instant::now(),
            answered_any: false,
        })
    }

    /// The kernel's count of datagrams this socket's full receive queue
    /// dropped (`/proc/net/udp`, `drops`), if it can be read.
    fn drops(&self) -> Option<u64> {
        let local = self.sock.local_addr().ok()?;
        let table = match local.is_ipv4() {
            true => "/proc/net/udp",
            false => "/proc/net/udp6",
        };
        socket_drops(&std::fs::read_to_string(table).ok()?, local.port())
    }

    /// Untimed single round trips (ARP, caches, the responder's first
    /// packet), not counted.
    fn warm_up(&mut self) -> Result<(), ClientError> {
        let mut row = UdpBurstResult::default();
        let mut drain = Recorder::new();
        for _ in 0..self.p.warmup {
            check_interrupt()?;
            self.round(1, &mut row, &mut drain)?;
        }
        Ok(())
    }

    /// One burst and its replies, added to `row` (and to `drain` when it
    /// came back whole).
    fn round(&mut self, burst: u32, row: &mut UdpBurstResult, drain: &mut Recorder) -> Result<(), ClientError> {
        self.first = self.next;
        self.seen.clear();
        self.seen.resize(burst as usize, false);
        // Every datagram built (and sealed) before the clock starts.
        self.tx.resize(self.len * burst as usize, 0);
        for k in 0..burst as usize {
            self.build(k);
        }
        self.next += u64::from(burst);
        let t0 = Instant::now();
        for d in self.tx.chunks(self.len) {
            if let Err(e) = self.sock.send(d) {
                return Err(self.io_error(&e));
            }
        }
        row.rounds += 1;
        row.sent += u64::from(burst);
        let deadline = Instant::now() + self.timeout;
        let mut answered = 0u32;
        let mut last = t0;
        let mut failed = None;
        while answered < burst {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.receive(left) {
                Ok(Reply::Nothing) => {}
                Ok(Reply::Ours(t1)) => {
                    answered += 1;
                    last = t1;
                }
                Ok(Reply::Other) => row.mismatched += 1,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        // What came back counts even when the round broke off.
        row.received += u64::from(answered);
        if answered == burst {
            row.whole_rounds += 1;
            drain.record(last.duration_since(t0).as_nanos() as u64);
        }
        failed.map_or(Ok(()), Err)
    }

    /// Builds the round's datagram `k` (its number on the wire is the
    /// round's first plus `k`) in its place in the send buffer.
    fn build(&mut self, k: usize) {
        let seq = self.first + k as u64;
        let ts = self.origin.elapsed().as_nanos() as u64;
        let size = self.p.size as usize;
        let d = &mut self.tx[k * self.len..(k + 1) * self.len];
        // Cannot fail: the size was checked to be at least the header.
        let _ = Header::request(seq, ts).emit(d);
        pattern::fill(seq, &mut d[HEADER_LEN..size]);
        if self.sealed {
            self.endpoint.seal(d);
        }
    }

    /// Waits up to `wait` for one datagram: an intact answer to this
    /// round not seen before, something else, or nothing.
    /// A queued reply is read with one `recv` and no other call; only
    /// when none is queued does it wait (`ppoll`, nanosecond timeout), so
    /// no socket option is set between the sends and the last reply.
    fn receive(&mut self, wait: Duration) -> Result<Reply, ClientError> {
        use std::os::fd::AsRawFd;
        let fd = self.sock.as_raw_fd();
        let n = match stackmeter_sys::recv_nowait(fd, &mut self.rx) {
            Ok(n) => n,
            // Nothing queued: wait for it; the caller reads it next (and its
            // deadline decides whether the round is over).
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                stackmeter_sys::wait_readable(fd, wait).map_err(|e| self.io_error(&e))?;
                check_interrupt()?;
                return Ok(Reply::Nothing);
            }
            // A signal: Ctrl-C ends the test, anything else reads again.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                check_interrupt()?;
                return Ok(Reply::Nothing);
            }
            Err(e) => return Err(self.io_error(&e)),
        };
        let t1 = Instant::now();
        let n = match self.sealed {
            false => n,
            true => match self.endpoint.open(&self.rx[..n]) {
                Ok(body) => body,
                Err(true) => return Err(self.endpoint.unsealed_reply()),
                Err(false) => return Ok(Reply::Other),
            },
        };
        let Ok(h) = Header::parse(&self.rx[..n]) else {
            return Ok(Reply::Other);
        };
        if let Some(e) = crate::error::echo_reply_kind(self.endpoint.addr, &h) {
            return Err(e);
        }
        let intact = h.kind == Kind::EchoReply as u8
            && n == self.p.size as usize
            && pattern::matches_from(h.seq, 0, &self.rx[HEADER_LEN..n]);
        let i = h.seq.wrapping_sub(self.first) as usize;
        match self.seen.get(i) {
            Some(false) if intact => {
                self.seen[i] = true;
                self.answered_any = true;
                Ok(Reply::Ours(t1))
            }
            _ => Ok(Reply::Other),
        }
    }

    fn io_error(&self, e: &io::Error) -> ClientError {
        crate::error::udp_io_error(self.endpoint.addr, e, self.answered_any)
    }
}

/// What one receive got.
enum Reply {
    /// Nothing within the wait (or a signal that was not Ctrl-C).
    Nothing,
    /// An intact answer to this round's datagram, first seen at this instant.
    Ours(Instant),
    /// Anything else: wrong bytes, a duplicate, a late answer to an
    /// earlier round.
    Other,
}

/// Receive buffer asked for: 4 MiB (the kernel grants at most
/// net.core.rmem_max, and a small queued datagram costs it several hundred
/// bytes).
const RCVBUF: usize = 4 << 20;

/// The `drops` of the socket bound to local `port` in a `/proc/net/udp`
/// table (the last column; the local address is the second, `ADDR:PORT`
/// in hex).
fn socket_drops(table: &str, port: u16) -> Option<u64> {
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (_, p) = f.get(1)?.rsplit_once(':')?;
        match u16::from_str_radix(p, 16).ok()? == port {
            true => f.last()?.parse().ok(),
            false => None,
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn drops_are_read_from_the_socket_s_line() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
 1: 0100007F:1F90 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1 2 0000000000000000 0
 2: 00000000:A1B2 0100007F:6068 01 00000000:00000000 00:00000000 00000000     0        0 3 2 0000000000000000 17
";
        assert_eq!(super::socket_drops(table, 0xA1B2), Some(17));
        assert_eq!(super::socket_drops(table, 8080), Some(0));
        assert_eq!(super::socket_drops(table, 1), None);
    }
}
