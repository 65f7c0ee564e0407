//! The two kinds of system the lab boots on an emulated board of its own,
//! whatever the board: an RTOS image with the responder in it and its
//! address built in (Embox, NuttX), and Debian's Linux with the responder
//! in an initramfs, its address on the kernel command line (`linux-a9`,
//! `linux-virt`). A board's file (`a9.rs`, `virt.rs`) says what differs:
//! QEMU's machine, the NIC, the files and the words its console prints.

use crate::boards::Board;
use crate::error::LabError;
use crate::qemu::{built_for, Guest, Nic};
use std::path::Path;
use std::time::Duration;

/// An emulated board as QEMU starts it.
pub(crate) struct Machine {
    /// QEMU's arguments for the machine (before the image's).
    pub(crate) args: &'static [&'static str],
    /// Its NIC on the TAP device.
    pub(crate) nic: Nic,
    /// The longest boot (Linux takes seconds under emulation, more on a
    /// loaded host).
    pub(crate) boot_wait: Duration,
}

impl Machine {
    /// QEMU's arguments: the machine's, then `image`'s.
    fn with(&self, image: &[String]) -> Vec<String> {
        let mut a: Vec<String> = self.args.iter().map(ToString::to_string).collect();
        a.extend_from_slice(image);
        a
    }
}

/// The real-time responder's priority in a Linux guest.
const LINUX_RT: &str = "fifo:50";

/// An RTOS image with the responder (`b.image`), whose build wrote the
/// address it holds to `addr` (from `c-responder/boards.mk`); one built
/// for another than the table's is refused, with the command that builds
/// it again. Ready when the console says `ready`.
pub(crate) fn rtos(
    b: &'static Board,
    dir: &Path,
    addr: &str,
    m: &Machine,
    ready: &'static str,
) -> Result<Guest, LabError> {
    let elf = dir.join(b.image);
    let addr = dir.join(addr);
    if !elf.is_file() || !addr.is_file() {
        return Err(LabError::NotBuilt {
            path: elf,
            make: b.make,
        });
    }
    built_for(b, &elf, &addr)?;
    Ok(Guest {
        board: b,
        args: m.with(&["-kernel".into(), elf.display().to_string()]),
        nic: m.nic,
        ready,
        boot_wait: m.boot_wait,
    })
}

/// Debian's Linux with the responder twice (on the board's port, and
/// under SCHED_FIFO on the next): `vmlinuz`, `initramfs.gz` and, where
/// QEMU makes no device tree for the board, `dtb` in `files`; its address
/// on the kernel command line.
pub(crate) fn linux(
    b: &'static Board,
    dir: &Path,
    files: &str,
    dtb: Option<&str>,
    m: &Machine,
    ready: &'static str,
) -> Result<Guest, LabError> {
    let d = dir.join(files);
    for f in ["vmlinuz", "initramfs.gz"].into_iter().chain(dtb) {
        if !d.join(f).is_file() {
            return Err(LabError::NotBuilt {
                path: d.join(f),
                make: b.make,
            });
        }
    }
    let file = |f: &str| d.join(f).display().to_string();
    let mut image = vec!["-kernel".into(), file("vmlinuz")];
    if let Some(t) = dtb {
        image.extend(["-dtb".into(), file(t)]);
    }
    image.extend([
        "-initrd".into(),
        file("initramfs.gz"),
        "-append".into(),
        format!(
            "console=ttyAMA0 quiet smr.ip={}/24 smr.prio={LINUX_RT}",
            b.link().board()
        ),
    ]);
    Ok(Guest {
        board: b,
        args: m.with(&image),
        nic: m.nic,
        ready,
        boot_wait: m.boot_wait,
    })
}
