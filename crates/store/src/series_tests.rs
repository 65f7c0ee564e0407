//! Run attributes and the series `history` reads, on SQLite and on a real
//! PostgreSQL server alike: stored and read back, kept by a copy and a
//! spool, given to runs stored before attributes existed, and the SQL of
//! the Grafana dashboard (deploy/grafana/stackmeter-history.json) run
//! against a store with change points in it.

use super::testing::{missing, TempPostgres};
use super::tests::{add_one_with, doc, tmp};
use super::*;

/// A complete run with `attrs` and one test labelled `label`.
fn add_with(s: &mut Store, label: &str, attrs: &[(&str, &str)]) -> i64 {
    let attrs = attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let (run, _) = add_one_with(s, label, attrs);
    s.finish_run(run, "complete", "2026-11-21T02:31:00Z").unwrap();
    run
}

/// What both stores must do with attributes.
fn attributes_round_trip(s: &mut Store) {
    let a = add_with(s, "board", &[("commit", "c1"), ("firmware", "1.4.2")]);
    // The user's word wins over the host fact of the same name.
    let b = add_with(s, "board", &[("commit", "c2"), ("kernel", "6.1-custom")]);
    let runs = s.runs().unwrap();
    assert_eq!(runs[0].run.attrs.get("firmware").map(String::as_str), Some("1.4.2"));
    assert_eq!(runs[1].run.attrs.get("commit").map(String::as_str), Some("c2"));
    let all = s.run_attributes(&FigureFilter::default()).unwrap();
    let env = &doc().env;
    assert_eq!(all[&a]["commit"], "c1");
    assert_eq!(all[&a]["kernel"], env.kernel, "a host fact is an attribute");
    assert_eq!(all[&a]["host"], env.hostname);
    assert_eq!(all[&b]["kernel"], "6.1-custom");
    // Only the runs the filter keeps.
    let other = FigureFilter {
        labels: vec!["nobody".into()],
        ..FigureFilter::default()
    };
    assert!(s.run_attributes(&other).unwrap().is_empty());
    let points = s.figure_points(&FigureFilter::default()).unwrap();
    assert!(points.iter().any(|p| p.run_id == a) && points.iter().any(|p| p.run_id == b));
    assert!(
        points.windows(2).all(|w| w[0].run_id <= w[1].run_id),
        "oldest run first"
    );
    // A change point saved twice is one row, the second's figures.
    let p = &points[0];
    let mut row = ChangePointRow {
        found: "2026-11-27T10:00:00Z".into(),
        label: p.label.clone(),
        test: p.test.clone(),
        step: p.step.clone(),
        row_label: p.row_label.clone(),
        figure: figure_name(p),
        unit: p.unit.clone(),
        run_id: b,
        before: 10.0,
        after: 12.0,
        ratio: 1.2,
        ratio_low: 1.1,
        ratio_high: 1.3,
        p_value: 1e-4,
        regression: true,
    };
    assert_eq!(s.save_change_points(std::slice::from_ref(&row)).unwrap(), 1);
    row.after = 13.0;
    s.save_change_points(&[row]).unwrap();
    let saved = s.change_points().unwrap();
    assert_eq!(saved.len(), 1);
    assert_eq!((saved[0].after, saved[0].run_id), (13.0, b));
    // A copy keeps the attributes.
    let mut dst = Store::open(&tmp("attrs-copy")).unwrap();
    copy(s, &mut dst).unwrap();
    let copied = dst.runs().unwrap();
    assert_eq!(copied[0].run.attrs, runs[0].run.attrs);
    assert_eq!(copied[1].run.attrs, runs[1].run.attrs);
}

#[test]
fn sqlite_stores_attributes_and_change_points() {
    attributes_round_trip(&mut Store::open(&tmp("attrs")).unwrap());
}

#[test]
fn postgres_stores_attributes_and_change_points_and_the_dashboard_reads_them() {
    let test = "postgres_stores_attributes";
    let pg = match TempPostgres::shared() {
        Ok(pg) => pg,
        Err(why) => return missing(test, &format!("no PostgreSQL server: {why}")),
    };
    let url = pg.database("attrs").unwrap();
    let at = Location::parse(std::ffi::OsStr::new(&url)).unwrap();
    let mut s = Store::open(&at).unwrap();
    attributes_round_trip(&mut s);
    // Every query of the dashboard, its variables filled in as Grafana
    // would, runs and finds the store's rows.
    let p = &s.figure_points(&FigureFilter::default()).unwrap()[0];
    let figure = figure_name(p);
    let dash: serde_json::Value =
        serde_json::from_str(include_str!("../../../deploy/grafana/stackmeter-history.json")).unwrap();
    let mut queries = Vec::new();
    collect_sql(&dash, &mut queries);
    assert!(queries.len() >= 4, "the dashboard's queries: {queries:?}");
    let mut client = postgres::Client::connect(&pg.socket_url("attrs"), postgres::NoTls).unwrap();
    for q in &queries {
        let sql = q
            .replace(
                "$__timeFilter(r.started::timestamptz)",
                "r.started::timestamptz > '2000-01-01'",
            )
            .replace("$label", "'board'")
            .replace("$test", "rr")
            .replace("$row", &p.row_label)
            .replace("$figure", &figure);
        assert!(!sql.contains('$'), "a variable left unfilled: {sql}");
        let rows = client.query(sql.as_str(), &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert!(!rows.is_empty(), "no rows from {sql}");
    }
}

/// A figure as `history` names it: "rtt p50", or "total" for a value.
fn figure_name(p: &FigurePoint) -> String {
    match p.stat.as_str() {
        "value" => p.series.clone(),
        stat => format!("{} {stat}", p.series),
    }
}

/// Every `rawSql` of a dashboard, panels and variables alike.
fn collect_sql(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("rawSql", serde_json::Value::String(s)) => out.push(s.clone()),
                    _ => collect_sql(v, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| collect_sql(v, out)),
        _ => {}
    }
}

#[test]
fn runs_stored_before_attributes_have_their_host_facts_as_attributes() {
    let path = tmp("attrs-migrate");
    {
        let old = Store::open_at_version(&path, 3).unwrap();
        old.conn
            .sqlite()
            .execute_batch(
                "INSERT INTO runs (uid, started, kind, status, pid, tool_version, hostname, kernel, cpu_model, cpus,
                                   command, settings)
                 VALUES ('old-1', '2026-11-21T02:30:00Z', 'single', 'complete', 42, '0.1.0', 'h', 'k', 'c', 2,
                         '[]', '{}');",
            )
            .unwrap();
    }
    let s = Store::open(&path).unwrap();
    let runs = s.runs().unwrap();
    assert!(runs[0].run.attrs.is_empty());
    let id = runs[0].id;
    let got = s.conn.query(
        "SELECT key, value FROM run_attributes WHERE run_id = ?1 ORDER BY key",
        crate::backend::params![id],
    );
    let got: Vec<(String, String)> = got
        .unwrap()
        .iter()
        .map(|r| (r.text(0).unwrap(), r.text(1).unwrap()))
        .collect();
    let want = [("cpu", "c"), ("host", "h"), ("kernel", "k"), ("version", "0.1.0")];
    assert_eq!(got, want.map(|(k, v)| (k.to_string(), v.to_string())));
}
