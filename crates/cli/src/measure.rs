//! The measuring commands (rr, crr, ping): pick the target (or start the
//! embedded responder), pin, run the client, and print one document.

use crate::args::{Common, CrrArgs, PingArgs, RrArgs};
use crate::fail;
use stackmeter_client::{ClientError, RowHistogram};
use stackmeter_responder::{ObjectSource, Responder};
use stackmeter_results::{Body, CrrParams, Document, Env, PingParams, Placement, RrParams, Target};
use std::io::Write;
use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

pub fn rr(a: RrArgs) -> i32 {
    let open_loop = match crate::load::open_loop(&a) {
        Ok(o) => o,
        Err(e) => return fail(2, e),
    };
    let params = RrParams {
        open_loop,
        sizes: a.sizes.0,
        iterations: a.iterations,
        warmup: a.warmup,
        nodelay: true,
        timeout_ms: a.timeout_ms,
    };
    if a.iterations == 0 {
        return fail(2, "--iterations must be at least 1");
    }
    measure(&a.common, |addr| {
        let o = match &params.open_loop {
            Some(ol) => stackmeter_client::rr_open(addr, &params, ol),
            None => stackmeter_client::rr(addr, &params),
        };
        (
            Body::Rr {
                params,
                results: o.rows,
            },
            o.error,
            o.histograms,
        )
    })
}

pub fn crr(a: CrrArgs) -> i32 {
    let params = CrrParams {
        iterations: a.iterations,
        warmup: a.warmup,
        req_bytes: a.size.req,
        resp_bytes: a.size.resp,
        timeout_ms: a.timeout_ms,
    };
    if a.iterations == 0 {
        return fail(2, "--iterations must be at least 1");
    }
    measure(&a.common, |addr| {
        let o = stackmeter_client::crr(addr, &params);
        (
            Body::Crr {
                params,
                results: o.rows,
            },
            o.error,
            o.histograms,
        )
    })
}

pub fn ping(a: PingArgs) -> i32 {
    let params = PingParams {
        size: a.size as usize,
        count: a.count,
        warmup: a.warmup,
        interval_us: a.interval_us,
        slow_us: a.slow_us,
        timeout_ms: a.timeout_ms,
    };
    if a.count == 0 {
        return fail(2, "--count must be at least 1");
    }
    measure(&a.common, |addr| {
        let o = stackmeter_client::ping(addr, &params);
        (
            Body::Ping {
                params,
                results: o.rows,
            },
            o.error,
            o.histograms,
        )
    })
}

/// Resolves or embeds the target, pins, runs `test`, prints the document
/// (also when the test stopped early: the finished rows are kept) and
/// returns the exit code.
pub(crate) fn measure(
    c: &Common,
    test: impl FnOnce(SocketAddr) -> (Body, Option<ClientError>, Vec<RowHistogram>),
) -> i32 {
    measure_with(c, ObjectSource::Off, test)
}

/// [`measure`], with object mode's catalogue for an embedded responder.
pub(crate) fn measure_with(
    c: &Common,
    objects: ObjectSource,
    test: impl FnOnce(SocketAddr) -> (Body, Option<ClientError>, Vec<RowHistogram>),
) -> i32 {
    if c.responder_affinity.is_some() && c.target.is_some() {
        return fail(
            2,
            "--responder-affinity applies only to the embedded responder (give no TARGET)",
        );
    }
    let time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut store = match crate::record::open_for_measuring(&c.store) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (addr, target, _responder) = match choose_target_with(c, objects) {
        Ok(t) => t,
        Err(code) => return code,
    };
    if let Some(cpu) = c.affinity {
        if let Err(e) = stackmeter_sys::pin_current_thread(cpu) {
            return fail(2, format!("--affinity {cpu}: {e}"));
        }
    }
    let (body, error, histograms) = test(addr);
    let mut doc = Document {
        schema: stackmeter_results::SCHEMA.into(),
        target,
        body,
        placement: Placement {
            client_cpu: c.affinity,
            responder_cpu: c.responder_affinity,
        },
        env: env(time),
        complete: error.is_none(),
        error: error.as_ref().map(|e| e.to_string()),
        warnings: Vec::new(),
    };
    doc.warnings = stackmeter_results::warnings::derive(&doc);
    if let Some(store) = store.as_mut() {
        crate::record::save_single(store, &c.store, &doc, &histograms);
    }
    let out = if c.json {
        stackmeter_results::json(&doc) + "\n"
    } else {
        stackmeter_results::text(&doc)
    };
    if let Err(code) = write_out(&out) {
        return code;
    }
    match error {
        Some(e) => fail(e.exit_code(), e),
        None => 0,
    }
}

/// The TARGET as resolved, or a responder started in this process when
/// there is none. The responder handle must live until the test ends. An
/// error has already been reported: its value is the exit code.
pub(crate) fn choose_target(c: &Common) -> Result<(SocketAddr, Target, Option<Responder>), i32> {
    choose_target_with(c, ObjectSource::Off)
}

/// [`choose_target`], with object mode's catalogue for an embedded responder.
fn choose_target_with(c: &Common, objects: ObjectSource) -> Result<(SocketAddr, Target, Option<Responder>), i32> {
    let target = |addr: SocketAddr, name: &str, embedded: bool| Target {
        name: name.to_string(),
        address: addr.to_string(),
        embedded,
    };
    if let Some(t) = &c.target {
        return match stackmeter_client::resolve(t, stackmeter_proto::DEFAULT_PORT) {
            Ok(addr) => Ok((addr, target(addr, t, false), None)),
            Err(e) => Err(fail(e.exit_code(), e)),
        };
    }
    if let Some(cpu) = c.responder_affinity {
        if let Err(e) = stackmeter_sys::check_cpu(cpu) {
            return Err(fail(2, format!("--responder-affinity {cpu}: {e}")));
        }
    }
    let cfg = stackmeter_responder::Config {
        cpu: c.responder_affinity,
        log: stackmeter_responder::Log::Quiet,
        objects,
        ..Default::default()
    };
    match stackmeter_responder::start(cfg) {
        Ok(r) => Ok((r.local[0], target(r.local[0], "embedded", true), Some(r))),
        Err(e) => Err(fail(1, format!("cannot start the embedded responder: {e}"))),
    }
}

pub(crate) fn env(time: u64) -> Env {
    let h = stackmeter_sys::host();
    Env {
        tool: "stackmeter".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        time: stackmeter_results::utc_rfc3339(time),
        hostname: h.hostname,
        kernel: h.kernel,
        cpu_model: h.cpu_model,
        cpus: h.cpus,
        command: std::env::args().collect(),
    }
}

/// Writes to stdout and flushes. A closed pipe is not an error (the reader
/// has all it wanted); anything else is, reported, as exit code 1.
pub(crate) fn write_out(s: &str) -> Result<(), i32> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(s.as_bytes()).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(fail(1, format!("cannot write the result: {e}"))),
        _ => Ok(()),
    }
}
