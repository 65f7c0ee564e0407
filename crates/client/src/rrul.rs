//! rrul: latency under load. The measuring thread runs the phases one
//! after another (idle: it waits; down, up, bidir: one `stream` test of
//! that direction for the phase's length), while a probe thread sends a
//! UDP echo request on a fixed schedule through all of them and keeps each
//! probe's four stamps (its send and receive on the client's monotonic
//! clock, the responder's receive and send on its own), and an optional
//! TCP probe thread does 1:1 request/response on its own connection on
//! the same schedule. The stamps become phases, one-way delays and induced
//! latency in `stackmeter_recorder::phases::assemble` (pure).

use crate::endpoint::Endpoint;
use crate::error::{is_timeout, ClientError};
use crate::outcome::RowHistogram;
use stackmeter_proto::header::{Mode, SessionHeader};
use stackmeter_proto::udp::{self, Header, Kind, FLAG_SERVER_TS};
use stackmeter_recorder::phases::{assemble, Assembled, RawPhase, RawProbe, RawRrul};
use stackmeter_results::{Flow, Interval, RrulParams, StreamParams};
use stackmeter_sys::monotonic_ns;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What an rrul run produced.
pub struct RrulOutcome {
    /// The assembled phases (those that ran).
    pub result: Assembled,
    /// The client clock (ns) when the test began: the time axis's zero.
    pub origin_ns: u64,
    /// UDP probe round trips per phase.
    pub histograms: Vec<RowHistogram>,
    /// Why it stopped early.
    pub error: Option<ClientError>,
}

/// Runs the phases of `p` against the responder at `endpoint`; `cpu` pins the
/// load streams' workers; `live` sees each load interval.
pub fn rrul(endpoint: &Endpoint, p: &RrulParams, cpu: Option<usize>, live: &mut dyn FnMut(&Interval)) -> RrulOutcome {
    let addr = endpoint.addr;
    let mut raw = RawRrul {
        origin_ns: monotonic_ns(),
        ..RawRrul::default()
    };
    let stop = Arc::new(AtomicBool::new(false));
    let interval = Duration::from_secs_f64(p.probe_interval_ms / 1e3);
    let timeout = Duration::from_millis(p.timeout_ms);
    let mut error = None;
    let udp = match UdpProbe::open(endpoint, p.probe_size, timeout) {
        Ok(u) => Some(u),
        Err(e) => {
            error = Some(e);
            None
        }
    };
    let tcp = match (p.tcp_probe, &error) {
        (true, None) => match tcp_probe_session(endpoint, timeout) {
            Ok(s) => Some(s),
            Err(e) => {
                error = Some(e);
                None
            }
        },
        _ => None,
    };
    std::thread::scope(|scope| {
        let Some(udp) = udp else { return };
        let st = stop.clone();
        let probes = scope.spawn(move || udp.run(interval, timeout, &st));
        let tcp_probes = tcp.map(|s| {
            let st = stop.clone();
            scope.spawn(move || tcp_probe(s, interval, &st))
        });
        error = phases(endpoint, p, cpu, live, &mut raw.phases).err();
        stop.store(true, Ordering::Release);
        match probes.join() {
            Ok(Ok(v)) => raw.probes = v,
            Ok(Err(e)) => {
                error.get_or_insert(e);
            }
            Err(_) => {
                error.get_or_insert(ClientError::Local(io::Error::other("the probe thread panicked")));
            }
        }
        if let Some(t) = tcp_probes {
            raw.tcp_probes = t.join().unwrap_or_default();
        }
    });
    // On loopback the responder stamps this host's own monotonic clock.
    let synced = p.clock == "synced" || (p.clock == "auto" && addr.ip().is_loopback());
    let result = assemble(&raw, synced);
    let histograms = result
        .phases
        .iter()
        .enumerate()
        .filter(|(_, p)| p.rtt.count() > 0)
        .map(|(row, p)| RowHistogram {
            row,
            metric: "rtt_us",
            ns: p.rtt.clone(),
        })
        .collect();
    RrulOutcome {
        origin_ns: raw.origin_ns,
        result,
        histograms,
        error,
    }
}

/// Runs every phase in order, keeping those that finished.
fn phases(
    endpoint: &Endpoint,
    p: &RrulParams,
    cpu: Option<usize>,
    live: &mut dyn FnMut(&Interval),
    out: &mut Vec<RawPhase>,
) -> Result<(), ClientError> {
    for name in &p.phases {
        crate::error::check_interrupt()?;
        let start_ns = monotonic_ns();
        let mut intervals = Vec::new();
        let (down, up) = match direction(name) {
            None => {
                idle(Duration::from_secs_f64(p.phase_s));
                (0.0, 0.0)
            }
            Some(direction) => {
                let sp = StreamParams {
                    direction,
                    parallel: p.parallel,
                    length: p.length,
                    time_s: p.phase_s,
                    interval_s: (p.phase_s / 10.0).clamp(0.1, 1.0),
                    omit_s: 0.0,
                    udp: false,
                    rate: None,
                    rate_pps: None,
                    zerocopy: false,
                    nodelay: false,
                    timeout_ms: p.timeout_ms,
                    discard: false,
                    iperf2: false,
                    batch: 1,
                };
                let o = crate::stream::stream(endpoint, &sp, cpu, &mut |row: &Interval| {
                    intervals.push((monotonic_ns(), row.recv_mbps, row.sent_mbps));
                    live(row);
                });
                if let Some(e) = o.error {
                    return Err(e);
                }
                o.summary.map(|s| (s.recv_mbps, s.sent_mbps)).unwrap_or((0.0, 0.0))
            }
        };
        out.push(RawPhase {
            name: name.clone(),
            start_ns,
            end_ns: monotonic_ns(),
            down_mbps: down,
            up_mbps: up,
            intervals,
        });
    }
    Ok(())
}

/// The load direction of a phase (`None`: idle).
fn direction(name: &str) -> Option<Flow> {
    match name {
        "down" => Some(Flow::Down),
        "up" => Some(Flow::Up),
        "bidir" => Some(Flow::Bidir),
        _ => None,
    }
}

/// Waits out an idle phase, ending early on Ctrl-C.
fn idle(d: Duration) {
    let end = monotonic_ns() + d.as_nanos() as u64;
    while !stackmeter_sys::interrupt::interrupted() {
        let now = monotonic_ns();
        if now >= end {
            return;
        }
        std::thread::sleep(Duration::from_nanos((end - now).min(50_000_000)));
    }
}

/// The UDP probe: a connected socket and its buffers.
struct UdpProbe {
    sock: UdpSocket,
    endpoint: Endpoint,
    size: usize,
}

impl UdpProbe {
    fn open(endpoint: &Endpoint, size: usize, timeout: Duration) -> Result<UdpProbe, ClientError> {
        let sock = crate::sockets::udp_socket(endpoint.addr, timeout)?;
        sock.set_nonblocking(true)?;
        Ok(UdpProbe {
            sock,
            endpoint: *endpoint,
            size,
        })
    }

    /// Sends on schedule until `stop`, then waits `timeout` for the last
    /// replies. Every wait is a `ppoll` bounded by the next send.
    fn run(self, interval: Duration, timeout: Duration, stop: &AtomicBool) -> Result<Vec<RawProbe>, ClientError> {
        stackmeter_sys::tight_timers();
        let mut probes: Vec<RawProbe> = Vec::with_capacity(1 << 12);
        let mut tx = vec![0u8; self.size + self.endpoint.trailer()];
        let mut rx = vec![0u8; 65536];
        let start = monotonic_ns();
        let step = interval.as_nanos().max(1) as u64;
        let mut seq: u64 = 0;
        // With a secret, sequence numbers on the wire start at the wall
        // clock (the replay window of a reused port, docs/protocol.md 10.2).
        let base = if self.endpoint.secret.is_some() {
            stackmeter_sys::wall_ns()
        } else {
            0
        };
        let mut until = u64::MAX;
        // One count id for this test's probes (docs/protocol.md 4.4).
        let count_id = (start ^ u64::from(std::process::id()).rotate_left(32)) as u32;
        loop {
            let now = monotonic_ns();
            if until == u64::MAX && stop.load(Ordering::Acquire) {
                until = now + timeout.as_nanos() as u64;
            }
            if now >= until || (until != u64::MAX && probes.iter().all(|p| p.reply.is_some())) {
                return Ok(probes);
            }
            let due = start + seq * step;
            if until == u64::MAX && now >= due {
                let c_tx = monotonic_ns();
                Header::request(seq.wrapping_add(base), c_tx)
                    .emit(&mut tx)
                    .map_err(|_| short(self.size))?;
                // Ask to be counted, for loss each way (a probe too short
                // for the block asks for nothing).
                udp::ask_count(&mut tx[..self.size], count_id);
                self.endpoint.seal(&mut tx);
                let probe = RawProbe {
                    c_tx,
                    ..RawProbe::default()
                };
                match self.sock.send(&tx) {
                    Ok(_) => probes.push(probe),
                    // A full buffer under load: the probe is lost at the sender.
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => probes.push(probe),
                    Err(e) => return Err(lost(self.endpoint.addr, "sending a probe", &e)),
                }
                seq += 1;
                continue;
            }
            let next = if until == u64::MAX { due } else { until };
            let wait = next.saturating_sub(now);
            if !stackmeter_sys::wait_readable(self.sock.as_raw_fd(), Duration::from_nanos(wait))? {
                continue;
            }
            loop {
                let n = match self.sock.recv(&mut rx) {
                    Ok(n) => n,
                    Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => break,
                    // An ICMP error (nothing listens) surfaces here.
                    Err(e) => return Err(lost(self.endpoint.addr, "receiving a probe reply", &e)),
                };
                let c_rx = monotonic_ns();
                let n = match self.endpoint.open(&rx[..n]) {
                    Ok(n) => n,
                    Err(true) => return Err(self.endpoint.unsealed_reply()),
                    Err(false) => continue,
                };
                let Ok(mut h) = Header::parse(&rx[..n]) else { continue };
                h.seq = h.seq.wrapping_sub(base);
                if h.kind != Kind::EchoReply as u8 || h.flags & FLAG_SERVER_TS == 0 {
                    continue;
                }
                if let Some(p) = probes.get_mut(h.seq as usize) {
                    // A reply after the timeout counts as lost, as
                    // ping's late replies do; its count still says what
                    // reached the responder.
                    if p.reply.is_none() && c_rx.saturating_sub(p.c_tx) <= timeout.as_nanos() as u64 {
                        p.reply = Some((h.server_rx, h.server_tx, c_rx));
                    }
                    if let Some(udp::ReplyCount { id, received }) = udp::reply_count(&rx[..n], false) {
                        if id == count_id {
                            p.counted = Some(received);
                        }
                    }
                }
            }
        }
    }
}

fn short(size: usize) -> ClientError {
    ClientError::Local(io::Error::other(format!(
        "probe size {size} is below the 40-byte header"
    )))
}

fn lost(addr: SocketAddr, during: &str, e: &io::Error) -> ClientError {
    ClientError::Lost {
        addr,
        what: format!("{during}: {e}"),
    }
}

/// An rr session of 1-byte requests and replies for the TCP probe.
fn tcp_probe_session(endpoint: &Endpoint, timeout: Duration) -> Result<std::net::TcpStream, ClientError> {
    let h = SessionHeader {
        mode: Mode::Rr,
        req_size: 1,
        resp_size: 1,
        flags: 0,
    };
    crate::handshake::open_session(endpoint, &h, timeout)
}

/// 1:1 transactions on schedule until `stop` (a slow one delays the next;
/// a broken connection ends the probe, its remaining slots unanswered).
fn tcp_probe(mut s: std::net::TcpStream, interval: Duration, stop: &AtomicBool) -> Vec<(u64, Option<u64>)> {
    let mut out = Vec::with_capacity(1 << 12);
    let start = monotonic_ns();
    let step = interval.as_nanos().max(1) as u64;
    let mut k: u64 = 0;
    let mut b = [0u8; 1];
    while !stop.load(Ordering::Acquire) {
        let due = start + k * step;
        let now = monotonic_ns();
        if now < due {
            std::thread::sleep(Duration::from_nanos((due - now).min(20_000_000)));
            continue;
        }
        k = (now - start) / step + 1;
        let t0 = monotonic_ns();
        let ok = s.write_all(&[0]).and_then(|()| s.read_exact(&mut b));
        let t1 = monotonic_ns();
        out.push((t0, ok.is_ok().then_some(t1 - t0)));
        if ok.is_err() {
            break;
        }
    }
    out
}
