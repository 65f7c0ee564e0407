//! `ping --layers` and `rr --layers`: the round trip as a waterfall of
//! segments from one point of the path to the next (their medians and
//! means, the bars in HTML), what the tracer cost, what it could not trace;
//! and a run report's section: each row's waterfall, every source that has
//! it side by side, aligned by point.
use stackmeter_results::layers::Layers;
use stackmeter_results::{Body, ReportSource};

use crate::view::{Block, View};
use crate::waterfall::Waterfall;

/// The waterfall of one row, its notes and warnings.
pub(crate) fn view(v: &mut View, l: &Layers) {
    v.blank();
    v.line(format!(
        " round trip layer by layer, from the kernel's tracepoints (segment means add up to the traced mean {:.2} us, the client's own mean over the round trips traced)",
        l.traced_mean_us
    ));
    v.push(Block::Waterfall(Waterfall::of(
        "The round trip layer by layer: each bar from where the ones before it end",
        &[(String::new(), l)],
    )));
    warnings(v, l);
    if !l.probes.is_empty() {
        let each: Vec<String> = l
            .probes
            .iter()
            .map(|p| {
                format!(
                    "{} {:.0} ns x {:.1}",
                    p.tracepoint,
                    p.ns_per_run,
                    p.ns_per_round_trip / p.ns_per_run.max(f64::MIN_POSITIVE)
                )
            })
            .collect();
        v.line(format!(
            " the probes' own time per round trip (the kernel's count; runs per round trip include the machine's other traffic): {}",
            each.join(", ")
        ));
    }
}

/// What the tracer could not trace, said where it happened, and a cost too
/// large to be the probes'.
fn warnings(v: &mut View, l: &Layers) {
    if let Some(r) = l.cost_ratio().filter(|r| *r > 2.0) {
        v.push(Block::Warning(format!(
            "the traced median is {r:.1} times the untraced one: far more than the probes cost; the scheduler may have put the client and the responder on other CPUs in one of the runs (pin them: --affinity, --responder-affinity)"
        )));
    }
    if l.lost_records > 0 {
        v.push(Block::Warning(format!(
            "the tracer's buffer was full: {} round trips' records lost (their segments are missing; the reader fell behind)",
            l.lost_records
        )));
    }
    let missing = l.exchanges.saturating_sub(l.round_trips);
    if l.exchanges > 0 && missing > 0 {
        v.push(Block::Warning(format!(
            "{missing} of {} round trips not traced ({} never finished in the kernel, {} with points out of order, {} records lost)",
            l.exchanges, l.unfinished, l.unordered, l.lost_records
        )));
    }
}

/// A run report's section of rr's (`rr`) or ping's `--layers` rows: per
/// row (in the order of the first source's latest run), one waterfall of every source's
/// latest run that has it, the sources side by side.
pub(crate) fn report_section(sources: &[ReportSource], rr: bool) -> View {
    let mut labels: Vec<String> = Vec::new();
    let per_source: Vec<(String, Vec<(String, &Layers)>)> = sources
        .iter()
        .map(|s| {
            let mut rows: Vec<(String, &Layers)> = Vec::new();
            for t in s.tests.iter().rev() {
                for (label, l) in rows_of(&t.doc.body, rr) {
                    if !rows.iter().any(|(x, _)| *x == label) {
                        rows.push((label, l));
                    }
                }
            }
            for (label, _) in &rows {
                if !labels.contains(label) {
                    labels.push(label.clone());
                }
            }
            (s.name.clone(), rows)
        })
        .collect();
    let mut v = View::new();
    for label in labels {
        let runs: Vec<(String, &Layers)> = per_source
            .iter()
            .filter_map(|(name, rows)| rows.iter().find(|(x, _)| *x == label).map(|(_, l)| (name.clone(), *l)))
            .collect();
        v.push(Block::Waterfall(Waterfall::of(
            &format!("{label}: the round trip layer by layer"),
            &runs,
        )));
        for (name, l) in &runs {
            let mut w = View::new();
            warnings(&mut w, l);
            for b in w.blocks {
                if let Block::Warning(s) = b {
                    v.push(Block::Warning(format!("{name}, {label}: {s}")));
                }
            }
        }
    }
    v
}

/// The rows of an rr (`rr`) or a ping document that were traced layer by
/// layer, by label.
fn rows_of(body: &Body, rr: bool) -> Vec<(String, &Layers)> {
    match body {
        Body::Ping(b) if !rr => b
            .results
            .iter()
            .filter_map(|r| {
                r.layers
                    .as_ref()
                    .map(|l| (stackmeter_results::format_size(r.bytes as u64), l))
            })
            .collect(),
        Body::Rr(b) if rr => b
            .results
            .iter()
            .filter_map(|r| r.layers.as_ref().map(|l| (r.pair().label(), l)))
            .collect(),
        Body::Ping(_)
        | Body::Rr(_)
        | Body::Crr(_)
        | Body::Stream(_)
        | Body::UdpMax(_)
        | Body::Load(_)
        | Body::Rrul(_)
        | Body::UdpBurst(_) => Vec::new(),
    }
}
