//! Kernel timestamps on the client side of ping and rr (`--timestamps`):
//! turning them on, collecting each exchange's stamps (the client's own and
//! the responder's stamp block), and the split at the end.
//!
//! The round trip stays timed on the monotonic clock (`Instant`) as without
//! stamps; kernel stamps are on CLOCK_REALTIME, so the two application
//! times of the split are the same `Instant` reads put on the wall clock by
//! one offset, measured before and after the test ([`WallBase`]). Linux
//! moves CLOCK_REALTIME against CLOCK_MONOTONIC only when the wall clock is
//! stepped (both run at the rate NTP sets), so no clock is read inside the
//! timed span beyond the two it always had, and the five parts add up to
//! exactly the round trip the histogram holds. A step during the test
//! (the offset moved by more than [`STEP_NS`]) marks every exchange as not
//! adding up.

use crate::error::ClientError;
use stackmeter_proto::stamps::Block;
use stackmeter_recorder::split::{estimate_offset, Exchange, Split};
use stackmeter_results::{SplitUs, StampParams, Timestamps};
use stackmeter_sys::tstamp::{self, Kind};
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// A wall-clock step larger than this during a test voids its split, ns.
pub(crate) const STEP_NS: u64 = 1000;

/// The kernel turns receive stamping on from a work item after the first
/// socket asks: the client waits this long, outside the timed exchanges.
pub(crate) const SETTLE: Duration = Duration::from_millis(20);

/// Which stamps `p` asks for.
pub(crate) fn kind(p: &StampParams) -> Kind {
    if p.kind == "hardware" {
        Kind::Hardware
    } else {
        Kind::Software
    }
}

/// Turns stamps on for the client socket `fd` (send stamps of every send,
/// receive stamps); for hardware stamps first checks that the interface
/// holding `local` has a clock.
pub(crate) fn enable(fd: RawFd, p: &StampParams, local: SocketAddr) -> Result<(), ClientError> {
    let k = kind(p);
    if k == Kind::Hardware {
        tstamp::hardware_clock(fd, local.ip())
            .map_err(|reason| ClientError::Local(std::io::Error::other(format!("--timestamps hw: {reason}"))))?;
    }
    tstamp::enable(fd, k, true).map_err(|e| {
        ClientError::Local(std::io::Error::new(
            e.kind(),
            format!("--timestamps: cannot turn on kernel timestamps (SO_TIMESTAMPING): {e}"),
        ))
    })
}

/// `Instant` on the wall clock: one `Instant` and the CLOCK_REALTIME
/// reading at the same moment (the midpoint of the tightest of a few
/// bracketing reads, so within about one clock read).
#[derive(Clone, Copy)]
pub(crate) struct WallBase {
    at: Instant,
    real_ns: u64,
}

impl WallBase {
    pub(crate) fn now() -> WallBase {
        let mut best: Option<(u64, WallBase)> = None;
        for _ in 0..7 {
            let a = stackmeter_sys::realtime_ns();
            let at = Instant::now();
            let b = stackmeter_sys::realtime_ns();
            let width = b.saturating_sub(a);
            if best.is_none_or(|(w, _)| width < w) {
                best = Some((
                    width,
                    WallBase {
                        at,
                        real_ns: a + width / 2,
                    },
                ));
            }
        }
        // Cannot fail: the loop ran.
        best.map(|b| b.1).unwrap_or(WallBase {
            at: Instant::now(),
            real_ns: stackmeter_sys::realtime_ns(),
        })
    }

    /// `t` on the wall clock, ns.
    pub(crate) fn real(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.at) {
            Some(d) => self.real_ns + d.as_nanos() as u64,
            None => self.real_ns - self.at.duration_since(t).as_nanos() as u64,
        }
    }

    /// How far the wall clock moved against the monotonic one since `self`.
    fn step_since(&self, later: &WallBase) -> u64 {
        later.real(self.at).abs_diff(self.real_ns)
    }
}

/// One exchange's stamps as they arrive.
#[derive(Clone, Copy, Default)]
struct Rec {
    send: Option<Instant>,
    recv: Option<Instant>,
    rtt_ns: u64,
    c_tx: Option<u64>,
    c_rx: Option<u64>,
    app: Option<(u64, u64)>,
    r_rx: Option<u64>,
    r_tx: Option<u64>,
}

/// Every exchange's stamps of one test, indexed by exchange number
/// (warm-up included: its number is the UDP sequence number or the TCP
/// transaction number).
pub(crate) struct Collector {
    recs: Vec<Rec>,
    warmup: usize,
    params: StampParams,
    base: WallBase,
    blocks: u64,
    hardware: bool,
}

impl Collector {
    /// For `total` exchanges of which the first `warmup` are not timed.
    pub(crate) fn new(params: &StampParams, total: usize, warmup: usize) -> Collector {
        Collector {
            recs: vec![Rec::default(); total],
            warmup,
            params: params.clone(),
            base: WallBase::now(),
            blocks: 0,
            hardware: false,
        }
    }

    /// Exchange `i` was timed from `send` to `recv`; its reply's last byte
    /// had kernel receive stamp `c_rx`.
    #[inline]
    pub(crate) fn timed(&mut self, i: u64, send: Instant, recv: Instant, c_rx: Option<u64>) {
        if let Some(r) = self.recs.get_mut(i as usize) {
            r.send = Some(send);
            r.recv = Some(recv);
            r.rtt_ns = recv.duration_since(send).as_nanos() as u64;
            r.c_rx = c_rx;
        }
    }

    /// The client kernel's send stamp of exchange `i`'s request.
    pub(crate) fn sent_stamp(&mut self, i: u64, ns: u64) {
        if let Some(r) = self.recs.get_mut(i as usize) {
            r.c_tx = Some(ns);
        }
    }

    /// The responder's stamp block in exchange `i`'s reply.
    pub(crate) fn block(&mut self, i: u64, b: &Block) {
        self.blocks += 1;
        self.hardware |= b.hardware;
        if let Some(r) = self.recs.get_mut(i as usize) {
            r.app = b.app;
            r.r_rx = b.rx_kernel;
        }
        if let Some((id, ns)) = b.prev_tx {
            if let Some(r) = self.recs.get_mut(id as usize) {
                r.r_tx = Some(ns);
            }
        }
    }

    /// The row's `timestamps` and `split_us`.
    pub(crate) fn finish(&self) -> (Timestamps, Option<SplitUs>) {
        let mode = match (self.blocks, self.hardware) {
            (0, _) => "none",
            (_, true) => "hardware",
            (_, false) => "software",
        };
        let mut ts = Timestamps {
            mode: mode.into(),
            clock: self.params.clock.clone(),
            offset_us: None,
            offset_bound_us: None,
        };
        if self.blocks == 0 {
            return (ts, None);
        }
        let stepped = self.base.step_since(&WallBase::now()) > STEP_NS;
        let mut full = Vec::new();
        let mut incomplete = 0;
        for r in self.recs.iter().skip(self.warmup) {
            let (Some(send), Some(recv)) = (r.send, r.recv) else {
                continue; // not answered: no round trip to split
            };
            match (r.c_tx, r.c_rx, r.app) {
                (Some(c_tx), Some(c_rx), Some((rx, tx))) => full.push((
                    Exchange {
                        c_app_send: self.base.real(send),
                        c_tx_kernel: c_tx,
                        r_app_rx: rx,
                        r_app_tx: tx,
                        c_rx_kernel: c_rx,
                        c_app_rx: self.base.real(recv),
                    },
                    r,
                )),
                _ => incomplete += 1,
            }
        }
        let offset = if self.params.clock == "estimate" {
            let o = estimate_offset(full.iter().map(|f| &f.0));
            ts.offset_us = o.map(|o| o.ns as f64 / 1000.0);
            ts.offset_bound_us = o.map(|o| o.bound_ns as f64 / 1000.0);
            o.map_or(0, |o| o.ns)
        } else {
            0
        };
        let mut split = Split::new();
        for (s, r) in &full {
            // A step voids the sum: give the check a round trip it cannot meet.
            let rtt = if stepped { u64::MAX / 4 } else { r.rtt_ns };
            split.add(s, offset, rtt);
            let (rx, tx) = (s.r_app_rx, s.r_app_tx);
            split.add_responder_stacks(
                r.r_rx.map(|k| rx as i64 - k as i64),
                r.r_tx.map(|k| k as i64 - tx as i64),
            );
        }
        (ts, SplitUs::of(&split, incomplete))
    }
}
