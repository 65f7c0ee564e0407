//! The stackmeter responder for hosts: the target side of every test.
//!
//! It listens on TCP and UDP at the same address and port, speaks protocol
//! v1 (`stackmeter-proto`), and must outlive any client: every wait has a
//! deadline, every size is capped, every refusal is answered with the
//! protocol's status record and logged in one line, and a client vanishing
//! mid-transfer only ends its own session.
//!
//! Threading: every TCP session starts on an event loop (one per listener,
//! `events.rs`), where an idle one costs about 1.4 KiB and no thread.
//! An rr or object session whose data starts moves to a thread of its own
//! (large messages while fewer than `threads` have one, small ones only
//! alone): blocking `recv`/`send` on a dedicated thread is the shortest
//! path a reply can take (no readiness call between data and reply), so the
//! responder adds as little as the minimal C ping-pong that bench/ uses as
//! the floor. A throughput test's control session always gets a thread,
//! its sinks and sources while fewer than `threads` have one; the rest
//! share the loop. One thread per UDP socket. The number of sessions is
//! capped (`max_sessions`; `serve` sets it from the open-files limit).
//!
//! The protocol itself, every rule of every mode, is the pure session
//! machine of `stackmeter_proto::machine`; this crate is its I/O driver
//! (`conn.rs`, blocking or non-blocking), the event loop (`events.rs`;
//! `tcp.rs`, a thread per session, where there is no epoll), the UDP echo and
//! stream counting (`udp.rs`) and the object catalogue (`objects.rs`).
//! Beside it: a plain TCP echo (`plain_echo.rs`, no protocol) and, on
//! Linux, the responders inside the kernel (`in_kernel.rs`: XDP and
//! sockmap, from `stackmeter-bpf`).

mod clients;
mod config;
mod conn;
#[cfg(target_os = "linux")]
mod events;
pub mod in_kernel;
mod log;
mod monitor;
mod objects;
pub mod plain_echo;
mod shared;
mod sources;
#[cfg(not(target_os = "linux"))]
mod tcp;
mod udp;

pub use config::{
    Config, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_MSG, DEFAULT_MAX_SESSIONS, DEFAULT_THREADS,
    DEFAULT_UDP_BATCH,
};
pub use log::Log;
pub use objects::{Files, ObjectSource, Objects, DEFAULT_SIZES, MAX_SYNTHETIC_BYTES};
pub use shared::Counters;
/// The types of [`Config`]'s admission fields, for whoever fills one in.
pub use stackmeter_proto::admit::{Advertised, Cidr};

use shared::{spawn, Shared};
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::Arc;

/// A started responder. Its threads run until the process exits.
#[derive(Debug)]
pub struct Responder {
    /// The addresses actually bound (port 0 resolved).
    pub local: Vec<SocketAddr>,
    /// Live counters.
    pub counters: Arc<Counters>,
}

/// Binds every listen address (TCP, then UDP on the same port) and starts
/// the threads. Fails, naming the address, if any bind fails.
pub fn start(cfg: Config) -> io::Result<Responder> {
    if cfg.listen.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no address to listen on"));
    }
    let counters = Arc::new(Counters::default());
    let store = objects::Objects::build(&cfg.objects, cfg.log)?;
    if let Some(s) = &store {
        cfg.log.line(format_args!("objects: {} in the catalogue", s.len()));
    }
    let shared = Arc::new(Shared::new(cfg.clone(), counters.clone(), store)?);
    let mut bound = Vec::new();
    for addr in &cfg.listen {
        let (tcp, udp) =
            bind_pair(*addr).map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
        if let Some(us) = cfg.busy_poll_us {
            use std::os::fd::AsRawFd;
            for fd in [tcp.as_raw_fd(), udp.as_raw_fd()] {
                stackmeter_sys::knobs::set_busy_poll(fd, us)
                    .map_err(|e| io::Error::new(e.kind(), format!("--busy-poll {us}: {e}")))?;
            }
            let seen = stackmeter_sys::knobs::busy_poll(udp.as_raw_fd()).unwrap_or(0);
            cfg.log.line(format_args!(
                "busy-poll {seen} us on {addr} (read back from the kernel)"
            ));
        }
        bound.push((tcp, udp));
    }
    let mut local = Vec::new();
    for (tcp, udp) in bound {
        local.push(tcp.local_addr()?);
        let s = shared.clone();
        #[cfg(target_os = "linux")]
        spawn("events", move || {
            if let Err(e) = events::run(tcp, s.clone()) {
                s.cfg.log.line(format_args!("error: the event loop cannot start: {e}"));
            }
        })?;
        #[cfg(not(target_os = "linux"))]
        spawn("accept", move || tcp::accept_loop(tcp, s))?;
        let s = shared.clone();
        spawn("udp", move || udp::echo_loop(udp, s))?;
    }
    if cfg.log == Log::Stderr {
        let s = shared.clone();
        spawn("monitor", move || monitor::run(&s))?;
    }
    Ok(Responder { local, counters })
}

/// Binds TCP then UDP on one port. With port 0 the UDP bind on the port the
/// kernel gave TCP can collide; try a few times.
fn bind_pair(addr: SocketAddr) -> io::Result<(TcpListener, UdpSocket)> {
    let mut last = None;
    for _ in 0..16 {
        let tcp = bind_tcp(addr)?;
        let port = tcp.local_addr()?.port();
        let mut uaddr = addr;
        uaddr.set_port(port);
        match bind_udp(uaddr) {
            Ok(udp) => return Ok((tcp, udp)),
            Err(e) if addr.port() == 0 && e.kind() == io::ErrorKind::AddrInUse => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::AddrInUse, "no free port for TCP and UDP")))
}

fn socket_for(addr: SocketAddr, ty: Type, proto: Protocol) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), ty, Some(proto))?;
    if addr.is_ipv6() {
        // An IPv6 address serves IPv6 only, so "0.0.0.0:P" and "[::]:P" can
        // both be given and both work.
        s.set_only_v6(true)?;
    }
    Ok(s)
}

fn bind_tcp(addr: SocketAddr) -> io::Result<TcpListener> {
    let s = socket_for(addr, Type::STREAM, Protocol::TCP)?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s.into())
}

/// Receive buffer asked for on the UDP socket: a UDP stream at a few
/// hundred thousand datagrams per second outruns the 208 KiB default
/// during a scheduling hiccup of a millisecond. The kernel caps it at
/// net.core.rmem_max.
const UDP_RCVBUF: usize = 4 << 20;

fn bind_udp(addr: SocketAddr) -> io::Result<UdpSocket> {
    let s = socket_for(addr, Type::DGRAM, Protocol::UDP)?;
    // Best effort: a smaller buffer is still a working responder.
    let _ = s.set_recv_buffer_size(UDP_RCVBUF);
    s.bind(&addr.into())?;
    Ok(s.into())
}
