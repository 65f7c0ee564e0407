//! Storing results: the store the flags name, a single command's run of
//! one test, the histograms and interval series that go beside each
//! document, and marking a run cut short as partial.

use crate::error::Error;
use crate::flags::{DbFlags, StoreFlags};
use stackmeter_client::RowHistogram;
use stackmeter_results::{Body, Document};
use stackmeter_store::{NewHistogram, NewRun, NewTest, Store};
use std::path::PathBuf;

/// The store path from `--db`, `$STACKMETER_DB` or the user's data folder.
pub fn db_path(a: &DbFlags) -> Result<PathBuf, Error> {
    if let Some(p) = &a.db {
        return Ok(p.clone());
    }
    stackmeter_store::default_path(|k| std::env::var(k).ok()).ok_or_else(|| {
        Error::Local("no place for the results store: set HOME, XDG_DATA_HOME or STACKMETER_DB, or pass --db".into())
    })
}

/// Opens the store for reading or writing.
pub fn open(a: &DbFlags) -> Result<Store, Error> {
    Ok(Store::open(&db_path(a)?)?)
}

/// The store a measuring command writes to, or `None` with `--no-store`.
/// Opened before measuring, so a bad `--db` costs no measurement.
pub fn open_for_measuring(a: &StoreFlags) -> Result<Option<Store>, Error> {
    if a.no_store {
        return Ok(None);
    }
    if matches!(&a.label, Some(l) if l.trim().is_empty()) {
        return Err(Error::Usage("--label must not be empty".into()));
    }
    open(&a.db).map(Some)
}

/// The histograms as the store keeps them.
pub fn histograms(h: &[RowHistogram]) -> Vec<NewHistogram> {
    h.iter()
        .map(|h| NewHistogram {
            row: h.row,
            metric: h.metric.to_string(),
            unit: "ns".into(),
            encoding: stackmeter_stats::serial::ENCODING.into(),
            data: stackmeter_stats::serial::encode(h.ns.histogram()),
        })
        .collect()
}

/// Stores a single command's document as a run of one test, labelled
/// `label` (default: the target as given). Returns the run id.
pub fn save_single(store: &mut Store, label: Option<&str>, doc: &Document, h: &[RowHistogram]) -> Result<i64, Error> {
    let label = label.unwrap_or(&doc.target.name);
    let run = store.begin_run(&NewRun {
        kind: "single",
        plan: None,
        env: &doc.env,
        settings: serde_json::json!({}),
        pid: std::process::id(),
    })?;
    store.add_test(
        run,
        &NewTest {
            label,
            repetition: 0,
            step: "",
            doc,
            histograms: histograms(h),
            intervals: intervals(doc),
        },
    )?;
    let status = if doc.complete { "complete" } else { "partial" };
    store.finish_run(run, status, &now())?;
    Ok(run)
}

/// The per-interval series of a document (stream tests): total, sent and
/// received Mbit/s per interval, omitted intervals included.
pub fn intervals(doc: &Document) -> Vec<stackmeter_store::Interval> {
    let Body::Stream { intervals, .. } = &doc.body else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (seq, i) in intervals.iter().enumerate() {
        for (series, value) in [
            ("total", i.total_mbps),
            ("sent", i.sent_mbps),
            ("received", i.recv_mbps),
        ] {
            out.push(stackmeter_store::Interval {
                row: 0,
                series: series.into(),
                seq,
                start_s: i.start_s,
                end_s: i.end_s,
                value,
                unit: "Mbit/s".into(),
            });
        }
    }
    out
}

/// Now, UTC RFC 3339.
pub fn now() -> String {
    stackmeter_sys::utc_rfc3339(stackmeter_sys::unix_now())
}
