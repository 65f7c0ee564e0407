//! The Linux stacks: one TAP device per user-space stack (lwIP's raw API
//! responder, the in-stack module; its sockets API one, the application;
//! smoltcp with the Rust protocol core, run by this very binary as `lab
//! serve-smoltcp`), lwIP on an AF_XDP socket on a veth pair (`lwip-xdp`,
//! the kernel-bypass path, when it is built and the kernel allows it) and
//! the C responder on the kernel stack.

use crate::boards::{Board, Runs, TapStack, PORT};
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

/// The smoltcp responder's "binary": this program, `stackmeter lab
/// serve-smoltcp TAP ADDR` (smoltcp is a crate of this workspace, so there
/// is nothing else to build or find).
const SMOLTCP: &str = "stackmeter";

/// Creates the devices and starts the responders of `boards` (rows of
/// the table run by this file: the kernel's, the TAP stacks', lwip-xdp),
/// waits for each to answer; returns the targets and, for each stack that
/// could not come up on this machine (its program not built, no TAP
/// device, no answer), a line naming it and why: the rest still come up.
pub(crate) fn build(dir: &Path, cpu: usize, boards: &[&'static Board]) -> Result<(Vec<String>, Vec<String>), LabError> {
    let cpu_s = cpu.to_string();
    let mut notes = Vec::new();
    let mut started = Vec::new();
    for b in boards {
        let s = match b.runs {
            Runs::Kernel => start_kernel(dir, b, &cpu_s),
            Runs::Tap(stack) => start_stack(dir, b, stack, &cpu_s),
            Runs::Xdp | Runs::Qemu(_) | Runs::Files | Runs::Proxy(_) => continue,
        };
        match s {
            Ok(s) => started.push(s),
            Err(LabError::Interrupted) => return Err(LabError::Interrupted),
            Err(why) => notes.push(format!("{}: not started: {why}", b.label)),
        }
    }
    let mut lines = Vec::new();
    for s in started {
        match wait_answers(s.addr) {
            Ok(()) => {}
            Err(LabError::Interrupted) => return Err(LabError::Interrupted),
            Err(e) => {
                s.undo();
                notes.push(format!("{}: not started: {e}", s.label));
                continue;
            }
        }
        let line = format!("{}={}", s.label, s.addr);
        record(&format!("target {line}"))?;
        lines.push(line);
    }
    for b in boards.iter().filter(|b| b.runs == Runs::Xdp) {
        match xdp(dir, b, &cpu_s) {
            Ok(line) => lines.push(line),
            Err(LabError::Interrupted) => return Err(LabError::Interrupted),
            Err(why) => notes.push(format!("{}: not started: {why}", b.label)),
        }
    }
    Ok((lines, notes))
}

/// A responder started and not yet known to answer: what to remove if it
/// never does.
struct Started {
    label: &'static str,
    addr: SocketAddr,
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

/// The board's program under `dir`, or that it is not built.
fn program(dir: &Path, b: &Board) -> Result<std::path::PathBuf, LabError> {
    let path = dir.join(b.image);
    match path.is_file() {
        true => Ok(path),
        false => Err(LabError::NotBuilt { path, make: b.make }),
    }
}

/// The C responder on the kernel's stack.
fn start_kernel(dir: &Path, b: &'static Board, cpu: &str) -> Result<Started, LabError> {
    let bin = program(dir, b)?;
    let addr = b.addr();
    let pid = spawn_cmd(
        &bin,
        b.image,
        b.label,
        &["--listen", &addr.to_string(), "--affinity", cpu],
    )?;
    Ok(Started {
        label: b.label,
        addr,
        pid,
        tap: None,
    })
}

/// One user-space stack on a TAP device of its own.
fn start_stack(dir: &Path, b: &'static Board, stack: TapStack, cpu: &str) -> Result<Started, LabError> {
    let bin = match stack {
        TapStack::Smoltcp => std::env::current_exe().map_err(|err| LabError::Spawn {
            program: "stackmeter lab serve-smoltcp".into(),
            err,
        })?,
        TapStack::LwipRaw | TapStack::LwipSock => program(dir, b)?,
    };
    let link = b.link();
    let tap = link.device;
    let host = format!("{}/24", link.host());
    let stack_ip = link.board().to_string();
    sh("ip", &["tuntap", "add", "dev", tap, "mode", "tap"])?;
    record(&format!("dev {tap}"))?;
    let spawned = (|| {
        sh("ip", &["addr", "add", &host, "dev", tap])?;
        sh("ip", &["link", "set", tap, "mtu", TAP_MTU, "up"])?;
        let port = PORT.to_string();
        match stack {
            TapStack::LwipRaw => spawn_cmd(&bin, b.image, b.label, &[tap, &stack_ip, &port, cpu]),
            TapStack::Smoltcp => {
                let args = ["lab", "serve-smoltcp", tap, &stack_ip, "--port", &port, "--cpu", cpu];
                spawn_cmd(&bin, SMOLTCP, b.label, &args)
            }
            TapStack::LwipSock => spawn_cmd(&bin, b.image, b.label, &[tap, &stack_ip, "--affinity", cpu]),
        }
    })();
    match spawned {
        Ok(pid) => Ok(Started {
            label: b.label,
            addr: b.addr(),
            pid,
            tap: Some(tap),
        }),
        Err(e) => {
            let _ = sh("ip", &["link", "del", tap]);
            Err(e)
        }
    }
}

/// Brings lwip-xdp up (lwIP's raw API responder on an AF_XDP socket on
/// one end of a veth pair, the host's address on the other: the board's
/// device and, for the XDP end, its name and `x`), or removes what it
/// made and says why not.
fn xdp(dir: &Path, b: &'static Board, cpu: &str) -> Result<String, LabError> {
    let bin = dir.join(b.image);
    if !bin.is_file() {
        return Err(LabError::XdpNotBuilt(bin));
    }
    let link = b.link();
    let host_if = link.device;
    let xdp_if = format!("{host_if}x");
    let stack = link.board().to_string();
    let addr = b.addr();
    sh("ip", &["link", "add", host_if, "type", "veth", "peer", "name", &xdp_if])?;
    record(&format!("dev {host_if}"))?;
    let made = (|| {
        sh("ip", &["addr", "add", &format!("{}/24", link.host()), "dev", host_if])?;
        sh("ip", &["link", "set", host_if, "mtu", TAP_MTU, "up"])?;
        sh("ip", &["link", "set", &xdp_if, "mtu", TAP_MTU, "up"])?;
        let port = PORT.to_string();
        let pid = spawn_cmd(&bin, b.image, b.label, &[&xdp_if, &stack, &port, cpu, host_if])?;
        wait_answers(addr).map_err(|e| {
            let _ = sh("kill", &["-KILL", &pid]);
            // The responder's own last error line says more than the probe.
            let log = std::fs::read_to_string(state_dir().join(format!("{}.log", b.label))).unwrap_or_default();
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
    let line = format!("{}={addr}", b.label);
    record(&format!("target {line}"))?;
    Ok(line)
}
