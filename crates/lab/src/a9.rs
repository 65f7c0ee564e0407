//! The Cortex-A9 targets: the UDP echo write-up's two systems on one
//! board, Embox RTOS and GNU/Linux, each in QEMU's vexpress-a9 (a
//! Cortex-A9 with an SMSC LAN9118) on a TAP device of its own, both with
//! the C responder: as an Embox command (`embox`), and as a static program
//! in a Linux initramfs (`linux-a9`, at the default priority, and
//! `linux-a9-rt` on the next port, the same responder under SCHED_FIFO
//! with its memory locked). Built by `make -C c-responder embox linux-a9`
//! (c-responder/a9/); booted as a [`Guest`] (`qemu.rs`).

use crate::error::LabError;
use crate::linux::PORT;
use crate::qemu::Guest;
use std::fs;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

/// Embox's image, and the address and MAC it was built with (its own
/// network file holds them; `EMBOX_IP=... make -C c-responder embox`).
pub(crate) const EMBOX_ELF: &str = "a9/build/stackmeter-embox.elf";
const EMBOX_ADDR: &str = "a9/build/stackmeter-embox.addr";
/// The Linux guest's kernel, board and initramfs.
pub(crate) const LINUX_DIR: &str = "a9/build/linux-a9";
/// The Linux guest's address (given on its kernel command line) and MAC.
const LINUX_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 19, 2);
const LINUX_MAC: &str = "02:53:4d:00:00:08";
/// The real-time responder's priority in the Linux guest.
const LINUX_RT: &str = "fifo:50";
/// QEMU's RAM for either system. Both fit in much less (docs/lab.md); the
/// image's own linker script places Embox's heaps within 256 MiB.
const RAM: &str = "256M";
/// Linux takes about 10 s to boot under emulation, more on a loaded host.
const A9_BOOT_WAIT: Duration = Duration::from_secs(90);

/// The board both systems boot on, with their image arguments after it.
fn board(image: &[String]) -> Vec<String> {
    let mut a: Vec<String> = ["-M", "vexpress-a9", "-m", RAM, "-audiodev", "none,id=snd0"]
        .iter()
        .map(ToString::to_string)
        .collect();
    a.extend_from_slice(image);
    a
}

/// Embox with the responder (`make -C c-responder embox`).
pub(crate) fn embox(dir: &Path) -> Result<Guest, LabError> {
    let elf = dir.join(EMBOX_ELF);
    let addr = dir.join(EMBOX_ADDR);
    if !elf.is_file() || !addr.is_file() {
        return Err(LabError::NotBuilt {
            path: elf,
            make: "STACKMETER_EMBOX_SRC=... make -C c-responder embox",
        });
    }
    let text = fs::read_to_string(&addr).map_err(LabError::file(&addr))?;
    let bad = || LabError::Boot(format!("{}: not an address and a MAC: {text:?}", addr.display()));
    let mut w = text.split_whitespace();
    let ip: Ipv4Addr = w.next().and_then(|a| a.parse().ok()).ok_or_else(bad)?;
    let mac = w.next().ok_or_else(bad)?.to_string();
    Ok(Guest {
        label: "embox",
        tap: "smlab7",
        ip,
        mac,
        args: board(&["-kernel".into(), elf.display().to_string()]),
        model: Some("lan9118"),
        ready: "info: listening on udp",
        targets: vec![("embox", PORT)],
        what: "Embox on a Cortex-A9 (vexpress-a9)",
        boot_wait: A9_BOOT_WAIT,
    })
}

/// Linux with the responder twice (`make -C c-responder linux-a9`).
pub(crate) fn linux(dir: &Path) -> Result<Guest, LabError> {
    let d = dir.join(LINUX_DIR);
    for f in ["vmlinuz", "vexpress.dtb", "initramfs.gz"] {
        if !d.join(f).is_file() {
            return Err(LabError::NotBuilt {
                path: d.join(f),
                make: "make -C c-responder linux-a9",
            });
        }
    }
    let file = |f: &str| d.join(f).display().to_string();
    let image = [
        "-kernel".into(),
        file("vmlinuz"),
        "-dtb".into(),
        file("vexpress.dtb"),
        "-initrd".into(),
        file("initramfs.gz"),
        "-append".into(),
        format!("console=ttyAMA0 quiet smr.ip={LINUX_IP}/24 smr.prio={LINUX_RT}"),
    ];
    Ok(Guest {
        label: "linux-a9",
        tap: "smlab8",
        ip: LINUX_IP,
        mac: LINUX_MAC.into(),
        args: board(&image),
        model: Some("lan9118"),
        ready: "linux-a9: eth0",
        targets: vec![("linux-a9", PORT), ("linux-a9-rt", PORT + 1)],
        what: "Debian's Linux on a Cortex-A9 (vexpress-a9)",
        boot_wait: A9_BOOT_WAIT,
    })
}
