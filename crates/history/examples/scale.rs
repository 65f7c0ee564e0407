//! The scale benchmark (not a test): 10,000 seeded synthetic series of
//! 1,000 runs of 5 repetitions analysed on every CPU, then the cost of
//! appending one run to a 10,000-run series with the [`Tracker`] against
//! analysing that series again.
//!
//! ```text
//! cargo run --release -p stackmeter-history --example scale [SERIES RUNS REPS THREADS]
//! ```

use stackmeter_history::{analyze, Direction, Series, Settings, Tracker};
use stackmeter_statistics::rng::Rng;
use std::time::Instant;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let count = args.first().copied().unwrap_or(10_000);
    let runs = args.get(1).copied().unwrap_or(1_000);
    let reps = args.get(2).copied().unwrap_or(5);
    let threads = args
        .get(3)
        .copied()
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let settings = Settings::new(Direction::LowerIsBetter);

    let t = Instant::now();
    let mut planted = 0;
    let all: Vec<(Series, Vec<usize>)> = (0..count)
        .map(|i| {
            let (s, cps) = synthetic(i as u64, runs, reps);
            planted += cps.len();
            (s, cps)
        })
        .collect();
    println!(
        "generated {count} series of {runs} runs x {reps} repetitions ({} values, {planted} planted changes) in {:.2} s",
        count * runs * reps,
        t.elapsed().as_secs_f64()
    );

    for threads in [1, threads] {
        let t = Instant::now();
        let chunk = all.len().div_ceil(threads);
        let (found, hits) = std::thread::scope(|scope| {
            let handles: Vec<_> = all
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        let (mut found, mut hits) = (0usize, 0usize);
                        for (s, truth) in part {
                            // The synthetic series are long enough and the settings
                            // are the defaults: analyze cannot fail here.
                            let cps = analyze(s, &settings).expect("a valid series");
                            found += cps.len();
                            hits += truth
                                .iter()
                                .filter(|&&c| cps.iter().any(|cp| cp.index.abs_diff(c) <= 5))
                                .count();
                        }
                        (found, hits)
                    })
                })
                .collect();
            handles
                .into_iter()
                // A thread only panics if the analysis does: let it show.
                .map(|h| h.join().expect("an analysis thread panicked"))
                .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
        });
        let secs = t.elapsed().as_secs_f64();
        println!(
            "analysed on {threads} thread(s) in {secs:.2} s ({:.1} us per series); {found} change points found, {hits} of {planted} planted ones within 5 runs",
            secs * 1e6 / count as f64
        );
    }

    // Appending to a long series. The runs are `synthetic`'s, positive and
    // non-empty, and the series is far longer than the settings need: the
    // expects below cannot fail.
    let long_runs = 10_000;
    let (long, _) = synthetic(999_999, long_runs + 1_000, reps);
    let head = Series::from_runs(&long.iter().take(long_runs).collect::<Vec<_>>()).expect("a valid series");
    let t = Instant::now();
    let rounds = 20;
    for _ in 0..rounds {
        std::hint::black_box(analyze(&head, &settings).expect("a valid series"));
    }
    let full = t.elapsed().as_secs_f64() / f64::from(rounds);
    let tracker = Tracker::replay(settings, &head).expect("a valid series");
    let tail: Vec<&[f64]> = long.iter().skip(long_runs).collect();
    let mut appended = tracker.clone();
    let t = Instant::now();
    for run in &tail {
        std::hint::black_box(appended.push(run).expect("a valid run"));
    }
    let push = t.elapsed().as_secs_f64() / tail.len() as f64;
    println!(
        "a {long_runs}-run series: analyse again {:.0} us; append one run to the tracker {:.1} us on average over {} appends ({:.0}x less)",
        full * 1e6,
        push * 1e6,
        tail.len(),
        full / push
    );
}

/// A series like a busy machine's rr p50: 3% between-run and 5% within-run
/// log-normal noise, 2% of repetitions wild (x1.3 to x3), and 0 to 3
/// shifts of 5% to 30% either way, at least 50 runs apart. Returns the
/// series and where the shifts are.
fn synthetic(seed: u64, runs: usize, reps: usize) -> (Series, Vec<usize>) {
    let mut rng = Rng::new(seed);
    // Shifts need room: none in series shorter than 200 runs.
    let changes = if runs >= 200 { rng.index(4) } else { 0 };
    let mut at: Vec<usize> = Vec::new();
    while at.len() < changes {
        let c = 50 + rng.index(runs - 100);
        if at.iter().all(|&a| a.abs_diff(c) >= 50) {
            at.push(c);
        }
    }
    at.sort_unstable();
    let mut values = Vec::with_capacity(runs * reps);
    let mut level = 100f64.ln();
    for run in 0..runs {
        if at.contains(&run) {
            let size = (1.05 + 0.25 * rng.unit()).ln();
            level += if rng.unit() < 0.5 { size } else { -size };
        }
        let run_level = level + 0.03 * rng.normal();
        for _ in 0..reps {
            let mut v = (run_level + 0.05 * rng.normal()).exp();
            if rng.unit() < 0.02 {
                v *= 1.3 + 1.7 * rng.unit();
            }
            values.push(v);
        }
    }
    // Cannot fail: every value is exp() of a finite number, times a
    // positive factor, and the lengths add up by construction.
    let series = Series::from_flat(values, &vec![reps; runs]).expect("positive values");
    (series, at)
}
