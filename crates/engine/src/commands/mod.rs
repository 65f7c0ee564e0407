//! Every command's flags beside the measuring ones (those are
//! [`crate::spec::TestCommand`]): the clap structures the binary parses,
//! checked and turned into what the engine and the library crates take,
//! so the binary only dispatches, renders and prints. The agent's flags
//! are here too, and the binary calls its crate (which sits beside the
//! engine, not below it) with them; the lab's are its own crate's.

pub mod agent;
pub mod fleet;
pub mod history;
pub mod serve;
pub mod store;
pub mod suite;

/// `stackmeter schema [NAME]`: one output's JSON Schema, or the names of
/// them all, one per line.
pub fn schema(name: Option<&str>) -> Result<String, crate::Error> {
    let all = stackmeter_results::schema::schemas();
    let names: Vec<&str> = all.iter().map(|(n, _)| *n).collect();
    match name {
        None => Ok(names.join("\n") + "\n"),
        Some(n) => match all.iter().find(|(k, _)| *k == n) {
            Some((_, s)) => Ok(stackmeter_render::json::pretty(s)),
            None => Err(crate::Error::flag(format!("no schema '{n}' ({})", names.join(", ")))),
        },
    }
}
