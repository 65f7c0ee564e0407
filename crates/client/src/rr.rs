//! rr: request/response over one TCP connection per size pair (seed 000).

use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::handshake::open_session;
use crate::outcome::{levels, summary_us, Outcome};
use crate::sockets::{lost, recv_exact, send_all, tcp_connect, AlignedBuf, CHUNK};
use crate::stamps::Collector;
use stackmeter_proto::session::{Mode, SessionHeader, FLAG_STAMPS};
use stackmeter_proto::stamps::{Block, BLOCK_LEN};
use stackmeter_results::{RrParams, RrResult, SizePair};
use stackmeter_stats::Recorder;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Runs every size pair against the responder at `endpoint`. Stops at the
/// first error, keeping the rows already measured.
pub fn rr(endpoint: &Endpoint, spec: &RrParams) -> Outcome<RrResult> {
    crate::outcome::per_pair(&spec.sizes, |pair| one(endpoint, pair, spec))
}

/// One request/response exchange: the measured path.
#[inline(always)]
fn exchange(s: &mut TcpStream, req: &[u8], resp: u64, rx: &mut [u8]) -> io::Result<()> {
    send_all(s, req)?;
    recv_exact(s, resp, rx)
}

/// [`exchange`] with `--timestamps`: the response read with `recvmsg`
/// (the kernel's receive stamp of its last byte is returned), its first
/// [`BLOCK_LEN`] bytes, the responder's stamp block, kept in `block`.
#[inline(always)]
fn exchange_stamped(
    s: &mut TcpStream,
    req: &[u8],
    resp: u64,
    rx: &mut [u8],
    block: &mut [u8; BLOCK_LEN],
) -> io::Result<Option<u64>> {
    send_all(s, req)?;
    crate::sockets::recv_exact_stamped(s.as_raw_fd(), resp, rx, block)
}

fn one(endpoint: &Endpoint, pair: SizePair, spec: &RrParams) -> Result<(RrResult, Recorder), ClientError> {
    let Some(p) = &spec.timestamps else {
        return plain(endpoint, pair, spec);
    };
    let addr = endpoint.addr;
    let h = SessionHeader {
        mode: Mode::Rr,
        req_size: pair.req,
        resp_size: pair.resp,
        flags: FLAG_STAMPS,
    };
    let timeout = Duration::from_millis(spec.timeout_ms);
    // Kernel timestamps are turned on after the connect and before the
    // header is sent, so a send stamp's key is the byte's offset in the
    // stream.
    let mut s = tcp_connect(addr, timeout)?;
    crate::stamps::enable(s.as_raw_fd(), p, s.local_addr()?)?;
    let before = crate::handshake::start(&mut s, endpoint, &h)?;
    std::thread::sleep(crate::stamps::SETTLE);
    let fd = s.as_raw_fd();
    let mut req = vec![0u8; pair.req as usize];
    stackmeter_proto::pattern::fill(0, &mut req);
    let mut rx_buf = AlignedBuf::new((pair.resp as usize).min(CHUNK));
    let rx = rx_buf.bytes_mut();
    let resp = pair.resp as u64;
    let broke = |i: u64, e: io::Error| {
        let during = format!("exchanging {}:{} (transaction {i})", pair.req, pair.resp);
        lost(addr, &during, &e)
    };
    let total = spec.warmup + spec.iterations;
    let mut c = Collector::new(p, total as usize, spec.warmup as usize);
    let mut block = [0u8; BLOCK_LEN];
    // With OPT_ID set before the header went out, a TCP send stamp's key is
    // the offset of the send's last byte in the stream (the header, and
    // with a secret the proof, included).
    let after = |c: &mut Collector, i: u64, block: &[u8; BLOCK_LEN]| {
        let end = (before + (i + 1) * pair.req as u64 - 1) as u32;
        stackmeter_sys::tstamp::drain_tx(fd, |k, ns| {
            if k == end {
                c.sent_stamp(i, ns);
            }
        });
        if let Some(b) = Block::parse(block) {
            c.block(i, &b);
        }
    };
    for i in 0..spec.warmup {
        crate::error::check_interrupt()?;
        exchange_stamped(&mut s, &req, resp, rx, &mut block).map_err(|e| broke(i, e))?;
        after(&mut c, i, &block);
    }
    let mut rec = Recorder::new();
    let start = Instant::now();
    let mut end = start;
    for n in 0..spec.iterations {
        let i = spec.warmup + n;
        let t0 = Instant::now();
        let r = exchange_stamped(&mut s, &req, resp, rx, &mut block);
        let t1 = Instant::now();
        let c_rx = r.map_err(|e| broke(i, e))?;
        rec.record(t1.duration_since(t0).as_nanos() as u64);
        end = t1;
        c.timed(i, t0, t1, c_rx);
        after(&mut c, i, &block);
        if stackmeter_sys::interrupt::interrupted() {
            break;
        }
    }
    let mut row = row(addr, pair, spec, &rec, start, end)?;
    let (ts, split) = c.finish();
    row.timestamps = Some(ts);
    row.split_us = split;
    Ok((row, rec))
}

/// The row of one size pair timed from `start` to `end`.
fn row(
    addr: SocketAddr,
    pair: SizePair,
    spec: &RrParams,
    rec: &Recorder,
    start: Instant,
    end: Instant,
) -> Result<RrResult, ClientError> {
    if rec.count() == 0 {
        crate::error::check_interrupt()?;
    }
    let wall = end.duration_since(start).as_secs_f64();
    Ok(RrResult {
        req_bytes: pair.req,
        resp_bytes: pair.resp,
        samples: rec.count(),
        warmup: spec.warmup,
        rtt_us: summary_us(rec).ok_or_else(|| ClientError::Lost {
            addr,
            what: "no timed transaction (iterations is 0)".into(),
        })?,
        tps: if wall > 0.0 { rec.count() as f64 / wall } else { 0.0 },
        levels: levels(rec),
        requested_rate: None,
        achieved_rate: None,
        send_lag_us: None,
        late_sends: None,
        timestamps: None,
        split_us: None,
    })
}

/// One size pair without timestamps: the loop as it always was.
fn plain(endpoint: &Endpoint, pair: SizePair, spec: &RrParams) -> Result<(RrResult, Recorder), ClientError> {
    let addr = endpoint.addr;
    let h = SessionHeader {
        mode: Mode::Rr,
        req_size: pair.req,
        resp_size: pair.resp,
        flags: 0,
    };
    let mut s = open_session(endpoint, &h, Duration::from_millis(spec.timeout_ms))?;
    let mut req = vec![0u8; pair.req as usize];
    stackmeter_proto::pattern::fill(0, &mut req);
    let mut rx_buf = AlignedBuf::new((pair.resp as usize).min(CHUNK));
    let rx = rx_buf.bytes_mut();
    let resp = pair.resp as u64;
    let broke = |i: u64, e: io::Error| {
        let during = format!("exchanging {}:{} (transaction {i})", pair.req, pair.resp);
        lost(addr, &during, &e)
    };
    for i in 0..spec.warmup {
        crate::error::check_interrupt()?;
        exchange(&mut s, &req, resp, rx).map_err(|e| broke(i, e))?;
    }
    let mut rec = Recorder::new();
    let start = Instant::now();
    let mut end = start;
    for i in 0..spec.iterations {
        let t0 = Instant::now();
        let r = exchange(&mut s, &req, resp, rx);
        let t1 = Instant::now();
        r.map_err(|e| broke(spec.warmup + i, e))?;
        rec.record(t1.duration_since(t0).as_nanos() as u64);
        end = t1;
        // Ctrl-C: keep the samples so far as this pair's row; per_pair
        // stops after it.
        if stackmeter_sys::interrupt::interrupted() {
            break;
        }
    }
    let row = row(addr, pair, spec, &rec, start, end)?;
    Ok((row, rec))
}
