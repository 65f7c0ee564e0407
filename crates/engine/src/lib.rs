//! The stackmeter engine: everything between the command line and the
//! library crates that measure, store and judge.
//!
//! - [`spec`]: one typed specification per test (the list of tests is
//!   `stackmeter_results::TestKind`), built from flags and from plan steps
//!   by one validator, every default and limit written once; the
//!   measuring commands as one clap subcommand group;
//! - [`sizes`], [`rate`]: the size and rate syntax of flags and plans;
//! - [`execute`]: one specification against one target, as one typed
//!   [`execute::Measured`] (document, histograms, error); [`single`] wraps
//!   it for a single measuring command (store, target, placement);
//! - [`plan`] and [`suite`]: plans (built-in ones are TOML too) and the
//!   suite engine, with a typed outcome and progress as events;
//! - [`target`]: the target resolved, or responders started for it;
//! - [`record`], [`stored`], [`report`]: the results store written and read;
//! - [`lab`]: lwIP and the C responder on TAP devices (root).
//!
//! Nothing here prints: values and events go to the caller, which renders
//! them with `stackmeter_results::render`.

pub mod error;
pub mod execute;
pub mod flags;
pub mod fleet;
pub mod knobs;
pub mod lab;
pub mod located;
pub mod plan;
pub mod rate;
pub mod record;
pub mod report;
pub mod secret;
pub mod single;
pub mod sizes;
pub mod spec;
pub mod stored;
pub mod suite;
pub mod target;

pub use error::Error;
