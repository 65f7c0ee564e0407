//! The Cortex-A9 targets: the UDP echo write-up's two systems on one
//! board, Embox RTOS and GNU/Linux, each in QEMU's vexpress-a9 (a
//! Cortex-A9 with an SMSC LAN9118) on a TAP device of its own, both with
//! the C responder: as an Embox command (`embox`), and as a static program
//! in a Linux initramfs (`linux-a9`, at the default priority, and
//! `linux-a9-rt` on the next port, the same responder under SCHED_FIFO
//! with its memory locked). Built by `make -C c-responder embox linux-a9`
//! (c-responder/a9/); booted as a [`crate::qemu::Guest`] (`systems.rs`).

use crate::boards::Board;
use crate::error::LabError;
use crate::qemu::{Guest, Nic};
use crate::systems::{self, Machine};
use std::path::Path;
use std::time::Duration;

/// QEMU's vexpress-a9 with 256 MiB (both systems fit in much less:
/// docs/lab.md; Embox's linker script places its heaps within it) and its
/// LAN9118.
const A9: Machine = Machine {
    args: &["-M", "vexpress-a9", "-m", "256M", "-audiodev", "none,id=snd0"],
    nic: Nic::Model(Some("lan9118")),
    boot_wait: Duration::from_secs(90),
};

/// Embox with the responder (`make -C c-responder embox`): its address
/// is built into the image.
pub(crate) fn embox(b: &'static Board, dir: &Path) -> Result<Guest, LabError> {
    systems::rtos(b, dir, "a9/build/stackmeter-embox.addr", &A9, "info: listening on udp")
}

/// Linux with the responder twice (`make -C c-responder linux-a9`), with
/// the board's device tree from Debian's kernel package.
pub(crate) fn linux(b: &'static Board, dir: &Path) -> Result<Guest, LabError> {
    systems::linux(b, dir, "a9/build/linux-a9", Some("vexpress.dtb"), &A9, "linux-a9: eth0")
}
