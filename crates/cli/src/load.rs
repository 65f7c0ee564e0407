//! `stackmeter load`: flags, the embedded responder's catalogue, and the
//! wiring from flags to `stackmeter_client::load`; also the object-size list
//! parser and the descriptor-limit raise that `serve` shares.

use crate::args::Common;
use crate::fail;
use clap::Args;
use stackmeter_responder::{Log, ObjectSource};
use stackmeter_results::{Body, LoadParams, OpenLoopParams};

#[derive(Args, Debug)]
pub struct LoadArgs {
    #[command(flatten)]
    pub common: Common,
    /// Concurrent clients, one connection and thread each (about 1.6 MB of histograms and buffers per client).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub clients: u32,
    /// Times each client fetches every object per run.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub fetch_each: u32,
    /// Runs (mean and 95% interval across them).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Bound on every network wait.
    #[arg(long, value_name = "MS", default_value_t = 10000)]
    pub timeout_ms: u64,
    /// Objects of the embedded responder (no TARGET): comma-separated sizes, K = 1024.
    #[arg(long, value_name = "SIZES", value_parser = size_list)]
    pub objects: Option<Sizes>,
    /// The embedded responder serves the regular files inside DIR instead.
    #[arg(long, value_name = "DIR")]
    pub objects_dir: Option<std::path::PathBuf>,
}

/// A parsed list of object sizes.
#[derive(Clone, Debug)]
pub struct Sizes(pub Vec<u64>);

/// Parses "4K,64K,1M,8800K"; the first bad item is named.
pub fn size_list(s: &str) -> Result<Sizes, String> {
    let v: Result<Vec<u64>, String> = s
        .split(',')
        .map(|i| {
            crate::sizes::size(i)
                .map(u64::from)
                .map_err(|e| format!("bad size list item: {e}"))
        })
        .collect();
    let v = v?;
    if v.len() > stackmeter_proto::objects::MAX_OBJECTS {
        return Err(format!(
            "{} objects, at most {}",
            v.len(),
            stackmeter_proto::objects::MAX_OBJECTS
        ));
    }
    let total: u64 = v.iter().sum();
    if total > stackmeter_responder::MAX_SYNTHETIC_BYTES {
        return Err(format!("the objects total {total} bytes; at most 1G"));
    }
    Ok(Sizes(v))
}

/// Raises the open-files limit to the hard limit (one descriptor per
/// connection) and says so; warns when `want` connections cannot fit.
pub fn raise_fd_limit(log: Log, want: usize) {
    match stackmeter_sys::raise_nofile() {
        Ok((before, now)) => {
            if now != before {
                log.line(format_args!("open-files limit raised from {before} to {now}"));
            }
            if (now as usize) < want + 64 {
                log.line(format_args!(
                    "warning: open-files limit {now} is below {want} sessions plus room for the listeners; raise the hard limit (ulimit -Hn) to hold them all"
                ));
            }
        }
        Err(e) => log.line(format_args!("warning: cannot raise the open-files limit: {e}")),
    }
}

/// The open-loop schedule of `rr --rate`, or `None` for the closed loop;
/// an error names the flag that is wrong or missing.
pub fn open_loop(a: &crate::args::RrArgs) -> Result<Option<OpenLoopParams>, String> {
    let Some(rate) = a.rate else {
        if a.time.is_some() || a.connections != 1 || a.arrival != "fixed" {
            return Err("--time, --connections and --arrival belong to the open loop: give --rate too".into());
        }
        return Ok(None);
    };
    if !(rate.is_finite() && rate > 0.0) {
        return Err(format!(
            "--rate {rate}: must be a positive number of requests per second"
        ));
    }
    let time = a.time.unwrap_or(10.0);
    if !(time.is_finite() && time > 0.0) {
        return Err(format!("--time {time}: must be a positive number of seconds"));
    }
    if rate * time < a.connections as f64 {
        return Err(format!(
            "--rate {rate} for --time {time} s is fewer requests than --connections {}",
            a.connections
        ));
    }
    if rate * time > 1e9 {
        return Err(format!("--rate {rate} for --time {time} s: more than 10^9 requests"));
    }
    Ok(Some(OpenLoopParams {
        rate,
        connections: a.connections,
        time_s: time,
        arrival: a.arrival.clone(),
    }))
}

pub fn run(a: LoadArgs) -> i32 {
    if a.common.target.is_some() && (a.objects.is_some() || a.objects_dir.is_some()) {
        return fail(
            2,
            "--objects and --objects-dir set up the embedded responder (give no TARGET); a remote responder has its own (serve --objects)",
        );
    }
    if a.objects.is_some() && a.objects_dir.is_some() {
        return fail(2, "--objects and --objects-dir exclude each other");
    }
    let objects = match (a.objects, a.objects_dir) {
        (_, Some(d)) => ObjectSource::Dir(d),
        (Some(s), None) => ObjectSource::Synthetic(s.0),
        (None, None) => ObjectSource::Synthetic(stackmeter_responder::DEFAULT_SIZES.to_vec()),
    };
    // Each client holds a descriptor, and an embedded responder one more.
    raise_fd_limit(Log::Quiet, 2 * a.clients as usize);
    let params = LoadParams {
        clients: a.clients,
        fetch_each: a.fetch_each,
        repeat: a.repeat,
        timeout_ms: a.timeout_ms,
        objects: Vec::new(),
    };
    crate::measure::measure_with(&a.common, objects, |addr| {
        let o = stackmeter_client::load(addr, &params);
        (
            Body::Load {
                params: o.params,
                results: o.runs,
                summary: o.summary,
            },
            o.error,
            o.histograms,
        )
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes() {
        assert_eq!(super::size_list("4K,64K,1M,8800K").unwrap().0[3], 8800 << 10);
        assert!(super::size_list("4K,,1M").unwrap_err().contains("bad size list item"));
        assert!(super::size_list("1G,1G").unwrap_err().contains("at most 1G"));
    }
}
