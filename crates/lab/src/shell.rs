//! The commands the lab runs: `ip` for its devices, `kill` for its
//! processes, and the responders and QEMU it starts, each with its log in
//! the state folder and its pid recorded.

use crate::error::LabError;
use crate::state::{record, state_dir};
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `cmd` with `args`; its stderr is the error.
pub(crate) fn sh(cmd: &str, args: &[&str]) -> Result<(), LabError> {
    let failed = |why: String| LabError::Command {
        command: format!("{cmd} {}", args.join(" ")),
        why,
    };
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| failed(format!("cannot run {cmd}: {e}")))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(failed(String::from_utf8_lossy(&out.stderr).trim().to_string())),
    }
}

/// Starts `program` with `args` (its log `LABEL.log` in the state folder)
/// and records its pid under the name its command line will begin with,
/// `bin` (a program that executes another names that one); returns the pid.
pub(crate) fn spawn_cmd(program: &Path, bin: &str, label: &str, args: &[&str]) -> Result<String, LabError> {
    use std::os::unix::process::CommandExt;
    let path = state_dir().join(format!("{label}.log"));
    let log = fs::File::create(&path).map_err(LabError::file(path))?;
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        // Its own process group: a later Ctrl-C in this shell leaves it alone.
        .process_group(0)
        .spawn()
        .map_err(|err| LabError::Spawn {
            program: bin.to_string(),
            err,
        })?;
    let pid = child.id().to_string();
    record(&format!("pid {pid} {bin}"))?;
    Ok(pid)
}

/// Starts `program` with `args` under `taskset` on `cpu` (taskset executes
/// it, so the state records the program's own name, `bin`); its pid.
pub(crate) fn spawn_pinned(
    program: &Path,
    bin: &str,
    label: &str,
    cpu: &str,
    args: &[&str],
) -> Result<String, LabError> {
    let prog = program.display().to_string();
    let mut all = vec!["-c", cpu, prog.as_str()];
    all.extend_from_slice(args);
    spawn_cmd(Path::new("taskset"), bin, label, &all)
}
