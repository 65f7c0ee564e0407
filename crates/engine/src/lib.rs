//! The stackmeter engine: checked specifications run against targets, and
//! what they measured stored.
//!
//! - [`run`]: one test against one target, its client loop chosen by one
//!   `match` over the specification (`stackmeter_spec::Spec`);
//!   [`execute`]: that run as one typed [`execute::Measured`] (document,
//!   histograms, error), the knobs applied; [`single`] wraps it for a
//!   single measuring command (store, target, placement);
//! - [`knobs`]: the real-time knobs applied to the measuring thread for one
//!   test, read back and undone; [`secret`]: the shared secret from a file
//!   or the environment;
//! - [`suite`]: plans run against two or more targets, fixed repetitions
//!   or until decided, with a typed outcome and progress as events;
//! - [`target`]: the target resolved, or responders started for it (the
//!   C one from `stackmeter-cresponder`); [`serve`]: the responders a
//!   user runs (`stackmeter serve`: the responder, and those inside the
//!   kernel);
//! - [`record`]: the results store written: a run stored, marked partial
//!   when cut short;
//! - [`error`]: what can stop a command (the binary maps it to an exit
//!   code).
//!
//! What to measure is `stackmeter-spec`'s; reading the store back is
//! `stackmeter-query`'s; a fleet node's part of a run is
//! `stackmeter-fleet-node`'s; every command's flags are the binary's. Nothing
//! here prints: values and events go to the caller, which renders them.

pub mod error;
pub mod execute;
pub mod knobs;
pub mod record;
pub mod run;
pub mod secret;
pub mod serve;
pub mod single;
pub mod suite;
pub mod target;

pub use error::Error;
