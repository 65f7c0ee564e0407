//! load: many clients listing and fetching objects at once, every byte
//! checked (the proxy load). Its parameters, runs, summary and view.

use crate::figures::Figures;
use crate::latency::{latency_cells, latency_cols, tails, LatencyUs};
use crate::units::format_size;
use crate::units::{bit_rate, byte_rate, Units};
use crate::view::{Block, Col, Table, View};
use serde::{Deserialize, Serialize};
use stackmeter_stats::MeanCi;

/// load parameters.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadParams {
    /// Concurrent clients, one connection each.
    pub clients: u32,
    /// Times each client fetches every object per run.
    pub fetch_each: u32,
    /// Runs.
    pub repeat: u32,
    /// Bound on every network wait, milliseconds.
    pub timeout_ms: u64,
    /// The target's catalogue, as listed before the first run.
    pub objects: Vec<ObjectInfo>,
}

/// One object of the catalogue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ObjectInfo {
    /// Name (lossy UTF-8 if the name is not UTF-8).
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// How the client checks it: "pattern" (every byte against the object
    /// pattern) or "crc32" (the CRC-32 the catalogue gives).
    pub verify: String,
}

/// Latency of the fetches of one object.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ObjectLatency {
    /// Object name.
    pub name: String,
    /// Object size.
    pub size: u64,
    /// Request sent to last byte received and checked, microseconds.
    pub latency_us: Option<LatencyUs>,
}

/// One run: every client lists and fetches, all starting together.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(non_snake_case)]
pub struct LoadRun {
    /// Run number, from 1.
    pub run: u32,
    /// Start barrier released to the last client done, seconds.
    pub wall_s: f64,
    /// Object bytes received (FETCH bodies; LIST bodies are not counted).
    pub bytes: u64,
    /// Of those, bytes that passed verification.
    pub verified_bytes: u64,
    /// Failed requests: wrong bytes, an error response, or a connection
    /// that broke (which also ends that client's run).
    pub errors: u64,
    /// Requests completed (LIST and FETCH).
    pub requests: u64,
    /// bytes / wall_s / 1024 (K = 1024, as everywhere in stackmeter).
    pub rate_kBps: f64,
    /// bytes * 8 / wall_s / 1e6.
    pub rate_mbps: f64,
    /// requests / wall_s.
    pub requests_per_s: f64,
    /// Every FETCH, request sent to last byte received and checked.
    pub latency_us: Option<LatencyUs>,
    /// Every LIST.
    pub list_us: Option<LatencyUs>,
    /// FETCH latency per object, in catalogue order.
    pub by_object: Vec<ObjectLatency>,
    /// Clients that finished every request of the run.
    pub clients_completed: u32,
    /// The first error any client met, if any.
    pub first_error: Option<String>,
}

/// Across runs: means with 95% intervals, and latency of all runs merged.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(non_snake_case)]
pub struct LoadSummary {
    /// Wall time per run, seconds.
    pub wall_s: MeanCi,
    /// Aggregate rate, KiB/s (K = 1024; the key says kB for the first schema version).
    pub rate_kBps: MeanCi,
    /// Aggregate rate, Mbit/s.
    pub rate_mbps: MeanCi,
    /// Requests per second.
    pub requests_per_s: MeanCi,
    /// FETCH latency per object, every run's histograms merged.
    pub by_object: Vec<ObjectLatency>,
    /// Every FETCH of every run.
    pub latency_us: Option<LatencyUs>,
}

/// load's blocks below the title; returns the sample counts behind them.
pub(crate) fn view(v: &mut View, p: &LoadParams, runs: &[LoadRun], s: Option<&LoadSummary>, u: Units) -> Vec<u64> {
    let names: Vec<String> = p.objects.iter().map(|x| x.name.clone()).collect();
    v.line(format!(
        "{} clients, one connection each (opened before the start barrier); each lists, then fetches the {} objects {} time(s) ({}); {} run(s); every byte checked",
        p.clients,
        p.objects.len(),
        p.fetch_each,
        names.join(", "),
        p.repeat
    ));
    v.blank();
    let cols = vec![
        Col::num("run", 3),
        Col::num("wall s", 9),
        Col::num("bytes", 12),
        Col::num("verified", 12),
        Col::num("errors", 6),
        Col::num("requests", 8),
        Col::num("bytes/s", 12),
        Col::num("bits/s", 14),
        Col::num("req/s", 9),
    ];
    let rows = runs
        .iter()
        .map(|r| {
            vec![
                r.run.to_string(),
                format!("{:.3}", r.wall_s),
                r.bytes.to_string(),
                r.verified_bytes.to_string(),
                r.errors.to_string(),
                r.requests.to_string(),
                byte_rate(r.rate_kBps * 1024.0),
                bit_rate(r.rate_mbps, u),
                format!("{:.0}", r.requests_per_s),
            ]
        })
        .collect();
    v.push(Block::Table(Table {
        cols,
        rows,
        ..Table::default()
    }));
    let mut counts = Vec::new();
    if let Some(s) = s {
        // The mean and its interval, each written by `f` (with its unit).
        let iv = |i: &MeanCi, f: &dyn Fn(f64) -> String| {
            if i.n < 2 {
                format!("{} (one run: no interval)", f(i.mean))
            } else {
                format!("{} (95% CI {} .. {})", f(i.mean), f(i.low), f(i.high))
            }
        };
        v.blank();
        v.line(format!(" mean over {} run(s):", s.wall_s.n));
        v.line(format!("   wall time  {}", iv(&s.wall_s, &|x| format!("{x:.3} s"))));
        v.line(format!(
            "   rate       {}",
            iv(&s.rate_kBps, &|x| byte_rate(x * 1024.0))
        ));
        v.line(format!("   rate       {}", iv(&s.rate_mbps, &|x| bit_rate(x, u))));
        v.line(format!(
            "   requests   {}",
            iv(&s.requests_per_s, &|x| format!("{x:.0}/s"))
        ));
        v.blank();
        v.line(
            " per-request latency, all runs, microseconds from the request sent to the last byte received and checked",
        );
        let mut cols = vec![Col::text("object", 10), Col::num("size", 8), Col::num("samples", 7)];
        let tails = tails(s.by_object.iter().filter_map(|b| b.latency_us.as_ref()));
        cols.extend(latency_cols(tails));
        let mut table = Table {
            cols,
            ..Table::default()
        };
        for b in &s.by_object {
            if let Some(l) = &b.latency_us {
                let mut c = vec![clip(&b.name, 10), format_size(b.size), l.count.to_string()];
                c.extend(latency_cells(l, tails));
                table.rows.push(c);
                counts.push(l.count);
            }
        }
        v.push(Block::Table(table));
    }
    for r in runs {
        if let Some(e) = &r.first_error {
            v.line(format!(
                " run {}: {} of {} clients completed; first error: {e}",
                r.run, r.clients_completed, p.clients
            ));
        }
    }
    counts
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let t: String = s.chars().take(n - 1).collect();
        t + "~"
    }
}

/// load's figures, the proxy-load write-up's: the fetch latency of each
/// object by size, the total time and the transfer rate of each run.
pub(crate) fn figures(f: &mut Figures, runs: &[LoadRun]) {
    for (i, r) in runs.iter().enumerate() {
        for o in &r.by_object {
            if let Some(s) = &o.latency_us {
                f.latency(i, &format!("fetch {}", format_size(o.size)), "fetch", s, true);
            }
        }
        if let Some(s) = &r.latency_us {
            f.latency(i, "all fetches", "fetch", s, false);
        }
        f.rate(i, "all objects", "rate", "KiB/s", r.rate_kBps, true);
        f.rate(i, "all objects", "rate", "Mbit/s", r.rate_mbps, false);
        f.time(i, "total time", "wall", r.wall_s, true);
    }
}
