//! Waiting for an `flock` on a file of its own: what orders the setup of a
//! new SQLite store, `store flush`es of one spool, and a fleet's tests on
//! one host. Never used on a database file, its `-wal` or its `-shm`:
//! SQLite's own locks there are POSIX record locks, which closing any
//! other descriptor of the file would drop (docs/store.md).

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

/// Shared or exclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Share {
    /// Many holders at once.
    Shared,
    /// One holder.
    Exclusive,
}

/// Why a lock file was not locked.
#[derive(Debug)]
pub enum LockFileError {
    /// The file could not be opened or created.
    Open(std::io::Error),
    /// Another holder kept it past the wait.
    Timeout(Duration),
    /// The system refused the lock.
    Lock(std::io::Error),
}

impl std::fmt::Display for LockFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockFileError::Open(e) => write!(f, "cannot open it: {e}"),
            LockFileError::Timeout(w) => write!(f, "still held by another process after {} s", w.as_secs_f64()),
            LockFileError::Lock(e) => write!(f, "cannot lock it: {e}"),
        }
    }
}

/// Opens (creating it if needed) and locks `path`, polling every 10 ms
/// for at most `wait`; the lock is held until the file is dropped.
pub fn lock_file(path: &Path, share: Share, wait: Duration) -> Result<File, LockFileError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(LockFileError::Open)?;
    let deadline = Instant::now() + wait;
    loop {
        let got = match share {
            Share::Exclusive => file.try_lock(),
            Share::Shared => file.try_lock_shared(),
        };
        match got {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Err(TryLockError::WouldBlock) => return Err(LockFileError::Timeout(wait)),
            Err(TryLockError::Error(e)) => return Err(LockFileError::Lock(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exclusive_lock_waits_out_its_holder_and_shared_ones_coexist() {
        let path = std::env::temp_dir().join(format!("stackmeter-lockfile-{}", std::process::id()));
        let held = lock_file(&path, Share::Exclusive, Duration::ZERO).unwrap();
        let e = lock_file(&path, Share::Exclusive, Duration::from_millis(30)).unwrap_err();
        assert!(matches!(e, LockFileError::Timeout(_)), "{e}");
        drop(held);
        let a = lock_file(&path, Share::Shared, Duration::ZERO).unwrap();
        let _b = lock_file(&path, Share::Shared, Duration::ZERO).unwrap();
        assert!(lock_file(&path, Share::Exclusive, Duration::ZERO).is_err());
        drop(a);
        let _ = std::fs::remove_file(&path);
    }
}
