//! Throughput tests on the responder side: the control session, sink and
//! source data sessions, and the counters of UDP stream datagrams.
//!
//! A control session registers a [`Test`] under a fresh id; data sessions
//! and UDP datagrams naming that id add to its counters (relaxed atomics on
//! the TCP paths, one lock per datagram on the UDP path); the control
//! session answers the client's Snapshot and Stop records with a Report of
//! those counters. The responder keeps no timer: when to count is the
//! client's decision (docs/protocol.md section 8).

use crate::Shared;
use stackmeter_proto::control::{self, ClientRecord, RecordError, Report, FLAG_CPU, FLAG_DRAIN_TIMEOUT, FLAG_FINAL};
use stackmeter_proto::stream::UdpRx;
use stackmeter_proto::udp::Header;
use stackmeter_sys::{thread_cpu, CpuTime};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// UDP streams one test may have; datagrams of higher indexes are ignored.
pub(crate) const MAX_UDP_STREAMS: usize = 256;
/// How long a Stop waits for the test's data sessions to end.
const DRAIN: Duration = Duration::from_secs(2);
/// After Stop, UDP counts are final once they have not moved for this long.
const UDP_QUIET: Duration = Duration::from_millis(20);

/// The open throughput tests, by id.
#[derive(Default)]
pub(crate) struct Tests {
    map: Mutex<HashMap<u32, Arc<Test>>>,
    next: AtomicU32,
}

/// One throughput test's shared counters.
pub(crate) struct Test {
    pub id: u32,
    start: Instant,
    /// CPU the test's threads have used, added as each session ends (and
    /// by the UDP thread in batches).
    cpu_user_ns: AtomicU64,
    cpu_sys_ns: AtomicU64,
    /// Set by Stop or by the end of the control session: sources stop.
    pub stopped: AtomicBool,
    /// Set by the first Snapshot (the client's first mark): sources start.
    started: AtomicBool,
    /// Set when the control session has ended and the id is forgotten.
    pub closed: AtomicBool,
    sessions: AtomicU32,
    open: AtomicUsize,
    rx_bytes: AtomicU64,
    tx_bytes: AtomicU64,
    /// Duplicates of the source sockets, for TCP_INFO; keyed by a serial.
    sources: Mutex<Vec<(u64, TcpStream)>>,
    source_serial: AtomicU64,
    udp: Mutex<Vec<UdpRx>>,
}

impl Tests {
    /// Registers a new test with an id no open test has.
    fn open(&self) -> Arc<Test> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let id = loop {
            let id = self.next.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
            if id != 0 && !map.contains_key(&id) {
                break id;
            }
        };
        let t = Arc::new(Test {
            id,
            start: Instant::now(),
            cpu_user_ns: AtomicU64::new(0),
            cpu_sys_ns: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            started: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            sessions: AtomicU32::new(0),
            open: AtomicUsize::new(0),
            rx_bytes: AtomicU64::new(0),
            tx_bytes: AtomicU64::new(0),
            sources: Mutex::new(Vec::new()),
            source_serial: AtomicU64::new(0),
            udp: Mutex::new(Vec::new()),
        });
        map.insert(id, t.clone());
        t
    }

    /// The open test with this id.
    pub(crate) fn get(&self, id: u32) -> Option<Arc<Test>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).get(&id).cloned()
    }

    fn close(&self, id: u32) {
        if let Some(t) = self.map.lock().unwrap_or_else(|p| p.into_inner()).remove(&id) {
            t.closed.store(true, Ordering::Release);
        }
    }
}

/// Keeps a data session counted as open while it lives, and adds the
/// thread's CPU time to the test when it ends.
pub(crate) struct Joined(Arc<Test>, CpuTime);

impl Test {
    /// A data session joins the test.
    pub(crate) fn join(self: &Arc<Test>) -> Joined {
        self.sessions.fetch_add(1, Ordering::Relaxed);
        self.open.fetch_add(1, Ordering::AcqRel);
        Joined(self.clone(), thread_cpu())
    }

    /// Adds CPU time a thread spent on this test.
    pub(crate) fn add_cpu(&self, c: CpuTime) {
        self.cpu_user_ns.fetch_add(c.user_ns, Ordering::Relaxed);
        self.cpu_sys_ns.fetch_add(c.sys_ns, Ordering::Relaxed);
    }

    /// Counts one UDP stream datagram of `len` bytes received at `rx_ns`.
    pub(crate) fn udp_datagram(&self, h: &Header, len: usize, rx_ns: u64) {
        let i = h.stream() as usize;
        if i >= MAX_UDP_STREAMS {
            return;
        }
        let mut udp = self.udp.lock().unwrap_or_else(|p| p.into_inner());
        if udp.len() <= i {
            udp.resize_with(i + 1, UdpRx::default);
        }
        udp[i].record(h.seq, len, h.client_ts, rx_ns);
    }

    /// UDP datagrams counted so far, duplicates included.
    fn udp_seen(&self) -> u64 {
        let udp = self.udp.lock().unwrap_or_else(|p| p.into_inner());
        udp.iter().map(|u| u.received + u.duplicates).sum()
    }

    fn report(&self, id: u32, flags: u8) -> Report {
        let mut r = Report {
            id,
            flags,
            sessions: self.sessions.load(Ordering::Relaxed),
            elapsed_ns: self.start.elapsed().as_nanos() as u64,
            tcp_rx_bytes: self.rx_bytes.load(Ordering::Relaxed),
            tcp_tx_bytes: self.tx_bytes.load(Ordering::Relaxed),
            ..Report::default()
        };
        for u in self.udp.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            r.udp_datagrams += u.received;
            r.udp_bytes += u.bytes;
            r.udp_expected += u.expected;
            r.udp_duplicates += u.duplicates;
            r.udp_reordered += u.reordered;
            r.udp_jitter_ns = r.udp_jitter_ns.max(u.jitter_ns());
        }
        let sources = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        let infos: Vec<_> = sources
            .iter()
            .filter_map(|(_, s)| stackmeter_sys::tcp_info(s.as_raw_fd()))
            .collect();
        if !infos.is_empty() {
            r.flags |= control::FLAG_TCP_INFO;
            r.tcp_retransmits = infos.iter().map(|i| i.total_retrans).sum();
            r.tcp_cwnd_bytes = infos.iter().fold(0u32, |a, i| a.saturating_add(i.cwnd_bytes));
            r.tcp_rtt_us = (infos.iter().map(|i| i.rtt_us as u64).sum::<u64>() / infos.len() as u64) as u32;
        }
        if flags & FLAG_FINAL != 0 {
            // Complete only once every data session has ended and added
            // its time, so only the final report carries it.
            r.flags |= FLAG_CPU;
            r.cpu_user_ns = self.cpu_user_ns.load(Ordering::Relaxed);
            r.cpu_sys_ns = self.cpu_sys_ns.load(Ordering::Relaxed);
        }
        r
    }
}

impl Drop for Joined {
    fn drop(&mut self) {
        self.0.add_cpu(thread_cpu().since(self.1));
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The control session: Welcome, then a Report per Snapshot or Stop, until
/// the client closes.
pub(crate) fn control(stream: &mut TcpStream, shared: &Shared) -> Result<(), String> {
    let test = shared.tests.open();
    let cpu0 = thread_cpu();
    let result = control_loop(stream, &test, cpu0);
    test.stopped.store(true, Ordering::Release);
    shared.tests.close(test.id);
    result
}

fn control_loop(stream: &mut TcpStream, test: &Arc<Test>, cpu0: CpuTime) -> Result<(), String> {
    let mut acc = [0u8; 8];
    stackmeter_proto::status::emit_accepted(&mut acc);
    let mut first = [0u8; 16];
    first[..8].copy_from_slice(&acc);
    first[8..].copy_from_slice(&control::welcome(test.id));
    stream
        .write_all(&first)
        .map_err(|e| format!("cannot send welcome: {e}"))?;
    let mut buf = [0u8; 512];
    let mut have = 0;
    loop {
        match ClientRecord::parse(&buf[..have]) {
            Ok((rec, len)) => {
                buf.copy_within(len..have, 0);
                have -= len;
                let report = match rec {
                    ClientRecord::Snapshot(id) => {
                        test.started.store(true, Ordering::Release);
                        test.report(id, 0)
                    }
                    ClientRecord::Stop(id) => {
                        test.add_cpu(thread_cpu().since(cpu0));
                        stop(test, id)
                    }
                    ClientRecord::Unknown(_) => continue,
                };
                stream
                    .write_all(&report.emit())
                    .map_err(|e| format!("cannot send report: {e}"))?;
            }
            Err(RecordError::BadLength(l)) => return Err(format!("control record with bad length {l}")),
            Err(RecordError::Truncated) if have == buf.len() => return Err("control record too long".into()),
            Err(RecordError::Truncated) => match stream.read(&mut buf[have..]) {
                Ok(0) if have == 0 => return Ok(()),
                Ok(0) => return Err("client closed mid-record".into()),
                Ok(n) => have += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if crate::tcp::is_timeout(&e) => return Err("idle timeout on the control session".into()),
                Err(e) => return Err(format!("control receive failed: {e}")),
            },
        }
    }
}

/// Stops the sources, waits (bounded) for every data session to end, and
/// builds the final report.
fn stop(test: &Arc<Test>, id: u32) -> Report {
    test.stopped.store(true, Ordering::Release);
    let deadline = Instant::now() + DRAIN;
    let mut flags = FLAG_FINAL;
    while test.open.load(Ordering::Acquire) > 0 {
        if Instant::now() >= deadline {
            flags |= FLAG_DRAIN_TIMEOUT;
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // UDP has no end of stream: wait until the count has stood still for
    // UDP_QUIET, so datagrams still in flight are counted.
    let mut last = test.udp_seen();
    let mut still_since = Instant::now();
    while last > 0 && still_since.elapsed() < UDP_QUIET && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
        let now = test.udp_seen();
        if now != last {
            last = now;
            still_since = Instant::now();
        }
    }
    test.report(id, flags)
}

/// A sink: read and count until the client closes.
pub(crate) fn sink(stream: &mut TcpStream, test: Arc<Test>, rx: &mut [u8]) -> Result<(), String> {
    let _joined = test.join();
    send_accepted(stream)?;
    loop {
        match stream.read(rx) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                test.rx_bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if crate::tcp::is_timeout(&e) => return Err("idle timeout in a sink session".into()),
            Err(e) => return Err(format!("sink receive failed: {e}")),
        }
    }
}

/// A source: write `size` bytes per call from `tx` until the test stops,
/// then half-close so the client reads to end of stream.
pub(crate) fn source(
    stream: &mut TcpStream,
    test: Arc<Test>,
    size: usize,
    tx: &[u8],
    idle: Duration,
) -> Result<(), String> {
    let _joined = test.join();
    send_accepted(stream)?;
    let key = test.source_serial.fetch_add(1, Ordering::Relaxed);
    if let Ok(dup) = stream.try_clone() {
        test.sources.lock().unwrap_or_else(|p| p.into_inner()).push((key, dup));
    }
    let result = source_loop(stream, &test, size, tx, idle);
    test.sources
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|(k, _)| *k != key);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    result
}

fn source_loop(stream: &mut TcpStream, test: &Test, size: usize, tx: &[u8], idle: Duration) -> Result<(), String> {
    // Write from the test's first Snapshot on: it is the client's first
    // mark, so no byte predates the measured window (docs/protocol.md 8.2).
    let deadline = Instant::now() + idle;
    while !test.started.load(Ordering::Acquire) && !test.stopped.load(Ordering::Relaxed) {
        if Instant::now() >= deadline {
            return Err("no Snapshot started the test within the idle timeout".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut off = 0;
    while !test.stopped.load(Ordering::Relaxed) {
        // Writes of exactly `size` bytes (cycling through the buffer when a
        // write is larger than it); a short write finishes the same message.
        let want = (size - off).min(tx.len());
        match stream.write(&tx[..want]) {
            Ok(0) => return Err("client stopped taking data".into()),
            Ok(n) => {
                test.tx_bytes.fetch_add(n as u64, Ordering::Relaxed);
                off = (off + n) % size;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if crate::tcp::is_timeout(&e) => return Err("idle timeout in a source session".into()),
            // The client closing early ends the source; it is not an error
            // of the responder's.
            Err(e) if matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset) => return Ok(()),
            Err(e) => return Err(format!("source send failed: {e}")),
        }
    }
    Ok(())
}

fn send_accepted(stream: &mut TcpStream) -> Result<(), String> {
    let mut acc = [0u8; stackmeter_proto::status::STATUS_PREFIX_LEN];
    stackmeter_proto::status::emit_accepted(&mut acc);
    stream.write_all(&acc).map_err(|e| format!("cannot send status: {e}"))
}
