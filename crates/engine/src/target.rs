//! What a test measures: a TARGET resolved, or a responder started for it
//! (in this process for a single command, as child processes for a suite:
//! the Rust `serve` and the C responder, pinned), and the C responder
//! binary found on this machine.

use crate::error::Error;
use stackmeter_client::auth::Key;
use stackmeter_responder::{Log, ObjectSource, Responder};
use stackmeter_results::{Target, TargetKind};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A target ready to measure. An embedded responder lives as long as this.
pub struct Chosen {
    /// How the document names it.
    pub target: Target,
    /// Where to connect.
    pub addr: SocketAddr,
    _responder: Option<Responder>,
}

/// `target` resolved (a port it does not name is `kind`'s default), or
/// with none a responder started in this process on 127.0.0.1 (pinned to
/// `responder_cpu`, serving `objects`, asking for `secret` when there is
/// one). A plain target must be named: there is no embedded echo, discard
/// or iperf 2 server.
pub fn choose(
    target: Option<&str>,
    responder_cpu: Option<usize>,
    objects: ObjectSource,
    kind: TargetKind,
    secret: Option<Key>,
) -> Result<Chosen, Error> {
    let flag = stackmeter_spec::plain::flag(kind);
    if let Some(t) = target {
        check_port(t)?;
        if responder_cpu.is_some() {
            return Err(Error::conflict(
                "--responder-affinity applies only to the embedded responder (give no TARGET)",
            ));
        }
        let addr = match stackmeter_spec::plain::default_port(kind) {
            Some(port) => stackmeter_client::resolve(t, port)?,
            None => {
                let addr = stackmeter_client::resolve(t, 0)?;
                if addr.port() == 0 {
                    return Err(Error::conflict(format!(
                        "{flag} needs TARGET with a port (HOST:PORT): a plain server has no default port"
                    )));
                }
                addr
            }
        };
        return Ok(Chosen {
            target: Target {
                name: t.to_string(),
                address: addr.to_string(),
                embedded: false,
                kind,
            },
            addr,
            _responder: None,
        });
    }
    if kind.is_plain() {
        let port = stackmeter_spec::plain::default_port(kind)
            .map(|p| format!(", port {p} unless it names one"))
            .unwrap_or_else(|| ", with its port".into());
        return Err(Error::conflict(format!(
            "{flag} measures a {} that stackmeter does not start: give TARGET (HOST[:PORT]{port})",
            kind.describe()
        )));
    }
    if let Some(cpu) = responder_cpu {
        stackmeter_sys::check_cpu(cpu).map_err(|e| Error::flag(format!("--responder-affinity {cpu}: {e}")))?;
    }
    let cfg = stackmeter_responder::Config {
        cpu: responder_cpu,
        log: Log::Quiet,
        objects,
        // The client's secret, if any: the embedded responder asks for it.
        secret,
        ..Default::default()
    };
    let r = stackmeter_responder::start(cfg)
        .map_err(|e| Error::Local(format!("cannot start the embedded responder: {e}")))?;
    let addr = r.local[0];
    Ok(Chosen {
        target: Target {
            name: "embedded".into(),
            address: addr.to_string(),
            embedded: true,
            kind,
        },
        addr,
        _responder: Some(r),
    })
}

/// A port written in TARGET must be one (1-65535): a typo there is a bad
/// command line (exit 2), not an unreachable target.
fn check_port(t: &str) -> Result<(), Error> {
    let port = match t.strip_prefix('[') {
        Some(rest) => rest.split_once("]:").map(|(_, p)| p),
        // One colon: HOST:PORT; more: a bare IPv6 address (no port).
        None => match t.matches(':').count() {
            1 => t.rsplit_once(':').map(|(_, p)| p),
            _ => None,
        },
    };
    match port.map(|p| (p, p.parse::<u16>())) {
        None | Some((_, Ok(1..))) => Ok(()),
        Some((p, _)) => Err(Error::flag(format!("TARGET {t}: '{p}' is not a port (1-65535)"))),
    }
}

/// Raises the open-files limit to the hard limit (one descriptor per
/// connection) and says so; warns when `want` connections cannot fit.
///
/// Returns the limit now in force (`None` when it cannot be read).
pub fn raise_fd_limit(log: Log, want: usize) -> Option<u64> {
    match stackmeter_sys::raise_nofile() {
        Ok((before, now)) => {
            if now != before {
                log.line(format_args!("open-files limit raised from {before} to {now}"));
            }
            if (now as usize) < want.saturating_add(FD_ROOM) {
                log.line(format_args!(
                    "warning: open-files limit {now} is below {want} sessions plus room for the listeners; raise the hard limit (ulimit -Hn) to hold them all"
                ));
            }
            Some(now)
        }
        Err(e) => {
            log.line(format_args!("warning: cannot raise the open-files limit: {e}"));
            None
        }
    }
}

/// Descriptors kept beside the sessions: listeners, UDP sockets, the
/// epoll instances, files, and a connection beyond the limit refused `Busy`.
pub const FD_ROOM: usize = 64;

/// Responder processes started for a suite; killed by [`kill_all`]
/// (also from another thread, on Ctrl-C) and on drop.
///
/// [`kill_all`]: LocalResponders::kill_all
#[derive(Clone, Default)]
pub struct LocalResponders(Arc<Mutex<Vec<Child>>>);

impl Drop for LocalResponders {
    fn drop(&mut self) {
        // The last handle kills what is left.
        if Arc::strong_count(&self.0) == 1 {
            self.kill_all();
        }
    }
}

/// A local responder of a suite: its label and address.
pub struct Local {
    /// "rust", "c", or "rust-a"/"rust-b" without a C responder.
    pub label: String,
    /// Where it listens.
    pub addr: SocketAddr,
}

/// The default suite's responders, and what the reader must know about
/// them (the C responder missing).
pub struct Started {
    /// The responders, baseline first.
    pub locals: Vec<Local>,
    /// Said beside the outcome.
    pub note: Option<String>,
}

impl LocalResponders {
    /// Stops every responder started so far.
    pub fn kill_all(&self) {
        if let Ok(mut v) = self.0.lock() {
            for c in v.iter_mut() {
                let _ = c.kill();
                let _ = c.wait();
            }
            v.clear();
        }
    }

    /// Starts the default suite's responders pinned to `responder_cpu`:
    /// this binary's `serve` (label `rust`) and the C responder (`c`); two
    /// Rust ones (A against A) when no C responder is found, with a note
    /// saying so. The calling thread is pinned to `responder_cpu` while it
    /// starts them (they inherit it, whatever binary they are).
    pub fn start(&self, responder_cpu: Option<usize>) -> Result<Started, Error> {
        if let Some(cpu) = responder_cpu {
            stackmeter_sys::pin_current_thread(cpu)
                .map_err(|e| Error::Local(format!("cannot pin to CPU {cpu}: {e}")))?;
        }
        let me = std::env::current_exe().map_err(|e| Error::Local(format!("cannot find this executable: {e}")))?;
        let local = |label: &str, addr| Local {
            label: label.into(),
            addr,
        };
        // A carried copy that cannot be written out is reported like a
        // missing one: the suite still runs, and says loudly what it compares.
        let c = match stackmeter_cresponder::c_responder() {
            Ok(Some(c)) => Ok(c),
            Ok(None) => Err("this binary was built without a C compiler and none was found beside it, in c-responder/ or at $STACKMETER_C_RESPONDER".to_string()),
            Err(e @ stackmeter_cresponder::Error::Unpack { .. }) => Err(e.to_string()),
            Err(e) => return Err(Error::flag(e.to_string())),
        };
        match c {
            Ok(c) => {
                let a = self.spawn(&me, &["serve", "--quiet"])?;
                let b = self.spawn(&c, &[])?;
                Ok(Started {
                    locals: vec![local("rust", a), local("c", b)],
                    note: None,
                })
            }
            Err(why) => {
                let a = self.spawn(&me, &["serve", "--quiet"])?;
                let b = self.spawn(&me, &["serve", "--quiet"])?;
                Ok(Started {
                    locals: vec![local("rust-a", a), local("rust-b", b)],
                    note: Some(format!("THE C RESPONDER IS MISSING: {why}; comparing two Rust responder processes instead (A against A, which should show no significant difference)")),
                })
            }
        }
    }

    /// Starts one responder pinned to `responder_cpu`, for a suite that
    /// compares client variants: the C responder (label `c`; the UDP echo
    /// write-up's target was a bare C echo loop), or this binary's `serve`
    /// (`rust`) when there is no C responder.
    pub fn start_one(&self, responder_cpu: Option<usize>) -> Result<Local, Error> {
        if let Some(cpu) = responder_cpu {
            stackmeter_sys::pin_current_thread(cpu)
                .map_err(|e| Error::Local(format!("cannot pin to CPU {cpu}: {e}")))?;
        }
        if let Ok(Some(c)) = stackmeter_cresponder::c_responder() {
            let addr = self.spawn(&c, &[])?;
            return Ok(Local {
                label: "c".into(),
                addr,
            });
        }
        let me = std::env::current_exe().map_err(|e| Error::Local(format!("cannot find this executable: {e}")))?;
        let addr = self.spawn(&me, &["serve", "--quiet"])?;
        Ok(Local {
            label: "rust".into(),
            addr,
        })
    }

    /// Starts `program args --listen 127.0.0.1:PORT` and waits (5 s at
    /// most) until it accepts connections.
    fn spawn(&self, program: &Path, args: &[&str]) -> Result<SocketAddr, Error> {
        let port = free_port().map_err(|e| Error::Local(format!("cannot find a free port: {e}")))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut cmd = Command::new(program);
        cmd.args(args)
            .args(["--listen", &addr.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // Gone with this process however it ends (a second Ctrl-C exits
        // at once, a kill -9 skips every destructor).
        stackmeter_sys::die_with_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::Local(format!("cannot start {}: {e}", program.display())))?;
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            let gone = child.try_wait().ok().flatten();
            if gone.is_some() || Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                let why = gone.map_or("did not listen within 5 s".to_string(), |st| format!("exited ({st})"));
                return Err(Error::Local(format!("{} {why} on {addr}", program.display())));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Ok(mut v) = self.0.lock() {
            v.push(child);
        }
        Ok(addr)
    }
}

/// A port free for TCP and UDP on 127.0.0.1 right now.
fn free_port() -> std::io::Result<u16> {
    for _ in 0..20 {
        let t = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = t.local_addr()?.port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(std::io::Error::other("no port free for both TCP and UDP"))
}
