//! A suite of two targets run until it knows: pairs of blocks, one block
//! of A and one of B back to back, the order of each pair drawn at random
//! (seeded), every block stored as it finishes and fed to the pure
//! [`Decider`]; a step whose rows are all decided is measured no more,
//! and the run stops when every row is decided, when the budget is spent,
//! or on Ctrl-C (what was decided so far is kept and printed).
//!
//! A block is one run of the step's test (its own warm-up first), so
//! pairing in time cancels what the machine does to both targets; random
//! order cancels what being first or second does. docs/methods.md,
//! "Running until it knows".

use super::shared::{end, measure, Done, SuiteConfig, SuiteEvent, SuiteRun};
use stackmeter_client::ClientError;
use stackmeter_results::{DecideSettings, Decided, DecidedRow, Decider};
use stackmeter_statistics::decide::{Budget, Rules};
use stackmeter_statistics::rng::Rng;
use stackmeter_store::{RunKey, Writer};
use std::time::Instant;

/// How a run until decided is decided: the band `tolerance` (a
/// fraction; default 5% with `quick`, else 2%), `budget` (default 30 s
/// with `quick`, else 60 s), the seed of the A/B order (default: from the
/// clock), and this version's rules, or an older version's when
/// `STACKMETER_DECIDE_RULES` asks (`mean`: the mean of the pairs, as
/// before the median; `off`: the mean and the sequence alone, as before
/// the rules that a call held), for benchmarks that measure what a rule
/// changes (docs/methods.md).
pub fn settings(tolerance: Option<f64>, budget: Option<Budget>, seed: Option<u64>, quick: bool) -> DecideSettings {
    let rules = match std::env::var("STACKMETER_DECIDE_RULES").as_deref() {
        Ok("off") => Rules::None,
        Ok("mean") => Rules::Mean,
        _ => Rules::All,
    };
    DecideSettings::new(
        tolerance.unwrap_or(if quick { 0.05 } else { 0.02 }),
        budget.unwrap_or_else(|| Budget::time(std::time::Duration::from_secs(if quick { 30 } else { 60 }))),
        seed.unwrap_or_else(|| stackmeter_sys::wall_ns() as u64),
        rules,
    )
}

/// Runs `cfg` (two members) until decided or its budget is spent.
pub(super) fn run(
    cfg: &SuiteConfig,
    d: &DecideSettings,
    mut store: Option<(&mut Writer, RunKey)>,
    on: &mut dyn FnMut(SuiteEvent),
) -> SuiteRun {
    let (a, b) = (&cfg.targets[0].info.label, &cfg.targets[1].info.label);
    let mut decider = Decider::new(a, b, d.clone(), &cfg.metric);
    let mut rng = Rng::new(d.seed);
    let started = Instant::now();
    let mut done: Vec<Done> = Vec::new();
    let mut failure = None;
    let mut not_stored = (0, None);
    let mut pair = 0;
    let stop = 'pairs: loop {
        if decider.all_done() {
            break "every row decided".to_string();
        }
        if d.budget.spent(pair, started.elapsed()) {
            break format!("budget of {} spent", d.budget);
        }
        pair += 1;
        for (si, step) in cfg.plan.steps.iter().enumerate() {
            if decider.step_done(&step.name) {
                continue;
            }
            let a_first = rng.next_u64() & 1 == 0;
            let order = if a_first { [0, 1] } else { [1, 0] };
            let mut docs = [None, None];
            for ti in order {
                on(SuiteEvent::Test {
                    done: done.len(),
                    total: 0,
                    step: &step.name,
                    label: &cfg.targets[ti].info.label,
                    repetition: pair,
                });
                let m = measure(cfg, si, ti, pair, store.as_mut(), &mut not_stored, on);
                if matches!(m.error, Some(ClientError::Interrupted)) {
                    failure = m.error;
                    break 'pairs "interrupted".to_string();
                }
                let broke = m.error;
                done.push((ti, si, pair, m.doc));
                docs[ti] = Some(done.len() - 1);
                if let Some(e) = broke {
                    let why = format!("{} stopped: {e}", cfg.targets[ti].info.label);
                    failure = Some(e);
                    break 'pairs why;
                }
            }
            // A whole pair counts before anything stops the run.
            if let [Some(ia), Some(ib)] = docs {
                for i in decider.push(pair, &step.name, a_first, &done[ia].3, &done[ib].3) {
                    on(SuiteEvent::Decided(line(&decider.row(i), started)));
                }
            }
            if stackmeter_sys::interrupt::interrupted() {
                failure = Some(ClientError::Interrupted);
                break 'pairs "interrupted".to_string();
            }
        }
        let open = (0..decider.len())
            .filter(|&i| decider.row(i).decided_at.is_none())
            .count();
        on(SuiteEvent::Pair {
            pair,
            open,
            rows: decider.len(),
            elapsed: started.elapsed(),
        });
    };
    let mut settings = cfg.settings();
    settings.stop = Some(stop);
    end(cfg, settings, store, done, failure, not_stored)
}

/// The progress line of a decided row.
fn line(r: &DecidedRow, started: Instant) -> String {
    let verdict = match r.verdict {
        Decided::Faster => "B faster",
        Decided::Slower => "B slower",
        Decided::Equivalent => "equivalent",
        Decided::Inconclusive => "inconclusive",
    };
    let interval = r
        .interval
        .map_or_else(String::new, |(lo, hi)| format!(" ({lo:.3}-{hi:.3})"));
    format!(
        "{} {} {} {}: {verdict}, B/A {:.3}{interval} after {} pairs, {:.1} s",
        r.step,
        r.label,
        r.series,
        r.stat,
        r.ratio,
        r.pairs,
        started.elapsed().as_secs_f64()
    )
}
