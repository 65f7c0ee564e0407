//! Storing results: the store the flags name (an SQLite file or a
//! PostgreSQL URL), the writer a measuring command stores through (it
//! spools when PostgreSQL cannot be reached), a single command's run of
//! one test, the histograms and interval series that go beside each
//! document, and marking a run cut short as partial.

use crate::error::Error;
use stackmeter_client::RowHistogram;
use stackmeter_results::Document;
use stackmeter_store::{Histogram, Location, NewTest, Run, Spool, Store, StoreError, Writer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `KEY=VALUE` values of `--attr`: a key of letters, digits, `_`, `-` and
/// `.` (at most 64), a value of at most 1024 bytes, each key once.
pub fn parse_attrs(list: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for a in list {
        let Some((k, v)) = a.split_once('=') else {
            return Err(format!("--attr '{a}': expected KEY=VALUE, e.g. commit=3f2a1c"));
        };
        let key_ok = !k.is_empty()
            && k.len() <= 64
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !key_ok {
            return Err(format!(
                "--attr '{a}': the key must be 1 to 64 letters, digits, '_', '-' or '.'"
            ));
        }
        if v.len() > 1024 {
            return Err(format!("--attr '{k}=...': the value is longer than 1024 bytes"));
        }
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return Err(format!("--attr '{k}' given twice"));
        }
    }
    Ok(out)
}

/// Where a measuring command stores its results, as its flags say
/// (`--db`, `--label`, `--no-store`, `--attr`).
#[derive(Clone, Debug, Default)]
pub struct Storing {
    /// `--db`: an SQLite file or a PostgreSQL URL; none: the default.
    pub db: Option<PathBuf>,
    /// `--label`.
    pub label: Option<String>,
    /// `--no-store`.
    pub no_store: bool,
    /// `--attr KEY=VALUE`, as given.
    pub attrs: Vec<String>,
}

/// The store from `--db` (`db`), `$STACKMETER_DB` or the user's data folder.
pub fn location(db: Option<&Path>) -> Result<Location, Error> {
    let parsed = match db {
        Some(p) => Location::parse(p.as_os_str()),
        None => stackmeter_store::default_location(|k| std::env::var(k).ok()).ok_or_else(|| {
            Error::Local(
                "no place for the results store: set HOME, XDG_DATA_HOME or STACKMETER_DB, or pass --db".into(),
            )
        })?,
    };
    parsed.map_err(|e| StoreError::BadUrl(e).into())
}

/// The spool in the user's data folder, if there is one.
pub fn spool() -> Option<Spool> {
    stackmeter_store::default_spool_dir(|k| std::env::var(k).ok()).map(Spool::new)
}

/// Opens the store for reading or writing.
pub fn open(db: Option<&Path>) -> Result<Store, Error> {
    Ok(Store::open(&location(db)?)?)
}

/// Where a measuring command stores its results, with the attributes of
/// its run: the storing flags read once, before anything is measured.
pub struct Recording {
    /// The writer (it spools when PostgreSQL cannot be reached).
    pub writer: Writer,
    /// `--attr`, checked.
    pub attrs: BTreeMap<String, String>,
}

/// The recording of a measuring command, or `None` with `--no-store`.
/// Opened before measuring, so a bad `--db` (a bad URL, a wrong password,
/// an unknown database) or a bad `--attr` costs no measurement; a
/// PostgreSQL server that cannot be reached is not an error: the results
/// go to the spool.
pub fn open_for_measuring(a: &Storing) -> Result<Option<Recording>, Error> {
    if a.no_store {
        return Ok(None);
    }
    if matches!(&a.label, Some(l) if l.trim().is_empty()) {
        return Err(Error::flag("--label must not be empty"));
    }
    let attrs = parse_attrs(&a.attrs).map_err(Error::flag)?;
    let writer = Writer::open(&location(a.db.as_deref())?, spool())?;
    Ok(Some(Recording { writer, attrs }))
}

/// The histograms as the store keeps them.
pub fn histograms(h: &[RowHistogram]) -> Vec<Histogram> {
    h.iter()
        .map(|h| {
            let (encoding, data) = h.encoded();
            Histogram {
                row: h.row,
                metric: h.metric.to_string(),
                unit: "ns".into(),
                encoding: encoding.into(),
                data,
            }
        })
        .collect()
}

/// Stores a single command's document as a run of one test, labelled
/// `label` (default: the target as given), with `attrs`. Returns the run
/// id (`None`: spooled).
pub fn save_single(
    store: &mut Writer,
    label: Option<&str>,
    attrs: &BTreeMap<String, String>,
    doc: &Document,
    h: &[RowHistogram],
) -> Result<Option<i64>, Error> {
    let label = label.unwrap_or(&doc.target.name);
    let run = Run::start("single", None, &doc.env, serde_json::json!({}), std::process::id()).with_attrs(attrs.clone());
    let run = store.begin_run(&run)?;
    store.add_test(
        &run,
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
    store.finish_run(&run, status, &now())?;
    Ok(run.id)
}

/// The per-interval series of a document (stream tests): total, sent and
/// received Mbit/s per interval, omitted intervals included.
pub fn intervals(doc: &Document) -> Vec<stackmeter_store::StoredInterval> {
    let mut out = Vec::new();
    let stackmeter_results::Body::Stream(stream) = &doc.body else {
        // Only a stream has intervals.
        return out;
    };
    for (seq, i) in stream.intervals.iter().enumerate() {
        for (series, value) in [
            ("total", i.total_mbps),
            ("sent", i.sent_mbps),
            ("received", i.recv_mbps),
        ] {
            out.push(stackmeter_store::StoredInterval {
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
