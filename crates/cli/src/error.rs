//! What can stop a command, whichever library it called: the engine's
//! errors (measuring), the query crate's (reading the store back), and the
//! binary's own checks of its flags. One type so every command ends the
//! same way: one line on stderr and its exit code (README.md).

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// From measuring, storing, or the flags checked for them.
    #[error(transparent)]
    Engine(#[from] stackmeter_engine::Error),
    /// From reading the store back.
    #[error(transparent)]
    Query(#[from] stackmeter_query::Error),
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

    /// The process exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Engine(e) => e.exit_code(),
            Error::Query(e) => e.exit_code(),
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
