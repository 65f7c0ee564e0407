//! `ping --layers` and `rr --layers`: the test run twice, untraced and
//! then with the kernel's tracer (stackmeter_bpf::layers) timing each
//! round trip at every layer it passes, and the traced round trips turned
//! into a waterfall: segments from one point of the path to the next.
//!
//! The first and the last point of every round trip are the client's own
//! two clock reads (taken as ever: nothing is added between them; the
//! times are kept after the second read), so the segments of a round trip
//! add up to exactly the time the client measured for it. The kernel's
//! points in between, UDP (by the datagram's sequence number):
//!
//! ```text
//! client send call -> request queued -> request at the driver -> request received
//! -> request to the stack -> request on the socket -> responder has it (its read returned)
//! -> responder sends -> reply queued -> ... -> reply on the socket -> client has it
//! ```
//!
//! and TCP (by the sockets' byte counts, along the path of each message's
//! last byte, which is the one the exchange waits for): the request's first
//! and last byte queued, the last byte at the driver, received, to the
//! stack, the whole request on the responder's socket, the responder's read
//! of it, its write of the response's last byte, and the same back to the
//! client's socket.
//!
//! A path without some points (an XDP or sockmap responder has no read; a
//! responder elsewhere shows none of its own) has fewer, longer segments.
//! [`waterfall`] is pure.

use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::outcome::Outcome;
use crate::rr::{Exchange, Tap as RrTap};
use stackmeter_bpf::layers::{Config, Connection, Layers as Tracer, Probe, Traced, Trip, POINTS};
use stackmeter_recorder::Recorder;
use stackmeter_results::layers::{LayerProbe, LayerSegment, Layers};
use stackmeter_results::{PingParams, PingResult, RrParams, RrResult, SizePair};
use std::collections::HashMap;
use std::io;
use std::time::Instant;

/// The points of a UDP round trip, by position.
pub const UDP_POINTS: [&str; POINTS] = [
    "client send call",
    "request queued",
    "request at the driver",
    "request received",
    "request to the stack",
    "request on the socket",
    "responder has it",
    "responder sends",
    "reply queued",
    "reply at the driver",
    "reply received",
    "reply to the stack",
    "reply on the socket",
    "(unused)",
    "client has it",
];

/// The points of a TCP transaction, by position.
pub const TCP_POINTS: [&str; POINTS] = [
    "client send call",
    "request's first byte queued",
    "request's last byte queued",
    "request at the driver",
    "request received",
    "request to the stack",
    "request on the socket",
    "responder has it",
    "responder writes the end",
    "response's last byte queued",
    "response at the driver",
    "response received",
    "response to the stack",
    "response on the socket",
    "client has it",
];

/// One timed exchange of the client: its trip's key and its two clock
/// reads (CLOCK_MONOTONIC, ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timed {
    /// The trip's key (UDP: the sequence number on the wire; TCP:
    /// connection << 40 | transaction).
    pub key: u64,
    /// Right before the send.
    pub t0: u64,
    /// Right after the receive.
    pub t1: u64,
}

/// `Instant`s as CLOCK_MONOTONIC nanoseconds (the kernel's clock: both
/// are CLOCK_MONOTONIC on Linux), from one pair of reads taken together.
pub(crate) struct Clock {
    at: Instant,
    ns: u64,
}

impl Clock {
    pub(crate) fn now() -> Clock {
        let a = stackmeter_sys::monotonic_ns();
        let at = Instant::now();
        let b = stackmeter_sys::monotonic_ns();
        Clock {
            at,
            ns: a + (b - a) / 2,
        }
    }

    pub(crate) fn ns(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.at) {
            Some(d) => self.ns + d.as_nanos() as u64,
            None => self.ns - self.at.duration_since(t).as_nanos() as u64,
        }
    }

    fn timed(&self, key: u64, t0: Instant, t1: Instant) -> Timed {
        Timed {
            key,
            t0: self.ns(t0),
            t1: self.ns(t1),
        }
    }
}

/// The waterfall of the client's exchanges `timed` from the kernel's
/// `trips` (joined by key; an exchange without a trip is not traced),
/// its points named by `names`. The client's figures of the row
/// (`rtt_mean_us`, `traced_p50_us`, the untraced run's) are the caller's.
pub fn waterfall(trips: &[Trip], timed: &[Timed], names: &[&str; POINTS]) -> Layers {
    let by_key: HashMap<u64, &Trip> = trips.iter().rev().map(|t| (t.key, t)).collect();
    // (from, to) -> durations, ns.
    let mut segments: Vec<((usize, usize), Vec<u64>)> = Vec::new();
    let (mut round_trips, mut unordered, mut traced) = (0u64, 0u64, 0u128);
    for x in timed {
        let Some(trip) = by_key.get(&x.key) else {
            continue;
        };
        let mut at = trip.at;
        (at[0], at[POINTS - 1]) = (x.t0, x.t1);
        // The client's two reads always; the kernel's where seen.
        let seen: Vec<(usize, u64)> = at
            .iter()
            .copied()
            .enumerate()
            .filter(|&(i, t)| t != 0 || i == 0 || i == POINTS - 1)
            .collect();
        if seen.windows(2).any(|w| w[1].1 < w[0].1) {
            unordered += 1;
            continue;
        }
        round_trips += 1;
        traced += u128::from(x.t1 - x.t0);
        for w in seen.windows(2) {
            let key = (w[0].0, w[1].0);
            match segments.iter_mut().find(|s| s.0 == key) {
                Some(s) => s.1.push(w[1].1 - w[0].1),
                None => segments.push((key, vec![w[1].1 - w[0].1])),
            }
        }
    }
    segments.sort_by_key(|s| s.0);
    let n = round_trips.max(1) as f64;
    Layers {
        round_trips,
        segments: segments
            .into_iter()
            .map(|((f, t), mut d)| {
                d.sort_unstable();
                // Means over every round trip, so they add up to the
                // traced mean (a segment a round trip lacks counts 0).
                LayerSegment {
                    from: names[f].into(),
                    to: names[t].into(),
                    count: d.len() as u64,
                    p50_us: d[d.len() / 2] as f64 / 1000.0,
                    mean_us: d.iter().sum::<u64>() as f64 / n / 1000.0,
                }
            })
            .collect(),
        traced_mean_us: traced as f64 / n / 1000.0,
        rtt_mean_us: 0.0,
        untraced_p50_us: None,
        traced_p50_us: 0.0,
        lost_records: 0,
        exchanges: timed.len() as u64,
        unfinished: 0,
        unordered,
        untraced_mean_us: None,
        probes: Vec::new(),
    }
}

/// The tracer's settings for a run: `STACKMETER_LAYERS_SKIP` (tracepoint
/// names, comma-separated: probes left out, to measure what each costs)
/// and `STACKMETER_LAYERS_STATS=1` (the kernel counts each probe's time),
/// the benchmark's knobs (bench/layers.sh).
fn config(port: u16, tcp: bool) -> Result<Config, ClientError> {
    let mut skip = Vec::new();
    for name in std::env::var("STACKMETER_LAYERS_SKIP").unwrap_or_default().split(',') {
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        skip.push(Probe::named(name).ok_or_else(|| {
            local(format!(
                "STACKMETER_LAYERS_SKIP: no probe '{name}' (one of {})",
                Probe::ALL.map(Probe::tracepoint).join(", ")
            ))
        })?);
    }
    Ok(Config {
        port,
        tcp,
        skip,
        stats: std::env::var("STACKMETER_LAYERS_STATS").is_ok_and(|v| v == "1"),
        reader_cpu: reader_cpu(),
        ..Config::default()
    })
}

/// A CPU for the tracer's reader other than the client's own (the one
/// after it among those allowed), so that its wake-ups do not land on the
/// measured threads' CPU and push one of them to another.
fn reader_cpu() -> Option<usize> {
    let allowed = stackmeter_sys::listener::allowed_cpus();
    let me = stackmeter_sys::current_cpu()?;
    let at = allowed.iter().position(|c| *c == me)?;
    (allowed.len() > 1).then(|| allowed[(at + 1) % allowed.len()])
}

fn local(what: String) -> ClientError {
    ClientError::Local(io::Error::other(format!("--layers: {what}")))
}

/// What the untraced run gave a row: its median and mean round trip, us.
type Untraced = Option<(f64, f64)>;

/// Fills in what the tracer and the client's row add to a waterfall.
fn finish(w: &mut Layers, t: &Traced, untraced: Untraced, rtt: Option<&stackmeter_results::LatencyUs>) {
    if let Some(r) = rtt {
        w.rtt_mean_us = r.mean;
        w.traced_p50_us = r.p50;
    }
    (w.untraced_p50_us, w.untraced_mean_us) = (untraced.map(|u| u.0), untraced.map(|u| u.1));
    w.lost_records = t.lost;
    w.unfinished = t.unfinished;
    // The probes ran for every row of the run: their time over all of its
    // round trips.
    let n = t.trips.len().max(1) as f64;
    w.probes = t
        .probes
        .iter()
        .map(|p| LayerProbe {
            tracepoint: p.probe.tracepoint().into(),
            runs: p.runs,
            ns_per_run: p.ns as f64 / p.runs.max(1) as f64,
            ns_per_round_trip: p.ns as f64 / n,
        })
        .collect();
}

/// `ping --layers`: the tracer loaded, then the run untraced, then traced.
pub(crate) fn ping(endpoint: &Endpoint, spec: &PingParams) -> Outcome<PingResult> {
    let mut tracer = match config(endpoint.addr.port(), false).and_then(|c| load(&c)) {
        Ok(t) => t,
        Err(e) => return Outcome::failed(e),
    };
    let plain = PingParams {
        layers: false,
        ..spec.clone()
    };
    let untraced = crate::ping::ping(endpoint, &plain);
    if untraced.error.is_some() {
        return untraced;
    }
    let u = untraced
        .rows
        .first()
        .and_then(|r| r.rtt_us.as_ref())
        .map(|l| (l.p50, l.mean));
    if let Err(e) = attach_awake(&mut tracer) {
        return Outcome::failed(e);
    }
    let clock = Clock::now();
    let (mut o, times) = crate::ping::run_timed(endpoint, spec);
    let traced = match tracer.finish() {
        Ok(t) => t,
        Err(e) => return Outcome::failed(local(e.to_string())),
    };
    let timed: Vec<Timed> = times.iter().map(|&(k, t0, t1)| clock.timed(k, t0, t1)).collect();
    if let Some(row) = o.rows.first_mut() {
        let mut w = waterfall(&traced.trips, &timed, &UDP_POINTS);
        finish(&mut w, &traced, u, row.rtt_us.as_ref());
        row.layers = Some(w);
    }
    o
}

/// Attaches the tracer from another thread while this one (the client's)
/// spins: attaching sleeps in the kernel (it waits for RCU), and a client
/// thread woken from that sleep may be put on another CPU than the
/// responder's, which changes the round trip far more than the tracer does
/// (on 2 CPUs: 12 us on one, 46 us across here). The spinning keeps it
/// where the untraced run left it.
fn attach_awake(tracer: &mut Tracer) -> Result<(), ClientError> {
    std::thread::scope(|s| {
        let h = s.spawn(|| tracer.attach());
        while !h.is_finished() {
            std::hint::spin_loop();
        }
        h.join().unwrap_or_else(|_| {
            Err(stackmeter_bpf::Error::Kernel {
                what: "attaching the tracer".into(),
                why: "its thread panicked".into(),
            })
        })
    })
    .map_err(|e| local(e.to_string()))
}

/// The tracer loaded (not attached): its programs through the verifier,
/// its reader started.
fn load(c: &Config) -> Result<Tracer, ClientError> {
    Tracer::load(c).map_err(|e| local(e.to_string()))
}

/// `rr --layers` (against a responder, or `plain` targets: `--echo`,
/// `--raw`): the tracer loaded, then untraced, then traced, one waterfall
/// per size pair.
pub(crate) fn rr(endpoint: &Endpoint, spec: &RrParams, plain: bool) -> Outcome<RrResult> {
    let spec_plain = RrParams {
        layers: false,
        ..spec.clone()
    };
    let run = |s: &RrParams, tap: Option<&mut Tap>| match plain {
        true => crate::plain::rr_plain_tapped(endpoint.addr, s, tap),
        false => crate::rr::rr_tapped(endpoint, s, tap),
    };
    let mut tracer = match config(endpoint.addr.port(), true).and_then(|c| load(&c)) {
        Ok(t) => t,
        Err(e) => return Outcome::failed(e),
    };
    let untraced = run(&spec_plain, None);
    if untraced.error.is_some() {
        return untraced;
    }
    if let Err(e) = attach_awake(&mut tracer) {
        return Outcome::failed(e);
    }
    let mut tap = Tap {
        tracer,
        clock: Clock::now(),
        // Every timed transaction of every row, reserved before the loop.
        times: Vec::with_capacity((spec.iterations as usize).saturating_mul(spec.sizes.len())),
        index: 0,
        server_port: endpoint.addr.port(),
    };
    let mut o = run(spec, Some(&mut tap));
    let Tap { tracer, times, .. } = tap;
    let traced = match tracer.finish() {
        Ok(t) => t,
        Err(e) => return Outcome::failed(local(e.to_string())),
    };
    for (i, row) in o.rows.iter_mut().enumerate() {
        let mine = |k: u64| k >> 40 == i as u64;
        let timed: Vec<Timed> = times.iter().copied().filter(|t| mine(t.key)).collect();
        let trips: Vec<Trip> = traced.trips.iter().copied().filter(|t| mine(t.key)).collect();
        let mut w = waterfall(&trips, &timed, &TCP_POINTS);
        let u = untraced.rows.get(i).map(|r| (r.rtt_us.p50, r.rtt_us.mean));
        finish(&mut w, &traced, u, Some(&row.rtt_us));
        row.layers = Some(w);
    }
    o
}

/// rr's hook for the tracer: each size pair's connection registered before
/// its data phase, and the exchanges' clock reads kept after them.
pub(crate) struct Tap {
    tracer: Tracer,
    clock: Clock,
    times: Vec<Timed>,
    index: u32,
    server_port: u16,
}

impl RrTap for Tap {
    /// rr's exchanges of `pair` on the connection whose client port is
    /// `client_port`, traced.
    fn exchanges<X: Exchange>(
        &mut self,
        client_port: u16,
        addr: std::net::SocketAddr,
        pair: SizePair,
        spec: &RrParams,
        x: &mut X,
    ) -> Result<(RrResult, Recorder), ClientError> {
        let c = Connection {
            index: self.index,
            client_port,
            server_port: self.server_port,
            request: pair.req,
            response: pair.resp,
        };
        self.index += 1;
        self.tracer.connect(&c).map_err(|e| local(e.to_string()))?;
        let mut t = Tapped {
            x,
            clock: &self.clock,
            times: &mut self.times,
            index: c.index,
        };
        let r = crate::rr::exchanges(addr, pair, spec, &mut t);
        let _ = self.tracer.disconnect(&c);
        r
    }
}

/// An exchange whose clock reads are kept for the waterfall (after the
/// second read); the measured path is the inner exchange's, inlined.
struct Tapped<'a, X> {
    x: &'a mut X,
    clock: &'a Clock,
    times: &'a mut Vec<Timed>,
    index: u32,
}

impl<X: Exchange> Exchange for Tapped<'_, X> {
    type Out = X::Out;

    #[inline(always)]
    fn once(&mut self) -> io::Result<X::Out> {
        self.x.once()
    }

    fn after(&mut self, i: u64, timed: Option<(Instant, Instant)>, out: X::Out) -> Result<(), ClientError> {
        if let Some((t0, t1)) = timed {
            let key = (u64::from(self.index) << 40) | i;
            self.times.push(self.clock.timed(key, t0, t1));
        }
        self.x.after(i, timed, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trip(key: u64, at: &[(usize, u64)]) -> Trip {
        let mut t = Trip {
            key,
            at: [0; POINTS],
            cpu: [0; POINTS],
            state: 2,
        };
        for &(i, ns) in at {
            t.at[i] = ns;
        }
        t
    }

    /// Two round trips with every point, one without the responder's
    /// (an XDP answer), one the kernel never wrote, one out of order:
    /// the segments add up to the traced time, which is the client's own,
    /// and a segment missing from one round trip counts 0 in its mean.
    #[test]
    fn segments_add_up_to_the_clients_round_trips() {
        let full: Vec<(usize, u64)> = (1..13).map(|i| (i, 1_000 * i as u64)).collect();
        let xdp: Vec<(usize, u64)> = full.iter().copied().filter(|(i, _)| !(5..=7).contains(i)).collect();
        let base = 100_000;
        let shifted: Vec<(usize, u64)> = xdp.iter().map(|&(i, t)| (i, t + base)).collect();
        let trips = [trip(1, &full), trip(2, &shifted), trip(4, &[(1, 5), (2, 3)])];
        let timed = [
            Timed {
                key: 1,
                t0: 0,
                t1: 15_000,
            },
            Timed {
                key: 2,
                t0: base,
                t1: base + 15_000,
            },
            Timed { key: 3, t0: 0, t1: 1 },
            Timed { key: 4, t0: 0, t1: 9 },
        ];
        let w = waterfall(&trips, &timed, &UDP_POINTS);
        assert_eq!((w.round_trips, w.unordered, w.exchanges), (2, 1, 4));
        assert!((w.traced_mean_us - 15.0).abs() < 1e-9);
        let sum: f64 = w.segments.iter().map(|s| s.mean_us).sum();
        assert!(
            (sum - w.traced_mean_us).abs() < 1e-9,
            "{sum} vs {}: {:?}",
            w.traced_mean_us,
            w.segments
        );
        let app = w.segments.iter().find(|s| s.from == "responder has it").unwrap();
        assert_eq!((app.count, app.mean_us), (1, 0.5), "one round trip of two had it");
        let turn = w
            .segments
            .iter()
            .find(|s| s.from == "request to the stack" && s.to == "reply queued");
        assert_eq!(turn.map(|s| s.count), Some(1), "the XDP turnaround: {:?}", w.segments);
        assert_eq!(w.segments.first().unwrap().from, "client send call");
        assert_eq!(w.segments.last().unwrap().to, "client has it");
        let last = w.segments.last().unwrap();
        assert_eq!((last.from.as_str(), last.p50_us), ("reply on the socket", 3.0));
    }

    /// An Instant and the monotonic clock agree to well under a
    /// microsecond (both are CLOCK_MONOTONIC).
    #[test]
    fn the_clock_maps_instants_to_monotonic_ns() {
        let c = Clock::now();
        let (i, ns) = (Instant::now(), stackmeter_sys::monotonic_ns());
        assert!(c.ns(i).abs_diff(ns) < 50_000, "{} vs {ns}", c.ns(i));
        let before = c.at - std::time::Duration::from_micros(5);
        assert_eq!(c.ns(before), c.ns - 5_000);
    }
}
