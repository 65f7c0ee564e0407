//! Result types of `stackmeter load` (many clients listing and fetching
//! objects, seed 003) and their text rendering.

use crate::{format_size, LatencyUs};
use serde::{Deserialize, Serialize};
use stackmeter_stats::Interval;
use std::fmt::Write;

/// load parameters.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ObjectLatency {
    /// Object name.
    pub name: String,
    /// Object size.
    pub size: u64,
    /// Request sent to last byte received and checked, microseconds.
    pub latency_us: Option<LatencyUs>,
}

/// One run: every client lists and fetches, all starting together.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
#[derive(Clone, Debug, Serialize, Deserialize)]
#[allow(non_snake_case)]
pub struct LoadSummary {
    /// Wall time per run, seconds.
    pub wall_s: Interval,
    /// Aggregate rate, KB/s (K = 1024).
    pub rate_kBps: Interval,
    /// Aggregate rate, Mbit/s.
    pub rate_mbps: Interval,
    /// Requests per second.
    pub requests_per_s: Interval,
    /// FETCH latency per object, every run's histograms merged.
    pub by_object: Vec<ObjectLatency>,
    /// Every FETCH of every run.
    pub latency_us: Option<LatencyUs>,
}

/// Renders the load body as text (after the common first line).
pub(crate) fn text(o: &mut String, p: &LoadParams, runs: &[LoadRun], s: Option<&LoadSummary>, counts: &mut Vec<u64>) {
    let names: Vec<String> = p.objects.iter().map(|x| x.name.clone()).collect();
    let _ = writeln!(
        o,
        "{} clients, one connection each (opened before the start barrier); each lists, then fetches the {} objects {} time(s) ({}); {} run(s); every byte checked\n",
        p.clients,
        p.objects.len(),
        p.fetch_each,
        names.join(", "),
        p.repeat
    );
    let _ = writeln!(
        o,
        " run     wall s          bytes       verified  errors  requests        KB/s     Mbit/s      req/s"
    );
    for r in runs {
        let _ = writeln!(
            o,
            " {:>3} {:>10.3} {:>14} {:>14} {:>7} {:>9} {:>11.0} {:>10.1} {:>10.0}",
            r.run,
            r.wall_s,
            r.bytes,
            r.verified_bytes,
            r.errors,
            r.requests,
            r.rate_kBps,
            r.rate_mbps,
            r.requests_per_s
        );
    }
    if let Some(s) = s {
        let iv = |i: &Interval, prec: usize| {
            if i.n < 2 {
                format!("{:.*} (one run: no interval)", prec, i.mean)
            } else {
                format!("{:.*} (95% CI {:.*} .. {:.*})", prec, i.mean, prec, i.low, prec, i.high)
            }
        };
        let _ = writeln!(o, "\n mean over {} run(s):", s.wall_s.n);
        let _ = writeln!(o, "   wall time  {} s", iv(&s.wall_s, 3));
        let _ = writeln!(o, "   rate       {} KB/s", iv(&s.rate_kBps, 0));
        let _ = writeln!(o, "   rate       {} Mbit/s", iv(&s.rate_mbps, 1));
        let _ = writeln!(o, "   requests   {} /s", iv(&s.requests_per_s, 0));
        let _ = writeln!(
            o,
            "\n per-request latency, all runs, microseconds from the request sent to the last byte received and checked\n object        size  samples{}",
            crate::text::LAT_HEAD
        );
        for b in &s.by_object {
            if let Some(l) = &b.latency_us {
                let _ = writeln!(
                    o,
                    " {:<10} {:>8} {:>8}{}",
                    clip(&b.name, 10),
                    format_size(b.size),
                    l.count,
                    crate::text::lat(l)
                );
                counts.push(l.count);
            }
        }
    }
    for r in runs {
        if let Some(e) = &r.first_error {
            let _ = writeln!(
                o,
                " run {}: {} of {} clients completed; first error: {e}",
                r.run, r.clients_completed, p.clients
            );
        }
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let t: String = s.chars().take(n - 1).collect();
        t + "~"
    }
}
