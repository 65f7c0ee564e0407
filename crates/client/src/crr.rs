//! crr: connect, one request/response, close; repeated (the "connection
//! establish latency" of the link-characterisation scenario,
//! docs/scenarios.md).

use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::handshake::{answer, read_status};
use crate::outcome::{summary_us, Outcome, RowHistogram};
use crate::sockets::{connect, lost, recv_exact, send_all, tcp_socket, AlignedBuf, CHUNK};
use stackmeter_proto::header::{Mode, SessionHeader};
use stackmeter_recorder::Recorder;
use stackmeter_results::{CrrParams, CrrResult};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Times `connect` (call to established) and the whole transaction
/// (connect call to `close` returned). The socket is created and its
/// options set before the first clock read: only connect, send, receive and
/// close are timed.
pub fn crr(endpoint: &Endpoint, spec: &CrrParams) -> Outcome<CrrResult> {
    outcome(run(endpoint, spec), spec)
}

/// A crr run's row and its two histograms as an [`Outcome`] (a responder
/// or a plain target alike).
pub(crate) fn outcome(
    ran: Result<(CrrResult, Recorder, Recorder), ClientError>,
    spec: &CrrParams,
) -> Outcome<CrrResult> {
    match ran {
        Ok((r, connect, total)) => Outcome {
            // Ctrl-C ends the loop early: the row holds what was timed.
            error: (r.samples < spec.iterations).then_some(ClientError::Interrupted),
            rows: vec![r],
            histograms: vec![
                RowHistogram {
                    row: 0,
                    metric: "connect_us",
                    ns: connect,
                },
                RowHistogram {
                    row: 0,
                    metric: "transaction_us",
                    ns: total,
                },
            ],
        },
        Err(e) => Outcome::failed(e),
    }
}

fn run(endpoint: &Endpoint, spec: &CrrParams) -> Result<(CrrResult, Recorder, Recorder), ClientError> {
    let h = SessionHeader {
        mode: Mode::Crr,
        req_size: spec.req_bytes,
        resp_size: spec.resp_bytes,
        flags: endpoint.flags(0),
    };
    let mut msg = h.emit().to_vec();
    let hlen = msg.len();
    msg.resize(msg.len() + spec.req_bytes as usize, 0);
    let mut rx = AlignedBuf::new((spec.resp_bytes as usize).min(CHUNK));
    let mut x = Responder {
        endpoint,
        auth: endpoint.secret.is_some(),
        msg,
        hlen,
        resp: spec.resp_bytes as u64,
        rx: rx.bytes_mut(),
    };
    connections(endpoint.addr, spec, &mut x)
}

/// What one connection of a crr run carries: the responder's here, a
/// plain target's in `plain/tcp.rs`.
pub(crate) trait Transaction {
    /// The request and the response on the connected stream `s` of
    /// connection `i`, inside the timed span. Implementations are
    /// `#[inline(always)]`, so the loop makes no call there that the
    /// transaction itself does not make.
    fn carry(&mut self, s: &mut TcpStream, i: u64) -> Result<(), ClientError>;

    /// Connection `i` after its last clock read.
    fn after(&mut self, i: u64) -> Result<(), ClientError>;
}

/// A responder's crr transaction: the session header and the request in
/// one send (with a secret, the proof and the request, after the
/// challenge: one more round trip per connection, docs/tests.md), then
/// the status record and the response.
struct Responder<'a> {
    endpoint: &'a Endpoint,
    /// The endpoint has a secret.
    auth: bool,
    /// The header, then the request.
    msg: Vec<u8>,
    hlen: usize,
    resp: u64,
    rx: &'a mut [u8],
}

impl Transaction for Responder<'_> {
    #[inline(always)]
    fn carry(&mut self, s: &mut TcpStream, i: u64) -> Result<(), ClientError> {
        let addr = self.endpoint.addr;
        let during = |what: &str| format!("{what} (connection {i})");
        if self.auth {
            // Header, challenge, then the proof and the request together.
            let (header, request) = self.msg.split_at(self.hlen);
            send_all(s, header).map_err(|e| lost(addr, &during("sending the header"), &e))?;
            answer(s, self.endpoint, header, request)?;
        } else {
            send_all(s, &self.msg).map_err(|e| lost(addr, &during("sending the request"), &e))?;
        }
        read_status(s, addr, &self.msg)?;
        recv_exact(s, self.resp, self.rx).map_err(|e| lost(addr, &during("receiving the response"), &e))
    }

    fn after(&mut self, _: u64) -> Result<(), ClientError> {
        Ok(())
    }
}

/// The connections of a crr run, against a responder or a plain target
/// alike: `spec.warmup` untimed, then `spec.iterations` timed. Each socket
/// is made and its options set before the first clock read; `connect` is
/// timed (call to established), and from the same start the whole
/// transaction: `connect`, [`Transaction::carry`], `close`. Then
/// [`Transaction::after`]. Ctrl-C ends the run after the connection in
/// progress; the row holds what was timed.
#[inline(always)]
pub(crate) fn connections<X: Transaction>(
    addr: SocketAddr,
    spec: &CrrParams,
    x: &mut X,
) -> Result<(CrrResult, Recorder, Recorder), ClientError> {
    let timeout = Duration::from_millis(spec.timeout_ms);
    let (mut connect_rec, mut total_rec) = (Recorder::new(), Recorder::new());
    let mut start = None;
    let mut end = Instant::now();
    for i in 0..spec.warmup + spec.iterations {
        if stackmeter_sys::interrupt::interrupted() && total_rec.count() > 0 {
            break;
        }
        crate::error::check_interrupt()?;
        let sock = tcp_socket(addr, timeout)?;
        let t0 = Instant::now();
        connect(&sock, addr, timeout)?;
        let t1 = Instant::now();
        let mut s = TcpStream::from(sock);
        x.carry(&mut s, i)?;
        drop(s);
        let t2 = Instant::now();
        x.after(i)?;
        if i >= spec.warmup {
            start.get_or_insert(t0);
            connect_rec.record(t1.duration_since(t0).as_nanos() as u64);
            total_rec.record(t2.duration_since(t0).as_nanos() as u64);
            end = t2;
        }
    }
    let none = || ClientError::Lost {
        addr,
        what: "no timed connection (iterations is 0)".into(),
    };
    let wall = start.map(|s| end.duration_since(s).as_secs_f64()).unwrap_or(0.0);
    let row = CrrResult {
        req_bytes: spec.req_bytes,
        resp_bytes: spec.resp_bytes,
        samples: total_rec.count(),
        warmup: spec.warmup,
        connect_us: summary_us(&connect_rec).ok_or_else(none)?,
        transaction_us: summary_us(&total_rec).ok_or_else(none)?,
        cps: if wall > 0.0 {
            total_rec.count() as f64 / wall
        } else {
            0.0
        },
    };
    Ok((row, connect_rec, total_rec))
}
