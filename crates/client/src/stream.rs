//! stream: TCP or paced UDP throughput, per interval and in total (seed
//! 001's `bps` table, seed 002's min/typical/max).
//!
//! One control session plus `parallel` data connections per direction (or
//! UDP sockets). Worker threads move the bytes with plain `send`/`recv`
//! calls of `length` bytes and count them in per-thread atomics; the
//! calling thread wakes at every interval end, reads the client's counters
//! and asks the responder for its own (a Snapshot), and turns the
//! difference to the previous boundary into an [`Interval`]. Each direction
//! is counted where it is received; what the senders counted is reported
//! beside it (`docs/tests.md`, "stream").

use crate::control::Control;
use crate::endpoint::Endpoint;
use crate::error::is_timeout;
use crate::error::ClientError;
use crate::handshake::open_session_with;
use crate::sockets::{lost, udp_socket, AlignedBuf};
use crate::throughput::flows;
use crate::throughput::pace::Pacer;
use stackmeter_proto::control::{Report, FLAG_CPU, FLAG_DRAIN_TIMEOUT};
use stackmeter_proto::session::{Mode, SessionHeader};
use stackmeter_proto::udp::{Header, HEADER_LEN};
use stackmeter_results::{Cpu, CpuUse, Interval, SenderBytes, Spread, StreamParams, StreamSummary, UdpFigures};
use stackmeter_sys::{thread_cpu, CpuTime};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a stream test produced: every interval it finished, the summary if
/// it got that far, and the error that stopped it, if any.
#[derive(Debug, Default)]
pub struct StreamOutcome {
    /// Interval rows, omitted ones included.
    pub intervals: Vec<Interval>,
    /// Totals over the measured window.
    pub summary: Option<StreamSummary>,
    /// Why the test stopped early.
    pub error: Option<ClientError>,
    /// The responder set the drain-timeout flag on its final report.
    pub drain_timeout: bool,
    /// What the reader must know that only the run could tell (a plain
    /// target that sent no report).
    pub warnings: Vec<String>,
}

/// A counter on its own cache line, so worker threads don't share one.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Counter(pub(crate) AtomicU64);

/// State shared by the workers of one test.
pub(crate) struct Shared {
    pub(crate) stop: AtomicBool,
    /// MSG_ZEROCOPY sends completed, and of those copied anyway.
    pub(crate) zc_completed: Arc<Counter>,
    pub(crate) zc_copied: Arc<Counter>,
    /// First error a worker hit.
    error: std::sync::Mutex<Option<ClientError>>,
}

impl Shared {
    /// Nothing stopped, nothing counted.
    pub(crate) fn new() -> Arc<Shared> {
        Arc::new(Shared {
            stop: AtomicBool::new(false),
            zc_completed: Arc::new(Counter::default()),
            zc_copied: Arc::new(Counter::default()),
            error: std::sync::Mutex::new(None),
        })
    }

    /// The first error a worker hit, taken out.
    pub(crate) fn take_error(&self) -> Option<ClientError> {
        self.error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Keeps `e` if it is the first error, and stops every worker.
    pub(crate) fn fail(&self, e: ClientError) {
        let mut slot = self.error.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.get_or_insert(e);
        self.stop.store(true, Ordering::Release);
    }
}

/// One worker thread: its byte (or datagram) counter and its handle.
pub(crate) struct Worker {
    pub(crate) bytes: Arc<Counter>,
    pub(crate) datagrams: Arc<Counter>,
    pub(crate) handle: JoinHandle<CpuTime>,
    /// Duplicates of a TCP sender's sockets, for TCP_INFO and the
    /// half-close at the stop.
    pub(crate) tcp: Vec<TcpStream>,
}

/// Counts at one boundary.
#[derive(Clone, Copy, Debug, Default)]
struct Mark {
    t: f64,
    up_sent: u64,
    down_recv: u64,
    udp_sent: u64,
    retrans: u64,
    /// The client senders' congestion windows (summed) and RTT (mean).
    cwnd_kib: Option<f64>,
    rtt_us: Option<f64>,
    report: Report,
}

/// Runs a stream test against the responder at `endpoint`; `live` sees each
/// interval as it ends.
pub fn stream(
    endpoint: &Endpoint,
    p: &StreamParams,
    cpu: Option<usize>,
    live: &mut dyn FnMut(&Interval),
) -> StreamOutcome {
    let mut out = StreamOutcome::default();
    if let Err(e) = run(endpoint, p, cpu, live, &mut out) {
        out.error.get_or_insert(e);
    }
    out
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
    let shared = Shared::new();
    let parallel = p.parallel as usize;
    let go = Arc::new(Gate::default());
    // Whatever way this function ends, no worker is left waiting at the
    // gate or sending on: an error stops them all.
    let _release = Release(&shared, &go);
    let st = Start {
        shared: &shared,
        go: &go,
        cpu,
    };
    let mut senders: Vec<Worker> = Vec::new();
    let mut receivers: Vec<Worker> = Vec::new();
    // TCP flows run event-driven, many per thread (flows.rs); with
    // MSG_ZEROCOPY each sender keeps its own thread, which reads its
    // socket's completions.
    let (mut up, mut down) = (Vec::new(), Vec::new());
    for i in 0..parallel {
        if p.udp {
            senders.push(udp_sender(endpoint, p, control.test_id, i as u16, &st)?);
            continue;
        }
        if p.direction.up() {
            let h = SessionHeader::data(Mode::Sink, control.test_id, p.length);
            let s = open_session_with(endpoint, &h, timeout, p.nodelay)?;
            if p.zerocopy {
                enable_zerocopy(&s)?;
                senders.push(tcp_sender(s, addr, p.length as usize, true, &st)?);
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
        senders.extend(tcp_flows(up, flows::Way::Send, addr, length, timeout, &st)?);
    }
    if !down.is_empty() {
        receivers.extend(tcp_flows(down, flows::Way::Recv, addr, length, timeout, &st)?);
    }
    // The first mark is taken before any worker moves a byte, so the start
    // of the window is the same instant for both sides' counters.
    let mut marks = vec![mark(0.0, &senders, &receivers, &mut control)?];
    go.open();
    let start = Instant::now();
    let boundaries = boundaries(p);
    let mut omit_mark = if p.omit_s > 0.0 { None } else { Some(marks[0]) };
    // Ctrl-C closes the window at once: the interval in progress ends
    // there (shorter, its rates over its own length) and the test stops as
    // at its planned end, so the summary covers what ran.
    let mut cut = false;
    for &b in &boundaries {
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
        let m = mark(start.elapsed().as_secs_f64(), &senders, &receivers, &mut control)?;
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
    // Stop. UDP senders stop at their next datagram: wait for them, so
    // every datagram leaves before the Stop. A TCP sender may sit in a
    // blocking send to a target that has stopped reading: end its stream
    // from here (the send returns) so the Stop goes out at once, and the
    // target's sources stop with the window, not after a backlog.
    shared.stop.store(true, Ordering::Release);
    let mut client_cpu = CpuTime::default();
    let mut udp_total = 0;
    let join = |ws: Vec<Worker>, client_cpu: &mut CpuTime| -> (u64, u64) {
        let (mut bytes, mut datagrams) = (0, 0);
        for w in ws {
            if let Ok(c) = w.handle.join() {
                *client_cpu = client_cpu.plus(c);
            }
            bytes += w.bytes.0.load(Ordering::Relaxed);
            datagrams += w.datagrams.0.load(Ordering::Relaxed);
        }
        (bytes, datagrams)
    };
    if p.udp {
        udp_total = join(std::mem::take(&mut senders), &mut client_cpu).1;
    }
    for s in senders.iter().flat_map(|w| w.tcp.iter()) {
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
    let final_report = control.stop(Duration::from_secs(5).max(timeout));
    join(senders, &mut client_cpu);
    let down_total = join(receivers, &mut client_cpu).0;
    let wall = start.elapsed().as_secs_f64();
    client_cpu = client_cpu.plus(thread_cpu().since(cpu0));
    if let Some(e) = shared.take_error() {
        return Err(e);
    }
    let fin = final_report?;
    out.drain_timeout = fin.has(FLAG_DRAIN_TIMEOUT);
    let (Some(first), Some(last)) = (omit_mark, marks.last().copied()) else {
        // Stopped before the omitted seconds ended: nothing was measured.
        return match cut {
            true => Err(ClientError::Interrupted),
            false => Ok(()),
        };
    };
    let drained = Drained {
        down: down_total,
        udp_sent: udp_total,
    };
    let mut sum = summary(p, &out.intervals, &first, &last, &fin, &drained, client_cpu, wall);
    if p.zerocopy {
        sum.zerocopy = Some(stackmeter_results::Zerocopy {
            completed: shared.zc_completed.0.load(Ordering::Relaxed),
            copied: shared.zc_copied.0.load(Ordering::Relaxed),
        });
    }
    out.summary = Some(sum);
    match cut {
        true => Err(ClientError::Interrupted),
        false => Ok(()),
    }
}

/// MSG_ZEROCOPY on a TCP sender's socket.
pub(crate) fn enable_zerocopy(s: &TcpStream) -> Result<(), ClientError> {
    stackmeter_sys::enable_zerocopy(s.as_raw_fd()).map_err(|e| {
        ClientError::Local(io::Error::new(
            e.kind(),
            format!("--zerocopy: SO_ZEROCOPY not available ({e})"),
        ))
    })
}

/// The interval ends, seconds from the start: every `interval_s`, the end
/// of the omitted seconds, and the end of the test.
pub(crate) fn boundaries(p: &StreamParams) -> Vec<f64> {
    let total = p.omit_s + p.time_s;
    let mut boundaries: Vec<f64> = (1..)
        .map(|k| k as f64 * p.interval_s)
        .take_while(|&t| t < total - 1e-9)
        .collect();
    if p.omit_s > 0.0 && !boundaries.iter().any(|&t| (t - p.omit_s).abs() < 1e-9) {
        boundaries.push(p.omit_s);
    }
    boundaries.push(total);
    boundaries.sort_by(f64::total_cmp);
    boundaries
}

/// Totals after the test was stopped and drained.
struct Drained {
    down: u64,
    udp_sent: u64,
}

fn sum(ws: &[Worker], f: impl Fn(&Worker) -> &Counter) -> u64 {
    ws.iter().map(|w| f(w).0.load(Ordering::Relaxed)).sum()
}

fn mark(t: f64, senders: &[Worker], receivers: &[Worker], control: &mut Control) -> Result<Mark, ClientError> {
    let up_sent = sum(senders, |w| &w.bytes);
    let udp_sent = sum(senders, |w| &w.datagrams);
    let down_recv = sum(receivers, |w| &w.bytes);
    let infos: Vec<_> = senders
        .iter()
        .flat_map(|w| w.tcp.iter())
        .filter_map(|s| stackmeter_sys::tcp_info(s.as_raw_fd()))
        .collect();
    let retrans = infos.iter().map(|i| i.total_retrans as u64).sum();
    let (cwnd_kib, rtt_us) = if infos.is_empty() {
        (None, None)
    } else {
        (
            Some(infos.iter().map(|i| i.cwnd_bytes as f64).sum::<f64>() / 1024.0),
            Some(infos.iter().map(|i| i.rtt_us as f64).sum::<f64>() / infos.len() as f64),
        )
    };
    let report = control.snapshot()?;
    Ok(Mark {
        t,
        up_sent,
        down_recv,
        udp_sent,
        retrans,
        cwnd_kib,
        rtt_us,
        report,
    })
}

pub(crate) fn mbps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs / 1e6
    } else {
        0.0
    }
}

pub(crate) fn kpps(bytes: u64, length: u32, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 / length as f64 / secs / 1e3
    } else {
        0.0
    }
}

/// The bytes of the client-to-target direction as the target counted them.
fn target_rx(p: &StreamParams, r: &Report) -> u64 {
    if p.udp {
        r.udp_bytes
    } else {
        r.tcp_rx_bytes
    }
}

fn interval(p: &StreamParams, a: &Mark, b: &Mark, omitted: bool) -> Interval {
    let secs = b.t - a.t;
    let sent = target_rx(p, &b.report).saturating_sub(target_rx(p, &a.report));
    let recv = b.down_recv - a.down_recv;
    let (mut retransmits, mut cwnd_kib, mut rtt_us) = (None, None, None);
    if !p.udp {
        let target_retr = b.report.tcp_retransmits.saturating_sub(a.report.tcp_retransmits) as u64;
        retransmits = Some(b.retrans.saturating_sub(a.retrans) + target_retr);
        // The senders' view: the client's sockets when it sends, else the
        // target's (from its report).
        if p.direction.up() {
            (cwnd_kib, rtt_us) = (b.cwnd_kib, b.rtt_us);
        } else if b.report.has(stackmeter_proto::control::FLAG_TCP_INFO) {
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
            loss_ratio: if expected > 0 {
                lost as f64 / expected as f64
            } else {
                0.0
            },
            duplicates: b.report.udp_duplicates.saturating_sub(a.report.udp_duplicates),
            reordered: b.report.udp_reordered.saturating_sub(a.report.udp_reordered),
            jitter_us: b.report.udp_jitter_ns as f64 / 1000.0,
        }
    });
    Interval {
        start_s: a.t,
        end_s: b.t,
        omitted,
        sent_mbps: mbps(sent, secs),
        sent_kpps: kpps(sent, p.length, secs),
        recv_mbps: mbps(recv, secs),
        recv_kpps: kpps(recv, p.length, secs),
        total_mbps: mbps(sent + recv, secs),
        total_kpps: kpps(sent + recv, p.length, secs),
        sent_bytes: sent,
        recv_bytes: recv,
        retransmits,
        cwnd_kib,
        rtt_us,
        udp,
        acked_bytes: None,
        acked_mbps: None,
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
    let secs = b.t - a.t;
    let sent = target_rx(p, &b.report).saturating_sub(target_rx(p, &a.report));
    let recv = b.down_recv - a.down_recv;
    let spread = spread(intervals);
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
            loss_ratio: if sent_d > 0 { lost as f64 / sent_d as f64 } else { 0.0 },
            duplicates: fin.udp_duplicates.saturating_sub(a.report.udp_duplicates),
            reordered: fin.udp_reordered.saturating_sub(a.report.udp_reordered),
            jitter_us: fin.udp_jitter_ns as f64 / 1000.0,
        }
    });
    let retransmits = (!p.udp).then(|| {
        b.retrans.saturating_sub(a.retrans) + b.report.tcp_retransmits.saturating_sub(a.report.tcp_retransmits) as u64
    });
    StreamSummary {
        duration_s: secs,
        sent_mbps: mbps(sent, secs),
        recv_mbps: mbps(recv, secs),
        total_mbps: mbps(sent + recv, secs),
        sent_kpps: kpps(sent, p.length, secs),
        recv_kpps: kpps(recv, p.length, secs),
        total_kpps: kpps(sent + recv, p.length, secs),
        sent_bytes: sent,
        recv_bytes: recv,
        senders: SenderBytes {
            client_sent_bytes: b.up_sent - a.up_sent,
            target_sent_bytes: b.report.tcp_tx_bytes.saturating_sub(a.report.tcp_tx_bytes),
            drained_sent_bytes: target_rx(p, fin).saturating_sub(target_rx(p, &a.report)),
            drained_recv_bytes: drained.down - a.down_recv,
        },
        interval_total_mbps: spread,
        retransmits,
        cpu: CpuUse {
            client: cpu_of(client_cpu.user_ns, client_cpu.sys_ns, wall),
            responder,
        },
        udp,
        zerocopy: None,
        acked_bytes: None,
        acked_mbps: None,
    }
}

/// min / median / max of the non-omitted intervals' totals.
pub(crate) fn spread(intervals: &[Interval]) -> Spread {
    let mut totals: Vec<f64> = intervals.iter().filter(|i| !i.omitted).map(|i| i.total_mbps).collect();
    totals.sort_by(f64::total_cmp);
    if totals.is_empty() {
        return Spread::default();
    }
    Spread {
        min: totals[0],
        median: median(&totals),
        max: totals[totals.len() - 1],
    }
}

/// CPU seconds as a share of `over` seconds of wall time.
pub(crate) fn cpu_of(user_ns: u64, sys_ns: u64, over: f64) -> Cpu {
    Cpu {
        user_s: user_ns as f64 / 1e9,
        sys_s: sys_ns as f64 / 1e9,
        percent_of_core: if over > 0.0 {
            100.0 * (user_ns + sys_ns) as f64 / 1e9 / over
        } else {
            0.0
        },
    }
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The start line every worker waits at. It opens once: for the start,
/// or for an abort (with `Shared::stop` set first, so workers return).
#[derive(Default)]
pub(crate) struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    pub(crate) fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while !*open {
            open = self.cv.wait(open).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    pub(crate) fn open(&self) {
        *self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        self.cv.notify_all();
    }
}

/// On leaving `run` by any path: stop every worker and open the gate. A
/// worker blocked in a send returns within the socket timeout; one blocked
/// in a receive, once the responder ends the test with the control session.
pub(crate) struct Release<'a>(pub(crate) &'a Shared, pub(crate) &'a Gate);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Release);
        self.1.open();
    }
}

/// What every worker thread starts from.
pub(crate) struct Start<'a> {
    pub(crate) shared: &'a Arc<Shared>,
    pub(crate) go: &'a Arc<Gate>,
    pub(crate) cpu: Option<usize>,
}

/// Starts a worker thread: pinned, with its own byte and datagram
/// counters; `body` prepares its buffers, waits at the barrier, moves data
/// until done. The thread's CPU time is its result.
pub(crate) fn worker(
    name: &str,
    st: &Start,
    tcp: Vec<TcpStream>,
    body: impl FnOnce(&Shared, &Gate, &Counter, &Counter) + Send + 'static,
) -> Result<Worker, ClientError> {
    let bytes = Arc::new(Counter::default());
    let datagrams = Arc::new(Counter::default());
    let (b, d, sh, go, cpu) = (
        bytes.clone(),
        datagrams.clone(),
        st.shared.clone(),
        st.go.clone(),
        st.cpu,
    );
    let handle = std::thread::Builder::new()
        .name(format!("stackmeter-{name}"))
        .spawn(move || {
            if let Some(c) = cpu {
                // Already checked by the caller on the measuring thread.
                let _ = stackmeter_sys::pin_current_thread(c);
            }
            let c0 = thread_cpu();
            body(&sh, &go, &b, &d);
            thread_cpu().since(c0)
        })
        .map_err(ClientError::Local)?;
    Ok(Worker {
        bytes,
        datagrams,
        handle,
        tcp,
    })
}

/// A TCP sender: writes `length` bytes per call until told to stop, then
/// half-closes and waits for the responder's close.
pub(crate) fn tcp_sender(
    mut s: TcpStream,
    addr: SocketAddr,
    length: usize,
    zerocopy: bool,
    st: &Start,
) -> Result<Worker, ClientError> {
    let dup = s.try_clone().into_iter().collect();
    let (zc_out, zc_copied) = (st.shared.zc_completed.clone(), st.shared.zc_copied.clone());
    worker("send", st, dup, move |sh, go, b, _| {
        let mut buf = AlignedBuf::new(length);
        stackmeter_proto::pattern::fill(0, buf.bytes_mut());
        let data = buf.bytes();
        let fd = s.as_raw_fd();
        let mut sends = 0u64;
        let mut zc = stackmeter_sys::ZerocopyDone::default();
        let reap = |zc: &mut stackmeter_sys::ZerocopyDone| {
            let d = stackmeter_sys::drain_zerocopy(fd);
            zc.completed += d.completed;
            zc.copied += d.copied;
        };
        go.wait();
        while !sh.stop.load(Ordering::Relaxed) {
            // With MSG_ZEROCOPY the buffer is never written again, so
            // sending it again before its completion arrives is safe; the
            // completions are read now and then so they don't pile up.
            let r = if zerocopy {
                sends += 1;
                if sends.is_multiple_of(64) {
                    reap(&mut zc);
                }
                stackmeter_sys::send_zerocopy(fd, data)
            } else {
                s.write(data)
            };
            match r {
                Ok(n) => {
                    b.0.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // After the stop, the stream was ended under this send.
                Err(_) if sh.stop.load(Ordering::Relaxed) => break,
                Err(e) => {
                    sh.fail(lost(addr, "sending stream data", &e));
                    break;
                }
            }
        }
        // End of stream for the responder's sink. The thread does not wait
        // for the sink to drain: the final Report does, and the Stop that
        // asks for it must not wait behind a backlog (the target's sources
        // would go on sending meanwhile).
        let _ = s.shutdown(std::net::Shutdown::Write);
        if zerocopy {
            // Completions of sends still unacknowledged arrive once the
            // responder has read them: wait for its close to count them all.
            let mut sink = [0u8; 64];
            let _ = s.read(&mut sink);
            reap(&mut zc);
            zc_out.0.fetch_add(zc.completed, Ordering::Relaxed);
            zc_copied.0.fetch_add(zc.copied, Ordering::Relaxed);
        }
    })
}

/// Starts the threads that carry TCP flows `socks` (flows.rs): one
/// [`Worker`] per group, counting its flows' bytes together. A sending
/// group's worker keeps duplicates of its sockets (TCP_INFO, and the
/// half-close at the stop).
fn tcp_flows(
    socks: Vec<TcpStream>,
    way: flows::Way,
    addr: SocketAddr,
    length: usize,
    timeout: Duration,
    st: &Start,
) -> Result<Vec<Worker>, ClientError> {
    let groups = flows::group_count(socks.len(), st.cpu.is_some());
    let mut out = Vec::new();
    for share in flows::deal(socks, groups)? {
        let (name, dups) = match way {
            flows::Way::Send => (
                "send",
                share
                    .iter()
                    .map(std::net::TcpStream::try_clone)
                    .collect::<io::Result<Vec<_>>>()?,
            ),
            flows::Way::Recv => ("recv", Vec::new()),
        };
        out.push(worker(name, st, dups, move |sh, go, b, _| {
            let stop = || sh.stop.load(Ordering::Relaxed);
            let count = |n| {
                b.0.fetch_add(n, Ordering::Relaxed);
            };
            if let Err((what, e)) = flows::run(&share, way, length, timeout, &|| go.wait(), &stop, &count) {
                let what = match way == flows::Way::Recv && is_timeout(&e) && stop() {
                    true => "draining after stop",
                    false => what,
                };
                sh.fail(lost(addr, what, &e));
            }
            if way == flows::Way::Send {
                // End of stream for the responder's sinks. The thread does
                // not wait for them to drain: the final Report does.
                for s in &share {
                    let _ = s.shutdown(std::net::Shutdown::Write);
                }
            }
        })?);
    }
    Ok(out)
}

/// A paced UDP sender for stream `index` of the test.
fn udp_sender(
    endpoint: &Endpoint,
    p: &StreamParams,
    test_id: u32,
    index: u16,
    st: &Start,
) -> Result<Worker, ClientError> {
    let (addr, endpoint) = (endpoint.addr, *endpoint);
    let sock = udp_socket(addr, Duration::from_millis(p.timeout_ms))?;
    let pps = p.rate_pps.unwrap_or(f64::INFINITY) / p.parallel as f64;
    let length = (p.length as usize).max(HEADER_LEN);
    let batch = p.batch as usize;
    worker("udp-send", st, Vec::new(), move |sh, go, b, d| {
        stackmeter_sys::tight_timers();
        let mut tx = UdpTx::new(sock, &endpoint, test_id, index, length, batch);
        go.wait();
        if let Err(e) = tx.send_paced(pps, None, &sh.stop, b, d) {
            sh.fail(lost(addr, "sending UDP stream datagrams", &e));
        }
    })
}

/// The test as the responder's advertised limits allow it: the measured
/// time cut to its longest test (less the omitted seconds and a second
/// for the set up), a UDP rate cut to its highest rate; one line per cut,
/// naming the limit.
fn fit(p: &StreamParams, l: &stackmeter_proto::admit::Advertised, notes: &mut Vec<String>) -> StreamParams {
    let mut q = p.clone();
    if l.max_test_s > 0 {
        let room = (l.max_test_s as f64 - p.omit_s - 1.0).max(1.0);
        if p.time_s > room {
            q.time_s = room;
            notes.push(format!(
                "the responder allows at most {} s per test; measured {room} s of the {} asked",
                l.max_test_s, p.time_s
            ));
        }
    }
    if l.max_rate_bps > 0 && p.udp {
        let max_pps = l.max_rate_bps as f64 / (p.length.max(1) as f64 * 8.0);
        if p.rate_pps.is_none_or(|r| r > max_pps) {
            q.rate_pps = Some(max_pps);
            notes.push(format!(
                "the responder allows at most {} Mbit/s per test; sent {max_pps:.0} datagrams/s instead of {}",
                l.max_rate_bps as f64 / 1e6,
                p.rate.clone().unwrap_or_else(|| "as fast as possible".into())
            ));
        }
    }
    if l.max_rate_bps > 0 && !p.udp && p.direction.down() {
        notes.push(format!(
            "the responder sends at most {} Mbit/s per test (its highest rate)",
            l.max_rate_bps as f64 / 1e6
        ));
    }
    q
}

/// One UDP stream's sender: its socket, datagram buffer and next sequence.
pub(crate) struct UdpTx {
    pub(crate) sock: UdpSocket,
    pub(crate) buf: Vec<u8>,
    test_id: u32,
    index: u16,
    pub(crate) seq: u64,
    /// The responder and its secret: each datagram's MAC trailer.
    endpoint: Endpoint,
    /// iperf 2's datagram header instead of the protocol's (`--iperf2`).
    iperf2: bool,
    /// How many datagrams leave per system call, and how.
    way: Way,
    /// With a batch: `k` datagrams side by side, each with its header.
    train: Vec<u8>,
}

/// How a sender's datagrams leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    /// One `send` per datagram.
    One,
    /// UDP GSO: one `send` of up to `k` datagrams that the kernel cuts apart.
    Gso(usize),
    /// One `sendmmsg` of up to `k` datagrams.
    Mmsg(usize),
}

/// Bytes one GSO send may carry (the UDP length limit, headers aside).
const GSO_MAX_BYTES: usize = 65_000;

impl UdpTx {
    /// A sender of `length`-byte stream datagrams, `batch` per system call
    /// where the kernel can (UDP GSO, else `sendmmsg`; 1: one `send` each).
    /// With a secret each datagram carries its MAC trailer after it, and
    /// goes alone.
    pub(crate) fn new(
        sock: UdpSocket,
        endpoint: &Endpoint,
        test_id: u32,
        index: u16,
        length: usize,
        batch: usize,
    ) -> UdpTx {
        let length = length.max(HEADER_LEN);
        let trailer = endpoint.trailer();
        let batch = if trailer > 0 { 1 } else { batch };
        let mut buf = vec![0u8; length + trailer];
        stackmeter_proto::pattern::fill(0, &mut buf[HEADER_LEN..]);
        let k = batch.min(stackmeter_sys::batch::GSO_MAX_SEGMENTS);
        let gso_k = k.min(GSO_MAX_BYTES / length);
        let fd = sock.as_raw_fd();
        let way = if k <= 1 {
            Way::One
        } else if gso_k > 1 && length <= u16::MAX as usize && stackmeter_sys::batch::set_gso(fd, length as u16).is_ok()
        {
            Way::Gso(gso_k)
        } else {
            Way::Mmsg(k)
        };
        let slots = match way {
            Way::One => 0,
            Way::Gso(k) | Way::Mmsg(k) => k,
        };
        let mut train = vec![0u8; slots * length];
        for d in train.chunks_mut(length) {
            d.copy_from_slice(&buf);
        }
        UdpTx {
            sock,
            buf,
            test_id,
            index,
            seq: 0,
            endpoint: *endpoint,
            iperf2: false,
            way,
            train,
        }
    }

    /// Sends the next `k` datagrams (`k` within the batch) with one call;
    /// returns how many the socket took.
    fn send_train(&mut self, k: usize) -> io::Result<usize> {
        let length = self.buf.len();
        for d in self.train.chunks_mut(length).take(k) {
            let h = Header::stream_data(self.test_id, self.index, self.seq, stackmeter_sys::monotonic_ns());
            // Cannot fail: each slot holds at least HEADER_LEN bytes.
            let _ = h.emit(d);
            self.seq += 1;
        }
        let r = match self.way {
            Way::Gso(_) => self.sock.send(&self.train[..k * length]).map(|n| n / length),
            _ => {
                let bufs: Vec<&[u8]> = self.train.chunks(length).take(k).collect();
                stackmeter_sys::batch::send_many(self.sock.as_raw_fd(), &bufs)
            }
        };
        // Sequence numbers of datagrams that did not leave are reused.
        let took = *r.as_ref().unwrap_or(&0);
        self.seq -= (k - took) as u64;
        r
    }

    /// A sender of iperf 2 datagrams (`crate::plain::iperf2`): its datagram
    /// header, a settings header with no flags, the payload pattern.
    pub(crate) fn iperf2(sock: UdpSocket, addr: SocketAddr, length: usize) -> UdpTx {
        let mut buf = vec![0u8; length.max(crate::plain::iperf2::UDP_MIN)];
        stackmeter_proto::pattern::fill(0, &mut buf[crate::plain::iperf2::UDP_MIN..]);
        buf[crate::plain::iperf2::DATAGRAM_LEN..crate::plain::iperf2::UDP_MIN].fill(0);
        UdpTx {
            sock,
            buf,
            test_id: 0,
            index: 0,
            seq: 0,
            endpoint: Endpoint::new(addr, None),
            iperf2: true,
            way: Way::One,
            train: Vec::new(),
        }
    }

    /// Sends `pps` datagrams per second (infinite: as fast as possible)
    /// until `stop` is set or `duration` has passed, counting what the
    /// socket accepted. Returns the datagrams sent.
    pub(crate) fn send_paced(
        &mut self,
        pps: f64,
        duration: Option<Duration>,
        stop: &AtomicBool,
        bytes: &Counter,
        datagrams: &Counter,
    ) -> io::Result<u64> {
        let start = Instant::now();
        let end_ns = duration.map_or(u64::MAX, |d| d.as_nanos() as u64);
        let mut pacer = Pacer::new(pps);
        let mut sent = 0;
        while !stop.load(Ordering::Relaxed) {
            let elapsed = start.elapsed().as_nanos() as u64;
            if elapsed >= end_ns {
                break;
            }
            let due = pacer.due(elapsed);
            if due == 0 {
                let next = pacer.next_due_ns().min(end_ns);
                if next > elapsed {
                    std::thread::sleep(Duration::from_nanos(next - elapsed));
                }
                continue;
            }
            if let Way::Gso(k) | Way::Mmsg(k) = self.way {
                let mut left = due as usize;
                while left > 0 {
                    let n = left.min(k);
                    match self.send_train(n) {
                        Ok(took) => {
                            sent += took as u64;
                            bytes.0.fetch_add((took * self.buf.len()) as u64, Ordering::Relaxed);
                            datagrams.0.fetch_add(took as u64, Ordering::Relaxed);
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        // A full queue on the way out: not sent, not counted.
                        Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) || e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(e),
                    }
                    left -= n;
                }
                pacer.sent(due);
                continue;
            }
            for _ in 0..due {
                if self.iperf2 {
                    crate::plain::iperf2::stamp(&mut self.buf, self.seq as i64 + 1, stackmeter_sys::wall_ns());
                } else {
                    let h = Header::stream_data(self.test_id, self.index, self.seq, stackmeter_sys::monotonic_ns());
                    // Cannot fail: buf holds at least HEADER_LEN bytes.
                    let _ = h.emit(&mut self.buf);
                    self.endpoint.seal(&mut self.buf);
                }
                match self.sock.send(&self.buf) {
                    Ok(n) => {
                        self.seq += 1;
                        sent += 1;
                        // The datagram's size, as asked: not its trailer.
                        let n = if self.iperf2 { n } else { n - self.endpoint.trailer() };
                        bytes.0.fetch_add(n as u64, Ordering::Relaxed);
                        datagrams.0.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    // A full queue on the way out: the datagram was not
                    // sent, so it is not counted; the schedule goes on.
                    Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) || e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
            pacer.sent(due);
        }
        Ok(sent)
    }
}
