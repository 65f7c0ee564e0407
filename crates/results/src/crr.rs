//! crr: connect, request, response, close per connection (a link
//! datasheet's connection establish latency). Its parameters, row and view.

use crate::figures::Figures;
use crate::latency::{latency_cells, latency_cols, tails, LatencyUs};
use crate::rr::SizePair;
use crate::units::format_size;
use crate::view::{Block, Col, Table, View};
use serde::{Deserialize, Serialize};

/// crr parameters.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CrrParams {
    /// Timed connections.
    pub iterations: u64,
    /// Untimed connections before them.
    pub warmup: u64,
    /// Request bytes per connection.
    pub req_bytes: u32,
    /// Response bytes per connection.
    pub resp_bytes: u32,
    /// Bound on every network wait, milliseconds.
    pub timeout_ms: u64,
    /// A plain TCP echo server (`--echo`): no session header, the
    /// response is the request (documents stored before read as false).
    #[serde(default)]
    pub echo: bool,
    /// A plain server with its own reply rule (`--raw`): no session
    /// header, the sizes are the REQ:RESP pair given to `--raw`.
    #[serde(default)]
    pub raw: bool,
    /// The first bytes of every request, as hex (`--request-prefix`); the
    /// rest of the request is the payload pattern.
    #[serde(default)]
    pub request_prefix: Option<String>,
}

/// The crr row.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CrrResult {
    /// Request bytes.
    pub req_bytes: u32,
    /// Response bytes.
    pub resp_bytes: u32,
    /// Timed connections.
    pub samples: u64,
    /// Untimed connections before them.
    pub warmup: u64,
    /// connect() call to connection established.
    pub connect_us: LatencyUs,
    /// connect() call to close() returned, with the status record (8
    /// bytes), request and response in between.
    pub transaction_us: LatencyUs,
    /// Timed connections per second of the timed phase's wall time.
    pub cps: f64,
}

/// crr's blocks below the title; returns the sample counts behind them.
pub(crate) fn view(v: &mut View, p: &CrrParams, rows: &[CrrResult]) -> Vec<u64> {
    if let Some(line) = crate::rr::plain_line(p.echo, p.raw, p.request_prefix.as_deref()) {
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

/// crr's figures: connect and transaction times, connections/s.
pub(crate) fn figures(f: &mut Figures, rows: &[CrrResult]) {
    for (i, r) in rows.iter().enumerate() {
        let label = SizePair {
            req: r.req_bytes,
            resp: r.resp_bytes,
        }
        .label();
        f.latency(i, &label, "connect", &r.connect_us, true);
        f.latency(i, &label, "transaction", &r.transaction_us, true);
        f.rate(i, &label, "rate", "cps", r.cps, true);
    }
}
