//! stream against a plain target: an RFC 863 discard server
//! (`--discard`) or an iperf 2 server (`--iperf2`), TCP, client to target.
//!
//! No control session and no Report: the target counts nothing stackmeter
//! can read. So the figures are the sender's: what the client's send calls
//! accepted (sent), and what the target's TCP acknowledged, from TCP_INFO
//! `tcpi_bytes_acked` of each connection (acked), the figure closest to
//! what the target received. The senders are the throughput core's
//! (`throughput/`: one thread per connection, `--length`-byte writes of
//! the payload pattern); the calling thread reads their counters and
//! TCP_INFO at every interval end. At the end the client half-closes
//! every connection and waits (at most 2 s) for the target's close, then
//! reads the acknowledged bytes once more: what had arrived by the end of
//! the drain.
//!
//! UDP against an iperf 2 server (`--iperf2 --udp`): the core's paced UDP
//! senders with iperf 2's datagram header (`iperf2.rs`); each ends with
//! FINs until the server's report comes, whose counts (received, lost,
//! out of order, jitter, over the whole test) become the summary's `udp`.

use crate::error::ClientError;
use crate::outcome::StreamOutcome;
use crate::plain::iperf2::{self, ServerReport};
use crate::sockets::{lost, send_all, tcp_connect, udp_socket};
use crate::throughput::rates::{cpu_of, mbps, share, Moved};
use crate::throughput::udp_sender::{udp_sender, UdpTx};
use crate::throughput::window::intervals;
use crate::throughput::workers::{enable_zerocopy, join, sum, tcp_sender, Crew, SenderInfo, Worker};
use stackmeter_results::{CpuUse, Interval, SenderBytes, StreamParams, UdpFigures};
use stackmeter_sys::{thread_cpu, CpuTime};
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Longest wait for the target's close after the client's.
const DRAIN: Duration = Duration::from_secs(2);

/// The client's counts at one boundary.
#[derive(Clone, Copy, Debug, Default)]
struct Mark {
    t: f64,
    sent: u64,
    /// The senders' TCP_INFO (acknowledged bytes among it).
    tcp: SenderInfo,
}

/// Runs a stream test against a plain target at `addr`; `live` sees each
/// interval as it ends.
pub fn stream_plain(
    addr: SocketAddr,
    p: &StreamParams,
    cpu: Option<usize>,
    live: &mut dyn FnMut(&Interval),
) -> StreamOutcome {
    StreamOutcome::of(|out| {
        let timeout = Duration::from_millis(p.timeout_ms);
        let cpu0 = thread_cpu();
        let crew = Crew::new(cpu);
        let mut senders: Vec<Worker> = Vec::new();
        let reports = Arc::new(Mutex::new(Vec::new()));
        for _ in 0..p.parallel {
            if p.udp {
                senders.push(iperf2_udp(addr, p, &reports, &crew)?);
                continue;
            }
            let mut s = tcp_connect(addr, timeout)?;
            if p.iperf2 {
                let h = iperf2::Settings::new(p.parallel, p.length, p.omit_s + p.time_s);
                send_all(&mut s, &h.emit()).map_err(|e| lost(addr, "sending the iperf 2 settings header", &e))?;
            }
            if !p.nodelay {
                s.set_nodelay(false)?;
            }
            if p.zerocopy {
                enable_zerocopy(&s)?;
            }
            senders.push(tcp_sender(s, addr, p.length as usize, p.zerocopy, &crew)?);
        }
        let w = intervals(
            p,
            &crew,
            |t| Ok(mark(t, &senders)),
            |a, b, omitted| interval(p, a, b, omitted),
            live,
            &mut out.intervals,
        )?;
        // Stop: end every stream from here (a send blocked on a full window
        // returns), then wait for the workers and for the target's close.
        crew.stop();
        let socks: Vec<TcpStream> = senders.iter_mut().flat_map(|w| std::mem::take(&mut w.tcp)).collect();
        for s in &socks {
            let _ = s.shutdown(std::net::Shutdown::Write);
        }
        let mut client_cpu = CpuTime::default();
        let datagrams = join(senders, &mut client_cpu).1;
        let drained = drain(&socks);
        if !p.iperf2 && drained.returned > 0 {
            out.warnings
                .push(stackmeter_results::warnings::Warning::DiscardReturned {
                    bytes: drained.returned,
                });
        }
        let acked_end = drained.acked;
        let wall = w.start.elapsed().as_secs_f64();
        client_cpu = client_cpu.plus(thread_cpu().since(cpu0));
        if let Some(e) = crew.shared.take_error() {
            return Err(e);
        }
        let Some(first) = w.first else {
            return w.end();
        };
        let last = w.last;
        let secs = last.t - first.t;
        let acked = last.tcp.acked.saturating_sub(first.tcp.acked);
        let reports: Vec<ServerReport> = std::mem::take(&mut *reports.lock().unwrap_or_else(PoisonError::into_inner));
        let udp = (p.udp && !reports.is_empty()).then(|| udp_figures(&reports, datagrams));
        if p.udp && reports.len() < p.parallel as usize {
            out.warnings.push(stackmeter_results::warnings::Warning::Iperf2Reports {
                reported: reports.len(),
                streams: p.parallel as usize,
            });
        }
        let tcp = !p.udp;
        let moved = moved(p, &first, &last);
        let senders = SenderBytes {
            client_sent_bytes: moved.sent,
            target_sent_bytes: 0,
            drained_sent_bytes: match tcp {
                true => acked_end.saturating_sub(first.tcp.acked),
                false => reports.iter().map(|r| r.bytes).sum(),
            },
            drained_recv_bytes: 0,
        };
        let cpu = CpuUse {
            client: cpu_of(client_cpu.user_ns, client_cpu.sys_ns, wall),
            responder: None,
        };
        out.summary = Some(stackmeter_results::StreamSummary {
            retransmits: tcp.then(|| last.tcp.retrans.saturating_sub(first.tcp.retrans)),
            udp,
            zerocopy: p.zerocopy.then(|| crew.shared.zerocopy()),
            acked_bytes: tcp.then_some(acked),
            acked_mbps: tcp.then(|| mbps(acked, secs)),
            ..moved.summary(senders, &out.intervals, cpu)
        });
        w.end()
    })
}

/// A paced UDP sender of iperf 2 datagrams; at the stop it sends FINs and
/// adds the server's report to `reports`.
fn iperf2_udp(
    addr: SocketAddr,
    p: &StreamParams,
    reports: &Arc<Mutex<Vec<ServerReport>>>,
    crew: &Crew,
) -> Result<Worker, ClientError> {
    let sock = udp_socket(addr, Duration::from_millis(p.timeout_ms))?;
    let pps = p.rate_pps.unwrap_or(f64::INFINITY) / p.parallel as f64;
    let length = p.length as usize;
    let reports = reports.clone();
    udp_sender(
        crew,
        "iperf2-udp",
        addr,
        "sending UDP datagrams to the iperf 2 server",
        pps,
        move || UdpTx::new(sock, iperf2::Frames, length, 1),
        move |tx, sh| match iperf2::finish(&tx.sock, &mut tx.buf, tx.seq as i64) {
            Ok(Some(r)) => reports.lock().unwrap_or_else(PoisonError::into_inner).push(r),
            Ok(None) => {}
            Err(e) => sh.fail(lost(addr, "ending the UDP test (iperf 2 FIN)", &e)),
        },
    )
}

/// The iperf 2 server's counts, summed over its reports; `sent` is the
/// client's count of data datagrams. The server counts the FIN's sequence
/// number as a datagram: one per stream comes off.
fn udp_figures(reports: &[ServerReport], sent: u64) -> UdpFigures {
    let expected: u64 = reports.iter().map(|r| r.datagrams.saturating_sub(1)).sum();
    let lost: u64 = reports.iter().map(|r| r.lost).sum();
    let received = expected.saturating_sub(lost);
    UdpFigures {
        sent_datagrams: sent,
        received_datagrams: received,
        lost,
        loss_ratio: share(lost, expected),
        duplicates: 0,
        reordered: reports.iter().map(|r| r.out_of_order).sum(),
        jitter_us: reports.iter().map(|r| r.jitter_us).fold(0.0, f64::max),
    }
}

/// What the target did at the end of a TCP stream.
struct Drained {
    /// Bytes its TCP acknowledged.
    acked: u64,
    /// Bytes it sent back (a discard server sends none).
    returned: u64,
}

/// Waits for the target to close every connection (at most [`DRAIN`] in
/// all), reading what it sent back, then the bytes its TCP acknowledged.
fn drain(socks: &[TcpStream]) -> Drained {
    let deadline = Instant::now() + DRAIN;
    let mut sink = [0u8; 4096];
    let mut returned = 0u64;
    for s in socks {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || s.set_read_timeout(Some(left)).is_err() {
                break;
            }
            match (&*s).read(&mut sink) {
                Ok(0) | Err(_) => break,
                Ok(n) => returned += n as u64,
            }
        }
    }
    let acked = socks
        .iter()
        .filter_map(|s| stackmeter_sys::tcp_info(s.as_raw_fd()))
        .map(|i| i.bytes_acked)
        .sum();
    Drained { acked, returned }
}

fn mark(t: f64, senders: &[Worker]) -> Mark {
    Mark {
        t,
        sent: sum(senders, |w| &w.bytes),
        tcp: SenderInfo::of(senders),
    }
}

/// What the client sent from `a` to `b` (a plain target counts nothing
/// the client can read, and sends nothing back).
fn moved(p: &StreamParams, a: &Mark, b: &Mark) -> Moved {
    Moved {
        secs: b.t - a.t,
        sent: b.sent - a.sent,
        recv: 0,
        length: p.length,
    }
}

fn interval(p: &StreamParams, a: &Mark, b: &Mark, omitted: bool) -> Interval {
    let moved = moved(p, a, b);
    let acked = b.tcp.acked.saturating_sub(a.tcp.acked);
    let tcp = !p.udp;
    Interval {
        retransmits: tcp.then(|| b.tcp.retrans.saturating_sub(a.tcp.retrans)),
        cwnd_kib: b.tcp.cwnd_kib,
        rtt_us: b.tcp.rtt_us,
        // An iperf 2 server reports once, at the end: per interval no
        // loss or jitter is known (the table shows "-").
        udp: None,
        acked_bytes: tcp.then_some(acked),
        acked_mbps: tcp.then(|| mbps(acked, moved.secs)),
        ..moved.interval(a.t, b.t, omitted)
    }
}
