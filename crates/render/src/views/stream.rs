//! stream's view: the live table of intervals (sent, received, total; TCP_INFO)
//! and the summary that says how client and target counts agree.
use stackmeter_results::Interval;
use stackmeter_results::StreamParams;
use stackmeter_results::StreamSummary;

use crate::units::{bit_rate, message_rate, packet_rate, Units};
use crate::view::{Block, Col, Table, View};

/// The columns of the interval table: TCP ones, or UDP ones.
fn interval_cols(udp: bool, plain: bool) -> Vec<Col> {
    let mut c = vec![
        Col::text("interval s", 11),
        Col::num("sent", 14),
        Col::num("sent msgs", 11),
        Col::num("received", 14),
        Col::num("recv msgs", 11),
        Col::num("total", 14),
        Col::num("total msgs", 11),
    ];
    if udp {
        c.extend([
            Col::num("lost/sent", 13),
            Col::num("loss %", 7),
            Col::num("jitter us", 9),
        ]);
    } else {
        c.extend([Col::num("retr", 6), Col::num("cwnd KiB", 8), Col::num("rtt us", 8)]);
    }
    if plain {
        c.push(Col::num("acked", 14));
    }
    c.push(Col::text("", 0));
    c
}

/// The rate cells of a row: bits and messages per second, each way and
/// in total; UDP's messages are datagrams (pps), TCP's are writes (msg/s:
/// TCP segments do not follow them one for one).
fn rate_cells(mbps: [f64; 3], kpps: [f64; 3], udp: bool, u: Units) -> Vec<String> {
    let per = |k: f64| match udp {
        true => packet_rate(k * 1e3),
        false => message_rate(k * 1e3),
    };
    mbps.iter()
        .zip(kpps)
        .flat_map(|(&m, k)| [bit_rate(m, u), per(k)])
        .collect()
}

/// One interval's cells (also printed live, one line as each ends).
pub fn interval_cells(i: &Interval, u: Units) -> Vec<String> {
    let mut c = vec![format!("{:.1}-{:.1}", i.start_s, i.end_s)];
    c.extend(rate_cells(
        [i.sent_mbps, i.recv_mbps, i.total_mbps],
        [i.sent_kpps, i.recv_kpps, i.total_kpps],
        i.udp.is_some(),
        u,
    ));
    match &i.udp {
        Some(u) => c.extend([
            format!("{}/{}", u.lost, u.sent_datagrams),
            format!("{:.3}", 100.0 * u.loss_ratio),
            format!("{:.1}", u.jitter_us),
        ]),
        None => {
            let opt = |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |v| format!("{v:.prec$}"));
            c.extend([
                opt(i.retransmits.map(|r| r as f64), 0),
                opt(i.cwnd_kib, 1),
                opt(i.rtt_us, 0),
            ]);
        }
    }
    if let Some(a) = i.acked_mbps {
        c.push(bit_rate(a, u));
    }
    c.push(if i.omitted { "(omitted)".into() } else { String::new() });
    c
}

/// stream's blocks below the title.
pub(crate) fn view(
    v: &mut View,
    p: &StreamParams,
    intervals: &[Interval],
    s: Option<&StreamSummary>,
    u: Units,
) -> Vec<u64> {
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
    v.line(format!(
        "{what}; {} s measured after {} s omitted, {} s intervals",
        p.time_s, p.omit_s, p.interval_s
    ));
    if p.plain() && p.udp {
        v.line(format!(
            "plain iperf 2 server, iperf 2's datagram header (no control session): sent = the client's send calls; the server reports once, at the end, so loss and jitter show in the summary only (its report, over the whole test); msgs = {}-byte datagrams per second",
            p.length
        ));
    } else if p.plain() {
        v.line(format!(
            "plain {} (no control session): sent = the client's send calls (the sender's view); acked = what the target's TCP acknowledged (TCP_INFO), the closest figure to what it received; msgs = {}-byte messages per second",
            if p.iperf2 { "iperf 2 server, each connection opened with iperf 2's settings header" } else { "discard server" },
            p.length
        ));
    } else {
        v.line(format!(
            "sent = client to target, counted by the target; received = target to client, counted by the client; msgs = {}-byte messages per second",
            p.length
        ));
    }
    v.blank();
    let mut table = Table {
        cols: interval_cols(p.udp, p.plain() && !p.udp),
        rows: intervals.iter().map(|i| interval_cells(i, u)).collect(),
        live: true,
        ..Table::default()
    };
    if let Some(s) = s {
        let mut row = vec![format!("{:.1}-{:.1}", p.omit_s, p.omit_s + s.duration_s)];
        row.extend(rate_cells(
            [s.sent_mbps, s.recv_mbps, s.total_mbps],
            [s.sent_kpps, s.recv_kpps, s.total_kpps],
            p.udp,
            u,
        ));
        row.extend([String::new(), String::new(), String::new()]);
        if let Some(a) = s.acked_mbps {
            row.push(bit_rate(a, u));
        }
        row.push("summary".into());
        table.footer.push(row);
    }
    v.push(Block::Table(table));
    if let Some(s) = s {
        summary(v, p, s, u);
    }
    Vec::new()
}

fn summary(v: &mut View, p: &StreamParams, s: &StreamSummary, u: Units) {
    let sp = s.interval_total_mbps;
    v.blank();
    v.line(format!(
        " total per interval: min {}, median {}, max {}",
        bit_rate(sp.min, u),
        bit_rate(sp.median, u),
        bit_rate(sp.max, u)
    ));
    if !p.plain() {
        v.line(format!(
            " received in the window: sent {} bytes (by the target), received {} bytes (by the client)",
            s.sent_bytes, s.recv_bytes
        ));
    }
    let sb = &s.senders;
    if p.plain() && p.udp {
        let report = match s.udp {
            Some(_) => format!(
                "the iperf 2 server's report counts {} bytes received over the whole test",
                sb.drained_sent_bytes
            ),
            None => "the iperf 2 server sent no report".into(),
        };
        v.line(format!(
            " client to target: the client's send calls accepted {} bytes in the window; {report}",
            sb.client_sent_bytes
        ));
    } else if p.plain() {
        v.line(format!(
            " client to target: the client's send calls accepted {} bytes in the window, the target's TCP acknowledged {}; {} by the end of the drain",
            sb.client_sent_bytes,
            s.acked_bytes.map_or("?".to_string(), |a| a.to_string()),
            sb.drained_sent_bytes
        ));
    } else if p.direction.up() {
        v.line(format!(
            " client to target: the client's send calls accepted {} bytes in the window, the target received {}; {} arrived by the end of the drain (the rest of the difference was in flight)",
            sb.client_sent_bytes, s.sent_bytes, sb.drained_sent_bytes
        ));
    }
    if p.direction.down() {
        v.line(format!(
            " target to client: the target's send calls accepted {} bytes in the window, the client received {}; {} by the end of the drain",
            sb.target_sent_bytes, s.recv_bytes, sb.drained_recv_bytes
        ));
    }
    if let Some(r) = s.retransmits {
        v.line(format!(" TCP retransmits in the window: {r}"));
    }
    if let Some(u) = &s.udp {
        v.line(format!(
            " UDP: sent {}, received {}, lost {} ({:.3}%), duplicates {}, reordered {}, jitter {:.1} us ({})",
            u.sent_datagrams,
            u.received_datagrams,
            u.lost,
            100.0 * u.loss_ratio,
            u.duplicates,
            u.reordered,
            u.jitter_us,
            match p.plain() {
                true => "the iperf 2 server's report, over the whole test; it counts no duplicates",
                false => "target's counters, after draining",
            }
        ));
    }
    if let Some(z) = &s.zerocopy {
        v.line(format!(
            " MSG_ZEROCOPY: {} sends completed, {} of them copied by the kernel after all{}",
            z.completed,
            z.copied,
            if z.completed > 0 && z.copied == z.completed {
                " (loopback and veth always copy; zero copy needs a real NIC)"
            } else {
                ""
            }
        ));
    }
    let c = &s.cpu.client;
    let responder = match &s.cpu.responder {
        Some(r) => format!(
            ", responder process {:.2} s user + {:.2} s sys ({:.0}% of one core)",
            r.user_s, r.sys_s, r.percent_of_core
        ),
        None => ", responder not reported".into(),
    };
    v.line(format!(
        " CPU: client {:.2} s user + {:.2} s sys ({:.0}% of one core){responder}",
        c.user_s, c.sys_s, c.percent_of_core
    ));
}

impl crate::views::TestView for stackmeter_results::StreamBody {
    fn view(&self, v: &mut View, units: Units) -> Vec<u64> {
        view(v, &self.params, &self.intervals, self.summary.as_deref(), units)
    }
}
