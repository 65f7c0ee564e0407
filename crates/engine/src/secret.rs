//! Where the shared secret comes from (docs/protocol.md section 10): the
//! `--secret-file` flag, else the file named by `STACKMETER_SECRET_FILE`,
//! else the text of `STACKMETER_SECRET`. A file must be a regular file
//! that neither group nor others may read or write (as ssh wants its
//! keys), of 1 to 4096 bytes after trailing line ends are removed.
//!
//! The key is a value, not a setting of the process: the binary reads it
//! once and hands it on, to `serve`'s responder, and to every test
//! (`run::How::secret`) and the embedded responder it measures.

use stackmeter_proto::auth::{trim_secret, Key, MAX_SECRET_LEN};
use std::path::{Path, PathBuf};

/// The variable naming a secret file.
pub const ENV_FILE: &str = "STACKMETER_SECRET_FILE";
/// The variable holding the secret itself.
pub const ENV_SECRET: &str = "STACKMETER_SECRET";

/// The secret from the flag or the environment; `Ok(None)` when neither
/// gives one; `Err` is one line naming the file and what to do.
pub fn load(flag: Option<&Path>) -> Result<Option<Key>, String> {
    let env_file = std::env::var_os(ENV_FILE).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(path) = flag.map(Path::to_path_buf).or(env_file) {
        return read_file(&path).map(Some);
    }
    match std::env::var_os(ENV_SECRET) {
        None => Ok(None),
        Some(v) => {
            use std::os::unix::ffi::OsStrExt;
            Key::new(trim_secret(v.as_bytes()))
                .map(Some)
                .map_err(|e| format!("{ENV_SECRET}: {e}"))
        }
    }
}

fn read_file(path: &Path) -> Result<Key, String> {
    use std::os::unix::fs::PermissionsExt;
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("secret file {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("secret file {shown}: not a regular file"));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "secret file {shown}: mode {mode:o} lets others read or write it; chmod 600 {shown}"
        ));
    }
    if meta.len() > MAX_SECRET_LEN as u64 + 2 {
        return Err(format!(
            "secret file {shown}: {} bytes, at most {MAX_SECRET_LEN}",
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("secret file {shown}: {e}"))?;
    Key::new(trim_secret(&bytes)).map_err(|e| format!("secret file {shown}: {e}"))
}
