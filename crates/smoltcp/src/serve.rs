//! The poll loop: a TAP device, smoltcp's interface over it, a pool of TCP
//! sockets listening on the port (smoltcp accepts one connection per
//! listening socket, so the pool is the number of sessions), one UDP
//! socket, and a wait on the TAP descriptor between rounds.

use crate::tcp::{make_room, Context, Slot, SLOTS};
use crate::udp::Echo;
use smoltcp::iface::{Config as IfaceConfig, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{wait as phy_wait, Device, Medium, TunTapInterface};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{EthernetAddress, IpCidr};
use stackmeter_proto::machine::{Config, Registry};
use stackmeter_responder::{Log, ObjectSource, Objects, DEFAULT_SIZES};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;

/// Where and how to serve.
#[derive(Clone, Debug)]
pub struct Options {
    /// The TAP device (made by the caller, up, with the host's address).
    pub tap: String,
    /// The stack's own address, in the TAP's /24.
    pub addr: Ipv4Addr,
    /// TCP and UDP port.
    pub port: u16,
    /// CPU to pin the loop to.
    pub cpu: Option<usize>,
}

/// Why the responder could not start (it never stops on its own).
#[derive(Debug)]
pub enum ServeError {
    /// The TAP device could not be opened (no root, no such device).
    Tap(String, std::io::Error),
    /// The CPU could not be pinned.
    Pin(usize, std::io::Error),
    /// The object catalogue could not be built.
    Objects(std::io::Error),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Tap(t, e) => write!(f, "cannot open TAP device {t}: {e}"),
            ServeError::Pin(c, e) => write!(f, "cannot pin to CPU {c}: {e}"),
            ServeError::Objects(e) => write!(f, "objects: {e}"),
        }
    }
}

impl std::error::Error for ServeError {}

/// Bytes of each TCP socket's receive and send buffers: room for a
/// 256 KiB window (smoltcp scales its window to the buffer), as a host
/// stack's default autotuning reaches on a short path.
const TCP_BUF: usize = 256 << 10;

/// Serves until the process is killed; returns only when it cannot start.
pub fn serve(o: &Options) -> Result<std::convert::Infallible, ServeError> {
    if let Some(c) = o.cpu {
        stackmeter_sys::pin_current_thread(c).map_err(|e| ServeError::Pin(c, e))?;
    }
    let mut dev = TunTapInterface::new(&o.tap, Medium::Ethernet).map_err(|e| ServeError::Tap(o.tap.clone(), e))?;
    let fd = dev.as_raw_fd();
    let log = Log::Stderr;
    let objects = Objects::build(&ObjectSource::Synthetic(DEFAULT_SIZES.to_vec()), log)
        .map_err(ServeError::Objects)?
        .map(|o| &*Box::leak(Box::new(o)));
    // A session borrows the registry for as long as it lives; the loop
    // lives as long as the process.
    let registry: &'static Registry = Box::leak(Box::new(Registry::new()));
    let mut seed = [0u8; 16];
    let _ = std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut seed));
    let machine = Config {
        objects: objects.is_some(),
        seed,
        max_sessions: SLOTS,
        ..Config::default()
    };

    // Locally administered, told apart by the subnet's number.
    let mac = EthernetAddress([0x02, 0x53, 0x4d, 0x00, 0x00, o.addr.octets()[2]]);
    let mut cfg = IfaceConfig::new(mac.into());
    cfg.random_seed = u64::from_le_bytes(seed[..8].try_into().unwrap_or_default());
    let mut iface = Interface::new(cfg, &mut dev, Instant::now());
    iface.update_ip_addrs(|a| {
        let _ = a.push(IpCidr::new(o.addr.into(), 24));
    });
    let mut sockets = SocketSet::new(vec![]);
    let mut slots: Vec<Slot> = (0..SLOTS)
        .map(|_| {
            let s = tcp::Socket::new(
                tcp::SocketBuffer::new(vec![0; TCP_BUF]),
                tcp::SocketBuffer::new(vec![0; TCP_BUF]),
            );
            Slot::new(sockets.add(s), objects)
        })
        .collect();
    let udp_handle: SocketHandle = sockets.add(udp::Socket::new(
        udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 256], vec![0; 1 << 20]),
        udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 256], vec![0; 1 << 20]),
    ));
    if let Err(e) = sockets.get_mut::<udp::Socket>(udp_handle).bind(o.port) {
        log.line(format_args!("warning: udp {}: {e}", o.port));
    }
    let mut echo = Echo::new(registry);
    let cx = Context {
        port: o.port,
        registry,
        machine,
        log,
    };
    log.line(format_args!(
        "smoltcp on {} ({} MTU {}): listening on tcp and udp {}:{}",
        o.tap,
        mac,
        dev.capabilities().max_transmission_unit,
        o.addr,
        o.port
    ));
    loop {
        let now = Instant::now();
        iface.poll(now, &mut dev, &mut sockets);
        let ns = stackmeter_sys::monotonic_ns();
        let mut busy = echo.serve(sockets.get_mut::<udp::Socket>(udp_handle), ns);
        let mut again: Option<Duration> = None;
        for s in &mut slots {
            let sock = sockets.get_mut::<tcp::Socket>(s.handle);
            let (moved, want) = s.serve(sock, &cx, ns);
            busy |= moved;
            again = match (again, want) {
                (Some(a), Some(w)) => Some(a.min(w)),
                (a, w) => a.or(w),
            };
        }
        make_room(&mut slots, &mut sockets);
        if busy {
            // What the sessions queued goes out in the next poll, now.
            continue;
        }
        let delay = match (iface.poll_delay(Instant::now(), &sockets), again) {
            (Some(d), Some(w)) => Some(d.min(w)),
            (d, w) => d.or(w),
        };
        let _ = phy_wait(fd, delay);
    }
}
