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

use crate::object::{per_cpu_sum, Error, LAYERS};
use aya::maps::{HashMap, RingBuf};
use aya::programs::{RawTracePoint, TracePoint};

/// Where an event was recorded (`enum layer_event_id` of `bpf/layers.h`:
/// the same numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u16)]
pub enum Point {
    /// A send system call entered (sequence from the user's buffer).
    SysSendEnter = 1,
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

/// The last point's number (`EV_NR - 1`).
const LAST_POINT: u16 = Point::KfreeSkb as u16;

impl TryFrom<u16> for Point {
    type Error = u16;

    /// The point numbered `id`, or `id` back when no point has it.
    fn try_from(id: u16) -> Result<Point, u16> {
        use Point::*;
        // In the enum's order: entry i has number i + 1 (checked below).
        const ALL: [Point; LAST_POINT as usize] = [
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
        let p = *ALL.get(usize::from(id).wrapping_sub(1)).ok_or(id)?;
        (p as u16 == id).then_some(p).ok_or(id)
    }
}

/// One record as the kernel writes it: `struct layer_event` of
/// `bpf/layers.h`, field for field (the sizes are checked on both sides).
/// Read from the ring buffer's bytes at the offsets the compiler gives
/// these fields ([`Record::read`]), so no `unsafe` cast is needed.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// `bpf_ktime_get_ns()`: CLOCK_MONOTONIC.
    pub ts: u64,
    /// The skb's address, 0 for a system call.
    pub skb: u64,
    /// The sequence number (valid when `seq_src` is not 0).
    pub seq: u64,
    /// The length the point saw.
    pub len: u32,
    /// A system call's return, a driver's return code, a drop reason.
    pub ret: i32,
    /// The process.
    pub tgid: u32,
    /// The thread.
    pub tid: u32,
    /// The network namespace's inode.
    pub netns: u32,
    /// The device's index, 0 if none.
    pub ifindex: u16,
    /// The point (`enum layer_event_id`).
    pub id: u16,
    /// UDP source port, host order.
    pub sport: u16,
    /// UDP destination port.
    pub dport: u16,
    /// The CPU.
    pub cpu: u8,
    /// The datagram's kind byte.
    pub kind: u8,
    /// Where the sequence number was read (`enum layer_seq_source`).
    pub seq_src: u8,
    /// Whether the payload starts with "SMTU".
    pub magic_ok: u8,
    /// The device's name.
    pub dev: [u8; 16],
}

/// `sizeof(struct layer_event)`, asserted in `bpf/layers.h` too.
const RECORD_LEN: usize = 72;
const _: () = assert!(size_of::<Record>() == RECORD_LEN);

impl Record {
    /// The record in `b` (the host's byte order), if `b` holds one.
    pub fn read(b: &[u8]) -> Option<Record> {
        use core::mem::offset_of;
        if b.len() < RECORD_LEN {
            return None;
        }
        let f = Fields(b);
        Some(Record {
            ts: f.at(offset_of!(Record, ts)),
            skb: f.at(offset_of!(Record, skb)),
            seq: f.at(offset_of!(Record, seq)),
            len: f.at(offset_of!(Record, len)),
            ret: f.at(offset_of!(Record, ret)),
            tgid: f.at(offset_of!(Record, tgid)),
            tid: f.at(offset_of!(Record, tid)),
            netns: f.at(offset_of!(Record, netns)),
            ifindex: f.at(offset_of!(Record, ifindex)),
            id: f.at(offset_of!(Record, id)),
            sport: f.at(offset_of!(Record, sport)),
            dport: f.at(offset_of!(Record, dport)),
            cpu: f.at(offset_of!(Record, cpu)),
            kind: f.at(offset_of!(Record, kind)),
            seq_src: f.at(offset_of!(Record, seq_src)),
            magic_ok: f.at(offset_of!(Record, magic_ok)),
            dev: f.at(offset_of!(Record, dev)),
        })
    }
}

/// A record's bytes, read a field at a time.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    /// The field of type `T` at `offset` (inside the record: the caller
    /// checked its length).
    fn at<T: FromNe>(&self, offset: usize) -> T {
        T::from_ne(&self.0[offset..offset + size_of::<T>()])
    }
}

/// A plain field type read from its bytes in the host's order.
trait FromNe: Sized {
    fn from_ne(b: &[u8]) -> Self;
}

macro_rules! from_ne {
    ($($t:ty),*) => {$(
        impl FromNe for $t {
            fn from_ne(b: &[u8]) -> $t {
                <$t>::from_ne_bytes(b.try_into().expect("the field's size"))
            }
        }
    )*};
}
from_ne!(u8, u16, u32, u64, i32);

impl FromNe for [u8; 16] {
    fn from_ne(b: &[u8]) -> [u8; 16] {
        b.try_into().expect("16 bytes")
    }
}

/// One record, as the waterfall uses it.
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

impl Event {
    /// The event of record `r`, if its point is known.
    fn of(r: &Record) -> Option<Event> {
        Some(Event {
            ts_ns: r.ts,
            skb: r.skb,
            seq: (r.seq_src != 0).then_some(r.seq),
            tgid: r.tgid,
            tid: r.tid,
            point: Point::try_from(r.id).ok()?,
            cpu: r.cpu,
            kind: r.kind,
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
        let bytes = LAYERS.bytes()?;
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
            out.extend(Record::read(&item).as_ref().and_then(Event::of));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every number the C enum gives is its point, and no other.
    #[test]
    fn points_convert_from_their_c_numbers() {
        for id in 1..=LAST_POINT {
            assert_eq!(Point::try_from(id).map(|p| p as u16), Ok(id));
        }
        assert_eq!(Point::try_from(0), Err(0));
        assert_eq!(Point::try_from(LAST_POINT + 1), Err(LAST_POINT + 1));
    }

    /// A record's bytes as the C struct lays them out read back field
    /// for field.
    #[test]
    fn a_record_reads_at_the_c_offsets() {
        let mut b = vec![0u8; RECORD_LEN];
        b[0..8].copy_from_slice(&7u64.to_ne_bytes());
        b[16..24].copy_from_slice(&42u64.to_ne_bytes());
        b[46..48].copy_from_slice(&(Point::SkDataReady as u16).to_ne_bytes());
        b[53] = 2;
        b[54] = 1;
        b[56..59].copy_from_slice(b"lo\0");
        let r = Record::read(&b).unwrap();
        assert_eq!((r.ts, r.seq, r.kind, r.seq_src, &r.dev[..2]), (7, 42, 2, 1, &b"lo"[..]));
        let e = Event::of(&r).unwrap();
        assert_eq!((e.point, e.seq), (Point::SkDataReady, Some(42)));
        assert!(Record::read(&b[..RECORD_LEN - 1]).is_none());
    }
}
