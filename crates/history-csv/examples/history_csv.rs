//! Change points of every metric of CSV files in Otava's shape, printed as
//! one JSON line per file: what bench/history.sh runs on stackmeter's side
//! until `stackmeter history --csv FILE` takes its place.
//!
//! ```text
//! history_csv [--lower-is-better M]... [--higher-is-better M]...
//!             [--time-column C] [--run-column C | --row-runs]
//!             [--alpha A] [--tolerance T] [--min-segment N] FILE...
//! ```
//!
//! Without a metric named, every column of positive numbers is one,
//! lower is better. Each line: `{"file": F, "series": [{"metric": M,
//! "direction": D, "runs": N, "change_points": [...]}]}`, a series that
//! could not be judged with `"error"` instead of `"change_points"`; a
//! file that could not be read with `"error"` instead of `"series"`.

use stackmeter_history::{analyze, Direction, Settings};
use stackmeter_history_csv::{read, CsvOptions, RunGrouping};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("history_csv: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut opts = CsvOptions::default();
    let mut settings = Settings::new(Direction::LowerIsBetter);
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--lower-is-better" => opts.metrics.push((value(&a)?, Direction::LowerIsBetter)),
            "--higher-is-better" => opts.metrics.push((value(&a)?, Direction::HigherIsBetter)),
            "--time-column" => opts.time_column = value(&a)?,
            "--run-column" => opts.runs = RunGrouping::Column(value(&a)?),
            "--row-runs" => opts.runs = RunGrouping::Row,
            "--alpha" => settings.alpha = number(&a, &value(&a)?)?,
            "--tolerance" => settings.tolerance = number(&a, &value(&a)?)?,
            "--min-segment" => {
                settings.min_segment = value(&a)?.parse().map_err(|_| format!("{a}: not a count"))?;
            }
            "-h" | "--help" => {
                println!("usage: history_csv [--lower-is-better M]... [--higher-is-better M]... [--time-column C] [--run-column C | --row-runs] [--alpha A] [--tolerance T] [--min-segment N] FILE...");
                return Ok(());
            }
            f if f.starts_with("--") => return Err(format!("unknown option {f}")),
            f => files.push(f.to_string()),
        }
    }
    if files.is_empty() {
        return Err("no file given (--help)".into());
    }
    settings.check().map_err(|e| e.to_string())?;
    for f in &files {
        println!(
            "{}",
            serde_json::to_string(&judge(f, &opts, settings)).map_err(|e| e.to_string())?
        );
    }
    Ok(())
}

fn number(name: &str, v: &str) -> Result<f64, String> {
    v.parse().map_err(|_| format!("{name}: {v:?} is not a number"))
}

/// One file's line.
fn judge(file: &str, opts: &CsvOptions, settings: Settings) -> serde_json::Value {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => return serde_json::json!({ "file": file, "error": e.to_string() }),
    };
    let all = match read(&text, opts) {
        Ok(s) => s,
        Err(e) => return serde_json::json!({ "file": file, "error": e.to_string() }),
    };
    let series: Vec<serde_json::Value> = all
        .iter()
        .map(|s| {
            let settings = Settings {
                direction: s.direction,
                ..settings
            };
            let mut v = serde_json::json!({
                "metric": s.metric,
                "direction": s.direction,
                "runs": s.series.runs(),
            });
            match analyze(&s.series, &settings) {
                Ok(cps) => v["change_points"] = serde_json::json!(cps),
                Err(e) => v["error"] = serde_json::json!(e.to_string()),
            }
            v
        })
        .collect();
    serde_json::json!({ "file": file, "series": series })
}
