//! The Linux stacks: one TAP device per lwIP responder (the raw API one,
//! the in-stack module; the sockets API one, the application) and the C
//! responder on the kernel stack.

use crate::probe::wait_answers;
use crate::shell::{sh, spawn};
use crate::state::record;
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
pub(crate) const STACKS: [(&str, &str, &str, u8); 2] = [
    ("lwip-raw", "lwip-raw", "smlab1", 1),
    ("lwip-sock", "lwip-sock", "smlab2", 2),
];

/// Creates the devices, starts the responders, waits for each to answer.
pub(crate) fn build(dir: &Path, cpu: usize) -> Result<Vec<String>, String> {
    let cpu_s = cpu.to_string();
    let mut targets = Vec::new();
    for (label, bin, tap, n) in STACKS {
        let host = format!("198.18.{n}.1/24");
        let stack = format!("198.18.{n}.2");
        sh("ip", &["tuntap", "add", "dev", tap, "mode", "tap"])?;
        record(&format!("dev {tap}")).map_err(|e| e.to_string())?;
        sh("ip", &["addr", "add", &host, "dev", tap])?;
        sh("ip", &["link", "set", tap, "mtu", TAP_MTU, "up"])?;
        let port = PORT.to_string();
        let args: Vec<&str> = if bin == "lwip-raw" {
            vec![tap, &stack, &port, &cpu_s]
        } else {
            vec![tap, &stack, "--affinity", &cpu_s]
        };
        spawn(dir, bin, label, &args)?;
        targets.push((label, format!("{stack}:{PORT}")));
    }
    spawn(
        dir,
        "stackmeter-responder",
        "kernel-c",
        &["--listen", KERNEL_ADDR, "--affinity", &cpu_s],
    )?;
    targets.insert(0, ("kernel-c", KERNEL_ADDR.to_string()));
    let mut lines = Vec::new();
    for (label, addr) in targets {
        let a: SocketAddr = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
        wait_answers(a).map_err(|e| format!("{label} at {addr}: {e}"))?;
        let line = format!("{label}={addr}");
        record(&format!("target {line}")).map_err(|e| e.to_string())?;
        lines.push(line);
    }
    Ok(lines)
}
