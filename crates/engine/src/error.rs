//! What can stop a command before or while it measures, and the exit code
//! each maps to (README.md: 1 local, 2 usage, 3 unreachable, 4 refused,
//! 5 broken off, 7 nothing to compare).

use stackmeter_client::ClientError;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad command line or plan: exit 2.
    #[error("{0}")]
    Usage(String),
    /// A local failure (store, files, processes): exit 1.
    #[error("{0}")]
    Local(String),
    /// The two sides of a comparison have nothing in common: exit 7.
    #[error("{0}")]
    NothingToCompare(String),
    /// The target could not be reached or the test broke off.
    #[error(transparent)]
    Client(#[from] ClientError),
}

impl Error {
    /// The process exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::Local(_) => 1,
            Error::NothingToCompare(_) => 7,
            Error::Client(e) => e.exit_code(),
        }
    }
}

impl From<stackmeter_store::StoreError> for Error {
    fn from(e: stackmeter_store::StoreError) -> Error {
        match e.is_bad_url() {
            true => Error::Usage(e.to_string()),
            false => Error::Local(e.to_string()),
        }
    }
}
