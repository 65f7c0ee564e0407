//! udp-max's view: the live table of trials and the rate found.
use stackmeter_results::Trial;
use stackmeter_results::UdpMaxParams;
use stackmeter_results::UdpMaxResult;
use stackmeter_results::SHORT_SEND;

use crate::units::{bit_rate, packet_rate, Units};
use crate::view::{Block, Col, Table, View};

/// One trial's cells (also printed live, one line as each ends).
pub fn trial_cells(n: usize, t: &Trial) -> Vec<String> {
    vec![
        n.to_string(),
        packet_rate(t.offered_pps),
        packet_rate(t.achieved_pps),
        format!("{:.2}", t.duration_s),
        t.sent.to_string(),
        t.received.to_string(),
        format!("{:.4}", 100.0 * t.loss),
        if t.warmup {
            "(warm-up, not counted)".into()
        } else if t.final_trial {
            "(final trial at the answer)".into()
        } else if t.achieved_pps < SHORT_SEND * t.offered_pps {
            "(sender held back: fails)".into()
        } else {
            String::new()
        },
    ]
}

/// udp-max's blocks below the title.
pub(crate) fn view(v: &mut View, p: &UdpMaxParams, r: Option<&UdpMaxResult>, u: Units) -> Vec<u64> {
    v.line(format!(
        "highest UDP rate with loss <= {}%, {}-byte datagrams; MLRsearch-style: {} s trials, {} s per load, exceed ratio {}, width {}%{}",
        100.0 * p.loss_goal,
        p.length,
        p.trial_s,
        p.duration_sum_s,
        p.exceed_ratio,
        100.0 * p.width,
        match p.final_trial_s > 0.0 {
            true => format!(", final trial {} s", p.final_trial_s),
            false => String::new(),
        }
    ));
    v.blank();
    v.push(Block::Table(Table {
        cols: vec![
            Col::num("trial", 5),
            Col::num("offered", 11),
            Col::num("achieved", 11),
            Col::num("duration s", 10),
            Col::num("sent", 10),
            Col::num("received", 10),
            Col::num("loss %", 8),
            Col::text("", 0),
        ],
        rows: r
            .map(|r| r.trials.iter().enumerate().map(|(n, t)| trial_cells(n, t)).collect())
            .unwrap_or_default(),
        live: true,
        ..Table::default()
    }));
    let Some(r) = r else { return Vec::new() };
    let upper = r
        .upper_kpps
        .map(|k| packet_rate(k * 1e3))
        .unwrap_or_else(|| "none (the highest load passed)".into());
    v.blank();
    v.line(format!(
        " result: {} = {} UDP payload = {} as Ethernet frames (+{} bytes: UDP, IP, Ethernet header) = {} of line rate (+24: FCS, preamble, gap)",
        packet_rate(r.rate_kpps * 1e3),
        bit_rate(r.rate_mbps, u),
        bit_rate(r.wire_mbps, u),
        r.overhead_bytes,
        bit_rate(r.line_mbps, u)
    ));
    v.line(format!(
        " bounds: lower {}, upper {upper}; conditional throughput {}{}",
        packet_rate(r.lower_kpps * 1e3),
        packet_rate(r.conditional_kpps * 1e3),
        if r.converged { "" } else { "; width goal NOT reached" }
    ));
    Vec::new()
}

impl crate::views::TestView for stackmeter_results::UdpMaxBody {
    fn view(&self, v: &mut View, units: Units) -> Vec<u64> {
        view(v, &self.params, self.result.as_ref(), units)
    }
}
