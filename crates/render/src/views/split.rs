//! The timestamp split's table (client to responder, inside it, back).
use stackmeter_results::SplitUs;
use stackmeter_results::Timestamps;

use crate::view::{Block, Col, Table, View};
use crate::views::latency::{latency_cells, latency_cols, tails};
use stackmeter_results::latency_text as num;

/// The split table of one row (`what` names the row, e.g. its size pair),
/// or a line saying why there is none.
pub(crate) fn view(v: &mut View, what: &str, ts: &Timestamps, split: Option<&SplitUs>) {
    v.blank();
    let clock = match (ts.offset_us, ts.offset_bound_us) {
        (Some(o), Some(b)) => format!(
            "clocks: estimated offset {} us +/- {} us (responder minus client)",
            num(o),
            num(b)
        ),
        _ => format!("clocks: {}", ts.clock),
    };
    let Some(s) = split else {
        v.line(format!(
            " {what}timestamps: {} (the responder wrote no stamps: no split)",
            ts.mode
        ));
        return;
    };
    v.line(format!(
        " {what}round trip split from {} kernel timestamps ({clock}); the five parts add up to each RTT",
        ts.mode
    ));
    let mut cols = vec![Col::text("part (us)", 21), Col::num("samples", 7)];
    let parts = [
        ("client send stack", Some(&s.client_send_stack)),
        ("out path", Some(&s.out_path)),
        ("  responder stack in", s.responder_stack_in.as_ref()),
        ("responder app", Some(&s.responder_app)),
        ("back path", Some(&s.back_path)),
        ("  responder stack out", s.responder_stack_out.as_ref()),
        ("client recv stack", Some(&s.client_recv_stack)),
    ];
    let tails = tails(parts.iter().filter_map(|p| p.1));
    cols.extend(latency_cols(tails));
    let mut table = Table {
        cols,
        ..Table::default()
    };
    for (name, sum) in parts {
        if let Some(sum) = sum {
            let mut c = vec![name.to_string(), sum.count.to_string()];
            c.extend(latency_cells(sum, tails));
            table.rows.push(c);
        }
    }
    v.push(Block::Table(table));
    v.line(format!(
        " responder app share of the RTT: median {:.1}%, mean {:.1}%; {} exchanges split, {} without all stamps, {} with a negative part, {} not adding up",
        100.0 * s.responder_app_share.median,
        100.0 * s.responder_app_share.mean,
        s.samples,
        s.incomplete,
        s.negative,
        s.unbalanced
    ));
}
