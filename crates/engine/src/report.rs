//! `report`: reads the store into one typed [`RunReport`] (every source's
//! tests, their interval series, their histograms merged over
//! repetitions, and the comparisons), which `results` renders.

use crate::error::Error;
use stackmeter_results::{HistKey, ReportSource, ReportTest, RunReport, SeriesPoint};
use stackmeter_store::{Store, StoredTest};

/// The report over `sources` (labels, run ids or RUN:LABEL; the first is
/// the baseline of the comparisons), comparing `metric` per repetition.
pub fn build(store: &Store, sources: &[String], metric: &str) -> Result<RunReport, Error> {
    let sides = sources
        .iter()
        .map(|s| crate::stored::resolve(store, s))
        .collect::<Result<Vec<_>, Error>>()?;
    let comparisons = match sides.split_first() {
        // A source with nothing in common with the first gets no comparison.
        Some((a, rest)) => rest
            .iter()
            .filter_map(|b| crate::stored::compare(a, b, metric).ok())
            .collect(),
        None => Vec::new(),
    };
    let sources = sides
        .into_iter()
        .map(|(name, tests)| source(store, name, tests))
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(RunReport {
        schema: stackmeter_results::SCHEMA.into(),
        generated: crate::record::now(),
        version: env!("CARGO_PKG_VERSION").into(),
        comparisons,
        sources,
    })
}

fn source(store: &Store, name: String, tests: Vec<StoredTest>) -> Result<ReportSource, Error> {
    let mut merged: Vec<(HistKey, hdrhistogram::Histogram<u64>)> = Vec::new();
    let mut out = Vec::new();
    for t in tests {
        let figs = stackmeter_results::figures(&t.doc);
        for h in store.histograms(t.id)? {
            if h.encoding != stackmeter_stats::serial::ENCODING {
                continue;
            }
            let hist =
                stackmeter_stats::serial::decode(&h.data).map_err(|e| Error::Local(format!("test {}: {e}", t.id)))?;
            let key = HistKey {
                test: t.doc.body.kind(),
                step: t.step.clone(),
                row: stackmeter_results::row_label(&figs, h.row),
                metric: h.metric.clone(),
            };
            match merged.iter_mut().find(|e| e.0 == key) {
                // Histograms with other bounds are skipped, not fatal.
                Some(e) => drop(e.1.add(&hist)),
                None => merged.push((key, hist)),
            }
        }
        let intervals = store
            .intervals(t.id)?
            .into_iter()
            .map(|i| SeriesPoint {
                series: i.series,
                end_s: i.end_s,
                value: i.value,
                unit: i.unit,
            })
            .collect();
        out.push(ReportTest {
            id: t.id,
            step: t.step.clone(),
            doc: t.doc,
            intervals,
        });
    }
    Ok(ReportSource {
        name,
        tests: out,
        merged,
    })
}
