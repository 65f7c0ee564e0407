//! The Linux loop (feature `std`): a TAP device, smoltcp's interface over
//! it, the [`Responder`] with the host's sizes, and a wait on the TAP
//! descriptor between rounds; the [`Platform`] of a Linux process (the
//! monotonic clock, the thread's CPU time, stderr, the host responder's
//! synthetic objects).

use crate::platform::Platform;
use crate::responder::{Responder, Sizes};
use smoltcp::iface::{Config as IfaceConfig, Interface, SocketSet};
use smoltcp::phy::{wait as phy_wait, Device, Medium, TunTapInterface};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpCidr};
use stackmeter_proto::machine::{Config, CpuTime, Outgoing, Registry};
use stackmeter_responder::{Files, Log, ObjectSource, Objects, DEFAULT_SIZES};
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

/// A Linux host's sizes: 32 sessions of 256 KiB each way, a MiB of UDP
/// each way, every datagram size, 4,096 count ids.
const SIZES: Sizes = Sizes {
    slots: 32,
    tcp_rx: TCP_BUF,
    tcp_tx: TCP_BUF,
    udp_packets: 256,
    udp_bytes: 1 << 20,
    udp_max: 65536,
    counts: 4096,
};

/// The payload rr, crr and sources send from.
static PAYLOAD: [u8; 64 << 10] = [0; 64 << 10];

/// A Linux process: its clock, its thread's CPU time, stderr, and the
/// host responder's synthetic catalogue.
struct Host {
    objects: Option<&'static Objects>,
    log: Log,
}

impl Platform for Host {
    type Files = Files<'static>;

    fn files(&self) -> Files<'static> {
        Files::new(self.objects)
    }

    fn body<'f>(files: &'f mut Files<'static>, b: Outgoing) -> Option<&'f [u8]> {
        files.bytes(b).ok()
    }

    fn has_objects(&self) -> bool {
        self.objects.is_some()
    }

    fn now_ns(&self) -> u64 {
        stackmeter_sys::monotonic_ns()
    }

    fn cpu(&self) -> Option<CpuTime> {
        let c = stackmeter_sys::thread_cpu();
        Some(CpuTime {
            user_ns: c.user_ns,
            sys_ns: c.sys_ns,
        })
    }

    fn event(&self, line: std::fmt::Arguments<'_>) {
        self.log.line(line);
    }
}

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
        seed,
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
    let host = Host { objects, log };
    let (mut responder, bind) = Responder::new(host, &mut sockets, o.port, registry, machine, &PAYLOAD, SIZES);
    if let Some(e) = bind {
        log.line(format_args!("warning: udp {}: {e}", o.port));
    }
    log.line(format_args!(
        "smoltcp on {} ({} MTU {}): listening on tcp and udp {}:{}",
        o.tap,
        mac,
        dev.capabilities().max_transmission_unit,
        o.addr,
        o.port
    ));
    loop {
        iface.poll(Instant::now(), &mut dev, &mut sockets);
        let round = responder.round(&mut sockets, stackmeter_sys::monotonic_ns());
        if round.busy {
            // What the sessions queued goes out in the next poll, now.
            continue;
        }
        let delay = match (iface.poll_delay(Instant::now(), &sockets), round.again) {
            (Some(d), Some(w)) => Some(d.min(w)),
            (d, w) => d.or(w),
        };
        let _ = phy_wait(fd, delay);
    }
}
