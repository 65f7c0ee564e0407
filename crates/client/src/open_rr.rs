//! Open-loop rr: requests leave on a schedule whatever the replies do, and
//! each latency runs from the request's *intended* send time, so queueing
//! behind a slow reply is measured, not hidden (coordinated omission; the
//! correction is applied once, here, and nowhere else).
//!
//! One thread drives every connection from one merged schedule, computed
//! before the start: request `i` is due at `start + schedule[i]` and goes
//! on connection `i mod c`, one `send` per request while the client is on
//! time. Between sends the thread waits in `epoll` for responses: asleep
//! while the next send is further than [`SPIN`] away, then looking without
//! sleeping until it is due (a sleeping thread wakes tens of microseconds
//! late on a VM). It reads one ready connection at a time and looks at the
//! schedule between two reads: reading a whole batch first held sends back
//! (at 100,000/s on 64 connections the send lag p99 sat near 50 us; one
//! read at a time, mostly 12-20 us). Behind the schedule it sends every
//! request already due at once, one `send` per connection carrying that
//! connection's due requests back to back (each request's lag still from
//! its own scheduled time), and reads one connection every [`BEHIND`]
//! sends: catching up is what the lag measures, and a client that never
//! read while behind left a connection unread past the timeout. The
//! responder answers the requests of one connection in order, so the `k`-th
//! response on connection `j` belongs to request `j + k c`, and its latency
//! is `arrival - (start + schedule[j + k c])`. Every response is counted to
//! the byte: a missing, short or surplus one is an error.
//!
//! Why one thread and not a sender and a receiver per connection (the
//! first design): pinned to one CPU, 2c threads paid a context switch per
//! request and response, and c spinning senders took the CPU from each
//! other in scheduler slices of milliseconds; at 100,000 requests/s on 4
//! connections the schedule slipped by milliseconds (perf showed a third
//! of the time in clock reads and spinning, a sixth in scheduler wake-ups,
//! 23,000 context switches a second; bench/openloop.sh measures).
//! Requests pipeline on a connection when replies are slower
//! than the schedule, as they would for a real client under load.

use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::handshake::open_session;
use crate::outcome::{levels, summary_us, Outcome};
use crate::sockets::{lost, recv_exact, send_all, AlignedBuf, CHUNK};
use stackmeter_proto::header::{Mode, SessionHeader};
use stackmeter_recorder::Recorder;
use stackmeter_results::{OpenLoopParams, RrParams, RrResult, SizePair};
use stackmeter_sys::epoll::{Epoll, Events, Interest};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Runs every size pair open-loop against the responder at `endpoint`, one
/// row each.
pub fn rr_open(endpoint: &Endpoint, spec: &RrParams, ol: &OpenLoopParams) -> Outcome<RrResult> {
    crate::outcome::per_pair(&spec.sizes, |pair| one(endpoint, pair, spec, ol))
}

/// Send offsets in nanoseconds from the start of `n` requests at `rate`
/// per second: evenly spaced `1 / rate` apart, or a Poisson process of
/// rate `rate` (exponential gaps, fixed seed). Request `i` goes on
/// connection `i mod c`, so with fixed spacing each connection sends every
/// `c / rate`, staggered by `1 / rate`. Pure: the same arguments give the
/// same schedule.
pub fn schedule(rate: f64, n: u64, poisson: bool) -> Vec<u64> {
    let gap = 1e9 / rate;
    if !poisson {
        return (0..n).map(|i| (i as f64 * gap) as u64).collect();
    }
    // xorshift64*; uniform in (0, 1], exponential gaps.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut t = 0.0;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let u = ((x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
            t += -u.ln() * gap;
            t as u64
        })
        .collect()
}

/// How long before a send the thread stops sleeping and only looks.
const SPIN: Duration = Duration::from_micros(50);
/// At most this many requests of one connection in one send when behind,
const BATCH_MAX: usize = 64;
/// and at most this many bytes.
const BATCH_BYTES: usize = 64 << 10;
/// At most this many sends in a row without a look for responses.
const BEHIND: u32 = 32;
/// How often the connections are checked for a response overdue by the
/// whole timeout.
const CHECK_EVERY: Duration = Duration::from_millis(1);

/// One connection of the run.
struct Connection {
    s: TcpStream,
    /// Its index, which is also its epoll token.
    j: u64,
    /// Requests sent on it.
    sent: u64,
    /// Responses received whole.
    done: u64,
    /// Bytes of the next response already received.
    partial: u64,
    /// The last progress: a byte received, or a send with nothing
    /// outstanding before it. A response outstanding for the whole timeout
    /// after it is an error.
    since: Instant,
}

/// What the run measured so far.
struct Tally {
    rtt: Recorder,
    lag: Recorder,
    late: u64,
    received: u64,
    last: Instant,
}

/// The fixed facts of one run.
struct Plan<'a> {
    sched: &'a [u64],
    /// The request `batch` times over: what one send carries at most.
    reqs: &'a [u8],
    batch: usize,
    start: Instant,
    c: u64,
    resp: u64,
    timeout: Duration,
}

fn one(
    endpoint: &Endpoint,
    pair: SizePair,
    spec: &RrParams,
    ol: &OpenLoopParams,
) -> Result<(RrResult, Recorder), ClientError> {
    let addr = endpoint.addr;
    let c = ol.connections.max(1) as u64;
    let n = ((ol.rate * ol.time_s).floor() as u64).max(c);
    let timeout = Duration::from_millis(spec.timeout_ms);
    let h = SessionHeader {
        mode: Mode::Rr,
        req_size: pair.req,
        resp_size: pair.resp,
        flags: 0,
    };
    let mut req = vec![0u8; pair.req as usize];
    stackmeter_proto::pattern::fill(0, &mut req);
    // Open every connection and warm it (closed loop) before the start.
    let ep = Epoll::new().map_err(ClientError::Local)?;
    let mut conns = Vec::new();
    let mut rx = AlignedBuf::new(CHUNK.max(64 << 10));
    for j in 0..c {
        let mut s = open_session(endpoint, &h, timeout)?;
        for i in 0..spec.warmup {
            send_all(&mut s, &req)
                .and_then(|_| recv_exact(&mut s, pair.resp as u64, rx.bytes_mut()))
                .map_err(|e| lost(addr, &format!("warming up (transaction {i})"), &e))?;
        }
        s.set_nonblocking(true)?;
        ep.add(s.as_raw_fd(), j, Interest::Read).map_err(ClientError::Local)?;
        conns.push(Connection {
            s,
            j,
            sent: 0,
            done: 0,
            partial: 0,
            since: Instant::now(),
        });
    }
    let sched = schedule(ol.rate, n, ol.arrival == "poisson");
    let interval = Duration::from_nanos((c as f64 / ol.rate * 1e9) as u64);
    stackmeter_sys::tight_timers();
    let start = Instant::now() + Duration::from_millis(5);
    let batch = (BATCH_BYTES / req.len().max(1)).clamp(1, BATCH_MAX);
    let reqs = req.repeat(batch);
    let plan = Plan {
        sched: &sched,
        reqs: &reqs,
        batch,
        start,
        c,
        resp: pair.resp as u64,
        timeout,
    };
    let mut t = Tally {
        rtt: Recorder::new(),
        lag: Recorder::new(),
        late: 0,
        received: 0,
        last: start,
    };
    let mut ev = Events::with_capacity((c as usize).min(256));
    drive(&plan, &mut conns, &ep, &mut ev, rx.bytes_mut(), &req, interval, &mut t)
        .map_err(|(what, e)| lost(addr, &what, &e))?;
    // The planned time, or what ran of it when Ctrl-C cut it short.
    let planned = match stackmeter_sys::interrupt::interrupted() {
        true => Duration::ZERO,
        false => Duration::from_secs_f64(ol.time_s),
    };
    let span = t.last.duration_since(start).max(planned).as_secs_f64();
    let achieved = t.received as f64 / span;
    let row = RrResult {
        req_bytes: pair.req,
        resp_bytes: pair.resp,
        samples: t.rtt.count(),
        warmup: spec.warmup,
        rtt_us: summary_us(&t.rtt).ok_or_else(|| ClientError::Lost {
            addr,
            what: "no response on the schedule".into(),
        })?,
        tps: achieved,
        levels: levels(&t.rtt),
        requested_rate: Some(ol.rate),
        achieved_rate: Some(achieved),
        send_lag_us: summary_us(&t.lag),
        late_sends: Some(t.late),
        timestamps: None,
        split_us: None,
        retransmits: None,
        layers: None,
    };
    Ok((row, t.rtt))
}

/// Where a run broke, and why.
type Broke = (String, io::Error);

/// Sends every request on time and reads every response; after Ctrl-C
/// sends no more and waits for the responses still owed.
#[allow(clippy::too_many_arguments)]
fn drive(
    p: &Plan,
    conns: &mut [Connection],
    ep: &Epoll,
    ev: &mut Events,
    buf: &mut [u8],
    req: &[u8],
    interval: Duration,
    t: &mut Tally,
) -> Result<(), Broke> {
    let mut next = 0usize;
    let mut end = p.sched.len();
    let mut check = Instant::now() + CHECK_EVERY;
    // The events of the last wait not yet read: one is read between two
    // looks at the schedule, so a batch of responses on many connections
    // never holds a due send back by more than one `recv`.
    let mut pending = 0..0;
    // Sends in a row: a client behind its schedule still reads a response
    // every [`BEHIND`] sends (or, overloaded, it would never read, and
    // take the responder's full buffers for a stall).
    let mut behind = 0u32;
    loop {
        if next < end && stackmeter_sys::interrupt::interrupted() {
            end = next;
        }
        let now = Instant::now();
        if now >= check {
            overdue(conns, now, p.timeout)?;
            check = now + CHECK_EVERY;
        }
        let due = (next < end).then(|| p.start + Duration::from_nanos(p.sched[next]));
        let sent = match due {
            Some(due) if now >= due => {
                // Every request due now: one send per connection, so a
                // client behind catches up at a fraction of a call per
                // request (the bytes are those of the requests, back to
                // back, as a sender's queue would hold them).
                let mut m = 1;
                while m < p.batch * p.c as usize
                    && next + m < end
                    && p.start + Duration::from_nanos(p.sched[next + m]) <= now
                {
                    m += 1;
                }
                let mut waited = false;
                for off in 0..m.min(p.c as usize) {
                    let first = next + off;
                    let count = (m - off).div_ceil(p.c as usize);
                    let at = if off == 0 { now } else { Instant::now() };
                    waited |= send_on(
                        conns,
                        first % p.c as usize,
                        &p.reqs[..count * req.len()],
                        count as u64,
                        at,
                        p,
                        ep,
                        ev,
                        buf,
                        t,
                    )
                    .map_err(|e| (format!("sending request {first} on schedule"), e))?;
                    for q in 0..count {
                        let i = first + q * p.c as usize;
                        let lag = at - (p.start + Duration::from_nanos(p.sched[i]));
                        t.lag.record(lag.as_nanos() as u64);
                        if lag > interval {
                            t.late += 1;
                        }
                    }
                }
                if waited {
                    // The events were overwritten; level-triggered, what
                    // is still unread comes again on the next wait.
                    pending = 0..0;
                }
                next += m;
                true
            }
            _ => false,
        };
        if sent {
            // Behind the schedule: catch up first, reading one ready
            // connection every [`BEHIND`] sends.
            behind += 1;
            if behind < BEHIND {
                continue;
            }
        }
        behind = 0;
        if let Some(i) = pending.next() {
            let token = ev.get(i).map_or(u64::MAX, |r| r.token);
            receive(p, conns, token, buf, t)?;
            continue;
        }
        let wait = match due {
            _ if sent => Duration::ZERO,
            Some(due) => (due - now).saturating_sub(SPIN),
            None if conns.iter().all(|l| l.done == l.sent) => return Ok(()),
            None => CHECK_EVERY,
        };
        let n = ep
            .wait(ev, Some(wait))
            .map_err(|e| ("waiting for responses".to_string(), e))?;
        pending = 0..n;
    }
}

/// Sends `count` requests (`req`, back to back) on connection `k` with one
/// `send`; should the socket not take them whole (the responder is far
/// behind), finishes while reading every connection's responses, for at most the
/// timeout.
#[allow(clippy::too_many_arguments)]
fn send_on(
    conns: &mut [Connection],
    k: usize,
    req: &[u8],
    count: u64,
    now: Instant,
    p: &Plan,
    ep: &Epoll,
    ev: &mut Events,
    buf: &mut [u8],
    t: &mut Tally,
) -> io::Result<bool> {
    if conns[k].done == conns[k].sent {
        conns[k].since = now;
    }
    let mut rest = req;
    let mut blocked: Option<Instant> = None;
    while !rest.is_empty() {
        match (&conns[k].s).write(rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(k) => rest = &rest[k..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let b = *blocked.get_or_insert_with(Instant::now);
                if b.elapsed() > p.timeout {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                // Responses must keep flowing, or a responder blocked on
                // its own full send buffer would never read this request.
                ep.wait(ev, Some(Duration::from_micros(100)))?;
                for r in ev.iter() {
                    receive(p, conns, r.token, buf, t).map_err(|(_, e)| e)?;
                }
            }
            Err(e) => return Err(e),
        }
    }
    conns[k].sent += count;
    Ok(blocked.is_some())
}

/// Reads connection `token` (a connection index), found ready by the last wait:
/// one `recv` (level-triggered: the rest comes on the next wait), and
/// records every response it completes.
fn receive(p: &Plan, conns: &mut [Connection], token: u64, buf: &mut [u8], t: &mut Tally) -> Result<(), Broke> {
    {
        let Some(l) = conns.get_mut(token as usize) else {
            return Ok(());
        };
        let j = l.j;
        let n = match (&l.s).read(buf) {
            Ok(0) => {
                let e = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("closed after {} responses", l.done),
                );
                return Err((format!("receiving response {} on connection {j}", l.done), e));
            }
            Ok(n) => n as u64,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => return Ok(()),
            Err(e) => return Err((format!("receiving response {} on connection {j}", l.done), e)),
        };
        let at = Instant::now();
        l.since = at;
        let mut left = n;
        while left > 0 {
            if l.done == l.sent {
                let e = io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{left} bytes beyond the last response"),
                );
                return Err((format!("receiving on connection {j} ({} requests sent)", l.sent), e));
            }
            let need = p.resp - l.partial;
            if left < need {
                l.partial += left;
                break;
            }
            left -= need;
            l.partial = 0;
            let i = j + l.done * p.c;
            let due = p.start + Duration::from_nanos(p.sched[i as usize]);
            t.rtt.record(at.saturating_duration_since(due).as_nanos() as u64);
            l.done += 1;
            t.received += 1;
            t.last = at;
        }
    }
    Ok(())
}

/// Fails when a connection owes a response and nothing came for the whole
/// timeout since its last progress.
fn overdue(conns: &[Connection], now: Instant, timeout: Duration) -> Result<(), Broke> {
    for (j, l) in conns.iter().enumerate() {
        if l.done < l.sent && now.duration_since(l.since) > timeout {
            return Err((
                format!("receiving response {} on connection {j}", l.done),
                io::ErrorKind::TimedOut.into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::schedule;

    #[test]
    fn fixed_schedule_spaces_requests_by_the_rate() {
        // 1000/s: every 1 ms; on 4 connections each sends every 4 ms.
        assert_eq!(
            schedule(1000.0, 5, false),
            vec![0, 1_000_000, 2_000_000, 3_000_000, 4_000_000]
        );
    }

    #[test]
    fn poisson_mean_gap_is_near_the_interval() {
        let s = schedule(10_000.0, 20_000, true);
        let mean_gap = *s.last().unwrap() as f64 / s.len() as f64;
        assert!((mean_gap - 100_000.0).abs() < 3_000.0, "{mean_gap}");
        assert!(s.windows(2).all(|w| w[1] >= w[0]));
        assert_eq!(s, schedule(10_000.0, 20_000, true));
    }
}
