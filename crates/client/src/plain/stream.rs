//! stream against a plain target: an RFC 863 discard server
//! (`--discard`) or an iperf 2 server (`--iperf2`), TCP, client to target.
//!
//! No control session and no Report: the target counts nothing stackmeter
//! can read. So the figures are the sender's: what the client's send calls
//! accepted (sent), and what the target's TCP acknowledged, from TCP_INFO
//! `tcpi_bytes_acked` of each connection (acked), the figure closest to
//! what the target received. The senders are `stream`'s own threads (one
//! per connection, `--length`-byte writes of the payload pattern); the
//! calling thread reads their counters and TCP_INFO at every interval end.
//! At the end the client half-closes every connection and waits (at most
//! 2 s) for the target's close, then reads the acknowledged bytes once
//! more: what had arrived by the end of the drain.
//!
//! UDP against an iperf 2 server (`--iperf2 --udp`): `stream`'s paced UDP
//! senders with iperf 2's datagram header (`iperf2.rs`); each ends with
//! FINs until the server's report comes, whose counts (received, lost,
//! out of order, jitter, over the whole test) become the summary's `udp`.

use crate::error::ClientError;
use crate::plain::iperf2::ServerReport;
use crate::sockets::{connect, lost, send_all, tcp_socket, udp_socket};
use crate::stream::{
    boundaries, cpu_of, enable_zerocopy, kpps, mbps, spread, tcp_sender, worker, Gate, Release, Shared, Start,
    StreamOutcome, UdpTx, Worker,
};
use stackmeter_results::{CpuUse, Interval, SenderBytes, StreamParams, StreamSummary, UdpFigures};
use stackmeter_sys::{thread_cpu, CpuTime};
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest wait for the target's close after the client's.
const DRAIN: Duration = Duration::from_secs(2);

/// The client's counts at one boundary.
#[derive(Clone, Copy, Debug, Default)]
struct Mark {
    t: f64,
    sent: u64,
    acked: u64,
    retrans: u64,
    cwnd_kib: Option<f64>,
    rtt_us: Option<f64>,
}

/// Runs a stream test against a plain target at `addr`; `live` sees each
/// interval as it ends.
pub fn stream_plain(
    addr: SocketAddr,
    p: &StreamParams,
    cpu: Option<usize>,
    live: &mut dyn FnMut(&Interval),
) -> StreamOutcome {
    let mut out = StreamOutcome::default();
    if let Err(e) = run(addr, p, cpu, live, &mut out) {
        out.error.get_or_insert(e);
    }
    out
}

fn run(
    addr: SocketAddr,
    p: &StreamParams,
    cpu: Option<usize>,
    live: &mut dyn FnMut(&Interval),
    out: &mut StreamOutcome,
) -> Result<(), ClientError> {
    let timeout = Duration::from_millis(p.timeout_ms);
    let cpu0 = thread_cpu();
    let shared = Shared::new();
    let go = Arc::new(Gate::default());
    let _release = Release(&shared, &go);
    let st = Start {
        shared: &shared,
        go: &go,
        cpu,
    };
    let mut senders: Vec<Worker> = Vec::new();
    let reports = Arc::new(Mutex::new(Vec::new()));
    for _ in 0..p.parallel {
        if p.udp {
            senders.push(udp_sender(addr, p, &reports, &st)?);
            continue;
        }
        let s = tcp_socket(addr, timeout)?;
        connect(&s, addr, timeout)?;
        let mut s = TcpStream::from(s);
        if p.iperf2 {
            let h = crate::plain::iperf2::Settings::new(p.parallel, p.length, p.omit_s + p.time_s);
            send_all(&mut s, &h.emit()).map_err(|e| lost(addr, "sending the iperf 2 settings header", &e))?;
        }
        if !p.nodelay {
            s.set_nodelay(false)?;
        }
        if p.zerocopy {
            enable_zerocopy(&s)?;
        }
        senders.push(tcp_sender(s, addr, p.length as usize, p.zerocopy, &st)?);
    }
    let mut marks = vec![mark(0.0, &senders)];
    go.open();
    let start = Instant::now();
    let mut omit_mark = if p.omit_s > 0.0 { None } else { Some(marks[0]) };
    let mut cut = false;
    for b in boundaries(p) {
        let due = start + Duration::from_secs_f64(b);
        while !shared.stop.load(Ordering::Acquire) {
            let now = Instant::now();
            cut = stackmeter_sys::interrupt::interrupted();
            if now >= due || cut {
                break;
            }
            std::thread::sleep((due - now).min(Duration::from_millis(50)));
        }
        if shared.stop.load(Ordering::Acquire) {
            break;
        }
        let m = mark(start.elapsed().as_secs_f64(), &senders);
        let prev = *marks.last().unwrap_or(&m);
        let row = interval(p, &prev, &m, b <= p.omit_s + 1e-9 && p.omit_s > 0.0);
        live(&row);
        out.intervals.push(row);
        if omit_mark.is_none() && b >= p.omit_s - 1e-9 {
            omit_mark = Some(m);
        }
        marks.push(m);
        if cut {
            break;
        }
    }
    // Stop: end every stream from here (a send blocked on a full window
    // returns), then wait for the workers and for the target's close.
    shared.stop.store(true, Ordering::Release);
    let socks: Vec<TcpStream> = senders.iter_mut().flat_map(|w| std::mem::take(&mut w.tcp)).collect();
    for s in &socks {
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
    let mut client_cpu = CpuTime::default();
    let mut datagrams = 0;
    for w in senders {
        if let Ok(c) = w.handle.join() {
            client_cpu = client_cpu.plus(c);
        }
        datagrams += w.datagrams.0.load(Ordering::Relaxed);
    }
    let acked_end = drain(&socks);
    let wall = start.elapsed().as_secs_f64();
    client_cpu = client_cpu.plus(thread_cpu().since(cpu0));
    if let Some(e) = shared.take_error() {
        return Err(e);
    }
    let (Some(first), Some(last)) = (omit_mark, marks.last().copied()) else {
        return match cut {
            true => Err(ClientError::Interrupted),
            false => Ok(()),
        };
    };
    let secs = last.t - first.t;
    let sent = last.sent - first.sent;
    let acked = last.acked.saturating_sub(first.acked);
    let reports: Vec<ServerReport> =
        std::mem::take(&mut *reports.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    let udp = (p.udp && !reports.is_empty()).then(|| udp_figures(&reports, datagrams));
    if p.udp && reports.len() < p.parallel as usize {
        out.warnings.push(format!(
            "the iperf 2 server reported on {} of {} UDP stream(s) (none after 10 FINs): what those streams delivered is unknown (is it an iperf 2 server?)",
            reports.len(),
            p.parallel
        ));
    }
    let tcp = !p.udp;
    out.summary = Some(StreamSummary {
        duration_s: secs,
        sent_mbps: mbps(sent, secs),
        recv_mbps: 0.0,
        total_mbps: mbps(sent, secs),
        sent_kpps: kpps(sent, p.length, secs),
        recv_kpps: 0.0,
        total_kpps: kpps(sent, p.length, secs),
        sent_bytes: sent,
        recv_bytes: 0,
        senders: SenderBytes {
            client_sent_bytes: sent,
            target_sent_bytes: 0,
            drained_sent_bytes: match tcp {
                true => acked_end.saturating_sub(first.acked),
                false => reports.iter().map(|r| r.bytes).sum(),
            },
            drained_recv_bytes: 0,
        },
        interval_total_mbps: spread(&out.intervals),
        retransmits: tcp.then(|| last.retrans.saturating_sub(first.retrans)),
        cpu: CpuUse {
            client: cpu_of(client_cpu.user_ns, client_cpu.sys_ns, wall),
            responder: None,
        },
        udp,
        zerocopy: p.zerocopy.then(|| stackmeter_results::Zerocopy {
            completed: shared.zc_completed.0.load(Ordering::Relaxed),
            copied: shared.zc_copied.0.load(Ordering::Relaxed),
        }),
        acked_bytes: tcp.then_some(acked),
        acked_mbps: tcp.then(|| mbps(acked, secs)),
    });
    match cut {
        true => Err(ClientError::Interrupted),
        false => Ok(()),
    }
}

/// A paced UDP sender of iperf 2 datagrams; at the stop it sends FINs and
/// adds the server's report to `reports`.
fn udp_sender(
    addr: SocketAddr,
    p: &StreamParams,
    reports: &Arc<Mutex<Vec<ServerReport>>>,
    st: &Start,
) -> Result<Worker, ClientError> {
    let sock = udp_socket(addr, Duration::from_millis(p.timeout_ms))?;
    let pps = p.rate_pps.unwrap_or(f64::INFINITY) / p.parallel as f64;
    let length = p.length as usize;
    let reports = reports.clone();
    worker("iperf2-udp", st, Vec::new(), move |sh, go, b, d| {
        stackmeter_sys::tight_timers();
        let mut tx = UdpTx::iperf2(sock, addr, length);
        go.wait();
        if let Err(e) = tx.send_paced(pps, None, &sh.stop, b, d) {
            sh.fail(lost(addr, "sending UDP datagrams to the iperf 2 server", &e));
            return;
        }
        match crate::plain::iperf2::finish(&tx.sock, &mut tx.buf, tx.seq as i64) {
            Ok(Some(r)) => reports
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(r),
            Ok(None) => {}
            Err(e) => sh.fail(lost(addr, "ending the UDP test (iperf 2 FIN)", &e)),
        }
    })
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
        loss_ratio: if expected > 0 {
            lost as f64 / expected as f64
        } else {
            0.0
        },
        duplicates: 0,
        reordered: reports.iter().map(|r| r.out_of_order).sum(),
        jitter_us: reports.iter().map(|r| r.jitter_us).fold(0.0, f64::max),
    }
}

/// Waits for the target to close every connection (at most [`DRAIN`] in
/// all), then returns the bytes its TCP acknowledged.
fn drain(socks: &[TcpStream]) -> u64 {
    let deadline = Instant::now() + DRAIN;
    let mut sink = [0u8; 4096];
    for s in socks {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || s.set_read_timeout(Some(left)).is_err() {
                break;
            }
            match (&*s).read(&mut sink) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    }
    socks
        .iter()
        .filter_map(|s| stackmeter_sys::tcp_info(s.as_raw_fd()))
        .map(|i| i.bytes_acked)
        .sum()
}

fn mark(t: f64, senders: &[Worker]) -> Mark {
    let sent = senders.iter().map(|w| w.bytes.0.load(Ordering::Relaxed)).sum();
    let infos: Vec<_> = senders
        .iter()
        .flat_map(|w| w.tcp.iter())
        .filter_map(|s| stackmeter_sys::tcp_info(s.as_raw_fd()))
        .collect();
    let n = infos.len();
    Mark {
        t,
        sent,
        acked: infos.iter().map(|i| i.bytes_acked).sum(),
        retrans: infos.iter().map(|i| i.total_retrans as u64).sum(),
        cwnd_kib: (n > 0).then(|| infos.iter().map(|i| i.cwnd_bytes as f64).sum::<f64>() / 1024.0),
        rtt_us: (n > 0).then(|| infos.iter().map(|i| i.rtt_us as f64).sum::<f64>() / n as f64),
    }
}

fn interval(p: &StreamParams, a: &Mark, b: &Mark, omitted: bool) -> Interval {
    let secs = b.t - a.t;
    let sent = b.sent - a.sent;
    let acked = b.acked.saturating_sub(a.acked);
    let tcp = !p.udp;
    Interval {
        start_s: a.t,
        end_s: b.t,
        omitted,
        sent_mbps: mbps(sent, secs),
        sent_kpps: kpps(sent, p.length, secs),
        recv_mbps: 0.0,
        recv_kpps: 0.0,
        total_mbps: mbps(sent, secs),
        total_kpps: kpps(sent, p.length, secs),
        sent_bytes: sent,
        recv_bytes: 0,
        retransmits: tcp.then(|| b.retrans.saturating_sub(a.retrans)),
        cwnd_kib: b.cwnd_kib,
        rtt_us: b.rtt_us,
        // An iperf 2 server reports once, at the end: per interval no
        // loss or jitter is known (the table shows "-").
        udp: None,
        acked_bytes: tcp.then_some(acked),
        acked_mbps: tcp.then(|| mbps(acked, secs)),
    }
}
