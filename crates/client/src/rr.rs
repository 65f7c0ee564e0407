//! rr: request/response over one TCP connection per size pair (seed 000).

use crate::conn::{lost, open_session, recv_exact, send_all, AlignedBuf, CHUNK};
use crate::error::ClientError;
use crate::outcome::{levels, summary_us, Outcome};
use stackmeter_proto::session::{Mode, SessionHeader};
use stackmeter_results::{RrParams, RrResult, SizePair};
use stackmeter_stats::Recorder;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Runs every size pair against `addr`. Stops at the first error, keeping
/// the rows already measured.
pub fn rr(addr: SocketAddr, spec: &RrParams) -> Outcome<RrResult> {
    crate::outcome::per_pair(&spec.sizes, |pair| one(addr, pair, spec))
}

/// One request/response exchange: the measured path.
#[inline(always)]
fn exchange(s: &mut TcpStream, req: &[u8], resp: u64, rx: &mut [u8]) -> io::Result<()> {
    send_all(s, req)?;
    recv_exact(s, resp, rx)
}

fn one(addr: SocketAddr, pair: SizePair, spec: &RrParams) -> Result<(RrResult, Recorder), ClientError> {
    let h = SessionHeader {
        mode: Mode::Rr,
        req_size: pair.req,
        resp_size: pair.resp,
    };
    let mut s = open_session(addr, &h, Duration::from_millis(spec.timeout_ms))?;
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
    if rec.count() == 0 {
        crate::error::check_interrupt()?;
    }
    let wall = end.duration_since(start).as_secs_f64();
    let row = RrResult {
        req_bytes: pair.req,
        resp_bytes: pair.resp,
        samples: rec.count(),
        warmup: spec.warmup,
        rtt_us: summary_us(&rec).ok_or_else(|| ClientError::Lost {
            addr,
            what: "no timed transaction (iterations is 0)".into(),
        })?,
        tps: if wall > 0.0 { rec.count() as f64 / wall } else { 0.0 },
        levels: levels(&rec),
        requested_rate: None,
        achieved_rate: None,
        send_lag_us: None,
        late_sends: None,
    };
    Ok((row, rec))
}
