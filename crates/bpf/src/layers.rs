//! The per-layer tracer (`bpf/layers.bpf.c`): raw tracepoints at each
//! layer a round trip of stackmeter's passes on Linux (the device queue,
//! the driver, the receive backlog or NAPI, the stack, the socket's
//! wake-up, the responder's read and write), accumulated in the kernel per
//! round trip and written as one record ([`Trip`]) when its last point has
//! passed. UDP round trips (`ping --layers`) are found by the datagram's
//! sequence number, TCP transactions (`rr --layers`) by the sockets' byte
//! counts ([`Layers::connect`]).
//!
//! Nothing runs on the measured path but the probes: the records are read
//! by a thread of this module that polls the ring buffer every 50 ms (the
//! programs never wake it; the buffer holds about a second of round trips
//! on loopback, and a reader waking more often moved the client and the
//! responder between CPUs), so a run of any length is traced whole; a
//! full buffer is counted ([`Traced::lost`]), never silent.
//! The client's own clock reads are the first and the last position of a
//! trip: the caller adds them.

use crate::object::{per_cpu_sum, Error, LAYERS};
use aya::maps::{HashMap, MapData, RingBuf};
use aya::programs::RawTracePoint;
use core::mem::offset_of;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Positions of a trip (`LAYER_POINTS` of `bpf/layers.h`): 0 and the last
/// are the client's clock reads, the rest the kernel's.
pub const POINTS: usize = 15;

/// One round trip as the kernel wrote it: `struct layer_trip` of
/// `bpf/layers.h`, field for field (its size asserted on both sides), read
/// from the ring buffer's bytes at the offsets the compiler gives these
/// fields ([`Trip::read`]): no `unsafe` cast, no field offset written by
/// hand.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trip {
    /// UDP: the datagram's sequence number (as on the wire); TCP: the
    /// connection's index << 40 | the transaction's (warm-up included).
    pub key: u64,
    /// CLOCK_MONOTONIC ns at each position, 0 where not seen.
    pub at: [u64; POINTS],
    /// The CPU each position ran on.
    pub cpu: [u8; POINTS],
    /// `enum trip_state`.
    pub state: u8,
}

/// `sizeof(struct layer_trip)`, asserted in `bpf/layers.h` too.
const TRIP_LEN: usize = 144;
const _: () = assert!(size_of::<Trip>() == TRIP_LEN);

impl Trip {
    /// The record in `b` (the host's byte order), if `b` holds one.
    pub fn read(b: &[u8]) -> Option<Trip> {
        if b.len() < TRIP_LEN {
            return None;
        }
        let mut at = [0u64; POINTS];
        for (i, t) in at.iter_mut().enumerate() {
            *t = ne_u64(b, offset_of!(Trip, at) + 8 * i);
        }
        let cpu_at = offset_of!(Trip, cpu);
        Some(Trip {
            key: ne_u64(b, offset_of!(Trip, key)),
            at,
            cpu: b[cpu_at..cpu_at + POINTS].try_into().expect("POINTS bytes"),
            state: b[offset_of!(Trip, state)],
        })
    }
}

/// The u64 at `offset` of `b`, in the host's order.
fn ne_u64(b: &[u8], offset: usize) -> u64 {
    u64::from_ne_bytes(b[offset..offset + 8].try_into().expect("8 bytes"))
}

/// One end of a TCP connection as the kernel keeps it: `struct conn` of
/// `bpf/layers_tcp.h` (its size asserted on both sides), written into the
/// map as bytes at the compiler's offsets ([`Conn::bytes`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Conn {
    in_base: u64,
    out_base: u64,
    unit_in: u32,
    unit_out: u32,
    index: u32,
    responder: u8,
    anchored: u8,
    pad: u16,
}

const CONN_LEN: usize = 32;
const _: () = assert!(size_of::<Conn>() == CONN_LEN);

impl Conn {
    fn bytes(&self) -> [u8; CONN_LEN] {
        let mut b = [0u8; CONN_LEN];
        let mut put = |at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
        put(offset_of!(Conn, in_base), &self.in_base.to_ne_bytes());
        put(offset_of!(Conn, out_base), &self.out_base.to_ne_bytes());
        put(offset_of!(Conn, unit_in), &self.unit_in.to_ne_bytes());
        put(offset_of!(Conn, unit_out), &self.unit_out.to_ne_bytes());
        put(offset_of!(Conn, index), &self.index.to_ne_bytes());
        put(offset_of!(Conn, responder), &[self.responder]);
        put(offset_of!(Conn, anchored), &[self.anchored]);
        b
    }
}

/// A raw tracepoint the tracer can attach to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Probe {
    /// The device queue takes a packet (`net_dev_queue`).
    NetDevQueue,
    /// The driver is about to get it (`net_dev_start_xmit`).
    NetDevStartXmit,
    /// Into the receive backlog (`netif_rx`: loopback, veth).
    NetifRx,
    /// Into NAPI (`napi_gro_receive_entry`: veth with XDP, NICs).
    NapiGroReceive,
    /// The stack takes it (`netif_receive_skb`).
    NetifReceiveSkb,
    /// Queued on the socket, its reader woken (`sk_data_ready`).
    SkDataReady,
    /// UDP: the responder's send, at its route lookup (`fib_table_lookup`).
    FibTableLookup,
    /// The same over IPv6 (`fib6_table_lookup`).
    Fib6TableLookup,
    /// The responder's read call's end (`sock_recv_length`).
    SockRecvLength,
    /// TCP: a write call's start (`tcp_sendmsg_locked`).
    TcpSendmsgLocked,
}

impl Probe {
    /// Every probe.
    pub const ALL: [Probe; 10] = [
        Probe::NetDevQueue,
        Probe::NetDevStartXmit,
        Probe::NetifRx,
        Probe::NapiGroReceive,
        Probe::NetifReceiveSkb,
        Probe::SkDataReady,
        Probe::FibTableLookup,
        Probe::Fib6TableLookup,
        Probe::SockRecvLength,
        Probe::TcpSendmsgLocked,
    ];

    /// The tracepoint's name.
    pub fn tracepoint(self) -> &'static str {
        match self {
            Probe::NetDevQueue => "net_dev_queue",
            Probe::NetDevStartXmit => "net_dev_start_xmit",
            Probe::NetifRx => "netif_rx",
            Probe::NapiGroReceive => "napi_gro_receive_entry",
            Probe::NetifReceiveSkb => "netif_receive_skb",
            Probe::SkDataReady => "sk_data_ready",
            Probe::FibTableLookup => "fib_table_lookup",
            Probe::Fib6TableLookup => "fib6_table_lookup",
            Probe::SockRecvLength => "sock_recv_length",
            Probe::TcpSendmsgLocked => "tcp_sendmsg_locked",
        }
    }

    /// The probe named `name` (its tracepoint's name).
    pub fn named(name: &str) -> Option<Probe> {
        Probe::ALL.into_iter().find(|p| p.tracepoint() == name)
    }

    /// Whether a trace of `tcp` (else UDP) uses it.
    fn serves(self, tcp: bool) -> bool {
        match self {
            Probe::FibTableLookup | Probe::Fib6TableLookup => !tcp,
            Probe::TcpSendmsgLocked => tcp,
            _ => true,
        }
    }
}

/// What to trace.
#[derive(Clone, Debug)]
pub struct Config {
    /// UDP round trips to and from this port (ignored for TCP).
    pub port: u16,
    /// TCP transactions of the connections given to [`Layers::connect`].
    pub tcp: bool,
    /// Probes left out (to measure what each costs).
    pub skip: Vec<Probe>,
    /// Have the kernel count each program's runs and time (costs a clock
    /// read per run; [`Traced::probes`]).
    pub stats: bool,
    /// How often the reader takes the records.
    pub poll: Duration,
    /// The CPU the reader runs on (one the measured threads are not on),
    /// if any.
    pub reader_cpu: Option<usize>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            port: 0,
            tcp: false,
            skip: Vec::new(),
            stats: false,
            poll: Duration::from_millis(50),
            reader_cpu: None,
        }
    }
}

/// A TCP connection of the client's, to trace.
#[derive(Clone, Copy, Debug)]
pub struct Connection {
    /// Its number (a trip's key: index << 40 | transaction).
    pub index: u32,
    /// The client's port.
    pub client_port: u16,
    /// The responder's port.
    pub server_port: u16,
    /// Bytes of one request.
    pub request: u32,
    /// Bytes of one response.
    pub response: u32,
}

impl Connection {
    /// The map keys of its two ends (local port << 16 | remote port) and
    /// their records.
    fn ends(&self) -> [(u32, Conn); 2] {
        let key = |local: u16, remote: u16| (u32::from(local) << 16) | u32::from(remote);
        let end = |unit_in, unit_out, responder| Conn {
            unit_in,
            unit_out,
            index: self.index,
            responder,
            ..Conn::default()
        };
        [
            (
                key(self.client_port, self.server_port),
                end(self.response, self.request, 0),
            ),
            (
                key(self.server_port, self.client_port),
                end(self.request, self.response, 1),
            ),
        ]
    }
}

/// What a run of the tracer gave.
#[derive(Clone, Debug, Default)]
pub struct Traced {
    /// Every trip recorded, in the order written.
    pub trips: Vec<Trip>,
    /// Records the full ring buffer refused.
    pub lost: u64,
    /// Trips begun and overwritten before their last point (a lost packet,
    /// or more outstanding than the kernel keeps).
    pub unfinished: u64,
    /// With [`Config::stats`]: each probe's runs and time in the kernel.
    pub probes: Vec<ProbeCost>,
}

/// One probe's runs and time, counted by the kernel.
#[derive(Clone, Copy, Debug)]
pub struct ProbeCost {
    /// Which.
    pub probe: Probe,
    /// Times it ran (on every packet, socket or route lookup of the
    /// machine that reaches it, not only ours).
    pub runs: u64,
    /// Time in it, ns.
    pub ns: u64,
}

/// The tracer, attached; detached when dropped (or when the process ends:
/// nothing is pinned).
pub struct Layers {
    ebpf: aya::Ebpf,
    attached: Vec<Probe>,
    reader: Option<(Arc<AtomicBool>, JoinHandle<Vec<Trip>>)>,
    _stats: Option<std::os::fd::OwnedFd>,
}

/// The C program's name for `p`.
fn program(p: Probe) -> String {
    format!("rtp_{}", p.tracepoint())
}

impl Layers {
    /// Loads the programs (the verifier's work: the heavy part, done
    /// before the untraced run so that both runs follow it and find the
    /// threads where it left them) and starts the reader; nothing is
    /// attached until [`Layers::attach`].
    pub fn load(cfg: &Config) -> Result<Layers, Error> {
        let bytes = LAYERS.bytes()?;
        let attached: Vec<Probe> = Probe::ALL
            .into_iter()
            .filter(|p| p.serves(cfg.tcp) && !cfg.skip.contains(p))
            .collect();
        // The point that closes a trip: the reply on the client's socket
        // (UDP), the whole response on it (TCP); without sk_data_ready,
        // the reply to the stack.
        let emit_at: u8 = match (cfg.tcp, attached.contains(&Probe::SkDataReady)) {
            (false, true) => 12,
            (true, true) => 13,
            (false, false) => 11,
            (true, false) => 12,
        };
        let stats = match cfg.stats {
            true => Some(
                aya::sys::enable_stats(aya::sys::Stats::RunTime)
                    .map_err(|e| Error::kernel("turning on the kernel's BPF statistics", e))?,
            ),
            false => None,
        };
        let mut ebpf = aya::EbpfLoader::new()
            .set_global("cfg_port", &cfg.port, true)
            .set_global("cfg_tcp", &u8::from(cfg.tcp), true)
            .set_global("cfg_emit_at", &emit_at, true)
            .load(bytes)
            .map_err(|e| Error::kernel("loading the layer tracer", e))?;
        for p in &attached {
            let name = program(*p);
            let prog: &mut RawTracePoint = crate::object::program(&mut ebpf, &name)?;
            prog.load()
                .map_err(|e| Error::kernel(format!("the verifier on {name}"), e))?;
        }
        let ring = RingBuf::try_from(
            ebpf.take_map("trips_out")
                .ok_or_else(|| Error::kernel_missing("map trips_out"))?,
        )
        .map_err(|e| Error::kernel("the tracer's ring buffer", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (poll, cpu) = (cfg.poll, cfg.reader_cpu);
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("layers-reader".into())
            .spawn(move || {
                if let Some(c) = cpu {
                    let _ = stackmeter_sys::pin_current_thread(c);
                }
                read_until(ring, &flag, poll)
            })
            .map_err(|e| Error::kernel("starting the tracer's reader", e))?;
        Ok(Layers {
            ebpf,
            attached,
            reader: Some((stop, handle)),
            _stats: stats,
        })
    }

    /// Attaches every probe loaded: tracing starts.
    pub fn attach(&mut self) -> Result<(), Error> {
        for p in &self.attached {
            let prog: &mut RawTracePoint = crate::object::program(&mut self.ebpf, &program(*p))?;
            prog.attach(p.tracepoint())
                .map_err(|e| Error::kernel(format!("attaching to raw tracepoint {}", p.tracepoint()), e))?;
        }
        Ok(())
    }

    /// Traces TCP connection `c` from now on (before its data phase).
    pub fn connect(&mut self, c: &Connection) -> Result<(), Error> {
        let mut map = self.conns()?;
        for (key, end) in c.ends() {
            map.insert(key, end.bytes(), 0)
                .map_err(|e| Error::kernel("the tracer's connection map", e))?;
        }
        Ok(())
    }

    /// Stops tracing connection `c`.
    pub fn disconnect(&mut self, c: &Connection) -> Result<(), Error> {
        let mut map = self.conns()?;
        for (key, _) in c.ends() {
            let _ = map.remove(&key);
        }
        Ok(())
    }

    fn conns(&mut self) -> Result<HashMap<&mut MapData, u32, [u8; CONN_LEN]>, Error> {
        HashMap::try_from(
            self.ebpf
                .map_mut("conns")
                .ok_or_else(|| Error::kernel_missing("map conns"))?,
        )
        .map_err(|e| Error::kernel("the tracer's connection map", e))
    }

    /// The probes attached.
    pub fn probes(&self) -> &[Probe] {
        &self.attached
    }

    /// Stops the reader, takes the last records and the counters, and
    /// detaches everything.
    pub fn finish(mut self) -> Result<Traced, Error> {
        let trips = match self.reader.take() {
            Some((stop, handle)) => {
                stop.store(true, Ordering::Relaxed);
                handle.join().unwrap_or_default()
            }
            None => Vec::new(),
        };
        let mut probes = Vec::new();
        if self._stats.is_some() {
            for p in &self.attached {
                let prog: &mut RawTracePoint = crate::object::program(&mut self.ebpf, &program(*p))?;
                let info = prog
                    .info()
                    .map_err(|e| Error::kernel("reading a program's statistics", e))?;
                probes.push(ProbeCost {
                    probe: *p,
                    runs: info.run_count(),
                    ns: info.run_time().as_nanos() as u64,
                });
            }
        }
        Ok(Traced {
            trips,
            lost: per_cpu_sum(&self.ebpf, "counters", 1)?,
            unfinished: per_cpu_sum(&self.ebpf, "counters", 2)?,
            probes,
        })
    }
}

impl Drop for Layers {
    fn drop(&mut self) {
        if let Some((stop, handle)) = self.reader.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = handle.join();
        }
    }
}

/// The reader: every `poll`, every record in the ring buffer, until
/// `stop`; then what is left.
fn read_until(mut ring: RingBuf<MapData>, stop: &AtomicBool, poll: Duration) -> Vec<Trip> {
    let mut out = Vec::new();
    loop {
        let last = stop.load(Ordering::Relaxed);
        while let Some(item) = ring.next() {
            out.extend(Trip::read(&item));
        }
        if last {
            return out;
        }
        std::thread::sleep(poll);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record's bytes as the C struct lays them out read back field for
    /// field: key at 0, the times from 8, the CPUs after them, the state
    /// last.
    #[test]
    fn a_trip_reads_at_the_c_offsets() {
        let mut b = vec![0u8; TRIP_LEN];
        b[0..8].copy_from_slice(&42u64.to_ne_bytes());
        b[8 + 8 * 3..8 + 8 * 4].copy_from_slice(&7u64.to_ne_bytes());
        b[128 + 2] = 1;
        b[143] = 2;
        let t = Trip::read(&b).unwrap();
        assert_eq!((t.key, t.at[3], t.at[4], t.cpu[2], t.state), (42, 7, 0, 1, 2));
        assert!(Trip::read(&b[..TRIP_LEN - 1]).is_none());
    }

    /// A connection's two ends: keys mirror each other, and each end's
    /// incoming message is the other's outgoing.
    #[test]
    fn a_connections_ends_mirror_each_other() {
        let c = Connection {
            index: 3,
            client_port: 40000,
            server_port: 24680,
            request: 1,
            response: 1024,
        };
        let [(ck, cl), (sk, sr)] = c.ends();
        assert_eq!(ck, (40000 << 16) | 24680);
        assert_eq!(sk, (24680 << 16) | 40000);
        assert_eq!((cl.unit_in, cl.unit_out, cl.responder), (1024, 1, 0));
        assert_eq!((sr.unit_in, sr.unit_out, sr.responder), (1, 1024, 1));
        let b = sr.bytes();
        assert_eq!(u32::from_ne_bytes(b[16..20].try_into().unwrap()), 1);
        assert_eq!((u32::from_ne_bytes(b[24..28].try_into().unwrap()), b[28]), (3, 1));
    }

    /// Every probe is named by its tracepoint, and each mode uses its own.
    #[test]
    fn probes_are_named_by_their_tracepoints() {
        for p in Probe::ALL {
            assert_eq!(Probe::named(p.tracepoint()), Some(p));
        }
        assert!(Probe::FibTableLookup.serves(false) && !Probe::FibTableLookup.serves(true));
        assert!(Probe::TcpSendmsgLocked.serves(true) && Probe::NetifRx.serves(true));
    }
}
