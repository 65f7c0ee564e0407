//! `stackmeter lab up|status|down`: the lab itself is the engine's
//! (`stackmeter_engine::lab`); this prints what it made.

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
        /// Folder with stackmeter-responder, lwip-raw and lwip-sock (default: $STACKMETER_RESPONDER_DIR, else c-responder/ of this source tree).
        #[arg(long, value_name = "DIR")]
        bin_dir: Option<PathBuf>,
        /// CPU every responder is pinned to (default: the last one).
        #[arg(long, value_name = "CPU")]
        cpu: Option<usize>,
    },
    /// List the lab's targets and whether each answers.
    Status,
    /// Stop every responder and remove every device the lab made.
    Down,
}

pub fn run(a: LabArgs) -> i32 {
    use stackmeter_engine::lab;
    match a.action {
        LabAction::Up { bin_dir, cpu } => match lab::up(&lab::bin_dir(bin_dir), cpu) {
            Ok(targets) => crate::out::finish(&targets.iter().map(|t| format!("{t}\n")).collect::<String>()),
            Err(e) => crate::out::error(&e),
        },
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
            Err(e) => crate::out::error(&e),
        },
    }
}
