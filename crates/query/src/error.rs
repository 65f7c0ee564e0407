//! What can stop a command that reads the store (the binary maps each to
//! its exit code: README.md).

/// Why reading the store back failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag's or argument's value is wrong, or two do not go together:
    /// exit 2.
    #[error("{0}")]
    Flag(String),
    /// A file given (a CSV history) is unreadable or not valid, with
    /// where: exit 2.
    #[error("{0}")]
    File(String),
    /// Something named that the store does not hold (a run, a label's
    /// runs, a test with these figures): exit 2.
    #[error("{0}")]
    NotStored(String),
    /// A local failure (the store, a file): exit 1.
    #[error("{0}")]
    Local(String),
    /// The two sides of a comparison have nothing in common: exit 7.
    #[error("{0}")]
    NothingToCompare(String),
    /// The store holds too few runs for a judgement (`history` on a young
    /// store): not an error of the command, so not exit 1: exit 10.
    #[error("{0}")]
    TooFewRuns(String),
}

impl Error {
    /// A flag's or argument's value is wrong ([`Error::Flag`]).
    pub fn flag(message: impl Into<String>) -> Error {
        Error::Flag(message.into())
    }

    /// A file given is unreadable or not valid ([`Error::File`]).
    pub fn file(message: impl Into<String>) -> Error {
        Error::File(message.into())
    }

    /// Something named is not in the store ([`Error::NotStored`]).
    pub fn not_stored(message: impl Into<String>) -> Error {
        Error::NotStored(message.into())
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
