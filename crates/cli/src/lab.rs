//! `stackmeter lab up|status|boards|down`: the lab itself is its own crate
//! (`stackmeter_lab`); this parses the flags and prints what it made.

use stackmeter_lab::{LabAction, LabArgs};

pub fn run(a: LabArgs) -> i32 {
    use stackmeter_lab as lab;
    match a.action {
        LabAction::Up {
            stacks,
            bin_dir,
            cpu,
            secret_file,
        } => {
            // Only the flag: lab's own responders never take a secret from
            // the environment, which the measuring commands read.
            let secret = match secret_file.as_deref().map(|p| stackmeter_engine::secret::load(Some(p))) {
                None => None,
                Some(Ok(k)) => k,
                Some(Err(e)) => return crate::out::error(stackmeter_engine::Error::flag(e.to_string())),
            };
            match lab::up(&lab::bin_dir(bin_dir), cpu, &stacks, secret) {
                Ok(up) => {
                    for n in &up.notes {
                        eprintln!("{n}");
                    }
                    crate::out::finish(&up.targets.iter().map(|t| format!("{t}\n")).collect::<String>())
                }
                Err(e) => crate::out::fail(1, e),
            }
        }
        LabAction::Status => crate::out::finish(&lab::status_text()),
        LabAction::Boards { bin_dir, make } => crate::out::finish(&match make {
            true => lab::boards::make_fragment(),
            false => lab::boards::table(&lab::bin_dir(bin_dir)),
        }),
        LabAction::ServeSmoltcp { tap, addr, port, cpu } => {
            let Err(e) = stackmeter_smoltcp::serve(&stackmeter_smoltcp::Options { tap, addr, port, cpu });
            crate::out::fail(1, e)
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
