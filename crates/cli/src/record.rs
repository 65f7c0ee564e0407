//! Storing measured documents: open the store the flags name, write a run
//! with its tests, and turn client histograms into stored bytes. Shared by
//! the single measuring commands and `suite`.

use crate::args::{DbArgs, StoreArgs};
use crate::fail;
use stackmeter_client::RowHistogram;
use stackmeter_results::{Body, Document};
use stackmeter_store::{NewHistogram, NewRun, NewTest, Store};
use std::path::PathBuf;

/// The store path from `--db`, `$STACKMETER_DB` or the user's data folder.
pub fn db_path(a: &DbArgs) -> Result<PathBuf, i32> {
    if let Some(p) = &a.db {
        return Ok(p.clone());
    }
    stackmeter_store::default_path(|k| std::env::var(k).ok()).ok_or_else(|| {
        fail(
            1,
            "no place for the results store: set HOME, XDG_DATA_HOME or STACKMETER_DB, or pass --db",
        )
    })
}

/// Opens the store for reading or writing; errors are reported (exit 1).
pub fn open(a: &DbArgs) -> Result<Store, i32> {
    let path = db_path(a)?;
    Store::open(&path).map_err(|e| fail(1, e))
}

/// The store a measuring command writes to, or `None` with `--no-store`.
/// Opened before measuring, so a bad `--db` costs no measurement.
pub fn open_for_measuring(a: &StoreArgs) -> Result<Option<Store>, i32> {
    if a.no_store {
        return Ok(None);
    }
    if matches!(&a.label, Some(l) if l.trim().is_empty()) {
        return Err(fail(2, "--label must not be empty"));
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

/// Stores the document of a single measuring command as a run of one
/// test. A failure to store is reported on stderr as a warning: the
/// result itself has been printed.
pub fn save_single(store: &mut Store, a: &StoreArgs, doc: &Document, h: &[RowHistogram]) {
    let label = a.label.clone().unwrap_or_else(|| doc.target.name.clone());
    let r = (|| {
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
                label: &label,
                repetition: 0,
                step: "",
                doc,
                histograms: histograms(h),
                intervals: intervals(doc),
            },
        )?;
        let status = if doc.complete { "complete" } else { "partial" };
        store.finish_run(run, status, &now())
    })();
    if let Err(e) = r {
        eprintln!("stackmeter: warning: the result was not stored: {e}");
    }
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
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    stackmeter_results::utc_rfc3339(secs)
}
