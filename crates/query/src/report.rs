//! `report`: reads the store into one typed [`RunReport`] (every source's
//! tests, their interval series, their histograms merged over
//! repetitions, and the comparisons or, for the two targets of one run
//! made until decided, its decision), which `results` renders. A run id
//! that holds several targets is one source per target, so each gets its
//! own curve.

use crate::error::Error;
use crate::stored::Compared;
use stackmeter_results::{HistKey, ReportSource, ReportTest, RunReport, SeriesPoint};
use stackmeter_store::{Store, StoredTest};

/// The report over `sources` (labels, run ids or RUN:LABEL; the first is
/// the baseline of the comparisons), comparing `metric` per repetition
/// (default: the mean, or a decided run's own figure).
pub fn build(store: &Store, sources: &[String], metric: Option<&str>) -> Result<RunReport, Error> {
    let mut sides = Vec::new();
    for s in sources {
        sides.extend(per_target(store, crate::stored::resolve(store, s)?)?);
    }
    let (mut comparisons, mut decisions) = (Vec::new(), Vec::new());
    if let Some((a, rest)) = sides.split_first() {
        for b in rest {
            // A source with nothing in common with the first gets no comparison.
            match crate::stored::compared(store, a, b, metric) {
                Ok(Compared::Fresh(c)) => comparisons.push(*c),
                Ok(Compared::Decided(d)) => decisions.push(*d),
                Err(_) => {}
            }
        }
    }
    let sources = sides
        .into_iter()
        .map(|(name, tests)| source(store, name, tests))
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(RunReport {
        schema: stackmeter_results::SCHEMA.into(),
        generated: stackmeter_sys::utc_rfc3339(stackmeter_sys::unix_now()),
        version: env!("CARGO_PKG_VERSION").into(),
        comparisons,
        decisions,
        sources,
    })
}

/// A side split by label: a run of several targets is one side per
/// target ("LABEL (run N)", as RUN:LABEL names it), in the run's own order
/// of its targets (a suite's baseline first, whichever block the store
/// holds first: a run until decided starts each pair with A or B at
/// random), else in the order first seen; any other side stays whole.
fn per_target(
    store: &Store,
    (name, tests): (String, Vec<StoredTest>),
) -> Result<Vec<(String, Vec<StoredTest>)>, Error> {
    let mut by: Vec<(String, Vec<StoredTest>)> = Vec::new();
    let one_run = tests.windows(2).all(|w| w[0].run_id == w[1].run_id);
    for t in tests {
        let name = format!("{} (run {})", t.label, t.run_id);
        match by.iter_mut().find(|(n, _)| *n == name) {
            Some((_, ts)) => ts.push(t),
            None => by.push((name, vec![t])),
        }
    }
    if !one_run || by.len() < 2 {
        return Ok(vec![(name, by.into_iter().flat_map(|(_, t)| t).collect())]);
    }
    if let Some(order) = by[0]
        .1
        .first()
        .map(|t| crate::stored::target_order(store, t.run_id))
        .transpose()?
    {
        let at = |label: &str| order.iter().position(|l| l == label).unwrap_or(usize::MAX);
        by.sort_by_key(|(_, ts)| at(&ts[0].label));
    }
    Ok(by)
}

fn source(store: &Store, name: String, tests: Vec<StoredTest>) -> Result<ReportSource, Error> {
    let mut merged: Vec<(HistKey, hdrhistogram::Histogram<u64>)> = Vec::new();
    let mut out = Vec::new();
    for t in tests {
        let figs = stackmeter_results::figures(&t.doc);
        for h in store.histograms(t.id)? {
            if h.encoding != stackmeter_recorder::serial::ENCODING {
                continue;
            }
            let hist = stackmeter_recorder::serial::decode(&h.data)
                .map_err(|e| Error::Local(format!("test {}: {e}", t.id)))?;
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
