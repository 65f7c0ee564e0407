//! The C responder carried inside the stackmeter binary, and where it is.
//!
//! `build.rs` compiles `c-responder/` (the POSIX build, the flags and
//! source lists of `c-responder/flags.mk`) with the target's C compiler;
//! the bytes are [`EMBEDDED`] here (empty when there was no compiler). A
//! suite that starts its own responders asks [`c_responder`] for a path:
//! one the user named, one beside the binary or in the source tree, or
//! this copy written once to the user's cache. A crate of its own so the
//! engine neither compiles C nor knows where binaries live.

use std::path::PathBuf;

/// Why the C responder cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `$STACKMETER_C_RESPONDER` names no file (a usage error: exit 2).
    #[error("STACKMETER_C_RESPONDER={}: no such file", .0.display())]
    NoSuchFile(PathBuf),
    /// The carried copy could not be written to the cache.
    #[error("cannot {what} the C responder in {}: {err}", dir.display())]
    Unpack {
        /// What failed: "unpack", "write", "mark executable", "place".
        what: &'static str,
        /// The cache folder.
        dir: PathBuf,
        /// Why.
        err: std::io::Error,
    },
}

/// The C responder built with this binary (empty when there was no C
/// compiler), carried inside it so it is found after `cargo install`.
pub const EMBEDDED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/c-responder.bin"));

/// Where the C responder binary is, first found of:
/// `$STACKMETER_C_RESPONDER`; `stackmeter-responder` beside this
/// executable (an installed pair); `c-responder/stackmeter-responder` in a
/// folder above this executable or the current directory (the source tree,
/// after `make -C c-responder`); the copy carried inside this binary,
/// written once to the user's cache. `None` when there is none at all;
/// [`Error::NoSuchFile`] for a wrong `$STACKMETER_C_RESPONDER`,
/// [`Error::Unpack`] when the carried copy cannot be written out.
pub fn c_responder() -> Result<Option<PathBuf>, Error> {
    if let Some(p) = std::env::var_os("STACKMETER_C_RESPONDER").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return match p.is_file() {
            true => Ok(Some(p)),
            false => Err(Error::NoSuchFile(p)),
        };
    }
    let exe = std::env::current_exe().ok();
    if let Some(p) = exe
        .as_ref()
        .and_then(|e| e.parent())
        .map(|d| d.join("stackmeter-responder"))
    {
        if p.is_file() {
            return Ok(Some(p));
        }
    }
    let cwd = std::env::current_dir().ok();
    for base in exe.iter().chain(cwd.iter()) {
        for dir in base.ancestors() {
            let p = dir.join("c-responder").join("stackmeter-responder");
            if p.is_file() {
                return Ok(Some(p));
            }
        }
    }
    if EMBEDDED.is_empty() {
        return Ok(None);
    }
    unpack(EMBEDDED).map(Some)
}

/// Writes the carried C responder to the user's cache (once per content)
/// and returns its path. The folder is the user's own
/// (`$XDG_CACHE_HOME/stackmeter`, `~/.cache/stackmeter`, else a private
/// folder in the temporary directory), and an existing file is used only
/// if it holds exactly these bytes.
fn unpack(bytes: &[u8]) -> Result<PathBuf, Error> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let dir = env("XDG_CACHE_HOME")
        .or_else(|| env("HOME").map(|h| h.join(".cache")))
        .map(|d| d.join("stackmeter"))
        .unwrap_or_else(|| std::env::temp_dir().join(format!("stackmeter-{}", stackmeter_sys::uid())));
    let fail = |what: &'static str, err: std::io::Error| Error::Unpack {
        what,
        dir: dir.clone(),
        err,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| fail("unpack", e))?;
    // A folder someone else owns or may write to could have the file
    // swapped between the check below and its start: not used.
    let meta = std::fs::metadata(&dir).map_err(|e| fail("unpack", e))?;
    if meta.uid() != stackmeter_sys::uid() || meta.mode() & 0o022 != 0 {
        return Err(fail(
            "unpack",
            std::io::Error::other("the folder is not this user's own (owner or group/other write permission)"),
        ));
    }
    // FNV-1a of the content names the file: a new build gets a new file.
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let path = dir.join(format!(
        "stackmeter-responder-{}-{hash:016x}",
        env!("CARGO_PKG_VERSION")
    ));
    if std::fs::read(&path).is_ok_and(|have| have == bytes) {
        return Ok(path);
    }
    let tmp = dir.join(format!(".stackmeter-responder.{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| fail("write", e))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).map_err(|e| fail("mark executable", e))?;
    std::fs::rename(&tmp, &path).map_err(|e| fail("place", e))?;
    Ok(path)
}
