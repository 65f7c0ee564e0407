//! `stackmeter history`: the stored runs of each (label, test, step, row,
//! figure) lined up as a series, in time order or in the order of an
//! attribute, judged by the change-point method (`stackmeter_history`),
//! and given back as one `results::History`. Also the same for a CSV file
//! in Otava's shape, and the change points written to the store for a
//! dashboard.

use crate::error::Error;
use stackmeter_history::{analyze, Direction, HistoryError, Series, Settings};
use stackmeter_history_csv::{CsvOptions, CsvSeries};
use stackmeter_results::history::{
    AttrChange, History, HistoryChange, HistoryRun, HistorySeries, HistorySettings, Skipped,
};
use stackmeter_store::{ChangePointRow, FigureFilter, FigurePoint, Store};
use std::collections::BTreeMap;

/// The method, in a line (docs/methods.md, "History", says the rest).
pub const METHOD: &str = "binary segmentation of each run's log median, weighted by a between-run plus within-run noise model, each change point confirmed by a scan p-value";

/// What to read, in what order, and how to judge it.
#[derive(Clone, Debug, Default)]
pub struct Query {
    /// Labels (empty: every label).
    pub labels: Vec<String>,
    /// Only this test.
    pub test: Option<String>,
    /// Only this row ("1 B:1 KiB").
    pub row: Option<String>,
    /// Only this figure: its name ("rtt p50"), its statistic ("p50") or
    /// its series ("rtt"). None: the figures `compare` compares.
    pub figure: Option<String>,
    /// Show (and gate) only the last N runs of each series.
    pub last: Option<usize>,
    /// Show (and gate) only runs that started at or after this time.
    pub since: Option<String>,
    /// Order runs by this attribute instead of by time.
    pub by: Option<String>,
    /// The smallest change counted as a regression, a fraction.
    pub tolerance: f64,
    /// Divide each run's figure by the same job's run of this label (a
    /// reference measured interleaved in that job), so that what slows the
    /// machine for both cancels.
    pub relative_to: Option<String>,
}

/// One series as read, before judging: its runs in order.
struct Raw {
    head: HistorySeries,
    runs: Vec<HistoryRun>,
}

/// A figure's name: its series and statistic ("rtt p50"), or the series
/// alone for a single value ("total").
pub fn figure_name(series: &str, stat: &str) -> String {
    match stat {
        "value" => series.to_string(),
        _ => format!("{series} {stat}"),
    }
}

/// The history of the store's runs `q` asks for.
pub fn from_store(store: &Store, q: &Query) -> Result<History, Error> {
    let mut labels = q.labels.clone();
    if let (Some(r), false) = (&q.relative_to, labels.is_empty()) {
        if !labels.contains(r) {
            labels.push(r.clone());
        }
    }
    let filter = FigureFilter {
        labels,
        test: q.test.clone(),
        since: None,
        compared_only: q.figure.is_none(),
    };
    let points = store.figure_points(&filter)?;
    if points.is_empty() {
        let what = match q.labels.is_empty() {
            true => "the store".to_string(),
            false => format!("label(s) {}", q.labels.join(", ")),
        };
        return Err(Error::not_stored(format!(
            "no complete test of {what}{} is stored",
            q.test.as_ref().map(|t| format!(" with test {t}")).unwrap_or_default()
        )));
    }
    let attrs = store.run_attributes(&filter)?;
    let mut raw = series_of(&points, &attrs, q)?;
    let mut skipped = Vec::new();
    if let Some(r) = &q.relative_to {
        (raw, skipped) = relative_to(raw, r)?;
    }
    judge(raw, q, "the results store".into(), skipped)
}

/// Every series but the reference's, each run's values divided by the
/// reference's run of the same job (same run id, same test, step, row and
/// figure): repetition by repetition where both have it, else by the
/// reference run's median. Runs without a reference in their job are left
/// out, and said.
fn relative_to(raw: Vec<Raw>, reference: &str) -> Result<(Vec<Raw>, Vec<Skipped>), Error> {
    let (refs, others): (Vec<Raw>, Vec<Raw>) = raw.into_iter().partition(|r| r.head.label == reference);
    if refs.is_empty() {
        return Err(Error::not_stored(format!(
            "--relative-to {reference}: no stored run of that label has these figures"
        )));
    }
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for mut s in others {
        let same = |r: &&Raw| {
            (&r.head.test, &r.head.step, &r.head.row, &r.head.figure)
                == (&s.head.test, &s.head.step, &s.head.row, &s.head.figure)
        };
        let Some(base) = refs.iter().find(same) else {
            skipped.push(Skipped {
                series: s.head.name(),
                why: format!("no {reference} series of the same figure to divide by"),
            });
            continue;
        };
        let before = s.runs.len();
        s.runs.retain_mut(|run| {
            let Some(b) = base.runs.iter().find(|b| b.run_id == run.run_id) else {
                return false;
            };
            let median = stackmeter_statistics::median(&b.values).unwrap_or(f64::NAN);
            for (i, v) in run.values.iter_mut().enumerate() {
                *v /= b.values.get(i).copied().unwrap_or(median);
            }
            run.values.iter().all(|v| v.is_finite() && *v > 0.0)
        });
        if s.runs.len() < before {
            skipped.push(Skipped {
                series: s.head.name(),
                why: format!(
                    "{} run(s) without {reference} in the same job left out",
                    before - s.runs.len()
                ),
            });
        }
        s.head.label = format!("{} / {reference}", s.head.label);
        s.head.unit = format!("x {reference}");
        out.push(s);
    }
    Ok((out, skipped))
}

/// Groups the points into series, keeps the row and figure asked for.
fn series_of(
    points: &[FigurePoint],
    attrs: &BTreeMap<i64, BTreeMap<String, String>>,
    q: &Query,
) -> Result<Vec<Raw>, Error> {
    let wanted = |p: &FigurePoint| {
        let name = figure_name(&p.series, &p.stat);
        let row_ok = q.row.as_ref().is_none_or(|r| *r == p.row_label);
        let fig_ok = q
            .figure
            .as_ref()
            .is_none_or(|f| *f == name || *f == p.stat || *f == p.series);
        row_ok && fig_ok
    };
    let mut by_key: BTreeMap<(String, String, String, String, String), Raw> = BTreeMap::new();
    let mut order: Vec<(String, String, String, String, String)> = Vec::new();
    for p in points.iter().filter(|p| wanted(p)) {
        let figure = figure_name(&p.series, &p.stat);
        let key = (
            p.label.clone(),
            p.test.clone(),
            p.step.clone(),
            p.row_label.clone(),
            figure.clone(),
        );
        let raw = by_key.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            Raw {
                head: HistorySeries {
                    label: p.label.clone(),
                    test: p.test.clone(),
                    step: p.step.clone(),
                    row: p.row_label.clone(),
                    figure,
                    unit: p.unit.clone(),
                    direction: p.direction,
                    runs: Vec::new(),
                    changes: Vec::new(),
                },
                runs: Vec::new(),
            }
        });
        match raw.runs.last_mut().filter(|r| r.run_id == Some(p.run_id)) {
            Some(run) => run.values.push(p.value),
            None => raw.runs.push(HistoryRun {
                run_id: Some(p.run_id),
                started: p.started.clone(),
                attrs: attrs.get(&p.run_id).cloned().unwrap_or_default(),
                values: vec![p.value],
                median: 0.0,
                shown: true,
            }),
        }
    }
    if order.is_empty() {
        return Err(Error::not_stored(nothing_matches(points, q)));
    }
    Ok(order.into_iter().filter_map(|k| by_key.remove(&k)).collect())
}

/// What a `--row` or `--figure` that matches nothing could have been.
fn nothing_matches(points: &[FigurePoint], q: &Query) -> String {
    let mut rows: Vec<&str> = Vec::new();
    let mut figures: Vec<String> = Vec::new();
    for p in points {
        if !rows.contains(&p.row_label.as_str()) {
            rows.push(&p.row_label);
        }
        let f = figure_name(&p.series, &p.stat);
        if !figures.contains(&f) {
            figures.push(f);
        }
    }
    match (&q.row, &q.figure) {
        (Some(r), _) if !rows.contains(&r.as_str()) => {
            format!("no row '{r}' in the stored runs (rows: {})", rows.join(", "))
        }
        (_, Some(f)) => format!("no figure '{f}' in the stored runs (figures: {})", figures.join(", ")),
        _ => "no stored figure matches".into(),
    }
}

/// Orders, windows and judges every series.
fn judge(raw: Vec<Raw>, q: &Query, source: String, skipped: Vec<Skipped>) -> Result<History, Error> {
    let settings = Settings {
        tolerance: q.tolerance,
        ..Settings::new(Direction::LowerIsBetter)
    };
    settings.check().map_err(|e| Error::flag(format!("--tolerance: {e}")))?;
    let mut out = History {
        schema: stackmeter_results::SCHEMA.into(),
        settings: HistorySettings {
            method: METHOD.into(),
            alpha: settings.alpha,
            tolerance: settings.tolerance,
            min_segment: settings.min_segment,
            order: q.by.as_ref().map_or("time".into(), |k| format!("attribute {k}")),
            relative_to: q.relative_to.clone(),
            window: match (q.last, &q.since) {
                (Some(n), _) => format!("last {n} runs"),
                (None, Some(t)) => format!("since {t}"),
                (None, None) => "all".into(),
            },
            source,
        },
        series: Vec::new(),
        skipped,
    };
    // Series too short to judge: how many, the most runs any has, and the
    // runs a series needs (one short line when nothing can be judged).
    let mut short: Option<(usize, usize, usize)> = None;
    for mut r in raw {
        let dropped = order_runs(&mut r.runs, q.by.as_deref());
        window(&mut r.runs, q);
        let name = r.head.name();
        let s = Settings {
            direction: r.head.direction,
            ..settings
        };
        match judge_one(r, &s) {
            Ok(series) => out.series.push(series),
            Err(why) => {
                if let Unjudged::TooShort { runs, need } = why {
                    let (n, most, _) = short.get_or_insert((0, 0, need));
                    *n += 1;
                    *most = (*most).max(runs);
                }
                out.skipped.push(Skipped {
                    series: name,
                    why: why.to_string(),
                });
            }
        }
        if dropped > 0 {
            if let Some(k) = &q.by {
                out.skipped.push(Skipped {
                    series: out.series.last().map(HistorySeries::name).unwrap_or_default(),
                    why: format!("{dropped} run(s) without the attribute {k} left out"),
                });
            }
        }
    }
    if out.series.is_empty() {
        let others = out.skipped.len() - short.map_or(0, |(n, _, _)| n);
        if let (Some((n, most, need)), 0) = (short, others) {
            return Err(Error::TooFewRuns(format!(
                "no series can be judged yet: {n} series, the longest with {most} run(s), and each needs at least {need} \
                 (store more: suite --repeat N, or --attr commit=... on each CI run)"
            )));
        }
        return Err(Error::Local(match out.skipped.first() {
            Some(first) => format!(
                "no series could be judged: {} series skipped, the first ({}) because {}",
                out.skipped.len(),
                first.series,
                first.why
            ),
            None => "no series to judge".into(),
        }));
    }
    out.sort();
    Ok(out)
}

/// Why a series was not judged.
enum Unjudged {
    /// Fewer runs than the method needs.
    TooShort { runs: usize, need: usize },
    /// Anything else, in words.
    Other(String),
}

impl std::fmt::Display for Unjudged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unjudged::TooShort { runs, need } => write!(f, "{runs} runs, too few to judge (at least {need})"),
            Unjudged::Other(why) => f.write_str(why),
        }
    }
}

/// One series judged: its runs' medians and its change points.
fn judge_one(r: Raw, s: &Settings) -> Result<HistorySeries, Unjudged> {
    let mut runs = r.runs;
    for run in &mut runs {
        run.median = stackmeter_statistics::median(&run.values).unwrap_or(f64::NAN);
    }
    let series = Series::from_runs(&runs.iter().map(|r| r.values.as_slice()).collect::<Vec<_>>())
        .map_err(|e| Unjudged::Other(e.to_string()))?;
    let found = analyze(&series, s).map_err(|e| match e {
        HistoryError::TooShort { runs, need } => Unjudged::TooShort { runs, need },
        other => Unjudged::Other(other.to_string()),
    })?;
    let changes = found
        .into_iter()
        .map(|c| {
            let at = &runs[c.index];
            let before = c.index.checked_sub(1).map(|i| &runs[i].attrs);
            HistoryChange {
                run_id: at.run_id,
                started: at.started.clone(),
                attrs: at.attrs.clone(),
                changed: before.map_or_else(Vec::new, |b| AttrChange::between(b, &at.attrs)),
                shown: at.shown,
                change: c,
            }
        })
        .collect();
    Ok(HistorySeries {
        runs,
        changes,
        ..r.head
    })
}

/// Puts runs in time order, or in the order of attribute `by` (numbers
/// inside values compared as numbers: 1.10 after 1.9), dropping runs
/// without it; returns how many were dropped.
fn order_runs(runs: &mut Vec<HistoryRun>, by: Option<&str>) -> usize {
    let Some(key) = by else {
        runs.sort_by(|a, b| (&a.started, a.run_id).cmp(&(&b.started, b.run_id)));
        return 0;
    };
    let before = runs.len();
    runs.retain(|r| r.attrs.contains_key(key));
    runs.sort_by(|a, b| {
        let (x, y) = (&a.attrs[key], &b.attrs[key]);
        stackmeter_results::fleet::natural(x)
            .cmp(&stackmeter_results::fleet::natural(y))
            .then_with(|| (&a.started, a.run_id).cmp(&(&b.started, b.run_id)))
    });
    before - runs.len()
}

/// Marks the runs inside `--last N` or `--since TIME`.
fn window(runs: &mut [HistoryRun], q: &Query) {
    let n = runs.len();
    for (i, r) in runs.iter_mut().enumerate() {
        r.shown = match (q.last, &q.since) {
            (Some(last), _) => i + last >= n,
            (None, Some(t)) => r.started.as_str() >= t.as_str(),
            (None, None) => true,
        };
    }
}

/// The history of the metrics of a CSV file in Otava's shape (`text`, read
/// from `name`).
pub fn from_csv(name: &str, text: &str, options: &CsvOptions, q: &Query) -> Result<History, Error> {
    let found = stackmeter_history_csv::read(text, options).map_err(|e| Error::file(format!("{name}: {e}")))?;
    let label = std::path::Path::new(name)
        .file_stem()
        .map_or_else(|| name.to_string(), |s| s.to_string_lossy().into_owned());
    let raw = found
        .into_iter()
        .filter(|s| q.figure.as_ref().is_none_or(|f| *f == s.metric))
        .map(|s| csv_series(&label, s))
        .collect::<Vec<_>>();
    if raw.is_empty() {
        return Err(Error::file(format!(
            "{name}: no metric column {}",
            q.figure.as_deref().unwrap_or("")
        )));
    }
    judge(raw, q, format!("CSV file {name}"), Vec::new())
}

fn csv_series(label: &str, s: CsvSeries) -> Raw {
    let runs = s
        .runs
        .iter()
        .zip(s.series.iter())
        .map(|(info, values)| HistoryRun {
            run_id: None,
            started: info.time.clone(),
            attrs: info.attributes.iter().cloned().collect(),
            values: values.to_vec(),
            median: 0.0,
            shown: true,
        })
        .collect();
    Raw {
        head: HistorySeries {
            label: label.to_string(),
            test: "csv".into(),
            step: String::new(),
            row: String::new(),
            figure: s.metric,
            unit: String::new(),
            direction: s.direction,
            runs: Vec::new(),
            changes: Vec::new(),
        },
        runs,
    }
}

/// Writes every change point of `h` (stored runs only) to the store's
/// `change_points` table, found at `now`; returns how many.
pub fn save(store: &mut Store, h: &History, now: &str) -> Result<usize, Error> {
    let mut rows = Vec::new();
    for s in &h.series {
        for c in &s.changes {
            let Some(run_id) = c.run_id else { continue };
            rows.push(ChangePointRow {
                found: now.to_string(),
                label: s.label.clone(),
                test: s.test.clone(),
                step: s.step.clone(),
                row_label: s.row.clone(),
                figure: s.figure.clone(),
                unit: s.unit.clone(),
                run_id,
                before: c.change.before_median,
                after: c.change.after_median,
                ratio: c.change.ratio,
                ratio_low: c.change.ratio_ci.0,
                ratio_high: c.change.ratio_ci.1,
                p_value: c.change.p_value,
                regression: c.change.regression,
            });
        }
    }
    Ok(store.save_change_points(&rows)?)
}
