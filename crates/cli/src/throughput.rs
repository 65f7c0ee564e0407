//! The throughput commands (stream, udp-max): checks flags, picks the
//! target like every measuring command, prints stream intervals as they
//! end, and the document at the end.

use crate::args::{DirectionArg, NodelayArg, StreamArgs, UdpMaxArgs};

/// Writes from this size up get TCP_NODELAY with `--nodelay auto`: they
/// fill whole segments, and Nagle would only hold back each write's last
/// partial one (bench/results/2026-11-21-throughput.md: 128 KiB writes
/// gained 12% with it, 64-byte writes lost 80%).
const NODELAY_FROM: u32 = 16 << 10;
use crate::fail;
use crate::measure::{choose_target, env, write_out};
use crate::rate::rate;
use stackmeter_results::{Body, Direction, Document, Placement, StreamParams, UdpMaxParams};
use std::time::{SystemTime, UNIX_EPOCH};

/// Checks a duration flag: finite, positive, at most a day.
fn seconds(flag: &str, v: f64, zero_ok: bool) -> Result<f64, String> {
    if !v.is_finite() || v < 0.0 || (v == 0.0 && !zero_ok) || v > 86_400.0 {
        return Err(format!("{flag} {v}: expected seconds above 0 and at most 86400"));
    }
    Ok(v)
}

fn stream_params(a: &StreamArgs) -> Result<StreamParams, String> {
    let direction = match a.direction {
        DirectionArg::Up => Direction::Up,
        DirectionArg::Down => Direction::Down,
        DirectionArg::Bidir => Direction::Bidir,
    };
    if a.udp && direction != Direction::Up {
        return Err(format!(
            "--udp with --direction {}: UDP streams go client to target only (a responder never sends unasked UDP; see docs/tests.md)",
            direction.name()
        ));
    }
    if a.udp && a.zerocopy {
        return Err("--zerocopy applies to TCP streams only".into());
    }
    let length = a.length.unwrap_or(if a.udp { 1472 } else { 128 << 10 });
    if a.udp && !(40..=65507).contains(&length) {
        return Err(format!("--length {length}: a UDP datagram holds 40 to 65507 bytes"));
    }
    let time_s = seconds("--time", a.time, false)?;
    let interval_s = seconds("--interval", a.interval, false)?;
    let omit_s = seconds("--omit", a.omit, true)?;
    if (time_s + omit_s) / interval_s > 100_000.0 {
        return Err(format!("--interval {interval_s}: more than 100000 intervals"));
    }
    let rate_pps = if a.udp {
        let r = rate(&a.rate).map_err(|e| format!("--rate {e}"))?;
        Some(r.pps(length))
    } else {
        None
    };
    Ok(StreamParams {
        direction,
        parallel: a.parallel,
        length,
        time_s,
        interval_s,
        omit_s,
        udp: a.udp,
        rate: a.udp.then(|| a.rate.clone()),
        rate_pps,
        zerocopy: a.zerocopy,
        nodelay: match a.nodelay {
            NodelayArg::On => true,
            NodelayArg::Off => false,
            NodelayArg::Auto => length >= NODELAY_FROM,
        },
        timeout_ms: a.timeout_ms,
    })
}

pub fn stream(a: StreamArgs) -> i32 {
    let params = match stream_params(&a) {
        Ok(p) => p,
        Err(e) => return fail(2, e),
    };
    if a.json_lines && !a.common.json {
        return fail(2, "--json-lines needs --json");
    }
    let c = &a.common;
    let time = now();
    let mut store = match crate::record::open_for_measuring(&c.store) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (addr, target, _responder) = match choose_target(c) {
        Ok(t) => t,
        Err(code) => return code,
    };
    if let Some(cpu) = c.affinity {
        if let Err(e) = stackmeter_sys::check_cpu(cpu) {
            return fail(2, format!("--affinity {cpu}: {e}"));
        }
    }
    let mut doc = Document {
        schema: stackmeter_results::SCHEMA.into(),
        target,
        body: Body::Stream {
            params: params.clone(),
            intervals: Vec::new(),
            summary: None,
        },
        placement: Placement {
            client_cpu: c.affinity,
            responder_cpu: c.responder_affinity,
        },
        env: env(time),
        complete: false,
        error: None,
        warnings: Vec::new(),
    };
    let text = !c.json;
    if text {
        let head = stackmeter_results::stream_head(&stackmeter_results::first_line(&doc), &params);
        if let Err(code) = write_out(&head) {
            return code;
        }
    }
    let json_lines = a.json_lines;
    let mut live = |i: &stackmeter_results::Interval| {
        let line = if text {
            stackmeter_results::interval_line(i)
        } else if json_lines {
            format!("{}\n", serde_json::json!({ "interval": i }))
        } else {
            return;
        };
        let _ = write_out(&line);
    };
    let o = stackmeter_client::stream(addr, &params, c.affinity, &mut live);
    let error = o.error;
    doc.body = Body::Stream {
        params: params.clone(),
        intervals: o.intervals,
        summary: o.summary.map(Box::new),
    };
    doc.complete = error.is_none();
    doc.error = error.as_ref().map(|e| e.to_string());
    doc.warnings = stackmeter_results::warnings::derive(&doc);
    if o.drain_timeout {
        doc.warnings.push(
            "the responder's data sessions had not all ended 2 s after Stop: its final counts may miss their last bytes"
                .into(),
        );
    }
    if let Some(s) = store.as_mut() {
        crate::record::save_single(s, &c.store, &doc, &[]);
    }
    let out = if text {
        let Body::Stream { summary, .. } = &doc.body else {
            unreachable!("built above")
        };
        let mut t = stackmeter_results::stream_tail(&params, summary.as_deref());
        stackmeter_results::trailer(&mut t, &doc);
        t
    } else if json_lines {
        format!("{}\n", serde_json::to_string(&doc).unwrap_or_default())
    } else {
        stackmeter_results::json(&doc) + "\n"
    };
    if let Err(code) = write_out(&out) {
        return code;
    }
    match error {
        Some(e) => fail(e.exit_code(), e),
        None => 0,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn udp_max_params(a: &UdpMaxArgs) -> Result<UdpMaxParams, String> {
    if !(0.0..1.0).contains(&a.loss) {
        return Err(format!("--loss {}: a ratio from 0 up to (not including) 1", a.loss));
    }
    if !(a.width > 0.0 && a.width < 1.0) {
        return Err(format!("--width {}: a ratio between 0 and 1", a.width));
    }
    let trial_s = seconds("--trial", a.trial, false)?;
    let duration_sum_s = seconds("--duration-sum", a.duration_sum, false)?;
    if duration_sum_s < trial_s {
        return Err(format!(
            "--duration-sum {duration_sum_s} is shorter than one --trial {trial_s}"
        ));
    }
    let max_pps = match &a.max_rate {
        Some(r) => Some(rate(r).map_err(|e| format!("--max-rate {e}"))?.pps(a.length)),
        None => None,
    };
    Ok(UdpMaxParams {
        length: a.length,
        loss_goal: a.loss,
        trial_s,
        duration_sum_s,
        exceed_ratio: 0.5,
        width: a.width,
        max_pps,
        drain_ms: a.drain_ms,
        timeout_ms: a.timeout_ms,
    })
}

pub fn udp_max(a: UdpMaxArgs) -> i32 {
    let params = match udp_max_params(&a) {
        Ok(p) => p,
        Err(e) => return fail(2, e),
    };
    let max_trials = a.max_trials;
    crate::measure::measure(&a.common, |addr| {
        let o = stackmeter_client::udp_max(addr, &params, a.common.affinity, max_trials);
        (
            Body::UdpMax {
                params,
                result: o.result,
            },
            o.error,
            Vec::new(),
        )
    })
}
