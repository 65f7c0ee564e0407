//! Summaries into the results store: every `--store-every-s` (and once
//! more at the stop), each pair's pings and rr rounds of the period become
//! one `ping` and one `rr` document labelled SOURCE->TARGET, stored as a
//! measuring command stores its result (`engine::record::save_single`),
//! with the full distributions beside them. `show`, `compare` and
//! `report` read them like any other result: `stackmeter compare a->b
//! a->c` compares two pairs, each period a repetition.
//!
//! Summaries go through the store's `Writer`, as a measuring command's
//! results do: a PostgreSQL store that cannot be reached sends them to the
//! local spool (one line per period saying so, and the command that sends
//! them on), and the next period tries the database again. A store that
//! cannot be opened or written is one warning line per period naming the
//! error and how many summaries it cost; probing and metrics go on.

use crate::ctx::Ctx;
use crate::mesh::{lock, Pair};
use crate::stream::Finished;
use crate::summary::{PingTally, RrTally};
use stackmeter_client::RowHistogram;
use stackmeter_recorder::Recorder;
use stackmeter_results::{Body, Document, Knobs, Placement, Target, TargetKind};
use stackmeter_store::Writer;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One document to store.
struct Summary {
    label: String,
    doc: Document,
    histograms: Vec<RowHistogram>,
}

/// Where the agent stores its summaries: `--db`, or (none) the default
/// store.
#[derive(Clone, Debug, Default)]
pub struct Db(pub Option<std::path::PathBuf>);

/// Runs until the stop, storing at the end of every period and at the stop.
pub(crate) fn run(ctx: Arc<Ctx>, db: Option<Db>, every: Duration, streams: Receiver<Finished>) {
    let mut store: Option<Writer> = None;
    let mut start = (Instant::now(), stackmeter_sys::unix_now());
    loop {
        let stopped = ctx.stop.sleep(every);
        let wall_s = start.0.elapsed().as_secs_f64();
        let mut docs = Vec::new();
        let pairs = ctx.mesh.take_retired().into_iter().chain(ctx.mesh.pairs());
        for pair in pairs {
            docs.extend(period(&ctx, &pair, start.1, wall_s));
        }
        for f in streams.try_iter() {
            docs.push(Summary {
                label: f.label,
                doc: f.measured.doc,
                histograms: f.measured.histograms,
            });
        }
        start = (Instant::now(), stackmeter_sys::unix_now());
        if let Some(db) = &db {
            write(db, &mut store, &docs);
        }
        if stopped {
            return;
        }
    }
}

/// Takes `pair`'s tallies of the period that started at `unix` and lasted
/// `wall_s`, as documents.
fn period(ctx: &Ctx, pair: &Pair, unix: u64, wall_s: f64) -> Vec<Summary> {
    let ping: PingTally = std::mem::take(&mut *lock(&pair.ping));
    let rr: RrTally = std::mem::take(&mut *lock(&pair.rr));
    let mut out = Vec::new();
    let label = format!("{}->{}", ctx.source, pair.label);
    if ping.count() > 0 {
        let (body, h) = ping.body(&ctx.probing, wall_s);
        out.push(summary(&label, pair, body, h, unix));
    }
    if rr.count() > 0 {
        let (body, h) = rr.body(&ctx.probing, wall_s);
        out.push(summary(&label, pair, body, h, unix));
    }
    out
}

fn summary(label: &str, pair: &Pair, body: Body, h: Vec<(&'static str, Recorder)>, unix: u64) -> Summary {
    let unanswered = body.unanswered();
    let mut doc = Document {
        schema: stackmeter_results::SCHEMA.into(),
        target: Target {
            name: pair.label.clone(),
            address: pair.addr.to_string(),
            embedded: false,
            kind: TargetKind::Stackmeter,
        },
        body,
        placement: Placement::default(),
        knobs: Knobs::default(),
        env: stackmeter_engine::execute::env(unix * 1000),
        complete: unanswered.is_none(),
        error: unanswered.map(|e| format!("{}: {e}", pair.addr)),
        warnings: Vec::new(),
        not_measured: Vec::new(),
    };
    doc.not_measured = doc.body.not_measured();
    doc.warnings = doc.derive_warnings();
    Summary {
        label: label.to_string(),
        doc,
        histograms: h
            .into_iter()
            .map(|(metric, ns)| RowHistogram { row: 0, metric, ns })
            .collect(),
    }
}

/// Stores `docs`, opening the store first if it is not open; one warning
/// line for whatever fails, one line when anything went to the spool.
fn write(db: &Db, store: &mut Option<Writer>, docs: &[Summary]) {
    if docs.is_empty() {
        return;
    }
    if store.is_none() {
        let opened = stackmeter_engine::record::location(db.0.as_deref())
            .and_then(|at| Writer::open(&at, stackmeter_engine::record::spool()).map_err(Into::into));
        match opened {
            Ok(w) => *store = Some(w),
            Err(e) => {
                crate::log::warn(&format!(
                    "results store: {e}; {} summaries of this period not stored (the agent keeps probing and tries again next period)",
                    docs.len()
                ));
                return;
            }
        }
    }
    let Some(w) = store.as_mut() else {
        return;
    };
    for (i, d) in docs.iter().enumerate() {
        let attrs = std::collections::BTreeMap::new();
        if let Err(e) = stackmeter_engine::record::save_single(w, Some(&d.label), &attrs, &d.doc, &d.histograms) {
            crate::log::warn(&format!(
                "results store: cannot write {}: {e}; {} summaries of this period not stored (the agent keeps probing and tries again next period)",
                d.label,
                docs.len() - i
            ));
            // Opened again next time: the file may have been replaced.
            *store = None;
            return;
        }
    }
    if w.spooled_tests() > 0 {
        if let Some(note) = w.note() {
            crate::log::warn(&note);
        }
        // The next period asks the database again.
        *store = None;
    }
}
