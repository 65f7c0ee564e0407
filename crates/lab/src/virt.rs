//! The virt targets: Apache NuttX against GNU/Linux on one board, QEMU's
//! `virt` machine (a Cortex-A7, virtio-mmio transports) with a virtio-net
//! NIC on a TAP device of its own, both with the C responder: as a NuttX
//! task started by its init (`nuttx`), and as a static program in a Linux
//! initramfs (`linux-virt`, at the default priority, and `linux-virt-rt`
//! on the next port, under SCHED_FIFO with its memory locked). Built by
//! `make -C c-responder nuttx linux-virt` (c-responder/virt/); booted as
//! a [`Guest`] (`qemu.rs`).

use crate::boards::Board;
use crate::error::LabError;
use crate::qemu::{built_for, Guest, Nic};
use std::path::Path;
use std::time::Duration;

/// What NuttX's build writes beside the image: the address and MAC it
/// was built with (from `c-responder/boards.mk`, this crate's table).
const NUTTX_ADDR: &str = "virt/build/stackmeter-nuttx.addr";
/// The Linux guest's kernel and initramfs (QEMU makes the device tree).
const LINUX_DIR: &str = "virt/build/linux-virt";
/// The real-time responder's priority in the Linux guest.
const LINUX_RT: &str = "fifo:50";
/// The board's NIC: virtio over MMIO, which `-nic` does not take.
const NIC: Nic = Nic::Device("virtio-net-device");
/// Linux takes several seconds to boot under emulation, more on a loaded
/// host; NuttX about one.
const BOOT_WAIT: Duration = Duration::from_secs(90);

/// The board both systems boot on (every device below 4 GiB: Debian's
/// armmp kernel has no LPAE), with their image arguments after it.
fn board(image: &[String]) -> Vec<String> {
    let mut a: Vec<String> = ["-M", "virt,highmem=off", "-cpu", "cortex-a7", "-m", "256M"]
        .iter()
        .map(ToString::to_string)
        .collect();
    a.extend_from_slice(image);
    a
}

/// NuttX with the responder (`make -C c-responder nuttx`): its address is
/// built into the image.
pub(crate) fn nuttx(b: &'static Board, dir: &Path) -> Result<Guest, LabError> {
    let elf = dir.join(b.image);
    let addr = dir.join(NUTTX_ADDR);
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
        nic: NIC,
        ready: "nuttx: eth0",
        boot_wait: BOOT_WAIT,
    })
}

/// Linux with the responder twice (`make -C c-responder linux-virt`), its
/// address on the kernel command line.
pub(crate) fn linux(b: &'static Board, dir: &Path) -> Result<Guest, LabError> {
    let d = dir.join(LINUX_DIR);
    for f in ["vmlinuz", "initramfs.gz"] {
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
        nic: NIC,
        ready: "linux-virt: eth0",
        boot_wait: BOOT_WAIT,
    })
}
