//! Reading the results store back: which stored tests a name means
//! (label, run id, or RUN:LABEL), the comparison of two such sides (or,
//! for the two targets of one run made until decided, that run's own
//! decision), the list of runs, a run shown again as its command printed
//! it, and exports.

use crate::error::Error;
use stackmeter_results::{figures, Comparison, Decision, ListedRun, RunList, Side, SuiteSettings};
use stackmeter_results::{Spectrum, SpectrumPoint, SpectrumRow};
use stackmeter_store::{Store, StoredRun, StoredTest};

/// The tests a side names, and how to call it.
pub fn resolve(store: &Store, spec: &str) -> Result<(String, Vec<StoredTest>), Error> {
    let not_stored = |m: String| Error::not_stored(m);
    if let Some((run, label)) = spec.split_once(':') {
        if let Ok(id) = run.parse::<i64>() {
            let tests: Vec<StoredTest> = store
                .tests_of_run(id)?
                .into_iter()
                .filter(|t| t.label == label)
                .collect();
            if tests.is_empty() {
                return Err(not_stored(format!(
                    "'{spec}': run {id} has no tests labelled '{label}'"
                )));
            }
            return Ok((format!("{label} (run {id})"), tests));
        }
    }
    if let Ok(id) = spec.parse::<i64>() {
        if store.run(id)?.is_some() {
            let tests = store.tests_of_run(id)?;
            if tests.is_empty() {
                return Err(not_stored(format!("run {id} has no stored tests")));
            }
            return Ok((format!("run {id} ({})", labels_of(&tests).join(",")), tests));
        }
    }
    let tests = store.tests_with_label(spec)?;
    if tests.is_empty() {
        return Err(not_stored(format!(
            "'{spec}' is neither a stored label nor a run id (see `stackmeter runs`)"
        )));
    }
    Ok((spec.to_string(), tests))
}

/// The labels of run `id`'s targets as it ran them, the baseline first: a
/// suite's from its settings; none for a run of another kind.
pub fn target_order(store: &Store, id: i64) -> Result<Vec<String>, Error> {
    let Some(run) = store.run(id)? else {
        return Ok(Vec::new());
    };
    Ok(serde_json::from_value::<SuiteSettings>(run.run.settings.clone())
        .ok()
        .filter(|_| run.run.kind == "suite")
        .map(|s| s.targets.into_iter().map(|t| t.label).collect())
        .unwrap_or_default())
}

/// Each label of `tests` once, in the order first seen.
fn labels_of(tests: &[StoredTest]) -> Vec<&str> {
    let mut labels: Vec<&str> = Vec::new();
    for t in tests {
        if !labels.contains(&t.label.as_str()) {
            labels.push(&t.label);
        }
    }
    labels
}

/// B against the baseline A, comparing `metric` per repetition. A side
/// must be one target: a suite's run holds several, and is named with
/// one of its labels (`RUN:LABEL`). The tests of a suite's plan step and
/// of a single command (no step) are compared when each side has one
/// step per test.
pub fn compare(
    a: &(String, Vec<StoredTest>),
    b: &(String, Vec<StoredTest>),
    metric: &str,
) -> Result<Comparison, Error> {
    for (name, tests) in [a, b] {
        let labels = labels_of(tests);
        if let (Some(first), true) = (labels.first(), labels.len() > 1) {
            let run = name
                .strip_prefix("run ")
                .and_then(|r| r.split(' ').next())
                .unwrap_or("RUN");
            return Err(Error::flag(format!(
                "{name} holds the tests of {} targets ({}): name one as RUN:LABEL, e.g. {run}:{first}",
                labels.len(),
                labels.join(", ")
            )));
        }
    }
    let ((sa, mut steps_a), (sb, mut steps_b)) = (side(a), side(b));
    let mut c = stackmeter_results::compare(&sa, &steps_a, &sb, &steps_b, metric);
    if c.sections.is_empty() && one_step_per_test(&a.1) && one_step_per_test(&b.1) {
        steps_a.iter_mut().chain(steps_b.iter_mut()).for_each(String::clear);
        c = stackmeter_results::compare(&sa, &steps_a, &sb, &steps_b, metric);
        if !c.sections.is_empty() {
            c.notes.push(
                "A and B come from different plan steps (or a suite and a single command): compared test by test"
                    .into(),
            );
        }
    }
    if c.sections.is_empty() {
        let tests = |side: &(String, Vec<StoredTest>)| {
            let mut names: Vec<&str> = Vec::new();
            for t in &side.1 {
                if !names.contains(&t.doc.body.test_name()) {
                    names.push(t.doc.body.test_name());
                }
            }
            names.join(", ")
        };
        return Err(Error::NothingToCompare(format!(
            "nothing to compare: A ({}: {}) and B ({}: {}) have no test and figure in common",
            a.0,
            tests(a),
            b.0,
            tests(b)
        )));
    }
    Ok(c)
}

/// What `compare` and `report` give for two sides: a comparison made now
/// over every repetition, or, when both sides are the two targets of one
/// run made until decided, that run's decision replayed from its stored
/// pairs: one run, one answer.
pub enum Compared {
    /// Fresh statistics over every stored repetition.
    Fresh(Box<Comparison>),
    /// The run's own decision.
    Decided(Box<Decision>),
}

/// B against the baseline A: the run's decision when both are the two
/// targets of one run made until decided (on `metric` when given, else
/// the run's own), else [`compare`] on `metric` (else the mean).
pub fn compared(
    store: &Store,
    a: &(String, Vec<StoredTest>),
    b: &(String, Vec<StoredTest>),
    metric: Option<&str>,
) -> Result<Compared, Error> {
    if let Some(d) = decided(store, a, b, metric)? {
        return Ok(Compared::Decided(Box::new(d)));
    }
    compare(a, b, metric.unwrap_or("mean")).map(|c| Compared::Fresh(Box::new(c)))
}

/// The decision of the run both sides come from, replayed for their two
/// labels, or None when they are not the two targets of one run made
/// until decided.
fn decided(
    store: &Store,
    a: &(String, Vec<StoredTest>),
    b: &(String, Vec<StoredTest>),
    metric: Option<&str>,
) -> Result<Option<Decision>, Error> {
    let mut ids = a.1.iter().chain(&b.1).map(|t| t.run_id);
    let Some(id) = ids.next() else { return Ok(None) };
    let (la, lb) = (labels_of(&a.1), labels_of(&b.1));
    let ([la], [lb]) = (&la[..], &lb[..]) else {
        return Ok(None);
    };
    if ids.any(|i| i != id) || la == lb {
        return Ok(None);
    }
    let Some(run) = store.run(id)? else { return Ok(None) };
    let Ok(settings) = serde_json::from_value::<SuiteSettings>(run.run.settings.clone()) else {
        return Ok(None);
    };
    let Some(decide) = settings.decide.filter(|_| run.run.kind == "suite") else {
        return Ok(None);
    };
    let targets: Vec<&str> = settings.targets.iter().map(|t| t.label.as_str()).collect();
    if targets.len() != 2 || !targets.contains(la) || !targets.contains(lb) {
        return Ok(None);
    }
    let tests = store.tests_of_run(id)?;
    let blocks: Vec<_> = tests
        .iter()
        .map(|t| (t.label.as_str(), t.step.as_str(), t.repetition, &t.doc))
        .collect();
    let own = metric.is_none_or(|m| m == settings.metric);
    let metric = metric.unwrap_or(&settings.metric);
    let stop = settings.stop.as_deref().unwrap_or("stopped");
    let mut d = Decision::replay(la, lb, decide, metric, &blocks, stop);
    d.method = match own {
        true => format!(
            "run {id} was made until decided: this is its decision, replayed from its stored pairs; {}",
            d.method
        ),
        false => format!(
            "run {id} was made until decided on the {}: its stored pairs replayed on the {metric} (a confidence sequence holds at any stopping time, the run's own included); {}",
            settings.metric, d.method
        ),
    };
    Ok(Some(d))
}

/// Whether the tests hold each kind of test under one plan step only.
fn one_step_per_test(tests: &[StoredTest]) -> bool {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for t in tests {
        let test = t.doc.body.test_name();
        match seen.iter().find(|(k, _)| *k == test) {
            Some((_, step)) if *step != t.step => return false,
            Some(_) => {}
            None => seen.push((test, &t.step)),
        }
    }
    true
}

fn side(s: &(String, Vec<StoredTest>)) -> (Side<'_>, Vec<String>) {
    (
        Side {
            name: s.0.clone(),
            docs: s.1.iter().map(|t| &t.doc).collect(),
        },
        s.1.iter().map(|t| t.step.clone()).collect(),
    )
}

/// The status a reader should see: a run still `running` whose process is
/// gone on this host was cut short (crash, kill -9): it is partial.
pub fn status(stored: &StoredRun) -> String {
    let r = &stored.run;
    if r.status == "running" && r.hostname == stackmeter_sys::host().hostname {
        let alive = std::path::Path::new(&format!("/proc/{}", r.pid)).exists();
        if !alive || r.pid == std::process::id() {
            return "partial".into();
        }
    }
    r.status.clone()
}

/// Every run of the store, oldest first.
pub fn runs(store: &Store) -> Result<RunList, Error> {
    let runs = store
        .runs()?
        .iter()
        .map(|stored| {
            let r = &stored.run;
            let tests = store.tests_of_run(stored.id).unwrap_or_default();
            // A run whose every test came back empty (the target never
            // answered) failed; it is not a partial result.
            let nothing = !tests.is_empty() && tests.iter().all(|t| t.doc.body.is_empty());
            let status = match status(stored) {
                s if nothing && s == "partial" => "failed".to_string(),
                s => s,
            };
            ListedRun {
                id: stored.id,
                time: r.started.clone(),
                finished: r.finished.clone(),
                label: stored.labels.join(","),
                labels: stored.labels.clone(),
                test: match r.kind.as_str() {
                    "suite" => format!("suite {}", r.plan.clone().unwrap_or_default()),
                    _ => stored.test_names.join(","),
                },
                kind: r.kind.clone(),
                plan: r.plan.clone(),
                status,
                tests: stored.tests,
                key_figure: key_figure(stored, &tests),
                hostname: r.hostname.clone(),
                version: r.tool_version.clone(),
                command: r.command.clone(),
                attrs: r.attrs.clone(),
            }
        })
        .collect();
    Ok(RunList {
        schema: stackmeter_results::SCHEMA.into(),
        runs,
    })
}

/// The figure that names a run in the list: the first compared figure of
/// its first test; for a suite, what it found (a decided run's verdicts,
/// or how much a fixed one ran); for a run whose tests measured nothing,
/// that, and why.
fn key_figure(r: &StoredRun, tests: &[StoredTest]) -> String {
    if r.run.kind == "suite" {
        return suite_figure(r, tests);
    }
    let Some(t) = tests.first() else {
        return "nothing measured".into();
    };
    figures(&t.doc)
        .into_iter()
        .find(|f| f.compared && (f.stat == "mean" || f.stat == "value"))
        .map(|f| {
            let stat = if f.stat == "value" { "" } else { &f.stat };
            let s = format!(
                "{} {stat} {} {} {}",
                f.series,
                f.row_label,
                stackmeter_results::num(f.value),
                f.unit
            );
            s.replace("  ", " ")
        })
        .unwrap_or_else(|| match &t.doc.error {
            Some(e) => format!("nothing measured: {e}"),
            None => "nothing measured".into(),
        })
}

/// A suite run's key figure: "c vs rust: 1 faster, 5 equivalent, 2 not
/// settled" when it ran until decided, else its tests and targets.
fn suite_figure(r: &StoredRun, tests: &[StoredTest]) -> String {
    match stored_outcome(r, tests) {
        Ok(o) => match &o.decision {
            Some(d) => {
                let [faster, slower, same, open] = d.counts();
                let words = [
                    (faster, "faster"),
                    (slower, "slower"),
                    (same, "equivalent"),
                    (open, "not settled"),
                ];
                let said: Vec<String> = words
                    .iter()
                    .filter(|(n, _)| *n > 0)
                    .map(|(n, w)| format!("{n} {w}"))
                    .collect();
                format!("{} vs {}: {}", d.b, d.a, said.join(", "))
            }
            None => format!("{} tests of {} targets", r.tests, o.suite.targets.len()),
        },
        Err(_) => format!("{} tests", r.tests),
    }
}

/// A stored run as its command made it: the user's attributes, and the
/// suite's outcome (judged again from its stored tests) or the documents
/// of its tests; the binary renders it as the command printed it.
pub struct Shown {
    /// `--attr KEY=VALUE` of the run, in order.
    pub attrs: Vec<(String, String)>,
    /// What the run holds.
    pub what: ShownRun,
}

/// What a shown run holds.
pub enum ShownRun {
    /// A suite's outcome.
    Suite(Box<stackmeter_results::SuiteOutcome>),
    /// A single command's documents, one per test.
    Tests(Vec<stackmeter_results::Document>),
}

/// Stored run `id`, to be shown as its command printed it.
pub fn show(store: &Store, id: i64) -> Result<Shown, Error> {
    let run = store
        .run(id)?
        .ok_or_else(|| Error::not_stored(format!("no run {id} in the store (see `stackmeter runs`)")))?;
    let tests = store.tests_of_run(run.id)?;
    let attrs = run.run.attrs.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let what = match run.run.kind == "suite" {
        true => ShownRun::Suite(Box::new(stored_outcome(&run, &tests)?)),
        false => ShownRun::Tests(tests.into_iter().map(|t| t.doc).collect()),
    };
    Ok(Shown { attrs, what })
}

/// A stored suite's outcome, judged again from its stored settings and
/// tests (`show`, `runs`' key figure).
pub fn stored_outcome(run: &StoredRun, tests: &[StoredTest]) -> Result<stackmeter_results::SuiteOutcome, Error> {
    let settings: SuiteSettings = serde_json::from_value(run.run.settings.clone())
        .map_err(|e| Error::Local(format!("run {}: unreadable suite settings: {e}", run.id)))?;
    let done: Vec<stackmeter_results::Finished> = tests
        .iter()
        .map(|t| stackmeter_results::Finished {
            label: &t.label,
            step: &t.step,
            repetition: t.repetition,
            doc: &t.doc,
        })
        .collect();
    Ok(stackmeter_results::SuiteOutcome::build(settings, Some(run.id), &done))
}

/// The percentile spectrum of every histogram stored with run `id`.
pub fn spectrum(store: &Store, id: i64) -> Result<Spectrum, Error> {
    let run = store
        .run(id)?
        .ok_or_else(|| Error::not_stored(format!("no run {id} in the store (see `stackmeter runs`)")))?;
    let mut rows = Vec::new();
    for t in store.tests_of_run(run.id)? {
        let figs = figures(&t.doc);
        for h in store.histograms(t.id)? {
            if h.encoding != stackmeter_recorder::serial::ENCODING {
                continue;
            }
            let hist = stackmeter_recorder::serial::decode(&h.data)
                .map_err(|e| Error::Local(format!("test {}: {e}", t.id)))?;
            // A run in which nothing completed stores an empty histogram:
            // it has no percentiles.
            if hist.is_empty() {
                continue;
            }
            let points = stackmeter_recorder::serial::spectrum(&hist, 1)
                .into_iter()
                .map(|p| SpectrumPoint {
                    percentile: 100.0 * p.quantile,
                    value_us: p.value as f64 / 1000.0,
                    count: p.count,
                })
                .collect();
            rows.push(SpectrumRow {
                label: t.label.clone(),
                test: t.doc.body.kind(),
                step: t.step.clone(),
                repetition: t.repetition,
                row: stackmeter_results::row_label(&figs, h.row),
                metric: h.metric.clone(),
                count: hist.len(),
                points,
            });
        }
    }
    Ok(Spectrum {
        schema: stackmeter_results::SCHEMA.into(),
        run: run.id,
        rows,
    })
}

/// Export formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Export {
    /// One line per figure.
    Csv,
    /// Every run with its complete documents.
    Json,
}

/// `runs` (all when empty), only tests labelled `label` if given, as CSV or JSON.
pub fn export(store: &Store, runs: &[i64], label: Option<&str>, format: Export) -> Result<String, Error> {
    let all = store.runs()?;
    if let Some(id) = runs.iter().find(|id| !all.iter().any(|r| r.id == **id)) {
        return Err(Error::not_stored(format!(
            "no run {id} in the store (see `stackmeter runs`)"
        )));
    }
    // The csv crate quotes what needs it (a comma, a quote, a CR or LF).
    let mut csv = csv::Writer::from_writer(Vec::new());
    let head = [
        "run",
        "test_id",
        "time",
        "label",
        "test",
        "step",
        "repetition",
        "row",
        "row_label",
        "series",
        "stat",
        "unit",
        "value",
    ];
    let write = |w: &mut csv::Writer<Vec<u8>>, row: &[String]| {
        w.write_record(row)
            .map_err(|e| Error::Local(format!("cannot write the CSV export: {e}")))
    };
    write(&mut csv, &head.map(String::from))?;
    let mut json_runs = Vec::new();
    for r in all.iter().filter(|r| runs.is_empty() || runs.contains(&r.id)) {
        let tests: Vec<StoredTest> = store
            .tests_of_run(r.id)?
            .into_iter()
            .filter(|t| label.is_none_or(|l| t.label == l))
            .collect();
        for t in &tests {
            for f in figures(&t.doc) {
                let row = [
                    r.id.to_string(),
                    t.id.to_string(),
                    t.doc.env.time.clone(),
                    t.label.clone(),
                    t.doc.body.test_name().to_string(),
                    t.step.clone(),
                    t.repetition.to_string(),
                    f.row.to_string(),
                    f.row_label,
                    f.series,
                    f.stat,
                    f.unit,
                    f.value.to_string(),
                ];
                write(&mut csv, &row)?;
            }
        }
        let tests: Vec<serde_json::Value> = tests
            .iter()
            .map(|t| {
                serde_json::json!({
                    "id": t.id, "label": t.label, "step": t.step, "repetition": t.repetition,
                    "status": status(r),
                    "document": serde_json::to_value(&t.doc).unwrap_or_default(),
                })
            })
            .collect();
        let mut info = serde_json::to_value(r).unwrap_or_default();
        info["status"] = status(r).into();
        info["tests"] = tests.into();
        json_runs.push(info);
    }
    Ok(match format {
        Export::Csv => {
            let bytes = csv
                .into_inner()
                .map_err(|e| Error::Local(format!("cannot write the CSV export: {e}")))?;
            // Cannot fail: every field written is a String.
            String::from_utf8(bytes).expect("the CSV of UTF-8 fields is UTF-8")
        }
        Export::Json => {
            // As every JSON output: pretty, one newline after it.
            let v = serde_json::json!({ "schema": stackmeter_results::SCHEMA, "runs": json_runs });
            serde_json::to_string_pretty(&v).map_err(|e| Error::Local(format!("the JSON export: {e}")))? + "\n"
        }
    })
}
