//! rr's view: the round-trip table per size pair, the open-loop rates, the
//! timestamp split.
use stackmeter_results::RrParams;
use stackmeter_results::RrResult;

use crate::view::{Block, Col, Table, View};
use crate::views::latency::{latency_cells, latency_cols, tails};
use stackmeter_results::format_size;

/// rr's blocks below the title; returns the sample counts behind them.
pub(crate) fn view(v: &mut View, p: &RrParams, rows: &[RrResult]) -> Vec<u64> {
    if let Some(line) = plain_line(p.echo, p.raw, p.request_prefix.as_deref()) {
        v.line(line);
    }
    match &p.open_loop {
        Some(ol) => v.line(format!(
            "open loop: {:.0} requests/s over {} connection(s) for {} s ({} arrivals), {} warm-up transactions per connection, TCP_NODELAY; RTT in microseconds from each request's scheduled send time to the last response byte received",
            ol.rate, ol.connections, ol.time_s, ol.arrival, p.warmup
        )),
        None => v.line(format!(
            "{} timed + {} warm-up transactions per size, TCP_NODELAY; RTT in microseconds from the first request byte handed to the kernel to the last response byte received",
            p.iterations, p.warmup
        )),
    };
    v.blank();
    let mut cols = vec![Col::num("request", 7), Col::num("response", 8), Col::num("samples", 7)];
    let tails = tails(rows.iter().map(|r| &r.rtt_us));
    cols.extend(latency_cols(tails));
    cols.push(Col::num("tps", 8));
    let table_rows = rows
        .iter()
        .map(|r| {
            let mut c = vec![
                format_size(r.req_bytes as u64),
                format_size(r.resp_bytes as u64),
                r.samples.to_string(),
            ];
            c.extend(latency_cells(&r.rtt_us, tails));
            c.push(format!("{:.0}", r.tps));
            c
        })
        .collect();
    v.push(Block::Table(Table {
        cols,
        rows: table_rows,
        ..Table::default()
    }));
    if p.open_loop.is_some() {
        v.blank();
        for r in rows {
            let lag = r
                .send_lag_us
                .map(|l| format!("send lag p99 {:.1} us, max {:.1} us", l.p99, l.max))
                .unwrap_or_default();
            v.line(format!(
                " {}  requested {:.0}/s, achieved {:.0}/s; {lag}; {} late send(s)",
                r.pair().label(),
                r.requested_rate.unwrap_or(0.0),
                r.achieved_rate.unwrap_or(0.0),
                r.late_sends.unwrap_or(0)
            ));
        }
    }
    for r in rows {
        if let Some(ts) = &r.timestamps {
            crate::views::split::view(v, &format!("{}: ", r.pair().label()), ts, r.split_us.as_ref());
        }
        if let Some(l) = &r.layers {
            v.blank();
            v.line(format!(" {}:", r.pair().label()));
            crate::views::layers::view(v, l);
        }
    }
    rows.iter().map(|r| r.samples).collect()
}

/// What a plain rr or crr sends and reads, or `None` against a responder.
pub(crate) fn plain_line(echo: bool, raw: bool, prefix: Option<&str>) -> Option<String> {
    let prefix = prefix
        .map(|h| format!(", each request starting with the bytes {h} (hex)"))
        .unwrap_or_default();
    match (echo, raw) {
        (true, _) => Some(format!("plain TCP echo server: no session header, the response is the request{prefix}; the first warm-up reply is checked byte for byte")),
        (_, true) => Some(format!("plain TCP server with its own reply rule: no session header, REQ bytes sent and exactly RESP bytes read{prefix}")),
        _ => None,
    }
}

impl crate::views::TestView for stackmeter_results::RrBody {
    fn view(&self, v: &mut View, _units: crate::units::Units) -> Vec<u64> {
        view(v, &self.params, &self.results)
    }

    fn report_section(
        sources: &[stackmeter_results::ReportSource],
        _style: &crate::format::Style,
    ) -> Option<(&'static str, View)> {
        Some((
            "Transaction layer by layer (rr --layers)",
            crate::views::layers::report_section(sources, true),
        ))
    }
}
