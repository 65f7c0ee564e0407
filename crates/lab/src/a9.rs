//! The Cortex-A9 targets: the UDP echo write-up's two systems on one
//! board, Embox RTOS and GNU/Linux, each in QEMU's vexpress-a9 (a
//! Cortex-A9 with an SMSC LAN9118) on a TAP device of its own, both with
//! the C responder: as an Embox command (`embox`), and as a static program
//! in a Linux initramfs (`linux-a9`, at the default priority, and
//! `linux-a9-rt` on the next port, the same responder under SCHED_FIFO
//! with its memory locked). Built by `make -C c-responder embox linux-a9`
//! (c-responder/a9/); booted as a [`Guest`] (`qemu.rs`).

use crate::boards::Board;
use crate::error::LabError;
use crate::qemu::{built_for, Guest, Nic};
use std::path::Path;
use std::time::Duration;

/// What Embox's build writes beside the image: the address and MAC it
/// was built with (from `c-responder/boards.mk`, this crate's table).
const EMBOX_ADDR: &str = "a9/build/stackmeter-embox.addr";
/// The Linux guest's kernel, board and initramfs.
pub(crate) const LINUX_DIR: &str = "a9/build/linux-a9";
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

/// Embox with the responder (`make -C c-responder embox`): its address
/// is built into the image; one built for another than the table's is
/// refused, with the command that builds it again.
pub(crate) fn embox(b: &'static Board, dir: &Path) -> Result<Guest, LabError> {
    let elf = dir.join(b.image);
    let addr = dir.join(EMBOX_ADDR);
    if !elf.is_file() || !addr.is_file() {
        return Err(LabError::NotBuilt {
            path: elf,
            make: b.make,
        });
    }
    built_for(b, &elf, &addr)?;
    Ok(Guest {
        board: b,
        args: board(&["-kernel".into(), elf.display().to_string()]),
        nic: Nic::Model(Some("lan9118")),
        ready: "info: listening on udp",
        boot_wait: A9_BOOT_WAIT,
    })
}

/// Linux with the responder twice (`make -C c-responder linux-a9`), its
/// address on the kernel command line.
pub(crate) fn linux(b: &'static Board, dir: &Path) -> Result<Guest, LabError> {
    let d = dir.join(LINUX_DIR);
    for f in ["vmlinuz", "vexpress.dtb", "initramfs.gz"] {
        if !d.join(f).is_file() {
            return Err(LabError::NotBuilt {
                path: d.join(f),
                make: b.make,
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
        format!(
            "console=ttyAMA0 quiet smr.ip={}/24 smr.prio={LINUX_RT}",
            b.link().board()
        ),
    ];
    Ok(Guest {
        board: b,
        args: board(&image),
        nic: Nic::Model(Some("lan9118")),
        ready: "linux-a9: eth0",
        boot_wait: A9_BOOT_WAIT,
    })
}
