//! Where the shared secret comes from (docs/protocol.md section 10): the
//! `--secret-file` flag, else the file named by `STACKMETER_SECRET_FILE`,
//! else the text of `STACKMETER_SECRET`. A file must be a regular file
//! that neither group nor others may read or write (as ssh wants its
//! keys), of 1 to 4096 bytes after trailing line ends are removed.
//!
//! The key is a value, not a setting of the process: the binary reads it
//! once and hands it on, to `serve`'s responder, and to every test
//! (`run::How::secret`) and the embedded responder it measures.

use stackmeter_client::auth::{trim_secret, Key, MAX_SECRET_LEN};
use std::path::{Path, PathBuf};

/// The variable naming a secret file.
pub const ENV_FILE: &str = "STACKMETER_SECRET_FILE";
/// The variable holding the secret itself.
pub const ENV_SECRET: &str = "STACKMETER_SECRET";

/// A secret that cannot be used: from which source, and why.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file cannot be read.
    #[error("secret file {}: {why}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        why: std::io::Error,
    },
    /// A directory, a device, a socket.
    #[error("secret file {}: not a regular file", .0.display())]
    NotAFile(PathBuf),
    /// Group or others may read or write it.
    #[error("secret file {shown}: mode {mode:o} lets others read or write it; chmod 600 {shown}", shown = path.display())]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Longer than a secret may be.
    #[error("secret file {}: {len} bytes, at most {MAX_SECRET_LEN}", path.display())]
    TooLong {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: u64,
    },
    /// The file's text is not a usable secret (empty).
    #[error("secret file {}: {why}", path.display())]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What the key check said.
        why: stackmeter_client::auth::SecretError,
    },
    /// `STACKMETER_SECRET`'s text is not a usable secret.
    #[error("{ENV_SECRET}: {0}")]
    BadEnv(stackmeter_client::auth::SecretError),
}

/// The secret from the flag or the environment; `Ok(None)` when neither
/// gives one; `Err` is one line naming the file and what to do.
pub fn load(flag: Option<&Path>) -> Result<Option<Key>, LoadError> {
    let env_file = std::env::var_os(ENV_FILE).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(path) = flag.map(Path::to_path_buf).or(env_file) {
        return read_file(&path).map(Some);
    }
    match std::env::var_os(ENV_SECRET) {
        None => Ok(None),
        Some(v) => {
            use std::os::unix::ffi::OsStrExt;
            Key::new(trim_secret(v.as_bytes())).map(Some).map_err(LoadError::BadEnv)
        }
    }
}

fn read_file(path: &Path) -> Result<Key, LoadError> {
    use std::os::unix::fs::PermissionsExt;
    let unreadable = |why| LoadError::Unreadable { path: path.into(), why };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if !meta.is_file() {
        return Err(LoadError::NotAFile(path.into()));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(LoadError::Exposed {
            path: path.into(),
            mode,
        });
    }
    if meta.len() > MAX_SECRET_LEN as u64 + 2 {
        return Err(LoadError::TooLong {
            path: path.into(),
            len: meta.len(),
        });
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    Key::new(trim_secret(&bytes)).map_err(|why| LoadError::BadFile { path: path.into(), why })
}
