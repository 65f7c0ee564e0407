//! The human-readable rendering: one table per test, seed 000 style.

use crate::{format_size, Body, Document, LatencyUs};
use std::fmt::Write;

pub(crate) const LAT_HEAD: &str = "     min     mean      p50      p90      p99    p99.9      max   stddev";

/// Renders `doc` as the terminal text the measuring command prints.
pub fn text(doc: &Document) -> String {
    let mut o = String::new();
    let first = first_line(doc);
    if let Some(body) = crate::text_throughput::body(&first, doc) {
        o.push_str(&body);
        trailer(&mut o, doc);
        return o;
    }
    let _ = writeln!(o, "{first}");
    let mut counts = Vec::new();
    match &doc.body {
        Body::Rr { params, results } => {
            if let Some(ol) = &params.open_loop {
                let _ = writeln!(
                    o,
                    "open loop: {:.0} requests/s over {} connection(s) for {} s ({} arrivals), {} warm-up transactions per connection, TCP_NODELAY; RTT in microseconds from each request's scheduled send time to the last response byte received\n",
                    ol.rate, ol.connections, ol.time_s, ol.arrival, params.warmup
                );
            } else {
                let _ = writeln!(
                    o,
                    "{} timed + {} warm-up transactions per size, TCP_NODELAY; RTT in microseconds from the first request byte handed to the kernel to the last response byte received\n",
                    params.iterations, params.warmup
                );
            }
            let _ = writeln!(o, " request  response  samples{LAT_HEAD}        tps");
            for r in results {
                let _ = writeln!(
                    o,
                    "{:>8}  {:>8}  {:>7}{}  {:>9.0}",
                    format_size(r.req_bytes as u64),
                    format_size(r.resp_bytes as u64),
                    r.samples,
                    lat(&r.rtt_us),
                    r.tps
                );
                counts.push(r.samples);
            }
            if params.open_loop.is_some() {
                let _ = writeln!(o);
                for r in results {
                    let lag = r
                        .send_lag_us
                        .map(|l| format!("send lag p99 {:.1} us, max {:.1} us", l.p99, l.max))
                        .unwrap_or_default();
                    let _ = writeln!(
                        o,
                        " {}:{}  requested {:.0}/s, achieved {:.0}/s; {lag}; {} late send(s)",
                        format_size(r.req_bytes as u64),
                        format_size(r.resp_bytes as u64),
                        r.requested_rate.unwrap_or(0.0),
                        r.achieved_rate.unwrap_or(0.0),
                        r.late_sends.unwrap_or(0)
                    );
                }
            }
        }
        Body::Crr { params, results } => {
            let _ = writeln!(
                o,
                "{} timed + {} warm-up connections, {} request, {} response; microseconds from the connect() call\n",
                params.iterations,
                params.warmup,
                format_size(params.req_bytes as u64),
                format_size(params.resp_bytes as u64)
            );
            let _ = writeln!(o, "                                  samples{LAT_HEAD}");
            for r in results {
                let _ = writeln!(
                    o,
                    " connect (to established)          {:>7}{}",
                    r.samples,
                    lat(&r.connect_us)
                );
                let _ = writeln!(
                    o,
                    " transaction (to close returned)   {:>7}{}",
                    r.samples,
                    lat(&r.transaction_us)
                );
                let _ = writeln!(o, "\n connections/s: {:.0}", r.cps);
                counts.push(r.samples);
            }
        }
        Body::Ping { params, results } => {
            let how = if params.interval_us == 0 {
                "back to back (one outstanding)".to_string()
            } else {
                format!("one every {} us", params.interval_us)
            };
            let _ = writeln!(
                o,
                "{}-byte UDP datagrams, {} timed + {} warm-up, {how}, lost after {} ms\n",
                params.size, params.count, params.warmup, params.timeout_ms
            );
            for r in results {
                let pct = if r.sent > 0 {
                    100.0 * r.lost as f64 / r.sent as f64
                } else {
                    0.0
                };
                let _ = writeln!(
                    o,
                    " sent {}, received {}, lost {} ({pct:.3}%), late {}, duplicates {}, reordered {}, mismatched {}, slow (> {} us) {}",
                    r.sent, r.received, r.lost, r.late, r.duplicates, r.reordered, r.mismatched, params.slow_us, r.slow
                );
                let _ = writeln!(o, "\n                          samples{LAT_HEAD}");
                if let Some(s) = &r.rtt_us {
                    let _ = writeln!(o, " round trip (us)           {:>7}{}", s.count, lat(s));
                    counts.push(s.count);
                }
                if let Some(s) = &r.server_us {
                    let _ = writeln!(o, " inside responder (us)     {:>7}{}", s.count, lat(s));
                }
                let _ = writeln!(o, "\n replies/s: {:.0}", r.pps);
                for s in &r.slow_first {
                    let _ = writeln!(o, " slow answer #{}: {:.1} us", s.seq, s.rtt_us);
                }
                if r.slow > r.slow_first.len() as u64 {
                    let _ = writeln!(o, " ... and {} more slow answers", r.slow - r.slow_first.len() as u64);
                }
            }
        }
        Body::Load {
            params,
            results,
            summary,
        } => crate::load::text(&mut o, params, results, summary.as_ref(), &mut counts),
        Body::Stream { .. } | Body::UdpMax { .. } => {}
    }
    tail_note(&mut o, &counts);
    trailer(&mut o, doc);
    o
}

/// Warnings and the incomplete note, the same for every test.
pub fn trailer(o: &mut String, doc: &Document) {
    for w in &doc.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    if let Some(e) = &doc.error {
        let _ = writeln!(
            o,
            "incomplete: the test stopped early ({e}); the figures above cover what ran before that"
        );
    }
}

/// The first line of every test's text: test, target, placement.
pub fn first_line(doc: &Document) -> String {
    let target = if doc.target.embedded {
        format!("{} (embedded responder)", doc.target.address)
    } else if doc.target.name == doc.target.address {
        doc.target.address.clone()
    } else {
        format!("{} ({})", doc.target.name, doc.target.address)
    };
    format!("stackmeter {} -> {target}; {}", doc.body.test_name(), placement(doc))
}

fn placement(doc: &Document) -> String {
    let cpu = |c: Option<usize>| c.map(|c| format!("CPU {c}")).unwrap_or_else(|| "not pinned".into());
    let mut s = format!("client {}", cpu(doc.placement.client_cpu));
    if doc.target.embedded {
        let _ = write!(s, ", responder {}", cpu(doc.placement.responder_cpu));
    }
    s
}

/// A latency figure in a 9-character column, with precision to match.
fn num(v: f64) -> String {
    if v < 1_000.0 {
        format!("{v:>9.2}")
    } else if v < 100_000.0 {
        format!("{v:>9.1}")
    } else {
        format!("{v:>9.0}")
    }
}

pub(crate) fn lat(s: &LatencyUs) -> String {
    [s.min, s.mean, s.p50, s.p90, s.p99, s.p999, s.max, s.stddev]
        .iter()
        .map(|&v| num(v))
        .collect()
}

/// Says when a tail percentile rests on one or two samples (METHODS.md).
fn tail_note(o: &mut String, counts: &[u64]) {
    let Some(&n) = counts.iter().min() else { return };
    if n == 0 {
        return;
    }
    if n < 1000 {
        let beyond = |q: f64| ((1.0 - q) * n as f64).floor() as u64;
        let _ = writeln!(
            o,
            "\nnote: with {n} samples, p99.9 is the largest sample and p99 has {} sample(s) above it; use 1000+ samples before reading tails",
            beyond(0.99)
        );
    }
}
