//! The results store: every run of every measuring command in one SQLite
//! file, or in one PostgreSQL database that many hosts write at once, so
//! results are kept and reused as baselines (the bps-throughput write-up of docs/scenarios.md: "these are the
//! benchmark values for further tests").
//!
//! A run is one command (`rr`, `suite`, ...); it holds tests, one per
//! measured document. Each test is written in its own transaction as soon
//! as it completes, with its whole `stackmeter/1` document (so `show`
//! re-renders it and new test types need no new columns), its figures as
//! rows (so they can be queried), its full histograms (HdrHistogram V2
//! bytes) and any per-interval series. A run stays `running` until its
//! command ends it as `complete`, `partial` (interrupted, or a test broke
//! off) or `failed`; a run left `running` by a dead process was cut short.
//! Ids are assigned by the database; a run and a test also carry a unique
//! identity (`uid`) that stays the same when `copy` moves a history to
//! another store or the spool sends what it kept (`spool.rs`), which is
//! how doing either twice is recognised.
//!
//! The schema is versioned and migrated on open (`migrations.rs`: one list of
//! migrations for both databases); `schema.sql` and `schema-postgres.sql`
//! are the golden files of the result.
//!
//! **Two databases, one `Store`.** The backend is an enum
//! (`backend::Conn`), not a trait: there are exactly two, each query is
//! written once against the enum's small interface (statements with `?N`
//! parameters, rows of plain values, transactions), and the differences
//! between the two sit side by side in `backend.rs` and `migrations.rs` where
//! a reader can see all of them. A trait would have put each query in
//! two places (or behind generics that every caller then carries); an
//! enum keeps `Store` one concrete type, so no caller knows or cares which
//! database it talks to.
//!
//! The modules: `open.rs` (the `Store` and opening it), `run.rs` and
//! `stored.rs` (a run and a test as the store keeps them), `write.rs`,
//! `read.rs` and `check.rs` (the store's methods by what they do),
//! `rows.rs` (the rows as written: one insert path for direct writes, the
//! spool and copies), `backend.rs` and `pg_error.rs` (the two databases),
//! `migrations.rs` (the migrations), `location.rs` (a path or a URL, shown
//! without its password), `copy.rs` (`store copy`), `spool.rs` (results
//! kept on disk while PostgreSQL cannot be reached, and `store flush`),
//! `locks.rs` (PostgreSQL advisory locks for work that must not overlap),
//! `mounts.rs` (the file system a store's folder is on: network ones are refused),
//! `lockfile.rs` (an `flock` on a file of its own, waited for),
//! `series.rs` (figures of many runs as series, run attributes, saved
//! change points: what `history` reads and writes), `uid.rs`,
//! `error.rs`, `hex.rs`. This file only declares and re-exports.

mod backend;
mod check;
mod copy;
mod error;
mod hex;
mod location;
mod lockfile;
mod locks;
mod migrations;
mod mounts;
mod open;
mod pg_error;
mod read;
mod rows;
mod run;
mod series;
mod spool;
mod stored;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod uid;
mod write;

pub use check::Check;
pub use copy::{copy, Copied};
pub use error::{Result, StoreError};
pub use location::{default_location, default_spool_dir, BadUrl, Location, PgUrl};
pub use lockfile::{lock_file, LockFileError, Share};
pub use locks::{LockError, Locks};
pub use migrations::{postgres_schema, MIGRATIONS};
pub use open::Store;
pub use run::{Run, StoredRun};
pub use series::{ChangePointRow, FigureFilter, FigurePoint};
pub use spool::{flush, Flushed, RunKey, Spool, Writer};
pub use stored::{Histogram, NewTest, StoredInterval, StoredTest};

#[cfg(test)]
mod pg_tests;
#[cfg(test)]
mod series_tests;
#[cfg(test)]
mod tests;
