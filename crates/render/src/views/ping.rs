//! ping's view: round trips, loss, duplicates, reordering, slow answers and
//! the time inside the responder.
use stackmeter_results::PingParams;
use stackmeter_results::PingResult;

use crate::view::{Block, Col, Table, View};
use crate::views::latency::{latency_cells, latency_cols, tails};

/// ping's blocks below the title; returns the sample counts behind them.
pub(crate) fn view(v: &mut View, p: &PingParams, rows: &[PingResult]) -> Vec<u64> {
    let how = if p.interval_us == 0 {
        "back to back (one outstanding)".to_string()
    } else {
        format!("one every {} us", p.interval_us)
    };
    v.line(format!(
        "{}-byte UDP datagrams, {} timed + {} warm-up, {how}, lost after {} ms",
        p.size, p.count, p.warmup, p.timeout_ms
    ));
    if p.echo {
        v.line("plain UDP echo server: each datagram carries the client's own 24-byte header (magic, run tag, sequence, send time) and the payload pattern; every reply is compared byte for byte with its request");
    }
    let mut counts = Vec::new();
    for r in rows {
        let pct = if r.sent > 0 {
            100.0 * r.lost as f64 / r.sent as f64
        } else {
            0.0
        };
        v.blank();
        v.line(format!(
            " sent {}, received {}, lost {} ({pct:.3}%), late {}, duplicates {}, reordered {}, mismatched {}, slow (> {} us) {}",
            r.sent, r.received, r.lost, r.late, r.duplicates, r.reordered, r.mismatched, p.slow_us, r.slow
        ));
        match (&r.loss_split, p.echo) {
            (Some(l), _) => {
                v.line(format!(
                    " lost on the way to the responder {}, on the way back {} (of them {} late), after the last counted reply {} (docs/protocol.md 4.4)",
                    l.up, l.down, l.down_late, l.unknown
                ));
            }
            (None, false) if r.lost > 0 && r.received > 0 => {
                v.line(" loss each way not known: this responder did not count the datagrams it received (an older responder; docs/protocol.md 4.4)");
            }
            _ => {}
        }
        v.blank();
        let mut cols = vec![Col::text("", 21), Col::num("samples", 7)];
        let tails = tails(r.rtt_us.iter().chain(&r.server_us));
        cols.extend(latency_cols(tails));
        let mut table = Table {
            cols,
            ..Table::default()
        };
        for (name, s) in [("round trip (us)", &r.rtt_us), ("inside responder (us)", &r.server_us)] {
            if let Some(s) = s {
                let mut c = vec![name.to_string(), s.count.to_string()];
                c.extend(latency_cells(s, tails));
                table.rows.push(c);
            }
        }
        if let Some(s) = &r.rtt_us {
            counts.push(s.count);
        }
        // Nothing answered: no table of nothing, no rate of none.
        if table.rows.is_empty() {
            continue;
        }
        v.push(Block::Table(table));
        v.blank();
        v.line(format!(" replies/s: {:.0}", r.pps));
        if let Some(line) = slow_line(r, p.slow_us) {
            v.line(line);
        }
        if let Some(ts) = &r.timestamps {
            crate::views::split::view(v, "", ts, r.split_us.as_ref());
        }
        if let Some(l) = &r.layers {
            crate::views::layers::view(v, l);
        }
    }
    counts
}

/// The slow answers in one line: how many, and the slowest few of those
/// the row lists (its first ones).
fn slow_line(r: &stackmeter_results::PingResult, slow_us: u64) -> Option<String> {
    if r.slow == 0 {
        return None;
    }
    let mut listed = r.slow_first.clone();
    listed.sort_by(|a, b| b.rtt_us.total_cmp(&a.rtt_us));
    let worst: Vec<String> = listed
        .iter()
        .take(3)
        .map(|s| format!("#{} {:.1} us", s.seq, s.rtt_us))
        .collect();
    let of = match r.slow > r.slow_first.len() as u64 {
        true => format!("the slowest of the first {}", r.slow_first.len()),
        false => "the slowest".into(),
    };
    Some(format!(
        " slow answers (over {slow_us} us): {}; {of}: {}",
        r.slow,
        worst.join(", ")
    ))
}

impl crate::views::TestView for stackmeter_results::PingBody {
    fn view(&self, v: &mut View, _units: crate::units::Units) -> Vec<u64> {
        view(v, &self.params, &self.results)
    }

    fn report_section(
        sources: &[stackmeter_results::ReportSource],
        _style: &crate::format::Style,
    ) -> Option<(&'static str, View)> {
        Some((
            "Round trip layer by layer (ping --layers)",
            crate::views::layers::report_section(sources, false),
        ))
    }
}
