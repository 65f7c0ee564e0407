//! crr's view: connect and transaction times per size pair.
use stackmeter_results::CrrParams;
use stackmeter_results::CrrResult;

use crate::view::{Block, Col, Table, View};
use crate::views::latency::{latency_cells, latency_cols, tails};
use stackmeter_results::format_size;

/// crr's blocks below the title; returns the sample counts behind them.
pub(crate) fn view(v: &mut View, p: &CrrParams, rows: &[CrrResult]) -> Vec<u64> {
    if let Some(line) = crate::views::rr::plain_line(p.echo, p.raw, p.request_prefix.as_deref()) {
        v.line(line);
    }
    v.line(format!(
        "{} timed + {} warm-up connections, {} request, {} response; microseconds from the connect() call",
        p.iterations,
        p.warmup,
        format_size(p.req_bytes as u64),
        format_size(p.resp_bytes as u64)
    ));
    v.blank();
    let mut cols = vec![Col::text("", 31), Col::num("samples", 7)];
    let tails = tails(rows.iter().flat_map(|r| [&r.connect_us, &r.transaction_us]));
    cols.extend(latency_cols(tails));
    let mut table = Table {
        cols,
        ..Table::default()
    };
    for r in rows {
        for (name, s) in [
            ("connect (to established)", &r.connect_us),
            ("transaction (to close returned)", &r.transaction_us),
        ] {
            let mut c = vec![name.to_string(), r.samples.to_string()];
            c.extend(latency_cells(s, tails));
            table.rows.push(c);
        }
    }
    v.push(Block::Table(table));
    for r in rows {
        v.blank();
        v.line(format!(" connections/s: {:.0}", r.cps));
    }
    rows.iter().map(|r| r.samples).collect()
}

impl crate::views::TestView for stackmeter_results::CrrBody {
    fn view(&self, v: &mut View, _units: crate::units::Units) -> Vec<u64> {
        view(v, &self.params, &self.results)
    }
}
