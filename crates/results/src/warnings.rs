//! Warnings derived from a result: the things a reader must know before
//! trusting its figures. Computed once, stored in `Document::warnings`, so
//! the text and the JSON say the same.

use crate::doc::Document;
use crate::latency::Levels;

/// Every warning `doc`'s figures call for, in row order.
pub fn derive(doc: &Document) -> Vec<String> {
    let why = if pinned(doc) {
        "both sides were pinned, so look for other load or the host's scheduling (virtual CPUs)"
    } else {
        "client and responder probably shared a CPU part of the time; pin them (--affinity)"
    };
    doc.body.warnings(why)
}

/// A row whose latencies fall in two levels; `why` names the likely cause.
fn levels(name: String, l: Option<Levels>, why: &str) -> Option<String> {
    l.map(|l| {
        format!(
            "{name} has two levels, {:.1} us ({:.0}%) and {:.1} us ({:.0}%): {why}, and compare medians of several runs, not this one",
            l.low_us,
            100.0 * l.low_share,
            l.high_us,
            100.0 * (1.0 - l.low_share)
        )
    })
}

/// rr's warnings: two levels, a timestamp split that does not hold, an
/// open loop that fell behind its schedule.
pub(crate) fn rr(results: &[crate::rr::RrResult], why: &str) -> Vec<String> {
    let mut out = Vec::new();
    for r in results {
        let name = r.pair().label();
        out.extend(levels(name.clone(), r.levels, why));
        out.extend(split_warning(
            &format!("{name}: "),
            r.timestamps.as_ref(),
            r.split_us.as_ref(),
        ));
        out.extend(behind_schedule(&name, r));
    }
    out
}

/// load's warnings: failed requests.
pub(crate) fn load(results: &[crate::load::LoadRun]) -> Vec<String> {
    let errors: u64 = results.iter().map(|r| r.errors).sum();
    match errors {
        0 => Vec::new(),
        _ => vec![format!(
            "{errors} request(s) failed (wrong bytes, an error answer, or a broken connection): the rates count only what arrived"
        )],
    }
}

/// rrul's warnings: lost probes, no one-way delays.
pub(crate) fn rrul(phases: &[crate::rrul::Phase], clock: Option<&crate::rrul::ClockInfo>) -> Vec<String> {
    let mut out = Vec::new();
    let lost: u64 = phases.iter().map(|p| p.probes_lost).sum();
    let sent: u64 = phases.iter().map(|p| p.probes_sent).sum();
    if sent > 0 && lost * 100 > sent {
        out.push(format!(
            "{lost} of {sent} latency probes were lost: the latency figures describe the probes that came back, and a queue that drops probes hides its worst delays"
        ));
    }
    if clock.is_some_and(|c| c.method == "none") {
        out.push("no probe came back with the responder's stamps: no one-way delays".into());
    }
    out
}

/// ping's warnings: two levels, the timestamp split, a schedule the
/// client could not keep.
pub(crate) fn ping(params: &crate::ping::PingParams, results: &[crate::ping::PingResult], why: &str) -> Vec<String> {
    let mut out = Vec::new();
    for r in results {
        out.extend(levels("rtt".into(), r.levels, why));
        out.extend(split_warning("", r.timestamps.as_ref(), r.split_us.as_ref()));
        if params.interval_us > 0 && r.max_send_lag_us > params.interval_us as f64 {
            out.push(format!(
                "the client fell behind its schedule (a datagram left up to {:.0} us after its due time, more than the {} us interval)",
                r.max_send_lag_us, params.interval_us
            ));
        }
    }
    out
}

/// An open-loop rr row whose client fell behind its schedule.
fn behind_schedule(name: &str, r: &crate::rr::RrResult) -> Option<String> {
    let (req, got) = (r.requested_rate?, r.achieved_rate?);
    let late = r.late_sends.unwrap_or(0);
    if got >= 0.99 * req && late * 100 <= r.samples {
        return None;
    }
    let lag = r
        .send_lag_us
        .map(|l| format!(", send lag p99 {:.0} us, max {:.0} us", l.p99, l.max))
        .unwrap_or_default();
    let lower = if got < 0.99 * req {
        " and the load was lower than asked"
    } else {
        ""
    };
    Some(format!(
        "{name}: the client fell behind its schedule (requested {req:.0}/s, achieved {got:.0}/s; {late} of {} requests left more than one per-connection interval late{lag}): the latencies include that lag{lower}",
        r.samples
    ))
}

/// What a reader must know about a udp-max search: short sends, queues
/// that held datagrams, final trials that failed, no convergence.
pub(crate) fn udp_max(r: &crate::udp_max::UdpMaxResult) -> Vec<String> {
    let mut out = Vec::new();
    let short = r
        .trials
        .iter()
        .filter(|t| !t.warmup && t.achieved_pps < crate::udp_max::SHORT_SEND * t.offered_pps)
        .count();
    if short > 0 {
        out.push(format!(
            "{short} trial(s) could not send their load (the client was busy, or a full socket buffer held it back) and counted as failing: the answer is a lower bound of what the target forwards; run with the client pinned and nothing else on its CPU"
        ));
    }
    // Datagrams that arrived only after the sending stopped sat
    // in a queue: a passing short trial may owe its pass to it.
    let held: Vec<f64> = r
        .trials
        .iter()
        .filter(|t| !t.warmup && !t.final_trial && t.sent > 0)
        .filter_map(|t| t.drained.map(|d| d as f64 / t.sent as f64))
        .filter(|share| *share > LATE_SHARE)
        .collect();
    if !held.is_empty() {
        let most = held.iter().fold(0.0f64, |m, s| m.max(*s));
        out.push(format!(
            "in {} trial(s) more than {:.1}% of the datagrams arrived only after sending had stopped (up to {:.1}%): a queue on the path held them, and a queue can make a short trial pass a load the link cannot carry; the final trial (--final-trial) is what confirms the answer",
            held.len(),
            100.0 * LATE_SHARE,
            100.0 * most
        ));
    }
    let failed: Vec<&crate::udp_max::Trial> = r
        .trials
        .iter()
        .filter(|t| t.final_trial && t.loss > r.loss_goal)
        .collect();
    if let Some(t) = failed.first() {
        out.push(format!(
            "{} final trial(s) of {:.0} s lost more than the goal where shorter trials had passed (the first at {:.2} kpps lost {:.3}%): loss appeared only late, as a queue filled; the search went on below",
            failed.len(),
            t.duration_s,
            t.offered_pps / 1e3,
            100.0 * t.loss
        ));
    }
    if !r.converged {
        out.push(format!(
            "the search did not reach its width goal: the answer lies between {:.2} kpps and {} kpps; give it more time (--max-trials) or a wider --width",
            r.lower_kpps,
            r.upper_kpps.map(|u| format!("{u:.2}")).unwrap_or_else(|| "?".into())
        ));
    }
    out
}

/// What a reader must know about a row's timestamp split.
fn split_warning(
    name: &str,
    ts: Option<&crate::split::Timestamps>,
    s: Option<&crate::split::SplitUs>,
) -> Option<String> {
    let ts = ts?;
    let Some(s) = s else {
        return Some(format!(
            "{name}timestamps were asked for, but the responder wrote no stamps (mode none): it does not know the flag or has no kernel timestamps, so there is no split"
        ));
    };
    if s.negative > 0 || s.unbalanced > 0 {
        let why = if ts.clock == "estimate" {
            "the clock offset is an estimate; a part below it reads negative"
        } else {
            "the stamps disagree with the timer: a clock was stepped, or the clocks are not the same"
        };
        return Some(format!(
            "{name}{} of {} exchanges have a negative part and {} do not add up to their RTT: {why}",
            s.negative, s.samples, s.unbalanced
        ));
    }
    None
}

/// Share of a trial's datagrams arriving after its sending stopped above
/// which a queue on the path is named.
const LATE_SHARE: f64 = 0.005;

pub(crate) fn stream(p: &crate::stream::StreamParams, s: Option<&crate::stream::StreamSummary>) -> Vec<String> {
    let mut out = Vec::new();
    let Some(s) = s else { return out };
    if let (Some(u), Some(want)) = (&s.udp, p.rate_pps) {
        let offered = u.sent_datagrams as f64 / (s.duration_s.max(1e-9));
        if offered < 0.95 * want {
            out.push(format!(
                "the client offered {offered:.0} datagrams/s, below the {want:.0}/s asked for: the client (or its socket buffer) was the limit, not the target"
            ));
        }
    }
    out
}

/// True when the measuring thread was pinned and so was the responder (as
/// far as stackmeter knows: an external responder's placement is its own).
fn pinned(doc: &Document) -> bool {
    doc.placement.client_cpu.is_some() && (doc.placement.responder_cpu.is_some() || !doc.target.embedded)
}

#[cfg(test)]
mod tests {
    use crate::*;

    fn ping_doc(lag: f64, levels: Option<Levels>, client_cpu: Option<usize>) -> Document {
        Document {
            schema: SCHEMA.into(),
            target: Target {
                name: "embedded".into(),
                address: "127.0.0.1:1".into(),
                embedded: true,
                kind: TargetKind::Stackmeter,
            },
            body: Body::Ping(crate::PingBody {
                params: PingParams {
                    size: 64,
                    count: 1,
                    warmup: 0,
                    interval_us: 100,
                    slow_us: 1000,
                    timeout_ms: 1000,
                    echo: false,
                    timestamps: None,
                },
                results: vec![PingResult {
                    sent: 1,
                    received: 1,
                    max_send_lag_us: lag,
                    levels,
                    ..PingResult::empty(64)
                }],
            }),
            placement: Placement {
                client_cpu,
                responder_cpu: client_cpu,
            },
            knobs: Default::default(),
            env: Env::default(),
            complete: true,
            error: None,
            warnings: vec![],
            not_measured: vec![],
        }
    }

    #[test]
    fn lag_beyond_the_interval_is_a_warning() {
        assert!(super::derive(&ping_doc(50.0, None, None)).is_empty());
        let w = super::derive(&ping_doc(150.0, None, None));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("fell behind") && w[0].contains("150 us"), "{w:?}");
    }

    #[test]
    fn two_levels_name_the_likely_cause() {
        let l = Some(Levels {
            low_us: 3.5,
            high_us: 6.5,
            low_share: 0.6,
        });
        let unpinned = super::derive(&ping_doc(0.0, l, None));
        assert!(unpinned[0].contains("shared a CPU"), "{unpinned:?}");
        let pinned = super::derive(&ping_doc(0.0, l, Some(1)));
        assert!(pinned[0].contains("both sides were pinned"), "{pinned:?}");
    }
}
