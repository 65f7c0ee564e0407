//! The threads that move a throughput test's bytes, and what they share.
//!
//! A test gathers its workers in a [`Crew`]: they start at one gate (so
//! the first mark is taken before any byte moves), stop at one flag, and
//! keep the first error any of them hits. Each worker counts bytes and
//! datagrams in atomics of its own (one cache line each), which the
//! measuring thread reads at every interval end; its CPU time is its
//! result. TCP senders are one thread per connection (`tcp_sender`, the
//! plain targets and `--zerocopy`) or a few threads for many flows
//! (`tcp_flows`, `flows.rs`); UDP senders are in `udp_sender.rs`.

use crate::error::{is_timeout, ClientError};
use crate::sockets::{lost, AlignedBuf};
use crate::throughput::flows;
use stackmeter_sys::{thread_cpu, CpuTime, TcpInfo};
use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// A counter on its own cache line, so worker threads don't share one.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Counter(pub(crate) AtomicU64);

/// State shared by the workers of one test.
pub(crate) struct Shared {
    pub(crate) stop: AtomicBool,
    /// MSG_ZEROCOPY sends completed, and of those copied anyway.
    pub(crate) zc_completed: Counter,
    pub(crate) zc_copied: Counter,
    /// First error a worker hit.
    error: Mutex<Option<ClientError>>,
}

impl Shared {
    /// The first error a worker hit, taken out.
    pub(crate) fn take_error(&self) -> Option<ClientError> {
        self.error.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// Keeps `e` if it is the first error, and stops every worker.
    pub(crate) fn fail(&self, e: ClientError) {
        let mut slot = self.error.lock().unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert(e);
        self.stop.store(true, Ordering::Release);
    }

    /// MSG_ZEROCOPY's counts, for the summary.
    pub(crate) fn zerocopy(&self) -> stackmeter_results::Zerocopy {
        stackmeter_results::Zerocopy {
            completed: self.zc_completed.0.load(Ordering::Relaxed),
            copied: self.zc_copied.0.load(Ordering::Relaxed),
        }
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
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        while !*open {
            open = self.cv.wait(open).unwrap_or_else(PoisonError::into_inner);
        }
    }

    pub(crate) fn open(&self) {
        *self.open.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cv.notify_all();
    }
}

/// The workers of one test: what they share, their gate, and the CPU they
/// are pinned to. Dropped on leaving the test by any path, it stops every
/// worker and opens the gate: a worker blocked in a send returns within
/// the socket timeout; one blocked in a receive, once the responder ends
/// the test with the control session.
pub(crate) struct Crew {
    pub(crate) shared: Arc<Shared>,
    pub(crate) go: Arc<Gate>,
    pub(crate) cpu: Option<usize>,
}

impl Crew {
    /// Nothing stopped, nothing counted; workers pinned to `cpu`.
    pub(crate) fn new(cpu: Option<usize>) -> Crew {
        Crew {
            shared: Arc::new(Shared {
                stop: AtomicBool::new(false),
                zc_completed: Counter::default(),
                zc_copied: Counter::default(),
                error: Mutex::new(None),
            }),
            go: Arc::new(Gate::default()),
            cpu,
        }
    }

    /// True once the test stopped (its end, or a worker's error).
    pub(crate) fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Acquire)
    }

    /// Tells every worker to stop.
    pub(crate) fn stop(&self) {
        self.shared.stop.store(true, Ordering::Release);
    }
}

impl Drop for Crew {
    fn drop(&mut self) {
        self.stop();
        self.go.open();
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

/// Starts a worker thread: pinned, with its own byte and datagram
/// counters; `body` prepares its buffers, waits at the gate, moves data
/// until done. The thread's CPU time is its result.
pub(crate) fn worker(
    name: &str,
    crew: &Crew,
    tcp: Vec<TcpStream>,
    body: impl FnOnce(&Shared, &Gate, &Counter, &Counter) + Send + 'static,
) -> Result<Worker, ClientError> {
    let bytes = Arc::new(Counter::default());
    let datagrams = Arc::new(Counter::default());
    let (b, d, sh, go, cpu) = (
        bytes.clone(),
        datagrams.clone(),
        crew.shared.clone(),
        crew.go.clone(),
        crew.cpu,
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

/// Waits for `workers` to end, adding their CPU time to `cpu`; returns
/// the bytes and the datagrams they counted.
pub(crate) fn join(workers: Vec<Worker>, cpu: &mut CpuTime) -> (u64, u64) {
    let (mut bytes, mut datagrams) = (0, 0);
    for w in workers {
        if let Ok(c) = w.handle.join() {
            *cpu = cpu.plus(c);
        }
        bytes += w.bytes.0.load(Ordering::Relaxed);
        datagrams += w.datagrams.0.load(Ordering::Relaxed);
    }
    (bytes, datagrams)
}

/// The sum of one counter over `workers`.
pub(crate) fn sum(workers: &[Worker], f: impl Fn(&Worker) -> &Counter) -> u64 {
    workers.iter().map(|w| f(w).0.load(Ordering::Relaxed)).sum()
}

/// What the TCP_INFO of the senders' sockets says at one instant.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SenderInfo {
    /// Segments retransmitted, summed.
    pub(crate) retrans: u64,
    /// Bytes the receivers' TCP acknowledged, summed.
    pub(crate) acked: u64,
    /// Congestion windows, summed; `None` without a TCP sender.
    pub(crate) cwnd_kib: Option<f64>,
    /// Smoothed RTT, mean; `None` without a TCP sender.
    pub(crate) rtt_us: Option<f64>,
}

impl SenderInfo {
    /// TCP_INFO of every TCP socket `senders` keep.
    pub(crate) fn of(senders: &[Worker]) -> SenderInfo {
        let infos: Vec<TcpInfo> = senders
            .iter()
            .flat_map(|w| w.tcp.iter())
            .filter_map(|s| stackmeter_sys::tcp_info(s.as_raw_fd()))
            .collect();
        let n = infos.len();
        SenderInfo {
            retrans: infos.iter().map(|i| i.total_retrans as u64).sum(),
            acked: infos.iter().map(|i| i.bytes_acked).sum(),
            cwnd_kib: (n > 0).then(|| infos.iter().map(|i| i.cwnd_bytes as f64).sum::<f64>() / 1024.0),
            rtt_us: (n > 0).then(|| infos.iter().map(|i| i.rtt_us as f64).sum::<f64>() / n as f64),
        }
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

/// A TCP sender: writes `length` bytes per call until told to stop, then
/// half-closes and waits for the responder's close.
pub(crate) fn tcp_sender(
    mut s: TcpStream,
    addr: SocketAddr,
    length: usize,
    zerocopy: bool,
    crew: &Crew,
) -> Result<Worker, ClientError> {
    let dup = s.try_clone().into_iter().collect();
    worker("send", crew, dup, move |sh, go, b, _| {
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
            let _ = io::Read::read(&mut s, &mut sink);
            reap(&mut zc);
            sh.zc_completed.0.fetch_add(zc.completed, Ordering::Relaxed);
            sh.zc_copied.0.fetch_add(zc.copied, Ordering::Relaxed);
        }
    })
}

/// Starts the threads that carry TCP flows `socks` (`flows.rs`): one
/// [`Worker`] per group, counting its flows' bytes together. A sending
/// group's worker keeps duplicates of its sockets (TCP_INFO, and the
/// half-close at the stop).
pub(crate) fn tcp_flows(
    socks: Vec<TcpStream>,
    way: flows::Way,
    addr: SocketAddr,
    length: usize,
    timeout: Duration,
    crew: &Crew,
) -> Result<Vec<Worker>, ClientError> {
    let groups = flows::group_count(socks.len(), crew.cpu.is_some());
    let mut out = Vec::new();
    for share in flows::deal(socks, groups)? {
        let (name, dups) = match way {
            flows::Way::Send => (
                "send",
                share.iter().map(TcpStream::try_clone).collect::<io::Result<Vec<_>>>()?,
            ),
            flows::Way::Recv => ("recv", Vec::new()),
        };
        out.push(worker(name, crew, dups, move |sh, go, b, _| {
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
