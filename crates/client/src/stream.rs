//! stream: TCP or paced UDP throughput, per interval and in total (the
//! `bps` table of the bps-throughput scenario, the min/typical/max of the
//! link-characterisation one: docs/scenarios.md).
//!
//! One control session plus `parallel` data connections per direction (or
//! UDP sockets). Worker threads (`throughput/`) move the bytes with plain
//! `send`/`recv` calls of `length` bytes and count them in per-thread
//! atomics; the calling thread wakes at every interval end, reads the
//! client's counters and asks the responder for its own (a Snapshot), and
//! turns the difference to the previous boundary into an [`Interval`].
//! Each direction is counted where it is received; what the senders
//! counted is reported beside it (`docs/tests.md`, "stream").

use crate::control::Control;
use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::handshake::open_session_with;
use crate::outcome::StreamOutcome;
use crate::sockets::udp_socket;
use crate::throughput::flows::Way;
use crate::throughput::rates::{cpu_of, share, Moved};
use crate::throughput::udp_sender::{udp_sender, StreamFrames, UdpTx};
use crate::throughput::window::intervals;
use crate::throughput::workers::{enable_zerocopy, join, sum, tcp_flows, tcp_sender, Crew, SenderInfo, Worker};
use stackmeter_proto::control::{Report, FLAG_CPU, FLAG_DRAIN_TIMEOUT, FLAG_TCP_INFO};
use stackmeter_proto::header::{Mode, SessionHeader};
use stackmeter_proto::udp::HEADER_LEN;
use stackmeter_results::{CpuUse, Interval, SenderBytes, StreamParams, StreamSummary, UdpFigures};
use stackmeter_sys::{thread_cpu, CpuTime};
use std::time::Duration;

/// Counts at one boundary.
#[derive(Clone, Copy, Debug, Default)]
struct Mark {
    t: f64,
    up_sent: u64,
    down_recv: u64,
    udp_sent: u64,
    /// The client senders' TCP_INFO.
    tcp: SenderInfo,
    report: Report,
}

/// Runs a stream test against the responder at `endpoint`; `live` sees
/// each interval as it ends.
pub fn stream(
    endpoint: &Endpoint,
    p: &StreamParams,
    cpu: Option<usize>,
    live: &mut dyn FnMut(&Interval),
) -> StreamOutcome {
    StreamOutcome::of(|out| run(endpoint, p, cpu, live, out))
}

fn run(
    endpoint: &Endpoint,
    p: &StreamParams,
    cpu: Option<usize>,
    live: &mut dyn FnMut(&Interval),
    out: &mut StreamOutcome,
) -> Result<(), ClientError> {
    let addr = endpoint.addr;
    let timeout = Duration::from_millis(p.timeout_ms);
    let cpu0 = thread_cpu();
    let mut control = Control::open(endpoint, timeout)?;
    let fitted = fit(p, &control.limits, &mut out.warnings);
    let p = &fitted;
    // Whatever way this function ends, no worker is left waiting at the
    // gate or sending on: dropping the crew stops them all.
    let crew = Crew::new(cpu);
    let mut senders: Vec<Worker> = Vec::new();
    let mut receivers: Vec<Worker> = Vec::new();
    // TCP flows run event-driven, many per thread (flows.rs); with
    // MSG_ZEROCOPY each sender keeps its own thread, which reads its
    // socket's completions.
    let (mut up, mut down) = (Vec::new(), Vec::new());
    for i in 0..p.parallel {
        if p.udp {
            senders.push(udp_stream(endpoint, p, control.test_id, i as u16, &crew)?);
            continue;
        }
        if p.direction.up() {
            let h = SessionHeader::data(Mode::Sink, control.test_id, p.length);
            let s = open_session_with(endpoint, &h, timeout, p.nodelay)?;
            if p.zerocopy {
                enable_zerocopy(&s)?;
                senders.push(tcp_sender(s, addr, p.length as usize, true, &crew)?);
            } else {
                up.push(s);
            }
        }
        if p.direction.down() {
            let h = SessionHeader::data(Mode::Source, control.test_id, p.length);
            down.push(open_session_with(endpoint, &h, timeout, p.nodelay)?);
        }
    }
    let length = p.length as usize;
    if !up.is_empty() {
        senders.extend(tcp_flows(up, Way::Send, addr, length, timeout, &crew)?);
    }
    if !down.is_empty() {
        receivers.extend(tcp_flows(down, Way::Recv, addr, length, timeout, &crew)?);
    }
    let w = intervals(
        p,
        &crew,
        |t| mark(t, &senders, &receivers, &mut control),
        |a, b, omitted| interval(p, a, b, omitted),
        live,
        &mut out.intervals,
    )?;
    // Stop. UDP senders stop at their next datagram: wait for them, so
    // every datagram leaves before the Stop. A TCP sender may sit in a
    // blocking send to a target that has stopped reading: end its stream
    // from here (the send returns) so the Stop goes out at once, and the
    // target's sources stop with the window, not after a backlog.
    crew.stop();
    let mut client_cpu = CpuTime::default();
    let mut udp_total = 0;
    if p.udp {
        udp_total = join(std::mem::take(&mut senders), &mut client_cpu).1;
    }
    for s in senders.iter().flat_map(|w| w.tcp.iter()) {
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
    let final_report = control.stop(Duration::from_secs(5).max(timeout));
    join(senders, &mut client_cpu);
    let down_total = join(receivers, &mut client_cpu).0;
    let wall = w.start.elapsed().as_secs_f64();
    client_cpu = client_cpu.plus(thread_cpu().since(cpu0));
    if let Some(e) = crew.shared.take_error() {
        return Err(e);
    }
    let fin = final_report?;
    out.drain_timeout = fin.has(FLAG_DRAIN_TIMEOUT);
    // Stopped before the omitted seconds ended: nothing was measured.
    let Some(first) = w.first else {
        return w.end();
    };
    let drained = Drained {
        down: down_total,
        udp_sent: udp_total,
    };
    let mut sum = summary(p, &out.intervals, &first, &w.last, &fin, &drained, client_cpu, wall);
    if p.zerocopy {
        sum.zerocopy = Some(crew.shared.zerocopy());
    }
    out.summary = Some(sum);
    w.end()
}

/// A paced UDP sender for stream `index` of the test.
fn udp_stream(
    endpoint: &Endpoint,
    p: &StreamParams,
    test_id: u32,
    index: u16,
    crew: &Crew,
) -> Result<Worker, ClientError> {
    let sock = udp_socket(endpoint.addr, Duration::from_millis(p.timeout_ms))?;
    let pps = p.rate_pps.unwrap_or(f64::INFINITY) / p.parallel as f64;
    let framing = StreamFrames::new(endpoint, test_id, index);
    let (length, batch) = ((p.length as usize).max(HEADER_LEN), p.batch as usize);
    udp_sender(
        crew,
        "udp-send",
        endpoint.addr,
        "sending UDP stream datagrams",
        pps,
        move || UdpTx::new(sock, framing, length, batch),
        |_, _| {},
    )
}

/// The test as the responder's advertised limits allow it: the measured
/// time cut to its longest test (less the omitted seconds and a second
/// for the set up), a UDP rate cut to its highest rate; one line per cut,
/// naming the limit.
fn fit(
    p: &StreamParams,
    l: &stackmeter_proto::admit::Advertised,
    notes: &mut Vec<stackmeter_results::warnings::Warning>,
) -> StreamParams {
    let mut q = p.clone();
    if l.max_test_s > 0 {
        let room = (l.max_test_s as f64 - p.omit_s - 1.0).max(1.0);
        if p.time_s > room {
            q.time_s = room;
            notes.push(stackmeter_results::warnings::Warning::ResponderTimeLimit {
                max_s: l.max_test_s,
                measured_s: room,
                asked_s: p.time_s,
            });
        }
    }
    if l.max_rate_bps > 0 && p.udp {
        let max_pps = l.max_rate_bps as f64 / (p.length.max(1) as f64 * 8.0);
        if p.rate_pps.is_none_or(|r| r > max_pps) {
            q.rate_pps = Some(max_pps);
            notes.push(stackmeter_results::warnings::Warning::ResponderRateLimit {
                max_mbps: l.max_rate_bps as f64 / 1e6,
                sent_pps: Some(max_pps),
                asked: p.rate.clone(),
            });
        }
    }
    if l.max_rate_bps > 0 && !p.udp && p.direction.down() {
        notes.push(stackmeter_results::warnings::Warning::ResponderRateLimit {
            max_mbps: l.max_rate_bps as f64 / 1e6,
            sent_pps: None,
            asked: None,
        });
    }
    q
}

/// Totals after the test was stopped and drained.
struct Drained {
    down: u64,
    udp_sent: u64,
}

fn mark(t: f64, senders: &[Worker], receivers: &[Worker], control: &mut Control) -> Result<Mark, ClientError> {
    let up_sent = sum(senders, |w| &w.bytes);
    let udp_sent = sum(senders, |w| &w.datagrams);
    let down_recv = sum(receivers, |w| &w.bytes);
    let tcp = SenderInfo::of(senders);
    let report = control.snapshot()?;
    Ok(Mark {
        t,
        up_sent,
        down_recv,
        udp_sent,
        tcp,
        report,
    })
}

/// The bytes of the client-to-target direction as the target counted them.
fn target_rx(p: &StreamParams, r: &Report) -> u64 {
    if p.udp {
        r.udp_bytes
    } else {
        r.tcp_rx_bytes
    }
}

/// What each direction moved from `a` to `b`, each counted where it was
/// received.
fn moved(p: &StreamParams, a: &Mark, b: &Mark) -> Moved {
    Moved {
        secs: b.t - a.t,
        sent: target_rx(p, &b.report).saturating_sub(target_rx(p, &a.report)),
        recv: b.down_recv - a.down_recv,
        length: p.length,
    }
}

fn interval(p: &StreamParams, a: &Mark, b: &Mark, omitted: bool) -> Interval {
    let (mut retransmits, mut cwnd_kib, mut rtt_us) = (None, None, None);
    if !p.udp {
        let target_retr = b.report.tcp_retransmits.saturating_sub(a.report.tcp_retransmits) as u64;
        retransmits = Some(b.tcp.retrans.saturating_sub(a.tcp.retrans) + target_retr);
        // The senders' view: the client's sockets when it sends, else the
        // target's (from its report).
        if p.direction.up() {
            (cwnd_kib, rtt_us) = (b.tcp.cwnd_kib, b.tcp.rtt_us);
        } else if b.report.has(FLAG_TCP_INFO) {
            cwnd_kib = Some(b.report.tcp_cwnd_bytes as f64 / 1024.0);
            rtt_us = Some(b.report.tcp_rtt_us as f64);
        }
    }
    let udp = p.udp.then(|| {
        let expected = b.report.udp_expected.saturating_sub(a.report.udp_expected);
        let received = b.report.udp_datagrams.saturating_sub(a.report.udp_datagrams);
        let lost = expected.saturating_sub(received);
        UdpFigures {
            sent_datagrams: b.udp_sent - a.udp_sent,
            received_datagrams: received,
            lost,
            loss_ratio: share(lost, expected),
            duplicates: b.report.udp_duplicates.saturating_sub(a.report.udp_duplicates),
            reordered: b.report.udp_reordered.saturating_sub(a.report.udp_reordered),
            jitter_us: b.report.udp_jitter_ns as f64 / 1000.0,
        }
    });
    Interval {
        retransmits,
        cwnd_kib,
        rtt_us,
        udp,
        ..moved(p, a, b).interval(a.t, b.t, omitted)
    }
}

#[allow(clippy::too_many_arguments)]
fn summary(
    p: &StreamParams,
    intervals: &[Interval],
    a: &Mark,
    b: &Mark,
    fin: &Report,
    drained: &Drained,
    client_cpu: CpuTime,
    wall: f64,
) -> StreamSummary {
    let responder = fin
        .has(FLAG_CPU)
        .then(|| cpu_of(fin.cpu_user_ns, fin.cpu_sys_ns, fin.elapsed_ns as f64 / 1e9));
    let udp = p.udp.then(|| {
        // Sent, by sequence number from the window's start as the target
        // saw it, plus the datagrams after the last one that arrived (the
        // client's own count): so the window's start is one instant for
        // both counts, whatever was in flight then.
        let tail = drained.udp_sent.saturating_sub(fin.udp_expected);
        let sent_d = fin.udp_expected.saturating_sub(a.report.udp_expected) + tail;
        let received = fin.udp_datagrams.saturating_sub(a.report.udp_datagrams);
        let lost = sent_d.saturating_sub(received);
        UdpFigures {
            sent_datagrams: sent_d,
            received_datagrams: received,
            lost,
            loss_ratio: share(lost, sent_d),
            duplicates: fin.udp_duplicates.saturating_sub(a.report.udp_duplicates),
            reordered: fin.udp_reordered.saturating_sub(a.report.udp_reordered),
            jitter_us: fin.udp_jitter_ns as f64 / 1000.0,
        }
    });
    let retransmits = (!p.udp).then(|| {
        b.tcp.retrans.saturating_sub(a.tcp.retrans)
            + b.report.tcp_retransmits.saturating_sub(a.report.tcp_retransmits) as u64
    });
    let senders = SenderBytes {
        client_sent_bytes: b.up_sent - a.up_sent,
        target_sent_bytes: b.report.tcp_tx_bytes.saturating_sub(a.report.tcp_tx_bytes),
        drained_sent_bytes: target_rx(p, fin).saturating_sub(target_rx(p, &a.report)),
        drained_recv_bytes: drained.down - a.down_recv,
    };
    let cpu = CpuUse {
        client: cpu_of(client_cpu.user_ns, client_cpu.sys_ns, wall),
        responder,
    };
    StreamSummary {
        retransmits,
        udp,
        ..moved(p, a, b).summary(senders, intervals, cpu)
    }
}
