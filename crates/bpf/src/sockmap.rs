//! The sockmap responder: a plain TCP echo whose bytes never reach the
//! application (`bpf/sockmap_echo.bpf.c`). Each accepted socket goes into
//! a sockhash under its cookie; the map's stream parser hands every
//! arrival to its verdict program, which redirects it to the egress of the
//! same socket, so the data goes straight back out inside the kernel. The
//! application accepts, sets TCP_NODELAY (without it a short tail can wait
//! for the peer's delayed ACK: seen at 44 ms for 64 KiB over IPv6), inserts
//! and then only waits for the end of the connection; a read that returns
//! data is counted, and should stay at zero.

use crate::object::{per_cpu_sum, Error, SOCKMAP_ECHO};
use aya::maps::SockHash;
use aya::programs::SkSkb;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Counter slots of `bpf/sockmap_echo.bpf.c` (`enum sockmap_echo_counter`).
const ECHOED_BYTES: u32 = 1;
const ECHOED_MSGS: u32 = 2;
const NOT_IN_MAP: u32 = 3;

/// What the sockmap responder did, summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Messages (one per parsed arrival) sent back inside the kernel.
    pub echoed_messages: u64,
    /// Bytes sent back inside the kernel.
    pub echoed_bytes: u64,
    /// Arrivals on a socket not in the map (left to the application).
    pub not_in_map: u64,
    /// Connections accepted.
    pub connections: u64,
    /// Bytes the application read: what the kernel did not echo (0).
    pub app_read_bytes: u64,
}

impl Counters {
    /// "echoed 1000 message(s), 1234 B in the kernel; application read 0 B".
    pub fn describe(&self) -> String {
        format!(
            "{} connection(s); echoed {} message(s), {} B in the kernel; application read {} B",
            self.connections, self.echoed_messages, self.echoed_bytes, self.app_read_bytes
        )
    }
}

/// The loaded programs and their map.
pub struct SockmapEcho {
    ebpf: Mutex<aya::Ebpf>,
    connections: AtomicU64,
    app_read_bytes: Arc<AtomicU64>,
}

impl SockmapEcho {
    /// Loads the programs and attaches them to a new sockhash.
    pub fn load() -> Result<SockmapEcho, Error> {
        let bytes = SOCKMAP_ECHO.bytes()?;
        let mut ebpf = aya::Ebpf::load(bytes).map_err(|e| Error::kernel("loading the sockmap programs", e))?;
        let map_fd = {
            let socks: SockHash<_, u64> =
                SockHash::try_from(ebpf.map("socks").ok_or_else(|| Error::kernel_missing("map socks"))?)
                    .map_err(|e| Error::kernel("the sockhash", e))?;
            socks.fd().try_clone().map_err(|e| Error::kernel("the sockhash", e))?
        };
        for name in ["echo_parser", "echo_verdict"] {
            let prog: &mut SkSkb = crate::object::program(&mut ebpf, name)?;
            prog.load()
                .map_err(|e| Error::kernel(format!("the verifier on {name}"), e))?;
            prog.attach(&map_fd)
                .map_err(|e| Error::kernel(format!("attaching {name} to the sockhash"), e))?;
        }
        Ok(SockmapEcho {
            ebpf: Mutex::new(ebpf),
            connections: AtomicU64::new(0),
            app_read_bytes: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Puts accepted connection `s` in the map: from now on its data is
    /// echoed by the kernel.
    pub fn add(&self, s: &TcpStream) -> Result<(), Error> {
        s.set_nodelay(true).map_err(|e| Error::kernel("TCP_NODELAY", e))?;
        let cookie = stackmeter_sys_cookie(s)?;
        let mut ebpf = self.ebpf.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut socks: SockHash<_, u64> = SockHash::try_from(
            ebpf.map_mut("socks")
                .ok_or_else(|| Error::kernel_missing("map socks"))?,
        )
        .map_err(|e| Error::kernel("the sockhash", e))?;
        socks
            .insert(cookie, s.as_raw_fd(), 0)
            .map_err(|e| Error::kernel("adding a connection to the sockhash", e))?;
        self.connections.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The counters now.
    pub fn counters(&self) -> Result<Counters, Error> {
        let ebpf = self.ebpf.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(Counters {
            echoed_messages: per_cpu_sum(&ebpf, "counters", ECHOED_MSGS)?,
            echoed_bytes: per_cpu_sum(&ebpf, "counters", ECHOED_BYTES)?,
            not_in_map: per_cpu_sum(&ebpf, "counters", NOT_IN_MAP)?,
            connections: self.connections.load(Ordering::Relaxed),
            app_read_bytes: self.app_read_bytes.load(Ordering::Relaxed),
        })
    }

    /// Serves `listener` until `stop` is set: every connection accepted
    /// goes into the map and is then only watched for its end, on a thread
    /// of its own (a read returns at the peer's close; any bytes it
    /// returns are what the kernel did not echo, and are counted).
    pub fn serve(self: &Arc<Self>, listener: TcpListener, stop: &AtomicBool) -> Result<(), Error> {
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::kernel("the listener", e))?;
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((s, _)) => {
                    let _ = s.set_nonblocking(false);
                    if let Err(e) = self.add(&s) {
                        eprintln!("stackmeter serve: a connection was not added: {e}");
                        continue;
                    }
                    let read = Arc::clone(&self.app_read_bytes);
                    std::thread::spawn(move || watch(s, &read));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(Error::kernel("accepting a connection", e)),
            }
        }
        Ok(())
    }
}

/// Waits for the end of connection `s` (the peer's close: POLLRDHUP; a
/// read on a socket in the map would return 0 while the kernel echoes),
/// counting any bytes that reach the application.
fn watch(s: TcpStream, read: &AtomicU64) {
    let fd = s.as_raw_fd();
    let mut buf = [0u8; 4096];
    loop {
        match stackmeter_sys::wait_hangup(fd, Duration::from_secs(1)) {
            Ok(stackmeter_sys::Waited::Nothing) => {}
            Ok(stackmeter_sys::Waited::Readable) => match stackmeter_sys::recv_nowait(fd, &mut buf) {
                Ok(n) => {
                    read.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return,
            },
            Ok(stackmeter_sys::Waited::HungUp) | Err(_) => return,
        }
    }
}

/// The socket's cookie, its key in the map.
fn stackmeter_sys_cookie(s: &TcpStream) -> Result<u64, Error> {
    stackmeter_sys::socket_cookie(s.as_raw_fd()).map_err(|e| Error::kernel("SO_COOKIE", e))
}
