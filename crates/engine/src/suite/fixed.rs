//! The fixed design: every step on every member, `repeat` times,
//! interleaved (for each repetition, for each step: A, then B, ...).

use super::shared::{end, measure, Done, SuiteConfig, SuiteEvent, SuiteRun};
use stackmeter_client::ClientError;
use stackmeter_store::{RunKey, Writer};

/// A fixed number of repetitions, interleaved A B A B.
pub(super) fn run(
    cfg: &SuiteConfig,
    mut store: Option<(&mut Writer, RunKey)>,
    on: &mut dyn FnMut(SuiteEvent),
) -> SuiteRun {
    let per_rep = cfg.plan.steps.len() * cfg.targets.len();
    let mut done: Vec<Done> = Vec::new();
    let mut failure = None;
    let mut not_stored = (0, None);
    let mut rep = 0;
    'reps: loop {
        for (si, step) in cfg.plan.steps.iter().enumerate() {
            for (ti, t) in cfg.targets.iter().enumerate() {
                on(SuiteEvent::Test {
                    done: done.len(),
                    total: per_rep * cfg.repeat,
                    step: &step.name,
                    label: &t.info.label,
                    repetition: rep,
                });
                let m = measure(cfg, si, ti, rep, store.as_mut(), &mut not_stored, on);
                if matches!(m.error, Some(ClientError::Interrupted)) {
                    // Cut short by Ctrl-C: half a repetition would bias
                    // the comparison, so it is neither stored nor judged.
                    failure = m.error;
                    break 'reps;
                }
                done.push((ti, si, rep, m.doc));
                if let Some(e) = m.error {
                    failure = Some(e);
                    break 'reps;
                }
                if stackmeter_sys::interrupt::interrupted() {
                    failure = Some(ClientError::Interrupted);
                    break 'reps;
                }
            }
        }
        rep += 1;
        if rep >= cfg.repeat {
            break;
        }
    }
    end(cfg, cfg.settings(), store, done, failure, not_stored)
}
