//! crr: connect, one request/response, close; repeated (seed 002's
//! "connection establish latency").

use crate::conn::{connect, lost, read_status, recv_exact, send_all, tcp_socket, AlignedBuf, CHUNK};
use crate::{summary_us, ClientError, Outcome};
use stackmeter_proto::session::{Mode, SessionHeader};
use stackmeter_results::CrrResult;
use stackmeter_stats::Recorder;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug)]
pub struct CrrSpec {
    /// Timed connections.
    pub iterations: u64,
    /// Untimed connections before them.
    pub warmup: u64,
    /// Request bytes.
    pub req: u32,
    /// Response bytes.
    pub resp: u32,
    /// Bound on every wait, connect included.
    pub timeout: Duration,
}

/// Times `connect` (call to established) and the whole transaction
/// (connect call to `close` returned). The socket is created and its
/// options set before the first clock read: only connect, send, receive and
/// close are timed.
pub fn crr(addr: SocketAddr, spec: &CrrSpec) -> Outcome<CrrResult> {
    match run(addr, spec) {
        Ok(r) => Outcome {
            rows: vec![r],
            error: None,
        },
        Err(e) => Outcome {
            rows: vec![],
            error: Some(e),
        },
    }
}

fn run(addr: SocketAddr, spec: &CrrSpec) -> Result<CrrResult, ClientError> {
    let h = SessionHeader {
        mode: Mode::Crr,
        req_size: spec.req,
        resp_size: spec.resp,
    };
    // Header and request leave in one send.
    let mut msg = h.emit().to_vec();
    msg.resize(msg.len() + spec.req as usize, 0);
    let mut rx_buf = AlignedBuf::new((spec.resp as usize).min(CHUNK));
    let rx = rx_buf.bytes_mut();
    let (mut connect_rec, mut total_rec) = (Recorder::new(), Recorder::new());
    let mut start = None;
    let mut end = Instant::now();
    for i in 0..spec.warmup + spec.iterations {
        let sock = tcp_socket(addr, spec.timeout)?;
        let t0 = Instant::now();
        connect(&sock, addr, spec.timeout)?;
        let t1 = Instant::now();
        let mut s = TcpStream::from(sock);
        let during = |what: &str| format!("{what} (connection {i})");
        send_all(&mut s, &msg).map_err(|e| lost(addr, &during("sending the request"), &e))?;
        read_status(&mut s, addr)?;
        recv_exact(&mut s, spec.resp as u64, rx).map_err(|e| lost(addr, &during("receiving the response"), &e))?;
        drop(s);
        let t2 = Instant::now();
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
    Ok(CrrResult {
        req_bytes: spec.req,
        resp_bytes: spec.resp,
        samples: total_rec.count(),
        warmup: spec.warmup,
        connect_us: summary_us(&connect_rec).ok_or_else(none)?,
        transaction_us: summary_us(&total_rec).ok_or_else(none)?,
        cps: if wall > 0.0 {
            total_rec.count() as f64 / wall
        } else {
            0.0
        },
    })
}
