//! The Linux stacks: one TAP device per user-space stack (lwIP's raw API
//! responder, the in-stack module; its sockets API one, the application;
//! smoltcp with the Rust protocol core, run by this very binary as `lab
//! serve-smoltcp`), lwIP on an AF_XDP socket on a veth pair (`lwip-xdp`,
//! the kernel-bypass path, when it is built and the kernel allows it) and
//! the C responder on the kernel stack.

use crate::error::LabError;
use crate::probe::wait_answers;
use crate::shell::{sh, spawn_cmd};
use crate::state::{record, state_dir};
use std::net::SocketAddr;
use std::path::Path;

/// The host side of each TAP: full-size (1514-byte) Ethernet frames, as on
/// a board's wire. The lwIP programs read frames with their own netif glue
/// (c-responder/src/smr_netif.c), not Debian's tapif, which overruns its
/// receive buffers on frames over 592 bytes (docs/lab.md says why).
pub(crate) const TAP_MTU: &str = "1500";
/// Port of the user-space stacks' responders.
pub(crate) const PORT: u16 = 24680;
/// The kernel-stack C responder's address (a port of its own, so a
/// `stackmeter serve` on the default port keeps running beside it).
pub(crate) const KERNEL_ADDR: &str = "127.0.0.1:24690";

/// One user-space stack: label, responder binary, TAP name, subnet number.
pub(crate) const STACKS: [(&str, &str, &str, u8); 3] = [
    ("lwip-raw", "lwip-raw", "smlab1", 1),
    ("lwip-sock", "lwip-sock", "smlab2", 2),
    ("smoltcp", SMOLTCP, "smlab4", 4),
];

/// The smoltcp responder's "binary": this program, `stackmeter lab
/// serve-smoltcp TAP ADDR` (smoltcp is a crate of this workspace, so there
/// is nothing else to build or find).
pub(crate) const SMOLTCP: &str = "stackmeter";

/// The kernel-bypass stack: lwIP (the raw API responder) on an AF_XDP
/// socket on one end of a veth pair, the host's address on the other:
/// label, binary, the host's end (the XDP end is its name and `x`),
/// subnet number.
const XDP: (&str, &str, &str, u8) = ("lwip-xdp", "lwip-xdp", "smlab5", 5);

/// Creates the devices, starts the responders, waits for each to answer;
/// returns the targets and, for each stack that could not come up on this
/// machine (its program not built, no TAP device, no answer), a line
/// naming it and why: the rest still come up. Fails only when none did.
pub(crate) fn build(dir: &Path, cpu: usize) -> Result<(Vec<String>, Vec<String>), LabError> {
    let cpu_s = cpu.to_string();
    let mut notes = Vec::new();
    let mut started = Vec::new();
    match start_kernel(dir, &cpu_s) {
        Ok(s) => started.push(s),
        Err(why) => notes.push(format!("kernel-c: not started: {why}")),
    }
    for stack in STACKS {
        match start_stack(dir, stack, &cpu_s) {
            Ok(s) => started.push(s),
            Err(why) => notes.push(format!("{}: not started: {why}", stack.0)),
        }
    }
    let mut lines = Vec::new();
    for s in started {
        if let Err(e) = answers(&s.addr) {
            s.undo();
            notes.push(format!("{}: not started: {e}", s.label));
            continue;
        }
        let line = format!("{}={}", s.label, s.addr);
        record(&format!("target {line}"))?;
        lines.push(line);
    }
    match xdp(dir, &cpu_s) {
        Ok(line) => lines.push(line),
        Err(why) => notes.push(format!("{}: not started: {why}", XDP.0)),
    }
    if lines.is_empty() {
        return Err(LabError::NothingUp(notes));
    }
    Ok((lines, notes))
}

/// Waits for the responder at `addr` (one of this file's addresses) to
/// answer.
fn answers(addr: &str) -> Result<(), LabError> {
    let a: SocketAddr = addr.parse().map_err(|e: std::net::AddrParseError| LabError::NoAnswer {
        addr: addr.to_string(),
        why: e.to_string(),
    })?;
    wait_answers(a)
}

/// A responder started and not yet known to answer: what to remove if it
/// never does.
struct Started {
    label: &'static str,
    addr: String,
    pid: String,
    tap: Option<&'static str>,
}

impl Started {
    /// Stops it and deletes its device (the state file still names both;
    /// `down` passes over what is gone).
    fn undo(&self) {
        let _ = sh("kill", &["-KILL", &self.pid]);
        if let Some(t) = self.tap {
            let _ = sh("ip", &["link", "del", t]);
        }
    }
}

/// The C responder on the kernel's stack.
fn start_kernel(dir: &Path, cpu: &str) -> Result<Started, LabError> {
    let bin = "stackmeter-responder";
    if !dir.join(bin).is_file() {
        return Err(LabError::NotBuilt {
            path: dir.join(bin),
            make: "make -C c-responder",
        });
    }
    let pid = spawn_cmd(
        &dir.join(bin),
        bin,
        "kernel-c",
        &["--listen", KERNEL_ADDR, "--affinity", cpu],
    )?;
    Ok(Started {
        label: "kernel-c",
        addr: KERNEL_ADDR.to_string(),
        pid,
        tap: None,
    })
}

/// One user-space stack on a TAP device of its own.
fn start_stack(
    dir: &Path,
    (label, bin, tap, n): (&'static str, &str, &'static str, u8),
    cpu: &str,
) -> Result<Started, LabError> {
    if bin != SMOLTCP && !dir.join(bin).is_file() {
        return Err(LabError::NotBuilt {
            path: dir.join(bin),
            make: "make -C c-responder lwip",
        });
    }
    let host = format!("198.18.{n}.1/24");
    let stack = format!("198.18.{n}.2");
    sh("ip", &["tuntap", "add", "dev", tap, "mode", "tap"])?;
    record(&format!("dev {tap}"))?;
    let spawned = (|| {
        sh("ip", &["addr", "add", &host, "dev", tap])?;
        sh("ip", &["link", "set", tap, "mtu", TAP_MTU, "up"])?;
        let port = PORT.to_string();
        match bin {
            "lwip-raw" => spawn_cmd(&dir.join(bin), bin, label, &[tap, &stack, &port, cpu]),
            SMOLTCP => {
                let me = std::env::current_exe().map_err(|err| LabError::Spawn {
                    program: "stackmeter lab serve-smoltcp".into(),
                    err,
                })?;
                let args = ["lab", "serve-smoltcp", tap, &stack, "--port", &port, "--cpu", cpu];
                spawn_cmd(&me, bin, label, &args)
            }
            _ => spawn_cmd(&dir.join(bin), bin, label, &[tap, &stack, "--affinity", cpu]),
        }
    })();
    match spawned {
        Ok(pid) => Ok(Started {
            label,
            addr: format!("{stack}:{PORT}"),
            pid,
            tap: Some(tap),
        }),
        Err(e) => {
            let _ = sh("ip", &["link", "del", tap]);
            Err(e)
        }
    }
}

/// Brings lwip-xdp up, or removes what it made and says why not.
fn xdp(dir: &Path, cpu: &str) -> Result<String, LabError> {
    let (label, bin, host_if, n) = XDP;
    if !dir.join(bin).is_file() {
        return Err(LabError::XdpNotBuilt(dir.join(bin)));
    }
    let xdp_if = format!("{host_if}x");
    let stack = format!("198.18.{n}.2");
    let addr = format!("{stack}:{PORT}");
    sh("ip", &["link", "add", host_if, "type", "veth", "peer", "name", &xdp_if])?;
    record(&format!("dev {host_if}"))?;
    let made = (|| {
        sh("ip", &["addr", "add", &format!("198.18.{n}.1/24"), "dev", host_if])?;
        sh("ip", &["link", "set", host_if, "mtu", TAP_MTU, "up"])?;
        sh("ip", &["link", "set", &xdp_if, "mtu", TAP_MTU, "up"])?;
        let port = PORT.to_string();
        let pid = spawn_cmd(&dir.join(bin), bin, label, &[&xdp_if, &stack, &port, cpu, host_if])?;
        answers(&addr).map_err(|e| {
            let _ = sh("kill", &["-KILL", &pid]);
            // The responder's own last error line says more than the probe.
            let log = std::fs::read_to_string(state_dir().join(format!("{label}.log"))).unwrap_or_default();
            match (e, log.lines().rfind(|l| l.contains("error"))) {
                (LabError::NoAnswer { addr, why }, Some(last)) => LabError::NoAnswer {
                    addr,
                    why: format!("{why}; {last}"),
                },
                (e, _) => e,
            }
        })
    })();
    if let Err(e) = made {
        // Deleting one end of a veth pair deletes both, and any XDP program on them.
        let _ = sh("ip", &["link", "del", host_if]);
        return Err(e);
    }
    let line = format!("{label}={addr}");
    record(&format!("target {line}"))?;
    Ok(line)
}
