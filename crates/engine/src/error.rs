//! What can stop a command before or while it measures: bad input, a local
//! failure, or the client's error (the binary maps each to its exit code).

use stackmeter_client::ClientError;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input (a flag, a plan, a file, a name).
    #[error(transparent)]
    Usage(#[from] Usage),
    /// A local failure (store, files, processes).
    #[error("{0}")]
    Local(String),
    /// The target could not be reached or the test broke off.
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// Bad input, by what was wrong. Each is the one line the user reads,
/// naming the flag, key, file or name to blame.
#[derive(Debug, thiserror::Error)]
pub enum Usage {
    /// A test's setting (a flag or a plan key) out of range or not fitting
    /// the others.
    #[error("{0}")]
    Setting(#[from] stackmeter_spec::SpecError),
    /// Any other flag's or argument's value: malformed or out of range.
    #[error("{0}")]
    Flag(String),
    /// Flags or a target that do not go together, or one missing that
    /// another needs.
    #[error("{0}")]
    Conflict(String),
    /// A file given (a plan, a fleet file, a CSV history): unreadable or
    /// not valid, with where.
    #[error("{0}")]
    File(String),
    /// Something named that the store does not hold: a run, a label's
    /// runs, a test with these figures.
    #[error("{0}")]
    NotStored(String),
}

impl Error {
    /// A flag's or argument's value is wrong ([`Usage::Flag`]).
    pub fn flag(message: impl Into<String>) -> Error {
        Error::Usage(Usage::Flag(message.into()))
    }

    /// Flags that do not go together ([`Usage::Conflict`]).
    pub fn conflict(message: impl Into<String>) -> Error {
        Error::Usage(Usage::Conflict(message.into()))
    }

    /// A file given is unreadable or not valid ([`Usage::File`]).
    pub fn file(message: impl Into<String>) -> Error {
        Error::Usage(Usage::File(message.into()))
    }

    /// Something named is not in the store ([`Usage::NotStored`]).
    pub fn not_stored(message: impl Into<String>) -> Error {
        Error::Usage(Usage::NotStored(message.into()))
    }
}

impl From<stackmeter_store::StoreError> for Error {
    fn from(e: stackmeter_store::StoreError) -> Error {
        match e.is_bad_url() {
            true => Error::flag(e.to_string()),
            false => Error::Local(e.to_string()),
        }
    }
}

impl From<stackmeter_spec::SpecError> for Error {
    /// A bad setting is a usage error (exit 2), named as a flag.
    fn from(e: stackmeter_spec::SpecError) -> Error {
        Error::Usage(Usage::Setting(e))
    }
}
