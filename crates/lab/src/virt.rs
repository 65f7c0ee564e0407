//! The virt targets: Apache NuttX against GNU/Linux on one board, QEMU's
//! `virt` machine (a Cortex-A7, virtio-mmio transports) with a virtio-net
//! NIC on a TAP device of its own, both with the C responder: as a NuttX
//! task started by its init (`nuttx`), and as a static program in a Linux
//! initramfs (`linux-virt`, at the default priority, and `linux-virt-rt`
//! on the next port, under SCHED_FIFO with its memory locked). Built by
//! `make -C c-responder nuttx linux-virt` (c-responder/virt/); booted as
//! a [`crate::qemu::Guest`] (`systems.rs`).

use crate::boards::Board;
use crate::error::LabError;
use crate::qemu::{Guest, Nic};
use crate::systems::{self, Machine};
use std::path::Path;
use std::time::Duration;

/// QEMU's virt with a Cortex-A7, every device below 4 GiB (Debian's armmp
/// kernel has no LPAE), and virtio-net over MMIO, which `-nic` does not
/// take.
const VIRT: Machine = Machine {
    args: &["-M", "virt,highmem=off", "-cpu", "cortex-a7", "-m", "256M"],
    nic: Nic::Device("virtio-net-device"),
    boot_wait: Duration::from_secs(90),
};

/// NuttX with the responder (`make -C c-responder nuttx`): its address is
/// built into the image.
pub(crate) fn nuttx(b: &'static Board, dir: &Path) -> Result<Guest, LabError> {
    systems::rtos(b, dir, "virt/build/stackmeter-nuttx.addr", &VIRT, "nuttx: eth0")
}

/// Linux with the responder twice (`make -C c-responder linux-virt`); QEMU
/// makes the board's device tree.
pub(crate) fn linux(b: &'static Board, dir: &Path) -> Result<Guest, LabError> {
    systems::linux(b, dir, "virt/build/linux-virt", None, &VIRT, "linux-virt: eth0")
}
