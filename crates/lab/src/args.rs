//! `stackmeter lab`'s flags: the lab's own (ripgrep's rule: a crate knows
//! its own flags and no other command's); the binary hands them to
//! [`crate::up`], [`crate::status_text`] and [`crate::down`].

use clap::builder::{PossibleValue, PossibleValuesParser};
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
        /// Which stacks, one or more: the Linux ones (default), a board in QEMU (a microcontroller firmware, Embox or Linux on a Cortex-A9), or all (`stackmeter lab boards` lists them).
        #[arg(default_values = ["linux"], num_args = 1.., value_parser = words())]
        stacks: Vec<String>,
        /// Folder with stackmeter-responder, lwip-raw, lwip-sock, lwip-xdp, mcu/build/ (the Cortex-M3 firmwares) and a9/build/ (Embox, Linux for the Cortex-A9) (smoltcp's hosted responder is this binary) (default: $STACKMETER_RESPONDER_DIR, else c-responder/ of this source tree).
        #[arg(long, value_name = "DIR")]
        bin_dir: Option<PathBuf>,
        /// CPU every responder (and QEMU) is pinned to (default: the last one).
        #[arg(long, value_name = "CPU")]
        cpu: Option<usize>,
        /// Provision the firmware with this shared secret (lab up mcu or mcu-smoltcp only; mode 600): every test of it then needs --secret-file too.
        #[arg(long, value_name = "FILE")]
        secret_file: Option<PathBuf>,
    },
    /// List the lab's targets and whether each answers.
    Status,
    /// List every board of the lab: its `lab up` word, device, address, and whether it is built.
    Boards {
        /// Folder of the binaries, as for `up`.
        #[arg(long, value_name = "DIR")]
        bin_dir: Option<PathBuf>,
        /// Print the addresses built into the images instead, as c-responder/boards.mk holds them.
        #[arg(long)]
        make: bool,
    },
    /// Stop every responder and QEMU, and remove every device the lab made.
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

/// The words `lab up` takes, with their help: the board table's groups.
fn words() -> PossibleValuesParser {
    PossibleValuesParser::new(
        crate::boards::groups()
            .into_iter()
            .map(|(word, help)| PossibleValue::new(word).help(help)),
    )
}
