//! Open-loop rr: requests leave on a schedule whatever the replies do, and
//! each latency runs from the request's *intended* send time, so queueing
//! behind a slow reply is measured, not hidden (coordinated omission; the
//! correction is applied once, here, and nowhere else).
//!
//! Each connection has two threads on two handles of one socket: a sender
//! that sleeps until each scheduled time and sends, and a receiver that
//! reads the responses in order (the responder answers requests of one
//! connection in order, so response `i` belongs to request `i`) and records
//! `arrival - (start + schedule[i])`. The schedule is computed before the
//! start and shared read-only, so the two threads never talk to each other.
//! Requests pipeline on the connection when replies are slower than the
//! schedule, as they would for a real client under load.

use crate::conn::{lost, open_session, recv_exact, send_all, AlignedBuf, CHUNK};
use crate::error::ClientError;
use crate::outcome::{levels, summary_us, Outcome};
use stackmeter_proto::session::{Mode, SessionHeader};
use stackmeter_results::{OpenLoopParams, RrParams, RrResult, SizePair};
use stackmeter_stats::Recorder;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs every size pair open-loop against `addr`, one row each.
pub fn rr_open(addr: SocketAddr, spec: &RrParams, ol: &OpenLoopParams) -> Outcome<RrResult> {
    crate::outcome::per_pair(&spec.sizes, |pair| one(addr, pair, spec, ol))
}

/// Send offsets in nanoseconds from the start, for connection `j` of `c`:
/// fixed spacing `c / rate` staggered by `1 / rate` per connection, or a
/// Poisson process of rate `rate / c` (the connections together make one of
/// rate `rate`). Pure: the same arguments give the same schedule.
pub fn schedule(rate: f64, c: u32, j: u32, n: u64, poisson: bool) -> Vec<u64> {
    let gap = c as f64 / rate * 1e9;
    if !poisson {
        let phase = j as f64 / rate * 1e9;
        return (0..n).map(|i| (phase + i as f64 * gap) as u64).collect();
    }
    // xorshift64* seeded per connection; uniform in (0, 1], exponential gaps.
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ ((j as u64 + 1) << 17);
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

/// What one connection's two threads measured.
struct Conn {
    rtt: Recorder,
    received: u64,
    last: Option<Instant>,
}

fn one(
    addr: SocketAddr,
    pair: SizePair,
    spec: &RrParams,
    ol: &OpenLoopParams,
) -> Result<(RrResult, Recorder), ClientError> {
    let c = ol.connections.max(1);
    let per_conn = ((ol.rate * ol.time_s / c as f64).floor() as u64).max(1);
    let poisson = ol.arrival == "poisson";
    let timeout = Duration::from_millis(spec.timeout_ms);
    let h = SessionHeader {
        mode: Mode::Rr,
        req_size: pair.req,
        resp_size: pair.resp,
        flags: 0,
    };
    let mut req = vec![0u8; pair.req as usize];
    stackmeter_proto::pattern::fill(0, &mut req);
    let req = Arc::new(req);
    // Open every connection and warm it (closed loop) before the start.
    let mut conns = Vec::new();
    let mut rx = AlignedBuf::new((pair.resp as usize).min(CHUNK));
    for _ in 0..c {
        let mut s = open_session(addr, &h, timeout)?;
        for i in 0..spec.warmup {
            send_all(&mut s, &req)
                .and_then(|_| recv_exact(&mut s, pair.resp as u64, rx.bytes_mut()))
                .map_err(|e| lost(addr, &format!("warming up (transaction {i})"), &e))?;
        }
        conns.push(s);
    }
    let interval = Duration::from_nanos((c as f64 / ol.rate * 1e9) as u64);
    // Threads start well before the first due time (spawning 2c threads).
    let start = Instant::now() + Duration::from_millis(20) + Duration::from_micros(300 * c as u64);
    let mut handles = Vec::new();
    for (j, s) in conns.into_iter().enumerate() {
        let sched = Arc::new(schedule(ol.rate, c, j as u32, per_conn, poisson));
        let max_gap = sched.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        let send_half = s.try_clone()?;
        // The receiver may wait a whole schedule gap before any reply is due.
        s.set_read_timeout(Some(timeout + Duration::from_nanos(max_gap) + (start - Instant::now())))?;
        let (sd, rq) = (sched.clone(), req.clone());
        let sender = spawn(move || sender(send_half, &sd, &rq, start, interval))?;
        let resp = pair.resp as u64;
        let receiver = spawn(move || receiver(s, &sched, resp, start))?;
        handles.push((sender, receiver));
    }
    let (mut rtt, mut lag) = (Recorder::new(), Recorder::new());
    let (mut late, mut received) = (0u64, 0u64);
    let mut last = start;
    let mut first_err: Option<ClientError> = None;
    let interrupted = || stackmeter_sys::interrupt::interrupted();
    for (sh, rh) in handles {
        let s = sh.join();
        let r = rh.join();
        // After Ctrl-C a sender stops early and half-closes; its receiver
        // then meets the end of the stream once every sent request is
        // answered, which is how it ends, not an error.
        let mut sent = u64::MAX;
        match s {
            Ok(Ok((l, lt, n))) => {
                lag.merge(&l);
                late += lt;
                sent = n;
            }
            Ok(Err(e)) => {
                first_err.get_or_insert(lost(addr, "sending on schedule", &e));
            }
            Err(_) => {
                first_err.get_or_insert(ClientError::Lost {
                    addr,
                    what: "a sender thread panicked".into(),
                });
            }
        }
        match r {
            Ok((cn, e)) => {
                rtt.merge(&cn.rtt);
                received += cn.received;
                last = last.max(cn.last.unwrap_or(start));
                let ended = interrupted() && cn.received >= sent;
                if let (Some(e), false) = (e, ended) {
                    first_err.get_or_insert(lost(addr, &format!("receiving response {}", cn.received), &e));
                }
            }
            Err(_) => {
                first_err.get_or_insert(ClientError::Lost {
                    addr,
                    what: "a receiver thread panicked".into(),
                });
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    // The planned time, or what ran of it when Ctrl-C cut it short.
    let planned = match interrupted() {
        true => Duration::ZERO,
        false => Duration::from_secs_f64(ol.time_s),
    };
    let span = last.duration_since(start).max(planned).as_secs_f64();
    let achieved = received as f64 / span;
    let row = RrResult {
        req_bytes: pair.req,
        resp_bytes: pair.resp,
        samples: rtt.count(),
        warmup: spec.warmup,
        rtt_us: summary_us(&rtt).ok_or_else(|| ClientError::Lost {
            addr,
            what: "no response on the schedule".into(),
        })?,
        tps: achieved,
        levels: levels(&rtt),
        requested_rate: Some(ol.rate),
        achieved_rate: Some(achieved),
        send_lag_us: summary_us(&lag),
        late_sends: Some(late),
        timestamps: None,
        split_us: None,
    };
    Ok((row, rtt))
}

fn spawn<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<std::thread::JoinHandle<T>, ClientError> {
    std::thread::Builder::new()
        .name("stackmeter-open".into())
        .stack_size(256 << 10)
        .spawn(f)
        .map_err(ClientError::Local)
}

/// How long before a send the sender stops sleeping and spins.
const SPIN: Duration = Duration::from_micros(30);

/// Sends request `i` at `start + sched[i]` (at once when already late);
/// returns the lag of every send, how many were later than `interval`, and
/// how many were sent (fewer than planned after Ctrl-C, which ends the
/// schedule and half-closes the connection).
fn sender(
    mut s: TcpStream,
    sched: &[u64],
    req: &[u8],
    start: Instant,
    interval: Duration,
) -> std::io::Result<(Recorder, u64, u64)> {
    stackmeter_sys::tight_timers();
    let mut lag = Recorder::new();
    let mut late = 0;
    let mut sent = 0;
    for &at in sched {
        if stackmeter_sys::interrupt::interrupted() {
            let _ = s.shutdown(std::net::Shutdown::Write);
            break;
        }
        let due = start + Duration::from_nanos(at);
        let now = Instant::now();
        if due > now + SPIN {
            std::thread::sleep(due - now - SPIN);
        }
        // The last few microseconds in a spin: a sleeping thread wakes tens
        // of microseconds late on a VM, which at 10,000/s per connection is
        // a late send. Costs CPU only within SPIN of each send.
        let mut t = Instant::now();
        while t < due {
            std::hint::spin_loop();
            t = Instant::now();
        }
        send_all(&mut s, req)?;
        let l = t.saturating_duration_since(due);
        lag.record(l.as_nanos() as u64);
        if l > interval {
            late += 1;
        }
        sent += 1;
    }
    Ok((lag, late, sent))
}

/// Reads response `i` and records its arrival minus request `i`'s intended
/// send time; returns what it measured and the error that stopped it.
fn receiver(mut s: TcpStream, sched: &[u64], resp: u64, start: Instant) -> (Conn, Option<std::io::Error>) {
    let mut rx = AlignedBuf::new((resp as usize).min(CHUNK));
    let mut c = Conn {
        rtt: Recorder::new(),
        received: 0,
        last: None,
    };
    for &at in sched {
        if let Err(e) = recv_exact(&mut s, resp, rx.bytes_mut()) {
            return (c, Some(e));
        }
        let t = Instant::now();
        let due = start + Duration::from_nanos(at);
        c.rtt.record(t.saturating_duration_since(due).as_nanos() as u64);
        c.received += 1;
        c.last = Some(t);
    }
    (c, None)
}

#[cfg(test)]
mod tests {
    use super::schedule;

    #[test]
    fn fixed_schedules_interleave_into_the_rate() {
        // 1000/s over 4 connections: each every 4 ms, staggered by 1 ms.
        let a = schedule(1000.0, 4, 0, 3, false);
        let b = schedule(1000.0, 4, 1, 3, false);
        assert_eq!(a, vec![0, 4_000_000, 8_000_000]);
        assert_eq!(b, vec![1_000_000, 5_000_000, 9_000_000]);
    }

    #[test]
    fn poisson_mean_gap_is_near_the_interval() {
        let s = schedule(10_000.0, 1, 0, 20_000, true);
        let mean_gap = *s.last().unwrap() as f64 / s.len() as f64;
        assert!((mean_gap - 100_000.0).abs() < 3_000.0, "{mean_gap}");
        assert!(s.windows(2).all(|w| w[1] >= w[0]));
        assert_ne!(s, schedule(10_000.0, 2, 1, 20_000, true));
    }
}
