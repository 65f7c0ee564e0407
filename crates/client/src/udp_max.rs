//! udp-max: the highest UDP rate at a loss goal, by MLRsearch-style trials
//! (`stackmeter_recorder::mlr` decides; this file runs the trials).
//!
//! One control session and one UDP stream for the whole search. A trial:
//! Snapshot, send paced datagrams for the trial duration, wait the drain
//! time for datagrams still in flight, Snapshot again; the responder's
//! count difference is what arrived. The first trial, at the highest load,
//! is a warm-up (caches, ARP, socket buffers) and is reported but never
//! counted; with no `max_pps` it runs unpaced and its send rate becomes
//! the highest load. The answer is then confirmed by one longer trial
//! (`final_trial_s`): a queue on the path absorbs excess load for as long
//! as it has room, so short trials can pass a load the endpoint cannot carry;
//! a failing final trial makes that load an upper bound and the search
//! goes on below it.

use crate::control::Control;
use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::sockets::udp_socket;
use crate::throughput::udp_sender::{StreamFrames, UdpTx};
use crate::throughput::workers::Counter;
use stackmeter_recorder::mlr::{Goal, Next, Search};
use stackmeter_results::{Trial, UdpMaxParams, UdpMaxResult, SHORT_SEND};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// What udp-max produced: the answer (with every trial run), and the error
/// that stopped the search early, if any.
#[derive(Debug, Default)]
pub struct UdpMaxOutcome {
    /// The answer; on an early stop, the bounds known so far.
    pub result: Option<UdpMaxResult>,
    /// Why the search stopped early.
    pub error: Option<ClientError>,
}

/// Runs the search against the responder at `endpoint`; `live` sees each
/// trial (its number, 0 for the warm-up) as it ends.
pub fn udp_max(
    endpoint: &Endpoint,
    p: &UdpMaxParams,
    cpu: Option<usize>,
    live: &mut dyn FnMut(usize, &Trial),
) -> UdpMaxOutcome {
    let mut trials = Vec::new();
    let r = search(endpoint, p, cpu, live, &mut trials);
    let overhead = 8 + if endpoint.addr.is_ipv6() { 40 } else { 20 } + 14;
    let any = !trials.is_empty();
    let result = move |a: Option<stackmeter_recorder::mlr::Answer>, converged: bool| {
        let a = a.unwrap_or(stackmeter_recorder::mlr::Answer {
            lower: 0.0,
            upper: None,
            conditional: 0.0,
            converged: false,
        });
        UdpMaxResult {
            rate_mbps: a.lower * p.length as f64 * 8.0 / 1e6,
            wire_mbps: a.lower * (p.length + overhead) as f64 * 8.0 / 1e6,
            line_mbps: a.lower * (p.length + overhead + 24) as f64 * 8.0 / 1e6,
            rate_kpps: a.lower / 1e3,
            overhead_bytes: overhead,
            loss_goal: p.loss_goal,
            lower_kpps: a.lower / 1e3,
            upper_kpps: a.upper.map(|u| u / 1e3),
            conditional_kpps: a.conditional / 1e3,
            converged: converged && a.converged,
            trials,
        }
    };
    match r {
        Ok((answer, converged)) => UdpMaxOutcome {
            result: Some(result(Some(answer), converged)),
            error: None,
        },
        Err((partial, e)) => UdpMaxOutcome {
            result: any.then(|| result(partial, false)),
            error: Some(e),
        },
    }
}

type Partial = (Option<stackmeter_recorder::mlr::Answer>, ClientError);

/// Which trial of the search.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The first, at the highest load, not counted.
    Warmup,
    /// One the search decides by.
    Search,
    /// The long one at the answer.
    Final,
}

/// Final trials tried before the search gives up confirming.
const MAX_FINALS: u32 = 3;

fn search(
    endpoint: &Endpoint,
    p: &UdpMaxParams,
    cpu: Option<usize>,
    live: &mut dyn FnMut(usize, &Trial),
    trials: &mut Vec<Trial>,
) -> Result<(stackmeter_recorder::mlr::Answer, bool), Partial> {
    let timeout = Duration::from_millis(p.timeout_ms);
    if let Some(c) = cpu {
        let _ = stackmeter_sys::pin_current_thread(c);
    }
    stackmeter_sys::tight_timers();
    let mut control = Control::open(endpoint, timeout).map_err(|e| (None, e))?;
    let sock = udp_socket(endpoint.addr, timeout).map_err(|e| (None, e))?;
    let framing = StreamFrames::new(endpoint, control.test_id, 0);
    let mut tx = UdpTx::new(sock, framing, p.length as usize, p.batch as usize);
    let mut run = |load: f64, kind: Kind, trials: &mut Vec<Trial>| -> Result<Trial, ClientError> {
        let seconds = match kind {
            Kind::Final => p.final_trial_s,
            _ => p.trial_s,
        };
        let before = control.snapshot()?;
        let (bytes, datagrams, stop) = (Counter::default(), Counter::default(), AtomicBool::new(false));
        let t0 = Instant::now();
        let sent = tx
            .send_paced(load, Some(Duration::from_secs_f64(seconds)), &stop, &bytes, &datagrams)
            .map_err(|e| crate::sockets::lost(endpoint.addr, "sending a trial", &e))?;
        let duration = t0.elapsed().as_secs_f64();
        // What arrives after the sending stopped was held in a queue.
        let stopped = control.snapshot()?;
        std::thread::sleep(Duration::from_millis(p.drain_ms));
        let after = control.snapshot()?;
        let received = after.udp_datagrams.saturating_sub(before.udp_datagrams);
        let achieved = sent as f64 / duration.max(1e-9);
        let t = Trial {
            offered_pps: if load.is_finite() { load } else { achieved },
            achieved_pps: achieved,
            duration_s: duration,
            sent,
            received,
            loss: if sent > 0 {
                sent.saturating_sub(received) as f64 / sent as f64
            } else {
                1.0
            },
            warmup: kind == Kind::Warmup,
            final_trial: kind == Kind::Final,
            drained: Some(after.udp_datagrams.saturating_sub(stopped.udp_datagrams)),
        };
        live(trials.len(), &t);
        trials.push(t.clone());
        Ok(t)
    };
    let warm = run(p.max_pps.unwrap_or(f64::INFINITY), Kind::Warmup, trials).map_err(|e| (None, e))?;
    let max = p.max_pps.unwrap_or(warm.offered_pps);
    let goal = Goal {
        loss: p.loss_goal,
        exceed_ratio: p.exceed_ratio,
        duration_sum: p.duration_sum_s,
        width: p.width,
    };
    let mut s = Search::new(goal, max, (max * 1e-4).max(1.0));
    let mut counted = 0;
    let mut finals = 0;
    loop {
        match s.next_step() {
            Next::Done(a) if p.final_trial_s > 0.0 && a.lower > 0.0 && finals < MAX_FINALS => {
                crate::error::check_interrupt().map_err(|e| (Some(s.bounds()), e))?;
                let t = run(a.lower, Kind::Final, trials).map_err(|e| (Some(s.bounds()), e))?;
                finals += 1;
                if t.loss <= p.loss_goal && t.achieved_pps >= SHORT_SEND * a.lower {
                    return Ok((a, true));
                }
                s.reject(a.lower, t.received as f64 / t.duration_s.max(1e-9));
            }
            // A final trial failed every time it was tried: what is known.
            Next::Done(a) if p.final_trial_s > 0.0 && a.lower > 0.0 => return Ok((s.bounds(), false)),
            Next::Done(a) => return Ok((a, true)),
            Next::Trial(_) if counted >= p.max_trials => {
                return Ok((s.bounds(), false));
            }
            Next::Trial(load) => {
                crate::error::check_interrupt().map_err(|e| (Some(s.bounds()), e))?;
                let t = run(load, Kind::Search, trials).map_err(|e| (Some(s.bounds()), e))?;
                // A sender held back below the load did not offer it: the
                // trial fails whatever arrived (every unsent datagram is
                // counted as lost).
                let offered = (load * t.duration_s) as u64;
                let sent = if t.achieved_pps < SHORT_SEND * load {
                    offered.max(t.sent)
                } else {
                    t.sent
                };
                s.record(load, t.duration_s, sent, t.received);
                counted += 1;
            }
        }
    }
}
