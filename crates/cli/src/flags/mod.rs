//! Every command's flags: the clap structures the binary parses, checked
//! and turned into what the engine and the library crates take, so the
//! rest of the binary only dispatches, renders and prints. The flags
//! shared by many commands are in [`common`]; each command family has
//! its own file; the measuring commands' are [`measuring`], one subcommand per
//! test over `stackmeter_spec`'s options.

pub mod common;
pub mod fleet;
pub mod history;
pub mod measuring;
pub mod serve;
pub mod store;
pub mod suite;

pub use common::*;
