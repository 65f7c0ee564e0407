//! Series from a CSV file in Otava's shape, so the method can judge
//! figures from anywhere: a header line, a time column, attribute columns
//! (commit, version, anything that is not a figure) and metric columns.
//!
//! One extension: a run may have several repetitions. By default the
//! rows that follow one another with the same time are one run (a run's
//! repetitions share its start time); [`RunGrouping`] can make every row a run
//! instead, or group by another column. Parsing only: the caller reads
//! the file. Fields follow RFC 4180 (quotes, doubled quotes inside them,
//! line breaks in quoted fields, CRLF or LF), read by the `csv` crate;
//! blank lines are skipped.
//! Every error names the line (1-based, where the record starts) and,
//! where one is at fault, the column.
//!
//! A crate of its own beside the change-point method (`stackmeter-history`),
//! which takes its series and knows nothing of files: reading someone
//! else's format is input, not the method. `stackmeter history --csv` uses
//! it through the engine; `examples/history_csv.rs` is what
//! bench/history.sh runs against Apache Otava on the same files.

use serde::{Deserialize, Serialize};
use stackmeter_history::Series;
use stackmeter_statistics::Direction;
use thiserror::Error;

/// Which rows are one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunGrouping {
    /// Consecutive rows with the same time are one run (the default).
    Time,
    /// Every row is a run of one repetition (Otava's reading).
    Row,
    /// Consecutive rows with the same value in this column are one run.
    Column(String),
}

/// How to read a file.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvOptions {
    /// Name of the time column (default "time", as Otava's).
    pub time_column: String,
    /// Field separator (default b',').
    pub delimiter: u8,
    /// The metric columns and which way is better for each. Empty: every
    /// column other than the time and run columns whose cells are all
    /// numbers above zero (empty cells aside), with `default_direction`.
    pub metrics: Vec<(String, Direction)>,
    /// Direction of metrics found without being named.
    pub default_direction: Direction,
    /// Which rows are one run.
    pub runs: RunGrouping,
}

impl Default for CsvOptions {
    fn default() -> CsvOptions {
        CsvOptions {
            time_column: "time".to_string(),
            delimiter: b',',
            metrics: Vec::new(),
            default_direction: Direction::LowerIsBetter,
            runs: RunGrouping::Time,
        }
    }
}

/// One run of a metric's series, as the file names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunInfo {
    /// Line of the run's first row.
    pub line: usize,
    /// Its time, as written.
    pub time: String,
    /// Its attributes (every column that is neither the time nor a
    /// metric), as written in its first row, in the file's column order.
    pub attributes: Vec<(String, String)>,
}

/// One metric column as a series.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvSeries {
    /// The column's name.
    pub metric: String,
    /// Which way is better.
    pub direction: Direction,
    /// Its runs (a run with no value in this column is left out).
    pub series: Series,
    /// What the file says about each run of `series`.
    pub runs: Vec<RunInfo>,
}

/// What is wrong with a file, and where.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum CsvError {
    /// Nothing but blank lines.
    #[error("the file is empty: a header line is needed")]
    Empty,
    /// The header has no column of the time column's name.
    #[error("line 1: no time column {name:?} (the columns are {columns})")]
    NoTimeColumn {
        /// The name looked for.
        name: String,
        /// The header's columns, comma-separated.
        columns: String,
    },
    /// A column named as a metric or as the run key is not in the header.
    #[error("line 1: no column {name:?} (the columns are {columns})")]
    NoColumn {
        /// The name looked for.
        name: String,
        /// The header's columns, comma-separated.
        columns: String,
    },
    /// Two columns of one name.
    #[error("line 1, column {column}: {name:?} appears twice")]
    DuplicateColumn {
        /// 1-based position of the second one.
        column: usize,
        /// The name.
        name: String,
    },
    /// A row with a different number of fields than the header.
    #[error("line {line}: {found} fields where the header has {expected}")]
    Ragged {
        /// Line where the row starts.
        line: usize,
        /// Fields in the row.
        found: usize,
        /// Fields in the header.
        expected: usize,
    },
    /// A metric cell that is not a number.
    #[error("line {line}, column {column} ({name}): {value:?} is not a number")]
    NotANumber {
        /// Line where the row starts.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The column's name.
        name: String,
        /// The cell.
        value: String,
    },
    /// A metric cell that is a number but not above zero (the method works
    /// on logarithms).
    #[error("line {line}, column {column} ({name}): {value} is not above zero")]
    NotPositive {
        /// Line where the row starts.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The column's name.
        name: String,
        /// The value.
        value: f64,
    },
    /// A quoted field still open at the end of the file.
    #[error("line {line}: a quoted field is not closed")]
    UnclosedQuote {
        /// Line where the field starts.
        line: usize,
    },
    /// No column is a metric.
    #[error("no metric column: name one, or give a column whose cells are all numbers above zero")]
    NoMetric,
}

/// One record: where it starts and its fields.
struct Record {
    line: usize,
    fields: Vec<String>,
}

/// Splits `text` into records with the `csv` crate (RFC 4180: quotes,
/// doubled quotes, line breaks in quoted fields, CRLF or LF), skipping
/// blank lines; each record with the line it starts on. The crate reads
/// an unclosed quote to the end of the file as one field; an odd number
/// of quotes in all says that happened, and the last record is where.
fn records(text: &str, delimiter: u8) -> Result<Vec<Record>, CsvError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .from_reader(text.as_bytes());
    let mut out = Vec::new();
    for r in reader.records() {
        // Cannot fail on a &str: the only errors are I/O and UTF-8.
        let Ok(r) = r else { continue };
        let line = r.position().map_or(1, |p| line_at(text, p.byte() as usize));
        let fields: Vec<String> = r.iter().map(str::to_string).collect();
        if fields.len() == 1 && fields[0].trim().is_empty() {
            continue;
        }
        out.push(Record { line, fields });
    }
    if text.bytes().filter(|&b| b == b'"').count() % 2 == 1 {
        return Err(CsvError::UnclosedQuote {
            line: out.last().map_or(1, |r| r.line),
        });
    }
    Ok(out)
}

/// The line (1-based) of the record the `csv` crate says starts at byte
/// `at`: it points at the end of what came before (a line break, or the
/// blank lines it skipped), so the record starts at the first byte after
/// them.
fn line_at(text: &str, at: usize) -> usize {
    let bytes = text.as_bytes();
    let start = (at..bytes.len())
        .find(|&i| bytes[i] != b'\r' && bytes[i] != b'\n')
        .unwrap_or(bytes.len());
    1 + bytes[..start].iter().filter(|&&b| b == b'\n').count()
}

/// Reads every metric of `text` as a series.
pub fn read(text: &str, options: &CsvOptions) -> Result<Vec<CsvSeries>, CsvError> {
    let mut recs = records(text, options.delimiter)?.into_iter();
    let header = recs.next().ok_or(CsvError::Empty)?.fields;
    let rows: Vec<Record> = recs.collect();
    for (i, name) in header.iter().enumerate() {
        if header[..i].contains(name) {
            return Err(CsvError::DuplicateColumn {
                column: i + 1,
                name: name.clone(),
            });
        }
    }
    let columns = header.join(", ");
    let find = |name: &str| header.iter().position(|h| h == name);
    let time = find(&options.time_column).ok_or_else(|| CsvError::NoTimeColumn {
        name: options.time_column.clone(),
        columns: columns.clone(),
    })?;
    let key = match &options.runs {
        RunGrouping::Time => Some(time),
        RunGrouping::Row => None,
        RunGrouping::Column(name) => Some(find(name).ok_or_else(|| CsvError::NoColumn {
            name: name.clone(),
            columns: columns.clone(),
        })?),
    };
    for r in &rows {
        if r.fields.len() != header.len() {
            return Err(CsvError::Ragged {
                line: r.line,
                found: r.fields.len(),
                expected: header.len(),
            });
        }
    }
    let metrics: Vec<(usize, Direction)> = if options.metrics.is_empty() {
        (0..header.len())
            .filter(|&c| c != time && Some(c) != key && looks_like_a_metric(&rows, c))
            .map(|c| (c, options.default_direction))
            .collect()
    } else {
        options
            .metrics
            .iter()
            .map(|(name, dir)| {
                find(name).map(|c| (c, *dir)).ok_or_else(|| CsvError::NoColumn {
                    name: name.clone(),
                    columns: columns.clone(),
                })
            })
            .collect::<Result<_, _>>()?
    };
    if metrics.is_empty() {
        return Err(CsvError::NoMetric);
    }
    let attributes: Vec<usize> = (0..header.len())
        .filter(|&c| c != time && !metrics.iter().any(|m| m.0 == c))
        .collect();
    // Runs: consecutive rows with the same key.
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        match (groups.last_mut(), key) {
            (Some(g), Some(k)) if rows[g.start].fields[k] == r.fields[k] => g.end = i + 1,
            _ => groups.push(i..i + 1),
        }
    }
    metrics
        .iter()
        .map(|&(column, direction)| {
            let mut series = Series::new();
            let mut runs = Vec::new();
            let mut reps = Vec::new();
            for g in &groups {
                reps.clear();
                for r in &rows[g.clone()] {
                    if let Some(v) = cell(r, column, &header[column])? {
                        reps.push(v);
                    }
                }
                if reps.is_empty() {
                    continue;
                }
                // Cannot fail: `reps` is not empty and `cell` lets only
                // positive finite numbers through, which is all a run needs.
                series.push_run(&reps).expect("a non-empty run of positive numbers");
                let first = &rows[g.start];
                runs.push(RunInfo {
                    line: first.line,
                    time: first.fields[time].clone(),
                    attributes: attributes
                        .iter()
                        .map(|&c| (header[c].clone(), first.fields[c].clone()))
                        .collect(),
                });
            }
            Ok(CsvSeries {
                metric: header[column].clone(),
                direction,
                series,
                runs,
            })
        })
        .collect()
}

/// A metric cell: `None` when empty, else a positive finite number.
fn cell(r: &Record, column: usize, name: &str) -> Result<Option<f64>, CsvError> {
    let text = r.fields[column].trim();
    if text.is_empty() {
        return Ok(None);
    }
    let value: f64 = text.parse().map_err(|_| CsvError::NotANumber {
        line: r.line,
        column: column + 1,
        name: name.to_string(),
        value: text.to_string(),
    })?;
    if !(value.is_finite() && value > 0.0) {
        return Err(CsvError::NotPositive {
            line: r.line,
            column: column + 1,
            name: name.to_string(),
            value,
        });
    }
    Ok(Some(value))
}

/// True when column `c` has a value and every value is a positive number.
fn looks_like_a_metric(rows: &[Record], c: usize) -> bool {
    let mut any = false;
    for r in rows {
        let t = r.fields[c].trim();
        if t.is_empty() {
            continue;
        }
        match t.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => any = true,
            _ => return false,
        }
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    const OTAVA: &str = "time,commit,throughput,latency\n\
        2024-01-01 00:00:00 +0000,aaa,100,5.5\n\
        2024-01-02 00:00:00 +0000,bbb,102,5.4\n\
        2024-01-03 00:00:00 +0000,ccc,99,\n";

    #[test]
    fn otava_shape_one_row_per_run() {
        let opts = CsvOptions {
            metrics: vec![
                ("throughput".into(), Direction::HigherIsBetter),
                ("latency".into(), Direction::LowerIsBetter),
            ],
            ..CsvOptions::default()
        };
        let s = read(OTAVA, &opts).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].metric, "throughput");
        assert_eq!(s[0].direction, Direction::HigherIsBetter);
        assert_eq!(s[0].series.runs(), 3);
        assert_eq!(s[0].series.run(1), &[102.0]);
        assert_eq!(s[0].runs[2].line, 4);
        assert_eq!(s[0].runs[1].attributes, vec![("commit".to_string(), "bbb".to_string())]);
        // The empty latency cell leaves that run out of the latency series.
        assert_eq!(s[1].series.runs(), 2);
        // Found without being named: both numeric columns, commit is not.
        let auto = read(OTAVA, &CsvOptions::default()).unwrap();
        assert_eq!(
            auto.iter().map(|s| s.metric.as_str()).collect::<Vec<_>>(),
            ["throughput", "latency"]
        );
    }

    #[test]
    fn rows_of_one_time_are_one_run() {
        let text = "time,commit,p50\r\nt1,a1,10\r\nt1,a1,11\r\nt2,b2,12\r\n\r\nt2,b2,13\r\nt2,b2,14\r\nt1,c3,9\r\n";
        let s = read(text, &CsvOptions::default()).unwrap();
        assert_eq!(s.len(), 1);
        let p50 = &s[0];
        assert_eq!(p50.series.iter().map(<[f64]>::len).collect::<Vec<_>>(), vec![2, 3, 1]);
        assert_eq!(p50.runs[2].time, "t1");
        assert_eq!(p50.runs[1].line, 4);
        let rows = read(
            text,
            &CsvOptions {
                runs: RunGrouping::Row,
                metrics: vec![("p50".into(), Direction::LowerIsBetter)],
                ..CsvOptions::default()
            },
        )
        .unwrap();
        assert_eq!(rows[0].series.runs(), 6);
    }

    #[test]
    fn quotes_and_delimiters() {
        let text = "time;\"note\";v\n\"2024-01-01\";\"a;b \"\"x\"\"\nsecond line\";1.5\n";
        let s = read(
            text,
            &CsvOptions {
                delimiter: b';',
                ..CsvOptions::default()
            },
        )
        .unwrap();
        assert_eq!(s[0].runs[0].attributes[0].1, "a;b \"x\"\nsecond line");
        assert_eq!(s[0].series.run(0), &[1.5]);
    }

    #[test]
    fn errors_name_the_line_and_the_column() {
        let opts = CsvOptions::default();
        assert_eq!(read("\n\n", &opts), Err(CsvError::Empty));
        let e = read("when,v\n1,2\n", &opts).unwrap_err();
        assert!(
            matches!(&e, CsvError::NoTimeColumn { name, .. } if name == "time"),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "line 1: no time column \"time\" (the columns are when, v)"
        );
        assert_eq!(
            read("time,v\n1,2\n2,3,4\n", &opts),
            Err(CsvError::Ragged {
                line: 3,
                found: 3,
                expected: 2
            })
        );
        let named = CsvOptions {
            metrics: vec![("v".into(), Direction::LowerIsBetter)],
            ..CsvOptions::default()
        };
        let e = read("time,v\n1,2\n2,fast\n", &named).unwrap_err();
        assert_eq!(e.to_string(), "line 3, column 2 (v): \"fast\" is not a number");
        assert!(matches!(
            read("time,v\n1,0\n", &named),
            Err(CsvError::NotPositive { line: 2, column: 2, .. })
        ));
        assert!(matches!(
            read("time,x\n1,\"open\n", &opts),
            Err(CsvError::UnclosedQuote { line: 2 })
        ));
        assert!(matches!(
            read("time,v,v\n1,2,3\n", &opts),
            Err(CsvError::DuplicateColumn { column: 3, .. })
        ));
        assert_eq!(read("time,commit\n1,abc\n", &opts), Err(CsvError::NoMetric));
        let missing = CsvOptions {
            metrics: vec![("p99".into(), Direction::LowerIsBetter)],
            ..CsvOptions::default()
        };
        assert!(matches!(read("time,v\n1,2\n", &missing), Err(CsvError::NoColumn { name, .. }) if name == "p99"));
    }
}
