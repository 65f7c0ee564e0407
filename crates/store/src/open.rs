//! Opening a store: an SQLite file (created with its folder) or a
//! PostgreSQL database, migrated to this build's schema on the way in.

use crate::backend::{Conn, Pg};
use crate::location::Location;
use crate::migrations::{self, postgres_schema, MIGRATIONS};
use crate::{Result, StoreError};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

/// An open store, SQLite or PostgreSQL.
pub struct Store {
    pub(crate) conn: Conn,
    location: Location,
    /// An SQLite file's device and inode when it was opened: a file moved,
    /// removed or replaced under a writer is noticed before the next write.
    identity: Option<(u64, u64)>,
}

impl Store {
    /// Opens the store at a path (an SQLite file, created with its folder
    /// if needed) or a PostgreSQL URL, and migrates it.
    pub fn open(at: impl Into<Location>) -> Result<Store> {
        Store::open_at_version(at, MIGRATIONS.len())
    }

    /// Opens a store migrated only up to version `to` (tests of
    /// migrations use a lower `to` to build an old store).
    pub fn open_at_version(at: impl Into<Location>, to: usize) -> Result<Store> {
        let location = at.into();
        let conn = match &location {
            Location::Sqlite(path) => Store::open_sqlite(path, to)?,
            Location::Postgres(url) => {
                let conn = Conn::Postgres(Pg::connect(url)?);
                migrations::migrate(&conn, to)?;
                conn
            }
        };
        let identity = match &location {
            Location::Sqlite(path) => file_identity(path),
            Location::Postgres(_) => None,
        };
        Ok(Store {
            conn,
            location,
            identity,
        })
    }

    /// An error when the SQLite file this store opened is no longer the
    /// file at its path (moved, removed, or replaced by a restore): writes
    /// would go into a file nobody will read, beside a WAL that another
    /// file now shares (SQLite's "How To Corrupt", 2.5).
    pub(crate) fn still_there(&self) -> Result<()> {
        let (Location::Sqlite(path), Some(was)) = (&self.location, self.identity) else {
            return Ok(());
        };
        match file_identity(path) {
            Some(now) if now == was => Ok(()),
            _ => Err(StoreError::Open {
                path: path.clone(),
                reason: "the file was moved, removed or replaced while this command ran; nothing more is written to it"
                    .into(),
            }),
        }
    }

    fn open_sqlite(path: &Path, to: usize) -> Result<Conn> {
        let fail = |reason: String| StoreError::Open {
            path: path.to_path_buf(),
            reason,
        };
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        // Judged where the file really is (a link may point elsewhere).
        let real = path.canonicalize().ok();
        let real_dir = real.as_deref().and_then(Path::parent).unwrap_or(dir);
        if let Some(fs) = crate::mounts::network_fs(real_dir) {
            return Err(fail(format!(
                "its folder is on a network file system ({fs}), where SQLite's WAL mode can lose runs \
                 (every process must be on one host, with working locks): keep the file in a local \
                 folder, or share a PostgreSQL store (--db postgres://...)"
            )));
        }
        // A file under two names is two databases to SQLite, each with a
        // WAL of its own: writes through one are lost to the other.
        if let Some(links) = real.as_ref().and_then(|r| std::fs::metadata(r).ok()).map(|m| m.nlink()) {
            if links > 1 {
                return Err(fail(format!(
                    "the file has {links} hard links, and SQLite keeps a store safe under one name only: copy it (stackmeter store copy) instead of linking it"
                )));
            }
        }
        std::fs::create_dir_all(dir).map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
        // Without SQLITE_OPEN_URI: a path is a file name, never a URI whose
        // parameters (nolock=1, immutable=1, vfs=unix-none) would turn
        // SQLite's locking off.
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
            | rusqlite::OpenFlags::SQLITE_OPEN_CREATE
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        // Absolute: this SQLite is built to read URIs even without the
        // flag, and `file:r.db?nolock=1` relative to here would be one.
        let conn = rusqlite::Connection::open_with_flags(sqlite_path(path), flags).map_err(|e| fail(e.to_string()))?;
        // One process at a time sets a new store up (its journal mode and
        // its migrations); one already set up is opened without waiting.
        let setup = match ready(&conn, to) {
            Ok(true) => None,
            _ => Some(take_setup_lock(path).map_err(|(lock, e)| {
                fail(format!(
                    "cannot set the store up: its lock file {}: {e}",
                    lock.display()
                ))
            })?),
        };
        let opened = Store::setup_sqlite(conn, to);
        drop(setup);
        opened.map_err(|e| match e {
            StoreError::Sqlite(e) if no_room(path) => fail(format!("no space left on the device ({e})")),
            StoreError::Sqlite(e) => fail(e.to_string()),
            other => other,
        })
    }

    /// An SQLite store that must already be there, opened as it is (no
    /// folder or file created, no migration): what a writer reads its run
    /// back through.
    pub(crate) fn open_existing(path: &Path) -> Result<Store> {
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = rusqlite::Connection::open_with_flags(sqlite_path(path), flags).map_err(|e| StoreError::Open {
            path: path.to_path_buf(),
            reason: format!("the file is not there to read back: {e}"),
        })?;
        conn.busy_timeout(SQLITE_WAIT)?;
        Ok(Store {
            conn: Conn::Sqlite(conn),
            location: Location::Sqlite(path.to_path_buf()),
            identity: file_identity(path),
        })
    }

    /// A store in memory (tests).
    pub fn open_in_memory() -> Result<Store> {
        Ok(Store {
            conn: Store::setup_sqlite(rusqlite::Connection::open_in_memory()?, MIGRATIONS.len())?,
            location: Location::Sqlite(":memory:".into()),
            identity: None,
        })
    }

    fn setup_sqlite(conn: rusqlite::Connection, to: usize) -> Result<Conn> {
        conn.busy_timeout(SQLITE_WAIT)?;
        // WAL lets `runs` read while a suite writes; in memory it stays "memory".
        let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        // FULL: a committed test survives a power cut too, not only a
        // killed process (NORMAL may lose the last commits); the cost is
        // one fsync per test, between tests, never inside a timed loop.
        // journal_size_limit: after a checkpoint the WAL file is cut back
        // to 64 MiB, so a long-lived writer (the agent) does not keep the
        // largest size it ever reached.
        conn.execute_batch(
            "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL; PRAGMA journal_size_limit = 67108864;",
        )?;
        let conn = Conn::Sqlite(conn);
        migrations::migrate(&conn, to)?;
        Ok(conn)
    }

    /// Whether a store is there, without creating one: the file exists,
    /// or the database has stackmeter's tables (a database that cannot be
    /// reached is an error).
    pub fn exists(at: impl Into<Location>) -> Result<bool> {
        match at.into() {
            Location::Sqlite(path) => Ok(path.exists()),
            Location::Postgres(url) => {
                let conn = Conn::Postgres(Pg::connect(&url)?);
                Ok(migrations::version(&conn)? > 0)
            }
        }
    }

    /// Applies migrations up to version `to`.
    pub fn migrate(&mut self, to: usize) -> Result<()> {
        migrations::migrate(&self.conn, to)
    }

    /// The schema version of the open store.
    pub fn version(&self) -> Result<i64> {
        migrations::version(&self.conn)
    }

    /// Where the store is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The schema of an SQLite store as SQL, one object per statement,
    /// sorted by name: what the golden file holds.
    pub fn schema_sql(&self) -> Result<String> {
        if let Conn::Postgres(_) = self.conn {
            return Ok(postgres_schema());
        }
        let rows = self.conn.query(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type DESC, name",
            vec![],
        )?;
        let mut out = String::new();
        for r in rows {
            out.push_str(r.text(0)?.trim());
            out.push_str(";\n\n");
        }
        Ok(out)
    }

    /// The columns of `table`, in order (tests: both databases build the same tables).
    #[cfg(test)]
    pub(crate) fn columns(&self, table: &str) -> Result<Vec<String>> {
        let sql = match self.conn {
            Conn::Sqlite(_) => "SELECT name FROM pragma_table_info(?1) ORDER BY cid",
            Conn::Postgres(_) => {
                "SELECT column_name::text FROM information_schema.columns
                 WHERE table_name = ?1 AND table_schema = current_schema() ORDER BY ordinal_position"
            }
        };
        self.conn
            .query(sql, crate::backend::params![table])?
            .iter()
            .map(|r| r.text(0))
            .collect()
    }
}

/// A file's device and inode, if it exists.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Whether the store's folder has no room left: SQLite says only "disk I/O
/// error" when it cannot create the `-shm` file a WAL store needs beside
/// it, so a full disk is recognised by trying to write as much.
fn no_room(path: &Path) -> bool {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let probe = dir.join(format!(".stackmeter-space-{}", std::process::id()));
    let written = std::fs::write(&probe, [0u8; 32 << 10]);
    let _ = std::fs::remove_file(&probe);
    matches!(written, Err(e) if e.kind() == std::io::ErrorKind::StorageFull)
}

/// How long an SQLite store waits for another process's lock, at every
/// step: opening, switching the journal mode, each migration, each write.
const SQLITE_WAIT: Duration = Duration::from_secs(30);

/// Whether the store at `conn` needs no setup: in WAL mode already and
/// migrated to `to`. Reads only (an empty file reads as version 0).
fn ready(conn: &rusqlite::Connection, to: usize) -> rusqlite::Result<bool> {
    conn.busy_timeout(SQLITE_WAIT)?;
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    Ok(mode.eq_ignore_ascii_case("wal") && version >= to as i64)
}

/// The setup lock's file beside the database at `path`, named after
/// where the file really is, so every name of one store takes one lock.
pub(crate) fn setup_lock_path(path: &Path) -> std::path::PathBuf {
    let real = path.canonicalize().unwrap_or_else(|_| sqlite_path(path));
    let mut name = real.into_os_string();
    name.push(".setup-lock");
    name.into()
}

/// The path SQLite is given: absolute, so that no name (`file:...`) can
/// be read as a URI.
pub(crate) fn sqlite_path(path: &Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The lock held while one process sets a new store up: an exclusive `flock` on a
/// file of its own beside the database (`NAME.setup-lock`), never on the
/// database, its `-wal` or its `-shm`. SQLite's locks are POSIX record
/// locks (`fcntl`), and Linux drops every one a process holds on a file
/// when that process closes *any* descriptor of the file: a second
/// descriptor of the database opened here and closed after setup took away
/// this process's shared lock on it, so another process closing the store
/// believed itself the last connection, checkpointed and deleted the WAL
/// this one was still writing into, and the runs written after were gone
/// without an error (SQLite's "How To Corrupt An SQLite Database File",
/// 2.2; docs/store.md). The lock file is left in place: removing it would
/// let a waiter lock a file that a newcomer no longer sees. Each waits at
/// most [`SQLITE_WAIT`].
fn take_setup_lock(path: &Path) -> std::result::Result<std::fs::File, (std::path::PathBuf, crate::LockFileError)> {
    let lock = setup_lock_path(path);
    crate::lockfile::lock_file(&lock, crate::lockfile::Share::Exclusive, SQLITE_WAIT).map_err(|e| (lock, e))
}
