//! The XDP responder: stackmeter's UDP echo (docs/protocol.md section 4)
//! answered in the driver layer, before the kernel's stack sees the
//! datagram (`bpf/xdp_echo.bpf.c`): addresses and ports swapped, the
//! header rewritten as a reply with one kernel time stamp for both server
//! times, the UDP checksum kept right, XDP_TX. What it does not answer
//! (another port, a datagram with a MAC or a count request, a stream
//! datagram, another version) it passes up to the application responder
//! running beside it, which answers as ever. Plain mode echoes any
//! datagram to the port unchanged (`ping --echo`).

use crate::object::{per_cpu_sum, Error, XDP_ECHO};
use aya::programs::{Xdp, XdpFlags};

/// Where the program runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// In the driver (native XDP): on veth the peer must have an XDP
    /// program too for XDP_TX's frames to arrive.
    Native,
    /// On the generic path, after the driver built its buffer: any
    /// interface, loopback included.
    Generic,
}

/// The counters the program keeps, summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Echo requests answered with a reply.
    pub answered: u64,
    /// Datagrams echoed in plain mode.
    pub answered_plain: u64,
    /// UDP payload bytes sent back.
    pub answered_bytes: u64,
    /// Datagrams to the port passed up to the application (too short,
    /// not stackmeter's, or a kind or flag the application handles).
    pub passed_up: u64,
    /// Datagrams dropped (a reply or refusal: never answered).
    pub dropped: u64,
}

/// Counter slots of `bpf/xdp_echo.bpf.c` (its `enum xdp_echo_counter`).
const ANSWERED: u32 = 0;
const ANSWERED_PLAIN: u32 = 1;
const ANSWERED_BYTES: u32 = 2;
/// The first "passed up" slot for a datagram to the port (3 to 5: not
/// UDP to the port, or IP the program does not parse).
const PASS_FIRST: u32 = 6;
const PASS_LAST: u32 = 12;
/// Answered without the count a request asked for (not passed up).
const COUNT_ASKED: u32 = 11;
const DROP_NOT_REQUEST: u32 = 13;
const PASS_V6_NOCSUM: u32 = 14;
const PASS_TOO_BIG: u32 = 17;
const DROP_CSUM_FAIL: u32 = 18;

/// The XDP responder attached to one interface; detached when dropped
/// (and by the kernel when the process ends: it holds the only link).
pub struct XdpEcho {
    ebpf: aya::Ebpf,
    /// The interface, for messages.
    pub interface: String,
}

impl XdpEcho {
    /// Whether the program can be loaded here (built, and root), before
    /// anything else starts.
    pub fn check() -> Result<(), Error> {
        XDP_ECHO.bytes().map(|_| ())
    }

    /// Loads the program for UDP port `port` (`plain`: echo any datagram
    /// unchanged) and attaches it to `interface` in `mode`.
    pub fn attach(interface: &str, port: u16, plain: bool, mode: Mode) -> Result<XdpEcho, Error> {
        let bytes = XDP_ECHO.bytes()?;
        let mut ebpf = aya::EbpfLoader::new()
            .set_global("cfg_port", &port, true)
            .set_global("cfg_plain", &u8::from(plain), true)
            .load(bytes)
            .map_err(|e| Error::kernel("loading the XDP program", e))?;
        let prog: &mut Xdp = crate::object::program(&mut ebpf, "xdp_echo")?;
        prog.load()
            .map_err(|e| Error::kernel("the verifier on the XDP program", e))?;
        let flags = match mode {
            Mode::Native => XdpFlags::DRV_MODE,
            Mode::Generic => XdpFlags::SKB_MODE,
        };
        prog.attach(interface, flags)
            .map_err(|e| Error::kernel(format!("attaching XDP to {interface}"), e))?;
        Ok(XdpEcho {
            ebpf,
            interface: interface.into(),
        })
    }

    /// The counters now.
    pub fn counters(&self) -> Result<Counters, Error> {
        let sum = |i| per_cpu_sum(&self.ebpf, "counters", i);
        let mut passed_up = 0;
        for i in (PASS_FIRST..=PASS_LAST)
            .filter(|&i| i != COUNT_ASKED)
            .chain([PASS_V6_NOCSUM, PASS_TOO_BIG])
        {
            passed_up += sum(i)?;
        }
        Ok(Counters {
            answered: sum(ANSWERED)?,
            answered_plain: sum(ANSWERED_PLAIN)?,
            answered_bytes: sum(ANSWERED_BYTES)?,
            passed_up,
            dropped: sum(DROP_NOT_REQUEST)? + sum(DROP_CSUM_FAIL)?,
        })
    }
}

impl Counters {
    /// "answered 5000 (320000 B), passed up 12, dropped 0".
    pub fn describe(&self) -> String {
        format!(
            "answered {} ({} B), passed up {}, dropped {}",
            self.answered + self.answered_plain,
            self.answered_bytes,
            self.passed_up,
            self.dropped
        )
    }
}
