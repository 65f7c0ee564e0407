//! A real PostgreSQL server for the tests (the store's own and the
//! binary's): `initdb` in a temporary folder, `pg_ctl start` listening on a
//! Unix socket in that folder and on 127.0.0.1, one database per test,
//! `pg_ctl -m immediate stop` and the folder removed when the last holder
//! drops it, a failing test included. Not part of a shipped build (the
//! store's `testing` feature, enabled only by the binary's tests).
//!
//! `initdb` refuses to run as root, so as root the server runs as the
//! `postgres` user (Debian's package creates it); as anyone else, as
//! themselves. Local socket connections are trusted (the tests' administration);
//! TCP connections need the password of the role `meter`, so a wrong
//! password can be tested.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, Weak};

/// A prerequisite of `test` is missing (root, a namespace, a compiler, a
/// server): under CI (`CI` set to anything but `false` or `0`, as `.ci/run`
/// sets it) the test fails, so a machine that lost a package cannot pass
/// by skipping; elsewhere it says so and returns, and the test is counted
/// as skipped, not passed: its name goes to the file `STACKMETER_SKIP_LOG`
/// names, which `scripts/test` sets and counts in its last line. Shared by
/// the store's tests and the binary's (every integration test).
pub fn missing(test: &str, why: &str) {
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    assert!(!ci, "{test}: {why}, and CI is set: a prerequisite is missing");
    eprintln!("SKIP {test}: {why}");
    if let Some(log) = std::env::var_os("STACKMETER_SKIP_LOG") {
        let line = format!("{test}: {}\n", why.replace('\n', " "));
        // One short append per skip: O_APPEND keeps lines of tests running
        // at once whole.
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        assert!(
            written.is_ok(),
            "cannot record the skip of {test} in {}",
            log.to_string_lossy()
        );
    }
}

/// The role the tests' stores connect as, over TCP, and its password.
pub const USER: &str = "meter";
/// Its password.
pub const PASSWORD: &str = "meter-secret";

/// A running temporary server.
pub struct TempPostgres {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    run_as: Option<(u32, u32)>,
}

static SHARED: Mutex<Weak<TempPostgres>> = Mutex::new(Weak::new());

impl TempPostgres {
    /// The server the tests of one binary share (started by the first,
    /// stopped when the last lets go of it).
    pub fn shared() -> Result<Arc<TempPostgres>, String> {
        let mut slot = SHARED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(pg) = slot.upgrade() {
            return Ok(pg);
        }
        let pg = Arc::new(TempPostgres::start()?);
        *slot = Arc::downgrade(&pg);
        Ok(pg)
    }

    /// A server of its own (a test that stops and starts it).
    pub fn start() -> Result<TempPostgres, String> {
        TempPostgres::start_on(&[], &[])
    }

    /// A server of its own that also listens on the addresses `also`
    /// (addresses of this host, such as a bridge that namespaces or pods
    /// reach it through) and takes [`USER`]'s password from clients in
    /// the CIDRs `clients` as well as from 127.0.0.1.
    pub fn start_on(also: &[std::net::IpAddr], clients: &[&str]) -> Result<TempPostgres, String> {
        let bin = find_bin()?;
        let run_as = match effective_uid() {
            0 => Some(postgres_user()?),
            _ => None,
        };
        reap_stale();
        let dir = fresh_dir()?;
        let pg = TempPostgres {
            dir,
            bin,
            port: free_port()?,
            run_as,
        };
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(&pg.dir, Some(uid), Some(gid))
                .map_err(|e| format!("cannot give {} to postgres: {e}", pg.dir.display()))?;
        }
        pg.tool("initdb")
            .args([
                "-D",
                "data",
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
            ])
            .args(["-E", "UTF8", "--locale=C", "--no-sync"])
            .output()
            .map_err(|e| format!("cannot run initdb: {e}"))
            .and_then(|o| ok(o, "initdb"))?;
        // fsync off: the tests' server loses nothing when its processes are
        // killed (the kernel keeps what was written), only on a power cut.
        // synchronous_commit stays on: an immediate stop must not lose a
        // commit the store was told about.
        let listen: String = std::iter::once("127.0.0.1".to_string())
            .chain(also.iter().map(ToString::to_string))
            .collect::<Vec<_>>()
            .join(",");
        let conf = format!(
            "\nlisten_addresses = '{listen}'\nport = {}\nunix_socket_directories = '{}'\n\
             fsync = off\nfull_page_writes = off\nmax_connections = 200\n",
            pg.port,
            pg.dir.display()
        );
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(pg.dir.join("data/postgresql.conf"))
            .and_then(|mut f| f.write_all(conf.as_bytes()))
            .map_err(|e| format!("cannot configure the server: {e}"))?;
        let hba: String = clients
            .iter()
            .map(|c| format!("host all all {c} scram-sha-256\n"))
            .collect();
        std::fs::OpenOptions::new()
            .append(true)
            .open(pg.dir.join("data/pg_hba.conf"))
            .and_then(|mut f| f.write_all(hba.as_bytes()))
            .map_err(|e| format!("cannot configure the server's clients: {e}"))?;
        pg.resume()?;
        pg.admin(&format!("CREATE ROLE {USER} LOGIN CREATEDB PASSWORD '{PASSWORD}'"))?;
        Ok(pg)
    }

    fn tool(&self, name: &str) -> Command {
        let mut c = Command::new(self.bin.join(name));
        c.current_dir(&self.dir).env_remove("PGDATA");
        if let Some((uid, gid)) = self.run_as {
            use std::os::unix::process::CommandExt;
            c.uid(uid).gid(gid);
        }
        c
    }

    /// Starts the server (again, after [`TempPostgres::stop`]).
    pub fn resume(&self) -> Result<(), String> {
        self.tool("pg_ctl")
            .args(["-D", "data", "-l", "log", "-w", "-t", "60", "start"])
            .output()
            .map_err(|e| format!("cannot run pg_ctl: {e}"))
            .and_then(|o| ok(o, "pg_ctl start"))
            .map_err(|e| format!("{e}; log: {}", self.log()))
    }

    /// Stops the server at once, as a crash or a pulled cable would.
    pub fn stop(&self) {
        let _ = self
            .tool("pg_ctl")
            .args(["-D", "data", "-m", "immediate", "-w", "stop"])
            .output();
    }

    /// The server's log (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// Its TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `db` over TCP, as [`USER`] with its password.
    pub fn url(&self, db: &str) -> String {
        self.url_at("127.0.0.1".parse().unwrap(), db)
    }

    /// The same at another address it listens on ([`TempPostgres::start_on`]).
    pub fn url_at(&self, addr: std::net::IpAddr, db: &str) -> String {
        format!(
            "postgres://{USER}:{PASSWORD}@{addr}:{}/{db}?connect_timeout=5",
            self.port
        )
    }

    /// The URL of database `db` over the Unix socket, as the superuser.
    pub fn socket_url(&self, db: &str) -> String {
        let host: String = self.dir.display().to_string().replace('%', "%25").replace('/', "%2F");
        format!("postgres://postgres@{host}:{}/{db}", self.port)
    }

    /// A new, empty database owned by [`USER`] (dropped first if a
    /// previous run left it); its TCP URL.
    pub fn database(&self, name: &str) -> Result<String, String> {
        self.admin(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))?;
        self.admin(&format!("CREATE DATABASE {name} OWNER {USER}"))?;
        Ok(self.url(name))
    }

    /// Runs `sql` as the superuser in database `postgres`.
    pub fn admin(&self, sql: &str) -> Result<(), String> {
        self.admin_in("postgres", sql)
    }

    /// Runs `sql` as the superuser in database `db`.
    pub fn admin_in(&self, db: &str, sql: &str) -> Result<(), String> {
        let mut c = postgres::Client::connect(&self.socket_url(db), postgres::NoTls)
            .map_err(|e| format!("cannot connect to the test server: {e}"))?;
        c.batch_execute(sql).map_err(|e| {
            let why = e.as_db_error().map_or(e.to_string(), |d| d.message().to_string());
            format!("{sql}: {why}")
        })
    }
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ok(o: std::process::Output, what: &str) -> Result<(), String> {
    if o.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}): {}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    ))
}

/// The newest installed server's programs: `$STACKMETER_PG_BIN`, else
/// Debian's /usr/lib/postgresql/VERSION/bin.
fn find_bin() -> Result<PathBuf, String> {
    if let Some(b) = std::env::var_os("STACKMETER_PG_BIN") {
        return Ok(b.into());
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| "PostgreSQL is not installed (no /usr/lib/postgresql; apt-get install postgresql)".to_string())?
        .filter_map(std::result::Result::ok)
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, b)| b)
        .ok_or_else(|| "no initdb under /usr/lib/postgresql/*/bin (apt-get install postgresql)".into())
}

fn effective_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(u32::MAX)
}

/// The `postgres` user's uid and gid, from /etc/passwd.
fn postgres_user() -> Result<(u32, u32), String> {
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| format!("cannot read /etc/passwd: {e}"))?;
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.first() == Some(&"postgres") && f.len() > 3).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
        })
        .ok_or_else(|| "running as root and there is no postgres user to run the server as".into())
}

const PREFIX: &str = "stackmeter-pg-";

fn fresh_dir() -> Result<PathBuf, String> {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Short: the socket's path must fit in 107 bytes.
    let dir = Path::new("/tmp").join(format!("{PREFIX}{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

/// Stops and removes the servers of test processes that died without
/// dropping theirs (killed, aborted).
fn reap_stale() {
    let Ok(entries) = std::fs::read_dir("/tmp") else {
        return;
    };
    for e in entries.filter_map(std::result::Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let stale = TempPostgres {
            dir: e.path(),
            bin: match find_bin() {
                Ok(b) => b,
                Err(_) => return,
            },
            port: 0,
            run_as: postgres_user().ok().filter(|_| effective_uid() == 0),
        };
        drop(stale);
    }
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}
