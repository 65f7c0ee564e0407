//! `ping --layers`: the round trip as segments from one point of the path
//! to the next, their medians and means, what the tracer cost, and (in
//! HTML) a waterfall: each segment a bar from where the ones before it
//! end, on the axis of time since the client's send call.
use stackmeter_results::layers::Layers;

use crate::chart::{Axis, Chart, Kind, Trace};
use crate::view::{Block, Col, Table, View};

/// The layers table of one row, its notes and its waterfall.
pub(crate) fn view(v: &mut View, l: &Layers) {
    v.blank();
    v.line(format!(
        " round trip layer by layer, from the kernel's tracepoints ({} round trips traced; segment means add up to the traced mean)",
        l.round_trips
    ));
    let mut table = Table {
        cols: vec![
            Col::text("from", 22),
            Col::text("to", 22),
            Col::num("samples", 7),
            Col::num("p50 (us)", 8),
            Col::num("mean (us)", 9),
            Col::num("share", 6),
        ],
        ..Table::default()
    };
    for s in &l.segments {
        table.rows.push(vec![
            s.from.clone(),
            s.to.clone(),
            s.count.to_string(),
            format!("{:.2}", s.p50_us),
            format!("{:.2}", s.mean_us),
            format!("{:.1}%", 100.0 * s.mean_us / l.traced_mean_us.max(f64::MIN_POSITIVE)),
        ]);
    }
    v.push(Block::Table(table));
    let medians: f64 = l.segments.iter().map(|s| s.p50_us).sum();
    v.line(format!(
        " traced mean {:.2} us = {:.1}% of the client's mean round trip {:.2} us (the rest: entering and leaving its two calls); sum of the medians {:.2} us against its median {:.2} us",
        l.traced_mean_us,
        100.0 * l.coverage(),
        l.rtt_mean_us,
        medians,
        l.traced_p50_us
    ));
    v.line(match l.untraced_p50_us {
        Some(u) => format!(
            " the tracer's cost: median round trip {:.2} us traced against {u:.2} us untraced just before (+{:.2} us)",
            l.traced_p50_us,
            l.traced_p50_us - u
        ),
        None => " the tracer's cost: no untraced run to compare with".into(),
    });
    if l.lost_records > 0 {
        v.push(Block::Warning(format!(
            "the tracer's buffer was full: {} records lost, so some round trips lack points (trace fewer datagrams)",
            l.lost_records
        )));
    }
    v.push(Block::Chart(waterfall(l)));
}

/// Each segment a vertical span from the sum of the means before it to
/// its own end, at its place along the path.
fn waterfall(l: &Layers) -> Chart {
    let mut at = 0.0;
    let mut points = Vec::new();
    let mut errors = Vec::new();
    for (i, s) in l.segments.iter().enumerate() {
        points.push((i as f64, at + s.mean_us));
        errors.push((at, at + s.mean_us));
        at += s.mean_us;
    }
    let series = Trace {
        errors,
        kind: Kind::Points { radius: 2.0 },
        ..Trace::line("segment: start to end (mean)", 0, points)
    };
    Chart {
        categories: l.segments.iter().map(|s| format!("{} → {}", s.from, s.to)).collect(),
        ..Chart::new(
            "layers",
            "The round trip layer by layer: each segment from where the ones before it end (means)",
            Axis::linear("", -0.6, l.segments.len() as f64 - 0.4),
            Axis::linear("us since the client's send call", 0.0, at.max(1.0) * 1.05)
                .unit("us")
                .snapped(),
            vec![series],
        )
    }
}
