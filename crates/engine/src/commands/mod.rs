//! Every command's flags beside the measuring ones (those are
//! [`crate::spec::TestCommand`]): the clap structures the binary parses,
//! checked and turned into what the engine and the library crates take,
//! so the binary only dispatches, renders and prints. The agent's and the
//! lab's flags stay with the binary: those crates sit beside the engine,
//! not below it.

pub mod fleet;
pub mod serve;
pub mod store;
pub mod suite;
