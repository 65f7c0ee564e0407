//! The stackmeter engine: everything between the command line and the
//! library crates that measure, store and judge.
//!
//! - [`spec`]: one typed specification per test (the list of tests is
//!   `stackmeter_results::TestKind`), built from flags and from plan steps
//!   by one validator, every default and limit written once; the
//!   measuring commands as one clap subcommand group;
//! - [`flags`]: how a test runs and prints (target, placement, knobs,
//!   format, store), the flags every measuring command shares;
//!   [`knobs`]: the real-time knobs applied to the measuring thread for one
//!   test, read back and undone; [`secret`]: the shared secret from a file
//!   or the environment;
//! - [`sizes`], [`rate`], [`time`]: the size, rate and time syntax of
//!   flags and plans;
//!   [`located`]: an error in a plan or fleet file at its line and column;
//! - [`execute`]: one specification against one target, as one typed
//!   [`execute::Measured`] (document, histograms, error); [`single`] wraps
//!   it for a single measuring command (store, target, placement);
//! - [`plan`] and [`suite`]: plans (built-in ones are TOML too) and the
//!   suite engine, with a typed outcome and progress as events;
//! - [`fleet`]: a fleet file loaded and planned, one node's part run with
//!   its locks, a run's stored tests read back;
//! - [`history`]: the stored runs of each figure as a series, judged by the
//!   change-point method (`stackmeter-history`), or a CSV file's series;
//! - [`target`]: the target resolved, or responders started for it;
//! - [`record`], [`stored`], [`report`]: the results store written and
//!   read: a run stored, runs listed and shown again, a report's sources;
//! - [`commands`]: the flags of every other command (serve, suite, the
//!   store's commands, fleet, history), checked into what runs;
//! - [`error`]: what can stop a command, and its exit code.
//!
//! Nothing here prints: values and events go to the caller, which renders
//! them with `stackmeter_render` (`show` returns the rendered text of a
//! stored run). The lab (lwIP and the firmware on TAP devices) is a crate
//! of its own, `stackmeter-lab`.

pub mod commands;
pub mod error;
pub mod execute;
pub mod flags;
pub mod fleet;
pub mod history;
pub mod knobs;
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
pub mod time;

pub use error::Error;
