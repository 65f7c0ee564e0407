//! `stackmeter lab up|status|down`'s flags; the lab itself is its own
//! crate beside the engine (`stackmeter_lab`), which the binary calls.

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct LabArgs {
    #[command(subcommand)]
    pub action: LabAction,
}

#[derive(Subcommand, Debug)]
pub enum LabAction {
    /// Create the TAP devices, start the responders, print LABEL=ADDR:PORT once each answers.
    Up {
        /// Which stacks: the Linux ones (default), a microcontroller firmware in QEMU, or all.
        #[arg(value_enum, default_value = "linux")]
        stacks: LabSet,
        /// Folder with stackmeter-responder, lwip-raw, lwip-sock, lwip-xdp, mcu/build/stackmeter-mcu.elf and mcu/build/stackmeter-mcu-smoltcp.elf (smoltcp's hosted responder is this binary) (default: $STACKMETER_RESPONDER_DIR, else c-responder/ of this source tree).
        #[arg(long, value_name = "DIR")]
        bin_dir: Option<PathBuf>,
        /// CPU every responder is pinned to (default: the last one).
        #[arg(long, value_name = "CPU")]
        cpu: Option<usize>,
        /// Provision the firmware with this shared secret (lab up mcu or mcu-smoltcp only; mode 600): every test of it then needs --secret-file too.
        #[arg(long, value_name = "FILE")]
        secret_file: Option<PathBuf>,
    },
    /// List the lab's targets and whether each answers.
    Status,
    /// Stop every responder and remove every device the lab made.
    Down,
    /// The smoltcp responder on a TAP device `lab up` made (started by `lab up`; runs until killed).
    #[command(hide = true)]
    ServeSmoltcp {
        /// The TAP device.
        tap: String,
        /// The stack's address on it.
        addr: std::net::Ipv4Addr,
        /// TCP and UDP port.
        #[arg(long, default_value_t = 24680)]
        port: u16,
        /// CPU to pin to.
        #[arg(long, value_name = "CPU")]
        cpu: Option<usize>,
    },
}

/// The stacks `lab up` starts.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabSet {
    /// kernel-c, lwip-raw, lwip-sock, smoltcp and lwip-xdp (when built: `make -C c-responder xdp`).
    Linux,
    /// The C responder's firmware (lwIP) on an emulated Cortex-M3 board (QEMU lm3s6965evb).
    Mcu,
    /// The Rust protocol core on smoltcp as firmware for the same board (make -C c-responder mcu-smoltcp).
    McuSmoltcp,
    /// All of them (mcu-smoltcp when built).
    All,
}
