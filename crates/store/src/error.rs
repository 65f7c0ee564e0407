//! Why the store could not be used: one error type for both databases, the
//! spool and the files, whose words name the store and what to do.

use crate::location::BadUrl;
use std::path::PathBuf;

/// Why the store could not be used.
#[derive(Debug)]
pub enum StoreError {
    /// The file or its folder could not be opened or created.
    Open {
        /// The database path.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A `--db` URL that cannot be read.
    BadUrl(BadUrl),
    /// The PostgreSQL server cannot be reached, or was lost (down, no
    /// answer in time, out of connections): what a measuring command
    /// spools instead of failing.
    Unreachable {
        /// The URL without password.
        shown: String,
        /// What happened.
        reason: String,
    },
    /// The PostgreSQL server refused the connection (password, unknown
    /// database or user, permission).
    Refused {
        /// The URL without password.
        shown: String,
        /// The server's words.
        reason: String,
    },
    /// A PostgreSQL statement failed.
    Postgres {
        /// The URL without password.
        shown: String,
        /// The server's words.
        reason: String,
    },
    /// The file was written by a newer stackmeter (schema version above
    /// what this one knows): upgrade stackmeter or use another `--db`.
    TooNew {
        /// Version found in the file.
        found: i64,
        /// Newest version this build knows.
        known: i64,
    },
    /// A query failed.
    Sqlite(rusqlite::Error),
    /// A stored document does not read back (hand-edited or damaged file).
    Corrupt(String),
    /// The spool could not be written or read.
    Spool(String),
    /// What a command wrote does not read back: results were lost, and
    /// the command must say so and fail (never a silent success).
    NotKept(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Open { path, reason } => write!(f, "cannot open results store {}: {reason}", path.display()),
            StoreError::BadUrl(b) => write!(f, "{b}"),
            StoreError::Unreachable { shown, reason } => write!(f, "cannot reach results store {shown}: {reason}"),
            StoreError::Refused { shown, reason } => write!(f, "results store {shown} refused the connection: {reason}"),
            StoreError::Postgres { shown, reason } => write!(f, "results store {shown}: {reason}"),
            StoreError::TooNew { found, known } => write!(
                f,
                "results store has schema version {found}, this stackmeter knows up to {known}: upgrade stackmeter or pass another --db"
            ),
            StoreError::Sqlite(e) => write!(f, "results store: {e}"),
            StoreError::Corrupt(what) => write!(f, "results store: {what}"),
            StoreError::Spool(what) => write!(f, "spool: {what}"),
            StoreError::NotKept(what) => write!(f, "results were lost: {what}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sqlite(e)
    }
}

impl StoreError {
    /// True when the database could not be reached or was lost: the
    /// results can wait in the spool.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, StoreError::Unreachable { .. })
    }

    /// True for a malformed `--db` URL (a command-line error).
    pub fn is_bad_url(&self) -> bool {
        matches!(self, StoreError::BadUrl(_))
    }
}

/// Shorthand.
pub type Result<T> = std::result::Result<T, StoreError>;
