//! What can stop a command, whichever library it called: the engine's
//! errors (measuring), the query crate's (reading the store back), the
//! client's (a test that broke off), the agent's, and the binary's own
//! checks of its flags. One type so every command ends the same way: one
//! line on stderr and its exit code. The libraries return typed errors;
//! this file alone maps them to the exit codes README.md and
//! docs/tests.md document (ripgrep's way: exit codes are the binary's).

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// From measuring, storing, or the flags checked for them.
    #[error(transparent)]
    Engine(#[from] stackmeter_engine::Error),
    /// From reading the store back.
    #[error(transparent)]
    Query(#[from] stackmeter_query::Error),
    /// A test that could not reach its target or broke off.
    #[error(transparent)]
    Client(#[from] stackmeter_client::ClientError),
    /// The agent could not start.
    #[error(transparent)]
    Agent(#[from] stackmeter_agent::StartError),
}

impl Error {
    /// A flag's or argument's value is wrong: exit 2.
    pub fn flag(message: impl Into<String>) -> Error {
        Error::Engine(stackmeter_engine::Error::flag(message))
    }

    /// Flags that do not go together: exit 2.
    pub fn conflict(message: impl Into<String>) -> Error {
        Error::Engine(stackmeter_engine::Error::conflict(message))
    }

    /// A file given is unreadable or not valid: exit 2.
    pub fn file(message: impl Into<String>) -> Error {
        Error::Engine(stackmeter_engine::Error::file(message))
    }

    /// A local failure: exit 1.
    pub fn local(message: impl Into<String>) -> Error {
        Error::Engine(stackmeter_engine::Error::Local(message.into()))
    }

    /// The process exit code: 1 local error; 2 bad command line; 3 target
    /// unreachable; 4 session refused; 5 test broken off; 7 nothing to
    /// compare; 8 a plain server measured as a responder; 10 too few runs
    /// to judge; 130 interrupted (6 and 9 are the gates', `out.rs`).
    pub fn exit_code(&self) -> i32 {
        use stackmeter_client::ClientError as C;
        use stackmeter_engine::Error as E;
        use stackmeter_query::Error as Q;
        match self {
            Error::Engine(E::Usage(_)) => 2,
            Error::Engine(E::Local(_)) => 1,
            Error::Engine(E::Client(c)) | Error::Client(c) => match c {
                C::Resolve { .. } | C::Unreachable { .. } => 3,
                C::Refused { .. } => 4,
                C::Lost { .. } => 5,
                C::PlainTarget { .. } => 8,
                C::Local(_) => 1,
                C::Interrupted => 130,
            },
            Error::Query(Q::Flag(_) | Q::File(_) | Q::NotStored(_)) => 2,
            Error::Query(Q::Local(_)) => 1,
            Error::Query(Q::NothingToCompare(_)) => 7,
            Error::Query(Q::TooFewRuns(_)) => 10,
            Error::Agent(a) => match a.is_usage() {
                true => 2,
                false => 1,
            },
        }
    }
}

impl From<stackmeter_spec::SpecError> for Error {
    /// A test's setting out of range: exit 2, named as a flag.
    fn from(e: stackmeter_spec::SpecError) -> Error {
        Error::Engine(e.into())
    }
}

impl From<stackmeter_spec::plan::LoadError> for Error {
    /// A plan that is not built in, unreadable or not valid: exit 2.
    fn from(e: stackmeter_spec::plan::LoadError) -> Error {
        Error::file(e.to_string())
    }
}

impl From<stackmeter_store::StoreError> for Error {
    fn from(e: stackmeter_store::StoreError) -> Error {
        Error::Engine(e.into())
    }
}
