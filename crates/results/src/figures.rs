//! The figures of a document as a flat list: what the store indexes, what
//! `compare` sets side by side and what reports chart. One function per
//! test type maps its rows to figures, so a new test needs one arm here.

use crate::doc::{Body, Document};
use crate::latency::LatencyUs;
use crate::units::format_size;
use serde::{Deserialize, Serialize};

/// One number from one row of a document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Index of the row in the document's `results`.
    pub row: usize,
    /// The row as a reader names it ("1 B:1 KiB", "64 B").
    pub row_label: String,
    /// What was measured: "rtt", "connect", "transaction", "server", "rate".
    pub series: String,
    /// Which statistic: "mean", "p50", "p99", or "value" for rates and counts.
    pub stat: String,
    /// Unit of `value`: "us", "tps", "cps", "pps", "bit/s", "%".
    pub unit: String,
    /// The figure.
    pub value: f64,
    /// True for times and losses, false for rates.
    pub lower_is_better: bool,
    /// True for the figures `compare` sets side by side by default.
    pub compared: bool,
}

/// Every figure of `doc`, row by row.
pub fn figures(doc: &Document) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut lat = |row: usize, label: &str, series: &str, s: &LatencyUs, compared: bool| {
        for (stat, value) in [("mean", s.mean), ("p50", s.p50), ("p99", s.p99)] {
            out.push(Figure {
                row,
                row_label: label.to_string(),
                series: series.to_string(),
                stat: stat.to_string(),
                unit: "us".to_string(),
                value,
                lower_is_better: true,
                compared,
            });
        }
    };
    let mut rates = Vec::new();
    // Whole-run times (load's total time): after the latencies.
    let mut times = Vec::new();
    let mut rate = |row: usize, label: &str, unit: &str, value: f64, compared: bool| {
        rates.push(Figure {
            row,
            row_label: label.to_string(),
            series: "rate".to_string(),
            stat: "value".to_string(),
            unit: unit.to_string(),
            value,
            lower_is_better: false,
            compared,
        })
    };
    match &doc.body {
        Body::Rr { results, .. } => {
            for (i, r) in results.iter().enumerate() {
                let label = format!(
                    "{}:{}",
                    format_size(r.req_bytes as u64),
                    format_size(r.resp_bytes as u64)
                );
                lat(i, &label, "rtt", &r.rtt_us, true);
                rate(i, &label, "tps", r.tps, false);
            }
        }
        Body::Crr { results, .. } => {
            for (i, r) in results.iter().enumerate() {
                let label = format!(
                    "{}:{}",
                    format_size(r.req_bytes as u64),
                    format_size(r.resp_bytes as u64)
                );
                lat(i, &label, "connect", &r.connect_us, true);
                lat(i, &label, "transaction", &r.transaction_us, true);
                rate(i, &label, "cps", r.cps, true);
            }
        }
        Body::Ping { results, .. } => {
            for (i, r) in results.iter().enumerate() {
                let label = format_size(r.bytes as u64);
                if let Some(s) = &r.rtt_us {
                    lat(i, &label, "rtt", s, true);
                }
                if let Some(s) = &r.server_us {
                    lat(i, &label, "server", s, false);
                }
                rate(i, &label, "pps", r.pps, false);
            }
        }
        Body::Stream { params, summary, .. } => {
            if let Some(s) = summary {
                let label = format!("{} {}", params.direction.name(), format_size(params.length as u64));
                for (series, value, compared) in [
                    ("total", s.total_mbps, true),
                    ("sent", s.sent_mbps, false),
                    ("received", s.recv_mbps, false),
                ] {
                    rates.push(Figure {
                        row: 0,
                        row_label: label.clone(),
                        series: series.to_string(),
                        stat: "value".to_string(),
                        unit: "Mbit/s".to_string(),
                        value,
                        lower_is_better: false,
                        compared,
                    });
                }
            }
        }
        Body::Load { results, .. } => {
            // Seed 003's figures: total time and transfer rate of the run,
            // and beside them the fetch latency of each object by size.
            for (i, r) in results.iter().enumerate() {
                for o in &r.by_object {
                    if let Some(s) = &o.latency_us {
                        lat(i, &format!("fetch {}", format_size(o.size)), "fetch", s, true);
                    }
                }
                if let Some(s) = &r.latency_us {
                    lat(i, "all fetches", "fetch", s, false);
                }
                rate(i, "all objects", "KB/s", r.rate_kBps, true);
                rate(i, "all objects", "Mbit/s", r.rate_mbps, false);
                times.push(Figure {
                    row: i,
                    row_label: "total time".to_string(),
                    series: "wall".to_string(),
                    stat: "value".to_string(),
                    unit: "s".to_string(),
                    value: r.wall_s,
                    lower_is_better: true,
                    compared: true,
                });
            }
        }
        Body::UdpMax { params, result } => {
            if let Some(r) = result {
                rates.push(Figure {
                    row: 0,
                    row_label: format_size(params.length as u64),
                    series: "max-rate".to_string(),
                    stat: "value".to_string(),
                    unit: "kpps".to_string(),
                    value: r.rate_kpps,
                    lower_is_better: false,
                    compared: true,
                });
            }
        }
    }
    out.extend(times);
    out.extend(rates);
    out
}
