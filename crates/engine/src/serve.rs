//! `stackmeter serve`: the responders a user runs by hand, started here as
//! the engine starts every other responder: the responder itself (the
//! knobs applied to the process before any thread starts, so every
//! responder thread inherits them; the session limit from the open-files
//! limit; IPv4 alone when the host has no IPv6), and the responders inside
//! the kernel (an XDP program beside it, or a sockmap's TCP echo) or the
//! plain echo in the application. The binary maps its flags to a
//! [`ServeSpec`], prints what [`Serving`] says, and waits.

use crate::error::Error;
use stackmeter_client::auth::Key;
use stackmeter_client::DEFAULT_PORT;
use stackmeter_responder::in_kernel::{SockmapEcho, XdpEcho, XdpMode};
use stackmeter_responder::plain_echo::EchoCounts;
use stackmeter_responder::{Advertised, Cidr, Config, Log, ObjectSource, Responder};
use stackmeter_results::KnobRequest;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What to serve, and how.
#[derive(Debug)]
pub struct ServeSpec {
    /// Where (none: 0.0.0.0 and [::] on the default port).
    pub listen: Vec<SocketAddr>,
    /// Concurrent sessions (none: what the open-files limit holds).
    pub max_sessions: Option<usize>,
    /// Sessions that may get a thread of their own.
    pub threads: usize,
    /// Largest message.
    pub max_msg: u32,
    /// Time to send a whole session header.
    pub header_timeout: Duration,
    /// Time a session may wait for its next byte (zero: none).
    pub idle_timeout: Duration,
    /// The CPU every responder thread is pinned to.
    pub affinity: Option<usize>,
    /// Log nothing.
    pub quiet: bool,
    /// The objects of object mode.
    pub objects: ObjectSource,
    /// UDP datagrams per receive call.
    pub udp_batch: usize,
    /// Real-time knobs of every responder thread.
    pub knobs: KnobRequest,
    /// Longest test, seconds (0: none).
    pub max_test_seconds: f64,
    /// Highest source rate, bits/s (0: none).
    pub max_source_rate: u64,
    /// Tests one client address may run at once (0: no limit).
    pub max_tests_per_client: u32,
    /// Connections one address may have in their header phase (0: no limit).
    pub max_idle_per_client: usize,
    /// Client networks allowed (none: all).
    pub allow: Vec<Cidr>,
    /// New connections per second from one address (0: no limit).
    pub max_connects_per_second: u32,
    /// How long the event loop polls after its last event.
    pub spin: Duration,
    /// Which responder.
    pub mode: Mode,
}

/// Which responder `serve` runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The stackmeter responder.
    Responder,
    /// The responder, and an XDP program on `interface` answering its UDP
    /// echo in the kernel (`plain`: any datagram, not only stackmeter's;
    /// `native`: in the driver, else the generic path).
    Xdp {
        interface: String,
        plain: bool,
        native: bool,
    },
    /// A plain TCP echo (no protocol) on one address: by a sockmap in the
    /// kernel, or in the application.
    PlainEcho { in_kernel: bool },
}

/// What runs, until [`Serving::wait`] (or for good, the responder).
pub enum Serving {
    /// The responder: its threads serve until the process ends.
    Responder(Responder),
    /// The responder and the XDP program beside it.
    Xdp {
        _responder: Responder,
        echo: XdpEcho,
        interface: String,
    },
    /// The plain echo, in the kernel or the application.
    Echo {
        stop: Arc<AtomicBool>,
        counts: Arc<EchoCounts>,
        kernel: Option<Arc<SockmapEcho>>,
        served: JoinHandle<Result<(), Error>>,
        /// The address it listens on (port 0 resolved).
        local: SocketAddr,
    },
}

/// Starts what `spec` asks for (the responder with the shared secret, if
/// any); what it says when it starts is in [`Serving::started`].
pub fn start(spec: ServeSpec, secret: Option<Key>) -> Result<Serving, Error> {
    match spec.mode.clone() {
        Mode::Responder => responder(spec, secret).map(Serving::Responder),
        Mode::Xdp {
            interface,
            plain,
            native,
        } => {
            let port = spec.listen.first().map_or(DEFAULT_PORT, SocketAddr::port);
            if port == 0 {
                return Err(Error::flag(
                    "--in-kernel xdp: the XDP program needs a fixed port: --listen ADDR:PORT with PORT above 0",
                ));
            }
            XdpEcho::check().map_err(|e| Error::Local(format!("--in-kernel xdp: {e}")))?;
            let _responder = responder(spec, secret)?;
            let mode = if native { XdpMode::Native } else { XdpMode::Generic };
            let echo = XdpEcho::attach(&interface, port, plain, mode)
                .map_err(|e| Error::Local(format!("--in-kernel xdp: {e}")))?;
            Ok(Serving::Xdp {
                _responder,
                echo,
                interface,
            })
        }
        Mode::PlainEcho { in_kernel } => echo(&spec.listen, in_kernel),
    }
}

/// The plain echo on its one address (default 0.0.0.0:24680).
fn echo(listen: &[SocketAddr], in_kernel: bool) -> Result<Serving, Error> {
    let addr = match listen {
        [] => SocketAddr::from(([0, 0, 0, 0], DEFAULT_PORT)),
        [one] => *one,
        _ => {
            return Err(Error::flag(
                "a plain echo (--in-kernel sockmap, --plain-echo) listens on one --listen address",
            ))
        }
    };
    let kernel = match in_kernel {
        true => Some(Arc::new(
            SockmapEcho::load().map_err(|e| Error::Local(format!("--in-kernel sockmap: {e}")))?,
        )),
        false => None,
    };
    let listener = TcpListener::bind(addr).map_err(|e| Error::Local(format!("cannot listen on {addr}: {e}")))?;
    let local = listener.local_addr().unwrap_or(addr);
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(EchoCounts::default());
    let served = {
        let (stop, counts, kernel) = (Arc::clone(&stop), Arc::clone(&counts), kernel.clone());
        std::thread::spawn(move || match kernel {
            Some(k) => k.serve(listener, &stop).map_err(|e| Error::Local(e.to_string())),
            None => stackmeter_responder::plain_echo::serve(listener, &stop, &counts)
                .map_err(|e| Error::Local(e.to_string())),
        })
    };
    Ok(Serving::Echo {
        stop,
        counts,
        kernel,
        served,
        local,
    })
}

impl Serving {
    /// What it says once it serves (the responder logs its own lines).
    pub fn started(&self, listen: &[SocketAddr]) -> Option<String> {
        match self {
            Serving::Responder(_) => None,
            Serving::Xdp { echo: _, interface, .. } => Some(format!(
                "XDP answers UDP port {} on {interface} in the kernel",
                listen.first().map_or(DEFAULT_PORT, SocketAddr::port)
            )),
            Serving::Echo { kernel, local, .. } => Some(format!(
                "plain TCP echo {}: listening on tcp {local}",
                match kernel {
                    Some(_) => "in the kernel (sockmap)",
                    None => "in the application",
                },
            )),
        }
    }

    /// Serves until SIGINT or SIGTERM (the responder alone: for good),
    /// then stops; its counters in words.
    pub fn wait(self) -> Result<String, Error> {
        let until_signal = || {
            stackmeter_sys::interrupt::catch_interrupts()
                .map_err(|e| Error::Local(format!("cannot catch SIGINT and SIGTERM: {e}")))?;
            while !stackmeter_sys::interrupt::interrupted() {
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok::<(), Error>(())
        };
        match self {
            Serving::Responder(_r) => loop {
                std::thread::park();
            },
            Serving::Xdp { echo, interface, .. } => {
                until_signal()?;
                Ok(match echo.counters() {
                    Ok(c) => format!("in-kernel xdp on {interface}: {}", c.describe()),
                    Err(e) => format!("in-kernel xdp: counters unreadable: {e}"),
                })
            }
            Serving::Echo {
                stop,
                counts,
                kernel,
                served,
                ..
            } => {
                let waited = until_signal();
                stop.store(true, Ordering::Relaxed);
                let ended = served
                    .join()
                    .unwrap_or_else(|_| Err(Error::Local("the echo thread panicked".into())));
                let line = match &kernel {
                    Some(k) => match k.counters() {
                        Ok(c) => format!("in-kernel sockmap: {}", c.describe()),
                        Err(e) => format!("in-kernel sockmap: counters unreadable: {e}"),
                    },
                    None => format!(
                        "plain echo: {} connection(s); application echoed {} B",
                        counts.connections.load(Ordering::Relaxed),
                        counts.bytes.load(Ordering::Relaxed)
                    ),
                };
                // A failure still says what was served before it.
                match waited.and(ended) {
                    Ok(()) => Ok(line),
                    Err(e) => Err(Error::Local(format!("{e} (before it: {line})"))),
                }
            }
        }
    }
}

/// Starts the responder `spec` asks for (with the shared secret, if any);
/// it serves until the process ends.
fn responder(spec: ServeSpec, secret: Option<Key>) -> Result<Responder, Error> {
    let port = DEFAULT_PORT;
    let defaults = spec.listen.is_empty();
    let listen = match defaults {
        true => vec![
            SocketAddr::from(([0, 0, 0, 0], port)),
            SocketAddr::from(([0u16; 8], port)),
        ],
        false => spec.listen,
    };
    if let Some(cpu) = spec.affinity {
        // Checked here so a bad CPU is a usage error, not a log line.
        if let Err(e) = stackmeter_sys::pin_current_thread(cpu) {
            return Err(Error::flag(format!("--affinity {cpu}: {e}")));
        }
    }
    // Before any thread starts, so every responder thread inherits the
    // priority; refused knobs stop here with one line. Busy polling is
    // set on the sockets instead.
    let busy_poll_us = spec.knobs.busy_poll_us;
    let no_poll = KnobRequest {
        busy_poll_us: None,
        ..spec.knobs
    };
    // Never undone: dropping what apply changed keeps it.
    drop(crate::knobs::apply(&no_poll)?);
    if spec.spin > Duration::from_secs(1) {
        return Err(Error::flag(format!(
            "--spin-us {}: at most 1000000 (1 s)",
            spec.spin.as_micros()
        )));
    }
    let max_test_s = u32::try_from(spec.max_test_seconds.round() as u64)
        .map_err(|_| Error::flag(format!("--max-test-seconds {}: too long", spec.max_test_seconds)))?;
    let mut cfg = Config {
        listen,
        max_sessions: spec.max_sessions.unwrap_or(stackmeter_responder::DEFAULT_MAX_SESSIONS),
        threads: spec.threads,
        max_msg: spec.max_msg,
        header_timeout: spec.header_timeout,
        idle_timeout: spec.idle_timeout,
        cpu: spec.affinity,
        log: if spec.quiet { Log::Quiet } else { Log::Stderr },
        objects: spec.objects,
        busy_poll_us,
        udp_batch: spec.udp_batch,
        secret,
        limits: Advertised {
            max_test_s,
            max_tests_per_client: spec.max_tests_per_client,
            max_rate_bps: spec.max_source_rate,
        },
        max_idle_per_client: spec.max_idle_per_client,
        max_connects_per_second: spec.max_connects_per_second,
        allow: spec.allow,
        spin: spec.spin,
    };
    if cfg.secret.is_some() {
        cfg.log
            .line(format_args!("authentication on: clients must prove the shared secret"));
    }
    if !no_poll.is_default() {
        let k = crate::knobs::in_force();
        cfg.log.line(format_args!("knobs in force: {}", k.describe()));
    }
    let room = crate::target::FD_ROOM;
    let nofile = crate::target::raise_fd_limit(cfg.log, spec.max_sessions.unwrap_or(0));
    if spec.max_sessions.is_none() {
        if let Some(n) = nofile {
            cfg.max_sessions = (n as usize).saturating_sub(room).max(1);
            cfg.log.line(format_args!(
                "at most {} sessions (the open-files limit {n} less {room})",
                cfg.max_sessions
            ));
        }
    }
    let started = match stackmeter_responder::start(cfg.clone()) {
        // A host without IPv6 still serves IPv4 on the default addresses.
        Err(e) if defaults => {
            cfg.log.line(format_args!("warning: {e}; serving IPv4 only"));
            cfg.listen.truncate(1);
            stackmeter_responder::start(cfg)
        }
        r => r,
    };
    started.map_err(|e| Error::Local(e.to_string()))
}
