//! The suite engine: a plan's steps against labelled targets, either a
//! fixed number of repetitions interleaved (A B A B, never all A then all
//! B: fixed.rs) or, for two targets, pairs of blocks in random order until
//! each row is decided (decide.rs); every test stored as it finishes
//! (shared.rs), and judged into a typed `SuiteOutcome`. Progress goes to a
//! callback as events; nothing here prints. This file declares, re-exports
//! and dispatches.

mod decide;
mod fixed;
mod shared;

pub use decide::settings as decide_settings;
pub use shared::{begin_run, targets, with_variants, Member, SuiteConfig, SuiteEvent, SuiteRun};

use stackmeter_store::{RunKey, Writer};

/// Runs the suite; with a store, every test is committed to `run` as it
/// finishes (or spooled, once PostgreSQL cannot be reached) and the run is
/// marked complete or partial at the end.
pub fn run(cfg: &SuiteConfig, store: Option<(&mut Writer, RunKey)>, on: &mut dyn FnMut(SuiteEvent)) -> SuiteRun {
    match &cfg.decide {
        Some(d) => decide::run(cfg, d, store, on),
        None => fixed::run(cfg, store, on),
    }
}
