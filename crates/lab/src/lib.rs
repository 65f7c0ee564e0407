//! `stackmeter lab up|status|down`: real second stacks on this machine.
//!
//! The user scenarios (docs/scenarios.md) compare two implementations of one
//! job (in-stack module vs application on QNX io-sock; kernel stack vs lwIP).
//! `lab up` makes those comparisons reproducible on one Linux host: one TAP
//! device per user-space stack (host side 198.18.N.1/24, the stack
//! 198.18.N.2, from the benchmarking range 198.18.0.0/15), lwIP's raw
//! callback API responder (`lwip-raw`, the in-stack module), its sockets
//! API responder (`lwip-sock`, the application) and smoltcp with the Rust
//! protocol core (`smoltcp`, this binary's `lab serve-smoltcp`, from
//! `crates/smoltcp`) on them, and the C responder on the kernel stack
//! (`kernel-c`, 127.0.0.1:24690), all pinned to one CPU.
//! It prints one `LABEL=ADDR:PORT` line per target once each answers a real
//! rr probe, and records what it made in a state file so `status` and `down`
//! find it.
//!
//! `lab up mcu` (or `all`) boots the C responder's microcontroller firmware
//! instead (or as well): QEMU's lm3s6965evb board (a Cortex-M3 with 64 KiB
//! of SRAM) on TAP `smlab3`, the firmware 198.18.16.2, its address and seed
//! written into its provisioning block (the last 1 KiB of flash) through
//! QEMU's loader. `lab up mcu-smoltcp` (or `all`, when it is built) boots
//! the Rust firmware (firmware/mcu-smoltcp: the protocol core on smoltcp)
//! the same way on TAP `smlab6`, 198.18.17.2. It waits for each firmware's
//! console to say it is ready and for a control session's Welcome, and
//! says how long each took from QEMU's start (boot-to-Welcome).
//!
//! The binaries come from `c-responder/` (`make -C c-responder all lwip`,
//! `make -C c-responder mcu mcu-smoltcp`): `--bin-dir`, else
//! `$STACKMETER_RESPONDER_DIR`, else the `c-responder/` folder of the
//! source tree this binary was built from.
//!
//! The files: `lifecycle.rs` (up, status, down), `linux.rs` (the TAP
//! devices and the Linux responders), `mcu.rs` (the firmware in QEMU and
//! its provisioning block), `probe.rs` (readiness through the client, as
//! every test reaches a responder), `state.rs` (what was made, in a state
//! file, and the processes it names), `shell.rs` (the `ip` and `kill`
//! commands), `error.rs` (what can go wrong, one enum). This file only
//! declares.

mod a9;
mod args;
mod error;
mod lifecycle;
mod linux;
mod mcu;
mod probe;
mod qemu;
mod shell;
mod state;

pub use args::{LabAction, LabArgs};
pub use error::LabError;
pub use lifecycle::{bin_dir, down, status, status_text, up, Group, Up};
