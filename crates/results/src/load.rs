//! load: many clients listing and fetching objects at once, every byte
//! checked (the proxy load). Its parameters, runs, summary and view.

use crate::figures::Figures;
use crate::label::format_size;
use crate::latency::LatencyUs;
use serde::{Deserialize, Serialize};
use stackmeter_recorder::MeanCi;

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
    /// What the process listening on the target's address used over the
    /// run, when it runs on this host (a proxy under test, or `serve`):
    /// none for a target elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_use: Option<TargetUse>,
}

/// What a target's process on this host used over one run of load: the
/// proxy write-up's "better use of system resources", measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TargetUse {
    /// Its process id.
    pub pid: u32,
    /// Its command name.
    pub command: String,
    /// CPU seconds (all its threads, user and system) from the start of
    /// the run to its end (/proc, at the kernel's clock tick).
    pub cpu_s: f64,
    /// Those per GiB of object bytes the run received.
    pub cpu_s_per_gib: f64,
    /// Its peak resident memory since it started (VmHWM), MiB.
    pub peak_rss_mib: f64,
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
        if let Some(u) = &r.target_use {
            f.cost(i, "target's CPU per GiB", "target", "s/GiB", u.cpu_s_per_gib, true);
            f.cost(i, "target's peak memory", "target", "MiB", u.peak_rss_mib, false);
        }
    }
}

/// A load document's body: parameters, one entry per run, and the summary
/// across runs (through a proxy, if the target is one).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadBody {
    /// Parameters.
    pub params: LoadParams,
    /// One entry per run.
    pub results: Vec<LoadRun>,
    /// Means and intervals across runs, and merged latency.
    pub summary: Option<LoadSummary>,
}

impl crate::TestBody for LoadBody {
    const KIND: crate::TestKind = crate::TestKind::Load;
    const LOADS_THE_LINK: bool = true;
    type Params = LoadParams;

    fn empty(params: LoadParams) -> LoadBody {
        LoadBody {
            params,
            results: Vec::new(),
            summary: None,
        }
    }
    fn params(&self) -> &LoadParams {
        &self.params
    }
    fn is_empty(&self) -> bool {
        self.results.is_empty()
    }
    fn figures(&self, f: &mut Figures) {
        figures(f, &self.results);
    }
    fn warnings(&self, _run: &crate::warnings::RunContext) -> Vec<crate::warnings::Warning> {
        warnings(&self.results)
    }
}

/// load's warnings: failed requests.
fn warnings(results: &[LoadRun]) -> Vec<crate::warnings::Warning> {
    let errors: u64 = results.iter().map(|r| r.errors).sum();
    match errors {
        0 => Vec::new(),
        _ => vec![crate::warnings::Warning::LoadFailed { errors }],
    }
}
