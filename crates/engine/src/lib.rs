//! The stackmeter engine: everything between the command line and the
//! library crates that measure, store and judge.
//!
//! - [`spec`]: one typed specification per test (rr, crr, ping, stream,
//!   udp-max, load), built from flags and from plan steps by one
//!   validator, every default and limit written once; the measuring
//!   commands as one clap subcommand group;
//! - [`sizes`], [`rate`]: the size and rate syntax of flags and plans;
//! - [`run`]: one specification against one target, as one typed
//!   [`run::Measured`] (document, histograms, error); [`measure`] wraps it
//!   for a single command (store, target, placement);
//! - [`plan`] and [`suite`]: plans (built-in ones are TOML too) and the
//!   suite engine, with a typed outcome and progress as events;
//! - [`target`]: the target resolved, or responders started for it;
//! - [`record`], [`stored`], [`report`]: the results store written and read;
//! - [`lab`]: lwIP and the C responder on TAP devices (root).
//!
//! Nothing here prints: values and events go to the caller, which renders
//! them with `stackmeter_results::render`.

pub mod error;
pub mod flags;
pub mod knobs;
pub mod lab;
pub mod measure;
pub mod plan;
pub mod rate;
pub mod record;
pub mod report;
pub mod run;
pub mod secret;
pub mod sizes;
pub mod spec;
pub mod stored;
pub mod suite;
pub mod target;

pub use error::Error;
