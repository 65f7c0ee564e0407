//! `stackmeter lab up|status|boards|down`: real second stacks on this
//! machine.
//!
//! The user scenarios (docs/scenarios.md) compare two implementations of one
//! job (in-stack module vs application on QNX io-sock; kernel stack vs lwIP;
//! an RTOS against Linux on one board). `lab up` makes those comparisons
//! reproducible on one Linux host: each stack on a device of its own, all
//! pinned to one CPU. Its boards are the rows of one table (`boards.rs`):
//! lwIP's raw callback API responder (`lwip-raw`, the in-stack module),
//! its sockets API responder (`lwip-sock`, the application) and smoltcp
//! with the Rust protocol core (`smoltcp`, this binary's `lab
//! serve-smoltcp`) on TAP devices, lwIP on AF_XDP (`lwip-xdp`), the C
//! responder on the kernel stack (`kernel-c`), and systems booted in QEMU:
//! the Cortex-M3 firmwares (`mcu`, `mcu-smoltcp`), Embox and Linux on a
//! Cortex-A9 (`embox`, `linux-a9`), NuttX and Linux on a Cortex-A7
//! (`nuttx`, `linux-virt`); and the proxy write-up's race on loopback, a
//! file server (`files`, printed as `direct`) with TCP proxies in front of
//! it (`solidframe`, `asio-2010`, `asio`). It prints one `LABEL=ADDR:PORT` line
//! per target once each answers, and records what it made in a state file
//! so `status` and `down` find it.
//!
//! The binaries come from `c-responder/` (`make -C c-responder ...`, each
//! row names its command): `--bin-dir`, else `$STACKMETER_RESPONDER_DIR`,
//! else the `c-responder/` folder of the source tree this binary was
//! built from.
//!
//! The files: `boards.rs` (the table: every board, its device, address,
//! image and build command), `lifecycle.rs` (up, status, down),
//! `linux.rs` (the stacks on this host: TAP devices, the veth pair, the
//! kernel's), `qemu.rs` (a board in QEMU as a [`qemu::Guest`]: booted,
//! waited for, recorded), `mcu.rs` (the Cortex-M3 firmwares and their
//! provisioning block), `systems.rs` (an RTOS image or Debian's Linux on
//! an emulated board), `a9.rs` (Embox and Linux on the Cortex-A9),
//! `virt.rs` (NuttX and Linux on QEMU's virt board), `proxies.rs` (the
//! file server and the proxies),
//! `probe.rs` (readiness through the client, as every test reaches a
//! responder), `state.rs` (what was made, in a state file, and the
//! processes it names), `shell.rs` (the `ip` and `kill` commands),
//! `args.rs` (the lab's own flags), `error.rs` (what can go wrong, one
//! enum). This file only declares.

mod a9;
mod args;
pub mod boards;
mod error;
mod lifecycle;
mod linux;
mod mcu;
mod probe;
mod proxies;
mod qemu;
mod shell;
mod state;
mod systems;
mod virt;

pub use args::{LabAction, LabArgs};
pub use error::LabError;
pub use lifecycle::{bin_dir, down, status, status_text, up, Up};
