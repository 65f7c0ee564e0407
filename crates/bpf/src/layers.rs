//! The per-layer tracer (`bpf/layers.bpf.c`): tracepoints at each layer a
//! UDP datagram of stackmeter's passes on Linux (the system calls in and
//! out, the device queue, the driver, the receive backlog, the stack, the
//! socket's wake-up), each writing a time stamp (CLOCK_MONOTONIC, the
//! clock the client reads), the skb, the thread and, where the packet can
//! be read, the datagram's sequence number and kind into a ring buffer.
//! Only datagrams to or from one UDP port, and only the system calls of
//! the processes named, are recorded. The reader drains the buffer when
//! it likes: the programs do not wake it (a wake-up per record cost more
//! than the probes and moved the times measured).
//!
//! Classic tracepoints need tracefs; it is mounted at /sys/kernel/tracing
//! when it is not. The system call numbers in the program are x86-64's.

use crate::object::{per_cpu_sum, Error, Object};
use aya::maps::{HashMap, RingBuf};
use aya::programs::{RawTracePoint, TracePoint};

pub(crate) const OBJECT: Object = Object {
    bytes: aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/layers.o")),
    why_not: env!("STACKMETER_BPF_LAYERS_WHY_NOT"),
    what: "the per-layer tracer",
};

/// Where an event was recorded (`enum layer_event_id` of `bpf/layers.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Point {
    /// A send system call entered (sequence from the user's buffer).
    SysSendEnter,
    /// It returned.
    SysSendExit,
    /// A receive system call entered.
    SysRecvEnter,
    /// It returned (sequence from the user's buffer).
    SysRecvExit,
    /// A wait (poll, epoll) entered.
    SysWaitEnter,
    /// It returned.
    SysWaitExit,
    /// The socket layer's send ended.
    SockSendLength,
    /// The device queue took the skb (net_dev_queue).
    NetDevQueue,
    /// The driver is about to get it (net_dev_start_xmit).
    NetDevStartXmit,
    /// The driver returned (net_dev_xmit).
    NetDevXmit,
    /// Into the receive backlog (netif_rx: loopback, veth without NAPI).
    NetifRx,
    /// Into NAPI's receive (veth with XDP, NICs).
    NapiGroReceive,
    /// The stack takes it (netif_receive_skb).
    NetifReceiveSkb,
    /// Queued on the socket, the reader woken (sk_data_ready).
    SkDataReady,
    /// Copied to the user's buffer.
    SkbCopyDatagram,
    /// The socket layer's receive ended.
    SockRecvLength,
    /// Freed after use.
    ConsumeSkb,
    /// Dropped.
    KfreeSkb,
}

impl Point {
    fn from_id(id: u16) -> Option<Point> {
        use Point::*;
        const ALL: [Point; 18] = [
            SysSendEnter,
            SysSendExit,
            SysRecvEnter,
            SysRecvExit,
            SysWaitEnter,
            SysWaitExit,
            SockSendLength,
            NetDevQueue,
            NetDevStartXmit,
            NetDevXmit,
            NetifRx,
            NapiGroReceive,
            NetifReceiveSkb,
            SkDataReady,
            SkbCopyDatagram,
            SockRecvLength,
            ConsumeSkb,
            KfreeSkb,
        ];
        ALL.get(usize::from(id).checked_sub(1)?).copied()
    }
}

/// One record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// CLOCK_MONOTONIC, ns.
    pub ts_ns: u64,
    /// Where.
    pub point: Point,
    /// The skb's address (0 for a system call).
    pub skb: u64,
    /// The datagram's sequence number, where it could be read.
    pub seq: Option<u64>,
    /// The datagram's kind byte (1 request, 2 reply; 0 unknown).
    pub kind: u8,
    /// The thread (for a system call: the caller).
    pub tid: u32,
    /// Its process.
    pub tgid: u32,
    /// The CPU.
    pub cpu: u8,
}

/// Size of `struct layer_event`.
const EVENT_LEN: usize = 72;

impl Event {
    /// Reads one record (`struct layer_event` of `bpf/layers.h`, in the
    /// host's byte order).
    fn parse(b: &[u8]) -> Option<Event> {
        if b.len() < EVENT_LEN {
            return None;
        }
        let u64_at = |o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u16_at = |o: usize| u16::from_ne_bytes(b[o..o + 2].try_into().expect("2 bytes"));
        let seq_src = b[54];
        Some(Event {
            ts_ns: u64_at(0),
            skb: u64_at(8),
            seq: (seq_src != 0).then(|| u64_at(16)),
            tgid: u32_at(32),
            tid: u32_at(36),
            point: Point::from_id(u16_at(46))?,
            cpu: b[52],
            kind: b[53],
        })
    }
}

/// What to trace.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// The UDP port of the responder: datagrams to or from it.
    pub port: u16,
    /// The processes whose system calls are recorded.
    pub tgids: Vec<u32>,
}

/// The tracer, attached; detached when dropped (or when the process ends).
pub struct Layers {
    ebpf: aya::Ebpf,
}

/// The tracepoints: (program, category, name).
const TRACEPOINTS: [(&str, &str, &str); 8] = [
    ("tp_net_dev_queue", "net", "net_dev_queue"),
    ("tp_net_dev_start_xmit", "net", "net_dev_start_xmit"),
    ("tp_net_dev_xmit", "net", "net_dev_xmit"),
    ("tp_netif_rx", "net", "netif_rx"),
    ("tp_napi_gro_receive_entry", "net", "napi_gro_receive_entry"),
    ("tp_netif_receive_skb", "net", "netif_receive_skb"),
    ("tp_sk_data_ready", "sock", "sk_data_ready"),
    ("tp_sock_send_length", "sock", "sock_send_length"),
];

impl Layers {
    /// Loads the programs and attaches them to every tracepoint the round
    /// trip passes.
    pub fn attach(cfg: &Config) -> Result<Layers, Error> {
        let bytes = OBJECT.bytes()?;
        tracefs()?;
        let mut ebpf = aya::EbpfLoader::new()
            .set_global("cfg_port", &cfg.port, true)
            .load(bytes)
            .map_err(|e| Error::kernel("loading the layer tracer", e))?;
        {
            let mut tgids: HashMap<_, u32, u8> = HashMap::try_from(
                ebpf.map_mut("tgids")
                    .ok_or_else(|| Error::kernel_missing("map tgids"))?,
            )
            .map_err(|e| Error::kernel("the tracer's process map", e))?;
            for t in &cfg.tgids {
                tgids
                    .insert(t, 1, 0)
                    .map_err(|e| Error::kernel("the tracer's process map", e))?;
            }
        }
        for (prog, category, name) in TRACEPOINTS {
            let p: &mut TracePoint = crate::object::program(&mut ebpf, prog)?;
            p.load()
                .map_err(|e| Error::kernel(format!("the verifier on {prog}"), e))?;
            p.attach(category, name)
                .map_err(|e| Error::kernel(format!("attaching to tracepoint {category}:{name}"), e))?;
        }
        for (prog, name) in [("raw_sys_enter", "sys_enter"), ("raw_sys_exit", "sys_exit")] {
            let p: &mut RawTracePoint = crate::object::program(&mut ebpf, prog)?;
            p.load()
                .map_err(|e| Error::kernel(format!("the verifier on {prog}"), e))?;
            p.attach(name)
                .map_err(|e| Error::kernel(format!("attaching to raw tracepoint {name}"), e))?;
        }
        Ok(Layers { ebpf })
    }

    /// Every record written since the last drain, oldest first per CPU.
    pub fn drain(&mut self) -> Result<Vec<Event>, Error> {
        let mut ring = RingBuf::try_from(
            self.ebpf
                .map_mut("events")
                .ok_or_else(|| Error::kernel_missing("map events"))?,
        )
        .map_err(|e| Error::kernel("the tracer's ring buffer", e))?;
        let mut out = Vec::new();
        while let Some(item) = ring.next() {
            out.extend(Event::parse(&item));
        }
        Ok(out)
    }

    /// Records lost because the ring buffer was full.
    pub fn lost(&self) -> Result<u64, Error> {
        per_cpu_sum(&self.ebpf, "lcounters", 1)
    }
}

/// Classic tracepoints are found through tracefs: mounted at
/// /sys/kernel/tracing when it is not.
fn tracefs() -> Result<(), Error> {
    let dir = std::path::Path::new("/sys/kernel/tracing");
    if dir.join("events").is_dir() || std::path::Path::new("/sys/kernel/debug/tracing/events").is_dir() {
        return Ok(());
    }
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tracefs", "nodev"])
        .arg(dir)
        .status();
    match mounted {
        Ok(s) if s.success() && dir.join("events").is_dir() => Ok(()),
        _ => Err(Error::Kernel {
            what: "tracefs".into(),
            why: "not mounted, and mount -t tracefs nodev /sys/kernel/tracing failed".into(),
        }),
    }
}
