//! rr: request/response over one TCP connection per size pair (the
//! latency-grid scenario, docs/scenarios.md).

use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::handshake::open_session;
use crate::outcome::{levels, summary_us, Outcome};
use crate::sockets::{lost, recv_exact, send_all, tcp_connect, AlignedBuf, CHUNK};
use crate::stamps::Collector;
use stackmeter_proto::header::{Mode, SessionHeader, FLAG_STAMPS};
use stackmeter_proto::stamps::{Block, BLOCK_LEN};
use stackmeter_recorder::Recorder;
use stackmeter_results::{RrParams, RrResult, SizePair};
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

/// Runs every size pair against the responder at `endpoint` (`--layers`
/// is the crate root's: crate::layers runs it twice, through a [`Tap`]).
/// Stops at the first error, keeping the rows already measured.
pub fn rr(endpoint: &Endpoint, spec: &RrParams) -> Outcome<RrResult> {
    rr_tapped(endpoint, spec, None::<&mut NoTap>)
}

/// Where a pair's exchanges go once its connection is open: the tracer
/// registers the connection and keeps the clock reads (crate::layers).
pub(crate) trait Tap {
    /// [`exchanges`] of `pair` on the connection from `client_port`.
    fn exchanges<X: Exchange>(
        &mut self,
        client_port: u16,
        addr: SocketAddr,
        pair: SizePair,
        spec: &RrParams,
        x: &mut X,
    ) -> Result<(RrResult, Recorder), ClientError>;
}

/// No tap: the exchanges as they are.
pub(crate) struct NoTap;

impl Tap for NoTap {
    fn exchanges<X: Exchange>(
        &mut self,
        _: u16,
        addr: SocketAddr,
        pair: SizePair,
        spec: &RrParams,
        x: &mut X,
    ) -> Result<(RrResult, Recorder), ClientError> {
        exchanges(addr, pair, spec, x)
    }
}

/// [`rr`], each pair's exchanges through `tap` when given.
pub(crate) fn rr_tapped<T: Tap>(endpoint: &Endpoint, spec: &RrParams, mut tap: Option<&mut T>) -> Outcome<RrResult> {
    crate::outcome::per_pair(&spec.sizes, |pair| one(endpoint, pair, spec, tap.as_deref_mut()))
}

fn one<T: Tap>(
    endpoint: &Endpoint,
    pair: SizePair,
    spec: &RrParams,
    tap: Option<&mut T>,
) -> Result<(RrResult, Recorder), ClientError> {
    let timeout = Duration::from_millis(spec.timeout_ms);
    let mut h = SessionHeader {
        mode: Mode::Rr,
        req_size: pair.req,
        resp_size: pair.resp,
        flags: 0,
    };
    let Some(p) = &spec.timestamps else {
        // Without timestamps: the loop as it always was.
        let mut s = open_session(endpoint, &h, timeout)?;
        let port = s.local_addr()?.port();
        let before = retransmitted(&s);
        let mut rx = AlignedBuf::new(rx_len(pair));
        let mut x = Buffers::new(&mut s, pair, &[], rx.bytes_mut());
        let (mut row, rec) = match tap {
            Some(t) => t.exchanges(port, endpoint.addr, pair, spec, &mut x)?,
            None => exchanges(endpoint.addr, pair, spec, &mut x)?,
        };
        row.retransmits = retransmitted_since(&s, before);
        return Ok((row, rec));
    };
    h.flags = FLAG_STAMPS;
    // Kernel timestamps are turned on after the connect and before the
    // header is sent, so a send stamp's key is the byte's offset in the
    // stream.
    let mut s = tcp_connect(endpoint.addr, timeout)?;
    crate::stamps::enable(s.as_raw_fd(), p, s.local_addr()?)?;
    let before = crate::handshake::start(&mut s, endpoint, &h)?;
    let retrans_before = retransmitted(&s);
    std::thread::sleep(crate::stamps::SETTLE);
    let fd = s.as_raw_fd();
    let mut rx = AlignedBuf::new(rx_len(pair));
    let mut x = Stamped {
        b: Buffers::new(&mut s, pair, &[], rx.bytes_mut()),
        fd,
        before,
        block: [0u8; BLOCK_LEN],
        c: Collector::new(p, (spec.warmup + spec.iterations) as usize, spec.warmup as usize),
    };
    let (mut row, rec) = exchanges(endpoint.addr, pair, spec, &mut x)?;
    let (ts, split) = x.c.finish();
    row.timestamps = Some(ts);
    row.split_us = split;
    row.retransmits = retransmitted_since(&s, retrans_before);
    Ok((row, rec))
}

/// The segments `s`'s TCP retransmitted so far (TCP_INFO).
pub(crate) fn retransmitted(s: &TcpStream) -> Option<u32> {
    stackmeter_sys::tcp_info(s.as_raw_fd()).map(|t| t.total_retrans)
}

/// The segments `s`'s TCP retransmitted since `before` (read once after a
/// row's timed loop, its warm-up included: a lossy path's cost shows in
/// its slow transactions).
pub(crate) fn retransmitted_since(s: &TcpStream, before: Option<u32>) -> Option<u32> {
    Some(retransmitted(s)?.saturating_sub(before?))
}

/// One exchange of an rr row, and what is done with its result: the
/// responder's plain and stamped exchanges here, a plain target's in
/// `plain/tcp.rs`.
pub(crate) trait Exchange {
    /// What the measured path returns on success (a kernel stamp).
    type Out;

    /// The measured path: the request sent and the response received,
    /// between the two clock reads. Implementations are
    /// `#[inline(always)]`, so the loop has no call between its reads that
    /// the exchange itself does not make.
    fn once(&mut self) -> io::Result<Self::Out>;

    /// Exchange `i` after its second clock read: `timed` holds its two
    /// reads (none in the warm-up), `out` what [`Exchange::once`] returned.
    fn after(&mut self, i: u64, timed: Option<(Instant, Instant)>, out: Self::Out) -> Result<(), ClientError>;
}

/// One size pair's connection and buffers, ready before the first clock
/// read: the request (its first bytes a plain target's prefix, then the
/// payload pattern), and where the response goes (the receive buffer is
/// at most [`CHUNK`]: a longer response is read in pieces). As an
/// [`Exchange`]: rr against a responder without timestamps.
pub(crate) struct Buffers<'a> {
    pub(crate) s: &'a mut TcpStream,
    pub(crate) req: Vec<u8>,
    pub(crate) resp: u64,
    pub(crate) rx: &'a mut [u8],
}

impl<'a> Buffers<'a> {
    /// The buffers of `pair` on `s`, the request starting with `prefix`;
    /// `rx` holds [`rx_len`] bytes.
    pub(crate) fn new(s: &'a mut TcpStream, pair: SizePair, prefix: &[u8], rx: &'a mut [u8]) -> Buffers<'a> {
        Buffers {
            s,
            req: request(pair.req, prefix),
            resp: pair.resp as u64,
            rx,
        }
    }
}

impl Exchange for Buffers<'_> {
    type Out = ();

    #[inline(always)]
    fn once(&mut self) -> io::Result<()> {
        send_all(self.s, &self.req)?;
        recv_exact(self.s, self.resp, self.rx)
    }

    fn after(&mut self, _: u64, _: Option<(Instant, Instant)>, _: ()) -> Result<(), ClientError> {
        Ok(())
    }
}

/// A request of `len` bytes: `prefix` (a plain target's; empty for a
/// responder), then the payload pattern.
/// One timed request/response on an established session: the clock read
/// right before the request is handed to the kernel and right after the
/// last byte of the response, nothing else between them (the loop of
/// `rr`, for one exchange: the agent's rr probe). Returns the round trip,
/// ns; `rx` is scratch for the response.
pub fn timed_exchange(s: &mut TcpStream, req: &[u8], resp: u64, rx: &mut [u8]) -> io::Result<u64> {
    let t0 = stackmeter_sys::monotonic_ns();
    send_all(s, req)?;
    recv_exact(s, resp, rx)?;
    Ok(stackmeter_sys::monotonic_ns().saturating_sub(t0))
}

pub(crate) fn request(len: u32, prefix: &[u8]) -> Vec<u8> {
    let mut req = vec![0u8; len as usize];
    stackmeter_proto::pattern::fill(0, &mut req);
    let n = prefix.len().min(req.len());
    req[..n].copy_from_slice(&prefix[..n]);
    req
}

/// The receive buffer's length for `pair`.
pub(crate) fn rx_len(pair: SizePair) -> usize {
    (pair.resp as usize).min(CHUNK)
}

/// rr with `--timestamps`: each response read with `recvmsg` (the
/// kernel's receive stamp of its last byte is returned), its first
/// [`BLOCK_LEN`] bytes, the responder's stamp block, kept in `block`; after
/// the clock reads, the send stamps from the error queue and the block go
/// to the collector.
struct Stamped<'a> {
    b: Buffers<'a>,
    fd: RawFd,
    /// Bytes the client wrote before the data phase (header and proof).
    before: u64,
    block: [u8; BLOCK_LEN],
    c: Collector,
}

impl Exchange for Stamped<'_> {
    type Out = Option<u64>;

    #[inline(always)]
    fn once(&mut self) -> io::Result<Option<u64>> {
        send_all(self.b.s, &self.b.req)?;
        crate::sockets::recv_exact_stamped(self.fd, self.b.resp, self.b.rx, &mut self.block)
    }

    fn after(&mut self, i: u64, timed: Option<(Instant, Instant)>, c_rx: Option<u64>) -> Result<(), ClientError> {
        if let Some((t0, t1)) = timed {
            self.c.timed(i, t0, t1, c_rx);
        }
        // With OPT_ID set before the header went out, a TCP send stamp's
        // key is the offset of the send's last byte in the stream (the
        // header, and with a secret the proof, included).
        let end = (self.before + (i + 1) * self.b.req.len() as u64 - 1) as u32;
        let c = &mut self.c;
        stackmeter_sys::tstamp::drain_tx(self.fd, |k, ns| {
            if k == end {
                c.sent_stamp(i, ns);
            }
        });
        if let Some(b) = Block::parse(&self.block) {
            self.c.block(i, &b);
        }
        Ok(())
    }
}

/// The exchanges of one size pair, against a responder or a plain target
/// alike: `spec.warmup` untimed, then `spec.iterations` timed, each
/// between two clock reads with only [`Exchange::once`] (the measured
/// path) between them, and [`Exchange::after`] once the second read is
/// done. Ctrl-C ends the timed exchanges after the one in progress: the
/// row holds the samples so far, and `per_pair` stops after it.
#[inline(always)]
pub(crate) fn exchanges<X: Exchange>(
    addr: SocketAddr,
    pair: SizePair,
    spec: &RrParams,
    x: &mut X,
) -> Result<(RrResult, Recorder), ClientError> {
    let broke = |i: u64, e: io::Error| {
        let during = format!("exchanging {}:{} (transaction {i})", pair.req, pair.resp);
        lost(addr, &during, &e)
    };
    for i in 0..spec.warmup {
        crate::error::check_interrupt()?;
        let r = x.once().map_err(|e| broke(i, e))?;
        x.after(i, None, r)?;
    }
    let mut rec = Recorder::new();
    let start = Instant::now();
    let mut end = start;
    for n in 0..spec.iterations {
        let t0 = Instant::now();
        let r = x.once();
        let t1 = Instant::now();
        let r = r.map_err(|e| broke(spec.warmup + n, e))?;
        rec.record(t1.duration_since(t0).as_nanos() as u64);
        end = t1;
        x.after(spec.warmup + n, Some((t0, t1)), r)?;
        if stackmeter_sys::interrupt::interrupted() {
            break;
        }
    }
    let row = row(addr, pair, spec, &rec, start, end)?;
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
        retransmits: None,
        layers: None,
    })
}
