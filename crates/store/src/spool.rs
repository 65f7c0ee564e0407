//! Results kept on local disk while the PostgreSQL store cannot be
//! reached, and sending them later (`store flush`).
//!
//! A measuring command writes through a [`Writer`]: to the store while it
//! answers; from the moment it cannot be reached (down at the start, or
//! lost mid-run: refused, closed, or no answer within the statement
//! timeout) every finished test goes to the spool folder instead, for the
//! rest of the command (so the spooled tests follow the stored ones, in
//! order). The spool holds one file per run (`UID.run.json`: the run's row,
//! rewritten when the run ends) and one per test (`UID.000007.test.json`:
//! the test's rows, figures, histograms and intervals), each written to a
//! temporary name, synced and renamed, so a file is either whole or
//! absent.
//!
//! [`flush`] sends each spooled run in one transaction through the same
//! path as `store copy`: a run or a test the store already has (by `uid`)
//! is not written again, so a flush that failed half way, or whose files
//! could not be removed after the commit, is simply repeated. Files are
//! removed only after their run's transaction committed.

use crate::copy::merge_run;
use crate::location::Location;
use crate::open::Store;
use crate::rows::TestRow;
use crate::run::Run;
use crate::stored::NewTest;
use crate::uid::new_uid;
use crate::{Result, StoreError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The format name in every spool file.
const FORMAT: &str = "stackmeter-spool/1";

/// The spool folder.
#[derive(Clone, Debug)]
pub struct Spool {
    dir: PathBuf,
}

#[derive(Serialize, Deserialize)]
struct RunFile {
    format: String,
    run: Run,
}

#[derive(Serialize, Deserialize)]
struct TestFile {
    format: String,
    run_uid: String,
    test: TestRow,
}

/// A spooled run with its tests, as read back.
struct Pending {
    run: Run,
    run_file: PathBuf,
    tests: Vec<(PathBuf, TestRow)>,
}

impl Spool {
    /// The spool in `dir` (created when the first file is written).
    pub fn new(dir: impl Into<PathBuf>) -> Spool {
        Spool { dir: dir.into() }
    }

    /// Its folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether nothing is waiting to be sent.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.pending()?.is_empty())
    }

    fn write_run(&self, run: &Run) -> Result<()> {
        let file = RunFile {
            format: FORMAT.into(),
            run: run.clone(),
        };
        self.write(&format!("{}.run.json", run.uid), &file)
    }

    fn write_test(&self, run_uid: &str, n: usize, test: &TestRow) -> Result<()> {
        let file = TestFile {
            format: FORMAT.into(),
            run_uid: run_uid.into(),
            test: test.clone(),
        };
        self.write(&format!("{run_uid}.{n:06}.test.json"), &file)
    }

    /// Writes `name` whole or not at all: a temporary file, synced, renamed,
    /// and the folder synced so the rename survives a power cut.
    fn write<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        let fail =
            |what: &str, e: std::io::Error| StoreError::Spool(format!("cannot {what} in {}: {e}", self.dir.display()));
        std::fs::create_dir_all(&self.dir).map_err(|e| fail("create the folder", e))?;
        let tmp = self.dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let bytes = serde_json::to_vec(value).map_err(|e| StoreError::Spool(e.to_string()))?;
        let written = std::fs::File::create(&tmp).and_then(|mut f| {
            f.write_all(&bytes)?;
            f.sync_all()
        });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(fail(&format!("write {name}"), e));
        }
        std::fs::rename(&tmp, self.dir.join(name)).map_err(|e| fail(&format!("rename {name}"), e))?;
        sync_dir(&self.dir).map_err(|e| fail("sync the folder", e))
    }

    /// Every spooled run, oldest first, with its tests in order. A file
    /// that does not read is an error naming it (nothing is sent before
    /// the spool reads whole).
    fn pending(&self) -> Result<Vec<Pending>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::Spool(format!("cannot read {}: {e}", self.dir.display()))),
        };
        let mut runs: BTreeMap<String, (PathBuf, Run)> = BTreeMap::new();
        let mut tests: BTreeMap<String, Vec<(String, PathBuf, TestRow)>> = BTreeMap::new();
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::Spool(format!("cannot read {}: {e}", self.dir.display())))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name.starts_with('.') {
                continue;
            }
            let bad = |e: String| StoreError::Spool(format!("{} does not read: {e}", path.display()));
            // A file gone since the listing was sent by a flush from
            // another host that shares the folder: nothing left to do.
            let read = |path: &Path| match std::fs::read(path) {
                Ok(t) => Ok(Some(t)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(bad(e.to_string())),
            };
            if name.ends_with(".run.json") {
                let Some(text) = read(&path)? else { continue };
                let f: RunFile = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
                if f.format != FORMAT {
                    return Err(bad(format!("format {}, expected {FORMAT}", f.format)));
                }
                runs.insert(f.run.uid.clone(), (path, f.run));
            } else if name.ends_with(".test.json") {
                let Some(text) = read(&path)? else { continue };
                let f: TestFile = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
                if f.format != FORMAT {
                    return Err(bad(format!("format {}, expected {FORMAT}", f.format)));
                }
                tests.entry(f.run_uid).or_default().push((name, path, f.test));
            }
        }
        if let Some((uid, t)) = tests.iter().find(|(uid, _)| !runs.contains_key(*uid)) {
            return Err(StoreError::Spool(format!(
                "{} has no run file {uid}.run.json beside it",
                t[0].1.display()
            )));
        }
        let mut out: Vec<Pending> = runs
            .into_iter()
            .map(|(uid, (run_file, run))| {
                let mut ts = tests.remove(&uid).unwrap_or_default();
                ts.sort_by(|a, b| a.0.cmp(&b.0));
                Pending {
                    run,
                    run_file,
                    tests: ts.into_iter().map(|(_, p, t)| (p, t)).collect(),
                }
            })
            .collect();
        out.sort_by(|a, b| (&a.run.started, &a.run.uid).cmp(&(&b.run.started, &b.run.uid)));
        Ok(out)
    }
}

impl Spool {
    /// An exclusive lock on `.flush-lock` in the folder (a file of its
    /// own; names starting with a dot are not spool files), waited for at
    /// most a minute.
    fn flush_turn(&self) -> Result<std::fs::File> {
        let path = self.dir.join(".flush-lock");
        let wait = std::time::Duration::from_secs(60);
        crate::lockfile::lock_file(&path, crate::lockfile::Share::Exclusive, wait)
            .map_err(|e| StoreError::Spool(format!("another flush may be running: {}: {e}", path.display())))
    }
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// What a flush did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flushed {
    /// Runs new to the store.
    pub runs: usize,
    /// Tests written.
    pub tests: usize,
    /// Spooled runs the store already had whole (a flush repeated).
    pub already: usize,
    /// Runs left in the spool: still being written by a live process.
    pub skipped: Vec<String>,
}

/// Sends everything in `spool` to `store`, each run in one transaction,
/// and removes the files of each run once it committed. Flushes of one
/// spool take turns (a lock file in the folder), so two started at once
/// neither send a run twice nor trip over each other's removed files.
pub fn flush(spool: &Spool, store: &mut Store) -> Result<Flushed> {
    let mut done = Flushed::default();
    let _turn = match spool.dir.exists() {
        true => Some(spool.flush_turn()?),
        false => None,
    };
    for p in spool.pending()? {
        // A run still being written by a process of this host: its run
        // file will change again, so it waits for the next flush. (A spool
        // on a folder several hosts share holds others' runs too.)
        let here = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim() == p.run.hostname);
        let live = p.run.status == "running"
            && here.unwrap_or(true)
            && p.run.pid != std::process::id()
            && Path::new(&format!("/proc/{}", p.run.pid)).exists();
        if live {
            done.skipped.push(format!(
                "run {} (still being written by process {})",
                p.run.uid, p.run.pid
            ));
            continue;
        }
        let tests: Vec<TestRow> = p.tests.iter().map(|(_, t)| t.clone()).collect();
        let (new, added) = store.conn.transaction(|c| merge_run(c, &p.run, &tests))?;
        match (new, added) {
            (true, n) => {
                done.runs += 1;
                done.tests += n;
            }
            (false, 0) => done.already += 1,
            (false, n) => done.tests += n,
        }
        for (path, _) in &p.tests {
            remove(path)?;
        }
        remove(&p.run_file)?;
        sync_dir(spool.dir()).map_err(|e| StoreError::Spool(format!("cannot sync {}: {e}", spool.dir().display())))?;
    }
    Ok(done)
}

fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::Spool(format!(
            "sent, but cannot remove {}: {e}",
            path.display()
        ))),
    }
}

/// The error for a run that does not read back as it was written.
fn lost(uid: &str, at: &str, tests: usize, status: Option<&str>, found: Option<(String, usize)>) -> StoreError {
    let wrote = match status {
        Some(s) => format!("{tests} test(s), status {s}"),
        None => format!("{tests} test(s)"),
    };
    StoreError::NotKept(match found {
        None => format!("run {uid} was written to {at} ({wrote}) but is not there when read back"),
        Some((s, n)) => format!("run {uid} was written to {at} ({wrote}) but reads back with {n} test(s), status {s}"),
    })
}

/// A run as the [`Writer`] knows it.
#[derive(Clone, Copy, Debug)]
pub struct RunKey {
    index: usize,
    /// Its id in the store; `None` when the run went to the spool from its start.
    pub id: Option<i64>,
}

struct WriterRun {
    row: Run,
    id: Option<i64>,
    /// Its run file is in the spool.
    spooled: bool,
    /// Tests of it committed to the store so far.
    stored: usize,
    /// Tests of it written to the spool so far.
    tests: usize,
}

/// Where a measuring command's results go: the store while it answers,
/// the spool once it cannot be reached (PostgreSQL only: an SQLite file
/// that fails is an error, as a full disk would fill the spool too).
pub struct Writer {
    store: Option<Store>,
    location: Location,
    spool: Option<Spool>,
    /// The error that sent results to the spool.
    lost: Option<String>,
    runs: Vec<WriterRun>,
    spooled_tests: usize,
}

impl Writer {
    /// Opens the store. A PostgreSQL server that cannot be reached is not
    /// an error when there is a spool: the command measures and spools.
    /// Anything else (a bad URL, a wrong password, an unknown database, an
    /// unusable file) is, before anything is measured.
    pub fn open(location: &Location, spool: Option<Spool>) -> Result<Writer> {
        let (store, lost) = match Store::open(location) {
            Ok(s) => (Some(s), None),
            Err(e) if e.is_unreachable() && spool.is_some() => (None, Some(e.to_string())),
            Err(e) => return Err(e),
        };
        Ok(Writer {
            store,
            location: location.clone(),
            spool,
            lost,
            runs: Vec::new(),
            spooled_tests: 0,
        })
    }

    /// The store, while it answers.
    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    /// Starts a run.
    pub fn begin_run(&mut self, r: &Run) -> Result<RunKey> {
        let row = r.clone();
        let id = match &self.store {
            Some(s) => match s.still_there().and_then(|()| crate::rows::insert_run(&s.conn, &row)) {
                Ok(id) => Some(id),
                Err(e) => {
                    self.lose(e)?;
                    None
                }
            },
            None => None,
        };
        self.runs.push(WriterRun {
            row,
            id,
            spooled: false,
            stored: 0,
            tests: 0,
        });
        let index = self.runs.len() - 1;
        if id.is_none() {
            self.spool_run(index)?;
        }
        Ok(RunKey { index, id })
    }

    /// Writes one finished test of `run`: committed to the store, or
    /// written to the spool.
    pub fn add_test(&mut self, run: &RunKey, t: &NewTest) -> Result<()> {
        let row = TestRow::new(t, new_uid())?;
        if let (Some(s), Some(id)) = (&self.store, self.runs[run.index].id) {
            match s
                .still_there()
                .and_then(|()| s.conn.transaction(|c| crate::rows::insert_test(c, id, &row)))
            {
                Ok(_) => {
                    self.runs[run.index].stored += 1;
                    return Ok(());
                }
                Err(e) => self.lose(e)?,
            }
        }
        if !self.runs[run.index].spooled {
            self.spool_run(run.index)?;
        }
        let spool = self
            .spool
            .as_ref()
            .ok_or_else(|| StoreError::Spool("no spool folder".into()))?;
        let r = &mut self.runs[run.index];
        spool.write_test(&r.row.uid, r.tests, &row)?;
        r.tests += 1;
        self.spooled_tests += 1;
        Ok(())
    }

    /// Replaces run `run`'s settings (in the store now, or in its spool
    /// file when the run ends).
    pub fn set_settings(&mut self, run: &RunKey, settings: serde_json::Value) -> Result<()> {
        let r = &mut self.runs[run.index];
        r.row.settings = settings;
        if let (Some(s), Some(id), false) = (&self.store, r.id, r.spooled) {
            if let Err(e) = s
                .still_there()
                .and_then(|()| crate::rows::set_settings(&s.conn, id, &r.row.settings))
            {
                self.lose(e)?;
            }
        }
        Ok(())
    }

    /// Ends a run with `status` at `time`, in the store or its spool file,
    /// then reads back what this writer was given ([`Writer::confirm`]):
    /// an error here means results were lost, and says which.
    pub fn finish_run(&mut self, run: &RunKey, status: &str, time: &str) -> Result<()> {
        let r = &mut self.runs[run.index];
        r.row.status = status.into();
        r.row.finished = Some(time.into());
        let mut in_store = false;
        if let (Some(s), Some(id), false) = (&self.store, r.id, r.spooled) {
            match s
                .still_there()
                .and_then(|()| crate::rows::set_status(&s.conn, id, status, Some(time)))
            {
                Ok(()) => in_store = true,
                Err(e) => self.lose(e)?,
            }
        }
        if !in_store {
            self.spool_run(run.index)?;
        }
        self.confirm(run.index)
    }

    /// Reads run `index` back and compares it with what was written: the
    /// run and each test committed to the store (an SQLite file through a
    /// connection of its own, which sees the file as any other process
    /// will, not this connection's own view; PostgreSQL through this one,
    /// as the server answers), and the run file and each test in the spool.
    fn confirm(&self, index: usize) -> Result<()> {
        let r = &self.runs[index];
        if let (Some(s), Some(_)) = (&self.store, r.id) {
            let fresh;
            let reader = match &self.location {
                Location::Sqlite(path) => {
                    fresh = Store::open_existing(path)?;
                    &fresh
                }
                Location::Postgres(_) => s,
            };
            let found = reader.run_by_uid(&r.row.uid)?;
            let want = if r.spooled { None } else { Some(r.row.status.as_str()) };
            match found {
                Some((status, n)) if n == r.stored && want.is_none_or(|w| w == status) => {}
                found => return Err(lost(&r.row.uid, "the store", r.stored, want, found)),
            }
        }
        if r.spooled {
            let spool = self
                .spool
                .as_ref()
                .ok_or_else(|| StoreError::Spool("no spool folder".into()))?;
            // Read while no flush runs: one could be sending this run.
            let found = {
                let _turn = spool.flush_turn()?;
                spool
                    .pending()?
                    .into_iter()
                    .find(|p| p.run.uid == r.row.uid)
                    .map(|p| (p.run.status, p.tests.len()))
            };
            match found {
                Some((status, n)) if n == r.tests && status == r.row.status => {}
                // Gone from the spool: a flush may have sent it already.
                None if self.flushed(&r.row.uid, r.stored + r.tests) => {}
                found => {
                    let at = format!("the spool {}", spool.dir().display());
                    return Err(lost(&r.row.uid, &at, r.tests, Some(&r.row.status), found));
                }
            }
        }
        Ok(())
    }

    /// Whether the store holds run `uid` with at least `tests` tests (a
    /// run a `store flush` sent from the spool while this one ended it).
    fn flushed(&self, uid: &str, tests: usize) -> bool {
        Store::open(&self.location)
            .and_then(|s| s.run_by_uid(uid))
            .is_ok_and(|f| f.is_some_and(|(_, n)| n >= tests))
    }

    /// After a store error: an unreachable PostgreSQL sends everything
    /// from now on to the spool; any other error is returned.
    fn lose(&mut self, e: StoreError) -> Result<()> {
        if !(e.is_unreachable() && self.spool.is_some()) {
            return Err(e);
        }
        self.lost = Some(e.to_string());
        self.store = None;
        Ok(())
    }

    fn spool_run(&mut self, index: usize) -> Result<()> {
        let spool = self
            .spool
            .as_ref()
            .ok_or_else(|| StoreError::Spool("no spool folder".into()))?;
        spool.write_run(&self.runs[index].row)?;
        self.runs[index].spooled = true;
        Ok(())
    }

    /// Tests in the spool so far.
    pub fn spooled_tests(&self) -> usize {
        self.spooled_tests
    }

    /// The line to print when anything went to the spool: why, what and
    /// where, and the command that sends it.
    pub fn note(&self) -> Option<String> {
        let runs = self.runs.iter().filter(|r| r.spooled).count();
        if runs == 0 {
            return None;
        }
        let spool = self.spool.as_ref()?;
        Some(format!(
            "{}; {} test(s) of {} run(s) kept in {}: send them with: stackmeter store flush --db {}",
            self.lost.as_deref().unwrap_or("the results store cannot be reached"),
            self.spooled_tests,
            runs,
            spool.dir().display(),
            self.location.for_command()
        ))
    }
}
