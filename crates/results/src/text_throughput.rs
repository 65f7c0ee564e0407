//! Text rendering of the throughput tests: seed 001's per-second table
//! (total, sent and received, each in Mbit/s and kpps), its summary, and
//! the udp-max answer with every trial.
//!
//! `stream` prints its interval lines while the test runs; the full text is
//! [`stream_head`] + one [`interval_line`] per interval + [`stream_tail`],
//! so a stored run re-renders exactly as it was printed.

use crate::{Body, Document, Interval, StreamParams, StreamSummary, UdpMaxParams, UdpMaxResult};
use std::fmt::Write;

/// The lines printed before the first interval.
pub fn stream_head(first_line: &str, p: &StreamParams) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{first_line}");
    let what = if p.udp {
        format!(
            "UDP, {} datagrams of {} bytes offered at {} ({:.0} datagrams/s)",
            p.direction.name(),
            p.length,
            p.rate.as_deref().unwrap_or("?"),
            p.rate_pps.unwrap_or(0.0)
        )
    } else {
        format!(
            "TCP {}, {} connection(s) per direction, {}-byte writes{}{}",
            p.direction.name(),
            p.parallel,
            p.length,
            if p.nodelay { ", TCP_NODELAY" } else { "" },
            if p.zerocopy { ", MSG_ZEROCOPY" } else { "" }
        )
    };
    let _ = writeln!(
        o,
        "{what}; {} s measured after {} s omitted, {} s intervals",
        p.time_s, p.omit_s, p.interval_s
    );
    let _ = writeln!(
        o,
        "sent = client to target, counted by the target; received = target to client, counted by the client; kpps = thousands of {}-byte messages/s\n",
        p.length
    );
    if p.udp {
        let _ = writeln!(
            o,
            "   interval s   sent Mbps    kpps     recv Mbps    kpps    total Mbps    kpps     lost/sent  loss %  jitter us"
        );
    } else {
        let _ = writeln!(
            o,
            "   interval s   sent Mbps    kpps     recv Mbps    kpps    total Mbps    kpps   retr  cwnd KiB   rtt us"
        );
    }
    o
}

/// One interval row, newline included.
pub fn interval_line(i: &Interval) -> String {
    let mut o = format!(
        " {:>5.1}-{:<5.1} {:>11.2} {:>7.1} {:>13.2} {:>7.1} {:>13.2} {:>7.1}",
        i.start_s, i.end_s, i.sent_mbps, i.sent_kpps, i.recv_mbps, i.recv_kpps, i.total_mbps, i.total_kpps
    );
    if let Some(u) = &i.udp {
        let _ = write!(
            o,
            " {:>13} {:>7.3} {:>10.1}",
            format!("{}/{}", u.lost, u.sent_datagrams),
            100.0 * u.loss_ratio,
            u.jitter_us
        );
    } else {
        let opt = |v: Option<f64>, w: usize, prec: usize| match v {
            Some(v) => format!("{v:>w$.prec$}"),
            None => format!("{:>w$}", "-"),
        };
        let _ = write!(
            o,
            " {} {} {}",
            opt(i.retransmits.map(|r| r as f64), 6, 0),
            opt(i.cwnd_kib, 9, 1),
            opt(i.rtt_us, 8, 0)
        );
    }
    if i.omitted {
        o.push_str("  (omitted)");
    }
    o.push('\n');
    o
}

/// The summary printed after the last interval.
pub fn stream_tail(p: &StreamParams, s: Option<&StreamSummary>) -> String {
    let mut o = String::new();
    let Some(s) = s else { return o };
    let _ = writeln!(
        o,
        " {:>5.1}-{:<5.1} {:>11.2} {:>7.1} {:>13.2} {:>7.1} {:>13.2} {:>7.1}  summary",
        p.omit_s,
        p.omit_s + s.duration_s,
        s.sent_mbps,
        s.sent_kpps,
        s.recv_mbps,
        s.recv_kpps,
        s.total_mbps,
        s.total_kpps
    );
    let sp = s.interval_total_mbps;
    let _ = writeln!(
        o,
        "\n total Mbit/s per interval: min {:.2}, median {:.2}, max {:.2}",
        sp.min, sp.median, sp.max
    );
    let _ = writeln!(
        o,
        " received in the window: sent {} bytes (by the target), received {} bytes (by the client)",
        s.sent_bytes, s.recv_bytes
    );
    let sb = &s.senders;
    if p.direction.up() {
        let _ = writeln!(
            o,
            " client to target: the client's send calls accepted {} bytes in the window, the target received {}; {} arrived by the end of the drain (the rest of the difference was in flight)",
            sb.client_sent_bytes, s.sent_bytes, sb.drained_sent_bytes
        );
    }
    if p.direction.down() {
        let _ = writeln!(
            o,
            " target to client: the target's send calls accepted {} bytes in the window, the client received {}; {} by the end of the drain",
            sb.target_sent_bytes, s.recv_bytes, sb.drained_recv_bytes
        );
    }
    if let Some(r) = s.retransmits {
        let _ = writeln!(o, " TCP retransmits in the window: {r}");
    }
    if let Some(u) = &s.udp {
        let _ = writeln!(
            o,
            " UDP: sent {}, received {}, lost {} ({:.3}%), duplicates {}, reordered {}, jitter {:.1} us (target's counters, after draining)",
            u.sent_datagrams,
            u.received_datagrams,
            u.lost,
            100.0 * u.loss_ratio,
            u.duplicates,
            u.reordered,
            u.jitter_us
        );
    }
    if let Some(z) = &s.zerocopy {
        let _ = writeln!(
            o,
            " MSG_ZEROCOPY: {} sends completed, {} of them copied by the kernel after all{}",
            z.completed,
            z.copied,
            if z.completed > 0 && z.copied == z.completed {
                " (loopback and veth always copy; zero copy needs a real NIC)"
            } else {
                ""
            }
        );
    }
    let c = &s.cpu.client;
    let _ = write!(
        o,
        " CPU: client {:.2} s user + {:.2} s sys ({:.0}% of one core)",
        c.user_s, c.sys_s, c.percent_of_core
    );
    match &s.cpu.responder {
        Some(r) => {
            let _ = writeln!(
                o,
                ", responder process {:.2} s user + {:.2} s sys ({:.0}% of one core)",
                r.user_s, r.sys_s, r.percent_of_core
            );
        }
        None => {
            let _ = writeln!(o, ", responder not reported");
        }
    }
    o
}

/// The udp-max answer and its trials.
pub fn udp_max(first_line: &str, p: &UdpMaxParams, r: Option<&UdpMaxResult>) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{first_line}");
    let _ = writeln!(
        o,
        "highest UDP rate with loss <= {}%, {}-byte datagrams; MLRsearch-style: {} s trials, {} s per load, exceed ratio {}, width {}%\n",
        100.0 * p.loss_goal,
        p.length,
        p.trial_s,
        p.duration_sum_s,
        p.exceed_ratio,
        100.0 * p.width
    );
    let Some(r) = r else { return o };
    let _ = writeln!(
        o,
        "   trial  offered kpps  duration s         sent     received    loss %"
    );
    for (n, t) in r.trials.iter().enumerate() {
        let _ = writeln!(
            o,
            " {:>7} {:>13.2} {:>10.2} {:>11.2} {:>12} {:>12} {:>9.4}{}",
            n,
            t.offered_pps / 1000.0,
            t.achieved_pps / 1000.0,
            t.duration_s,
            t.sent,
            t.received,
            100.0 * t.loss,
            if t.warmup {
                "  (warm-up, not counted)"
            } else if t.achieved_pps < crate::SHORT_SEND * t.offered_pps {
                "  (sender held back: fails)"
            } else {
                ""
            }
        );
    }
    let upper = r
        .upper_kpps
        .map(|u| format!("{u:.2} kpps"))
        .unwrap_or_else(|| "none (the highest load passed)".into());
    let _ = writeln!(
        o,
        "\n result: {:.2} kpps = {:.2} Mbit/s UDP payload = {:.2} Mbit/s as Ethernet frames (+{} bytes: UDP, IP, Ethernet header) = {:.2} Mbit/s of line rate (+24: FCS, preamble, gap)",
        r.rate_kpps, r.rate_mbps, r.wire_mbps, r.overhead_bytes, r.line_mbps
    );
    let _ = writeln!(
        o,
        " bounds: lower {:.2} kpps, upper {upper}; conditional throughput {:.2} kpps{}",
        r.lower_kpps,
        r.conditional_kpps,
        if r.converged { "" } else { "; width goal NOT reached" }
    );
    o
}

/// The whole text of a throughput document (without warnings and error,
/// which the caller appends as for every test).
pub(crate) fn body(first_line: &str, doc: &Document) -> Option<String> {
    match &doc.body {
        Body::Stream {
            params,
            intervals,
            summary,
        } => {
            let mut o = stream_head(first_line, params);
            for i in intervals {
                o.push_str(&interval_line(i));
            }
            o.push_str(&stream_tail(params, summary.as_deref()));
            Some(o)
        }
        Body::UdpMax { params, result } => Some(udp_max(first_line, params, result.as_ref())),
        _ => None,
    }
}
