//! PostgreSQL advisory locks, for work that must not overlap across hosts
//! (a throughput test holds the locks of both its nodes, so no node is in
//! two at once). The database is the only coordinator: no scheduler of
//! stackmeter's own.
//!
//! [`Locks::acquire`] opens a connection of its own and takes a set of
//! 64-bit keys as session-level advisory locks, in ascending order: two
//! takers of overlapping sets meet at their smallest common key and never
//! hold one each of two keys the other waits for, so they cannot deadlock.
//! The wait is bounded (PostgreSQL's `lock_timeout`, set for each key to
//! what is left of the caller's limit); a taker that runs out releases
//! what it took and says which key it waited for. The locks are released
//! when the guard is dropped, and by the server when the connection dies
//! (a killed process, a lost host), so no lock outlives its holder.

use crate::backend::Pg;
use crate::Location;
use std::time::{Duration, Instant};

/// Why locks could not be taken.
#[derive(Debug)]
pub enum LockError {
    /// Advisory locks need PostgreSQL; the store is an SQLite file.
    NotPostgres(String),
    /// The waiting time ran out on `key`, held by someone else; nothing is held.
    Timeout {
        /// The key waited for.
        key: i64,
        /// How long the whole acquisition waited.
        waited: Duration,
    },
    /// The database could not be used.
    Store(crate::StoreError),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::NotPostgres(at) => write!(f, "locks need a PostgreSQL store (postgres://...), not {at}"),
            LockError::Timeout { key, waited } => write!(
                f,
                "lock {key} still held by another after {:.1} s; nothing taken",
                waited.as_secs_f64()
            ),
            LockError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LockError {}

impl From<crate::StoreError> for LockError {
    fn from(e: crate::StoreError) -> Self {
        LockError::Store(e)
    }
}

/// Held advisory locks; dropping the guard releases them.
pub struct Locks {
    pg: Pg,
    keys: Vec<i64>,
    shared: bool,
}

/// SQLSTATE of a wait that `lock_timeout` ended.
const LOCK_NOT_AVAILABLE: &str = "55P03";

impl Locks {
    /// Takes every key of `keys` (duplicates count once) exclusively,
    /// waiting at most `wait` in all. On a timeout or an error nothing
    /// stays held.
    pub fn acquire(at: &Location, keys: &[i64], wait: Duration) -> Result<Locks, LockError> {
        Locks::acquire_as(at, keys, false, wait)
    }

    /// As [`Locks::acquire`], `shared` or exclusive: shared holders of a
    /// key hold it together, never beside an exclusive one
    /// (`pg_advisory_lock_shared`).
    pub fn acquire_as(at: &Location, keys: &[i64], shared: bool, wait: Duration) -> Result<Locks, LockError> {
        let Location::Postgres(url) = at else {
            return Err(LockError::NotPostgres(at.to_string()));
        };
        let mut keys = keys.to_vec();
        keys.sort_unstable();
        keys.dedup();
        let mut held = Locks {
            pg: Pg::connect(url)?,
            keys: Vec::with_capacity(keys.len()),
            shared,
        };
        let (lock, _) = held.calls();
        let start = Instant::now();
        for key in keys {
            let left = wait.saturating_sub(start.elapsed());
            // lock_timeout = 0 would mean "wait for ever": at least 1 ms.
            let ms = left.as_millis().max(1) as i64;
            let got = held
                .pg
                .call_within(left + crate::backend::STATEMENT_TIMEOUT, move |w| {
                    w.client
                        .execute("SELECT set_config('lock_timeout', $1, false)", &[&format!("{ms}ms")])?;
                    match w.client.execute(lock, &[&key]) {
                        Ok(_) => Ok(true),
                        Err(e) if e.code().map(postgres::error::SqlState::code) == Some(LOCK_NOT_AVAILABLE) => {
                            Ok(false)
                        }
                        Err(e) => Err(e),
                    }
                })?;
            if !got {
                // Dropping `held` releases the keys taken so far.
                return Err(LockError::Timeout {
                    key,
                    waited: start.elapsed(),
                });
            }
            held.keys.push(key);
        }
        Ok(held)
    }

    /// The SQL that takes and gives back one key in this mode.
    fn calls(&self) -> (&'static str, &'static str) {
        match self.shared {
            true => (
                "SELECT pg_advisory_lock_shared($1)",
                "SELECT pg_advisory_unlock_shared($1)",
            ),
            false => ("SELECT pg_advisory_lock($1)", "SELECT pg_advisory_unlock($1)"),
        }
    }

    /// The keys held, ascending.
    pub fn keys(&self) -> &[i64] {
        &self.keys
    }

    /// Whether the locks are still held: the connection that holds them
    /// still answers (a connection the server ended has lost its locks).
    pub fn still_held(&self) -> bool {
        self.pg
            .call_within(Duration::from_secs(5), |w| w.client.simple_query("SELECT 1").map(drop))
            .is_ok()
    }

    /// The server process of the holding connection (`pg_stat_activity.pid`).
    pub fn backend_pid(&self) -> Result<i32, LockError> {
        Ok(self
            .pg
            .call(|w| w.client.query_one("SELECT pg_backend_pid()", &[]).map(|r| r.get(0)))?)
    }
}

impl Drop for Locks {
    fn drop(&mut self) {
        // Released at once, so the next taker need not wait for the
        // connection to close; if the server is gone, so are the locks.
        let keys = std::mem::take(&mut self.keys);
        let (_, unlock) = self.calls();
        if !keys.is_empty() {
            let _ = self.pg.call_within(Duration::from_secs(5), move |w| {
                for key in keys.iter().rev() {
                    w.client.execute(unlock, &[key])?;
                }
                Ok(())
            });
        }
    }
}
