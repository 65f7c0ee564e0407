//! The responder on one smoltcp interface, as both loops use it: a pool
//! of TCP sockets listening on the port (smoltcp accepts one connection
//! per listening socket, so the pool is the number of sessions), one UDP
//! socket, and one round that serves them all. The loop around it (a TAP
//! device and `poll(2)` on Linux, the MAC and `WFI` on the board) polls
//! the interface, calls [`Responder::round`], and waits as long as the
//! round and smoltcp allow.

use crate::platform::Platform;
use crate::tcp::{make_room, Context, Slot};
use crate::udp::Echo;
use alloc::vec;
use alloc::vec::Vec;
use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Duration;
use stackmeter_proto::machine::{Config, Registry};

/// How much of everything: the numbers a 64 KiB board and a Linux host
/// choose differently.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// TCP sessions at once (one socket each).
    pub slots: usize,
    /// Bytes of each TCP socket's receive buffer (smoltcp's window follows
    /// it) and send buffer.
    pub tcp_rx: usize,
    /// See [`Sizes::tcp_rx`].
    pub tcp_tx: usize,
    /// UDP datagrams queued each way, and their bytes in all.
    pub udp_packets: usize,
    /// See [`Sizes::udp_packets`].
    pub udp_bytes: usize,
    /// Largest UDP datagram answered.
    pub udp_max: usize,
    /// UDP count ids remembered (docs/protocol.md 4.4).
    pub counts: usize,
}

/// What one round did.
#[derive(Clone, Copy, Debug)]
pub struct Round {
    /// Something moved: poll the interface again at once (what the
    /// sessions queued goes out then).
    pub busy: bool,
    /// When a session wants its next round at the latest.
    pub again: Option<Duration>,
}

/// The sockets and the sessions on them.
pub struct Responder<P: Platform> {
    cx: Context<P>,
    slots: Vec<Slot<P>>,
    echo: Echo,
    udp: SocketHandle,
}

impl<P: Platform> Responder<P> {
    /// Adds the sockets to `sockets` and listens on `port` (TCP at the
    /// first round, UDP now). The session machine's settings are `machine`
    /// with the slot count and object mode filled in. Returns the bind
    /// error of the UDP socket, if any, beside the responder (TCP is still
    /// served).
    pub fn new(
        platform: P,
        sockets: &mut SocketSet<'static>,
        port: u16,
        registry: &'static Registry,
        machine: Config,
        payload: &'static [u8],
        sizes: Sizes,
    ) -> (Responder<P>, Option<udp::BindError>) {
        let slots = (0..sizes.slots)
            .map(|_| {
                let s = tcp::Socket::new(
                    tcp::SocketBuffer::new(vec![0; sizes.tcp_rx]),
                    tcp::SocketBuffer::new(vec![0; sizes.tcp_tx]),
                );
                Slot::new(sockets.add(s), &platform)
            })
            .collect();
        let meta = || vec![udp::PacketMetadata::EMPTY; sizes.udp_packets];
        let udp_handle = sockets.add(udp::Socket::new(
            udp::PacketBuffer::new(meta(), vec![0; sizes.udp_bytes]),
            udp::PacketBuffer::new(meta(), vec![0; sizes.udp_bytes]),
        ));
        let bind = sockets.get_mut::<udp::Socket>(udp_handle).bind(port).err();
        let machine = Config {
            objects: platform.has_objects(),
            max_sessions: sizes.slots,
            ..machine
        };
        let r = Responder {
            cx: Context {
                port,
                registry,
                machine,
                payload,
                platform,
            },
            slots,
            echo: Echo::new(registry, sizes.udp_max, sizes.counts, machine.key),
            udp: udp_handle,
        };
        (r, bind)
    }

    /// The platform it was made with.
    pub fn platform(&self) -> &P {
        &self.cx.platform
    }

    /// Serves every socket once, at `now` (ns): UDP echoes and stream
    /// datagrams, then each TCP session as far as its socket allows, then
    /// room made for a newcomer if every slot is taken.
    pub fn round(&mut self, sockets: &mut SocketSet<'_>, now: u64) -> Round {
        let mut busy = self
            .echo
            .serve(sockets.get_mut::<udp::Socket>(self.udp), now, &self.cx.platform);
        let mut again: Option<Duration> = None;
        for s in &mut self.slots {
            let sock = sockets.get_mut::<tcp::Socket>(s.handle);
            let (moved, want) = s.serve(sock, &self.cx, now);
            busy |= moved;
            again = match (again, want) {
                (Some(a), Some(w)) => Some(a.min(w)),
                (a, w) => a.or(w),
            };
        }
        make_room(&mut self.slots, sockets);
        Round { busy, again }
    }
}
