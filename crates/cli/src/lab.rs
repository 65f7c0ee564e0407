//! `stackmeter lab up|status|down`: the lab itself is its own crate
//! (`stackmeter_lab`); this parses the flags and prints what it made.

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
        /// Which stacks: the Linux ones (default), the microcontroller firmware in QEMU, or all.
        #[arg(value_enum, default_value = "linux")]
        stacks: LabSet,
        /// Folder with stackmeter-responder, lwip-raw, lwip-sock and mcu/build/stackmeter-mcu.elf (default: $STACKMETER_RESPONDER_DIR, else c-responder/ of this source tree).
        #[arg(long, value_name = "DIR")]
        bin_dir: Option<PathBuf>,
        /// CPU every responder is pinned to (default: the last one).
        #[arg(long, value_name = "CPU")]
        cpu: Option<usize>,
        /// Provision the firmware with this shared secret (lab up mcu only; mode 600): every test of it then needs --secret-file too.
        #[arg(long, value_name = "FILE")]
        secret_file: Option<PathBuf>,
    },
    /// List the lab's targets and whether each answers.
    Status,
    /// Stop every responder and remove every device the lab made.
    Down,
}

/// The stacks `lab up` starts.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabSet {
    /// kernel-c, lwip-raw and lwip-sock.
    Linux,
    /// The C responder's firmware on an emulated Cortex-M3 board (QEMU lm3s6965evb).
    Mcu,
    /// Both.
    All,
}

pub fn run(a: LabArgs) -> i32 {
    use stackmeter_lab as lab;
    match a.action {
        LabAction::Up {
            stacks,
            bin_dir,
            cpu,
            secret_file,
        } => {
            let set = match stacks {
                LabSet::Linux => lab::Set::Linux,
                LabSet::Mcu => lab::Set::Mcu,
                LabSet::All => lab::Set::All,
            };
            // Only the flag: lab's own responders never take a secret from
            // the environment, which the measuring commands read.
            let secret = match secret_file.as_deref().map(|p| stackmeter_engine::secret::load(Some(p))) {
                None => None,
                Some(Ok(k)) => k,
                Some(Err(e)) => return crate::out::error(&stackmeter_engine::Error::Usage(e)),
            };
            match lab::up(&lab::bin_dir(bin_dir), cpu, set, secret) {
                Ok(up) => {
                    for n in &up.notes {
                        eprintln!("{n}");
                    }
                    crate::out::finish(&up.targets.iter().map(|t| format!("{t}\n")).collect::<String>())
                }
                Err(e) => crate::out::fail(1, e),
            }
        }
        LabAction::Status => {
            let targets = lab::status();
            if targets.is_empty() {
                return crate::out::finish("no lab is up\n");
            }
            let lines: String = targets
                .iter()
                .map(|(t, ok)| format!("{t} {}\n", if *ok { "answers" } else { "NOT ANSWERING" }))
                .collect();
            crate::out::finish(&lines)
        }
        LabAction::Down => match lab::down() {
            Ok(n) => {
                eprintln!("stackmeter lab: removed {n} processes and devices");
                0
            }
            Err(e) => crate::out::fail(1, e),
        },
    }
}
