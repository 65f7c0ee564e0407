//! The commands the lab runs: `ip` for its devices, `kill` for its
//! processes, and the responders and QEMU it starts, each with its log in
//! the state folder and its pid recorded.

use crate::state::{record, state_dir};
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `cmd` with `args`; its stderr is the error.
pub(crate) fn sh(cmd: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {cmd}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Starts `program` with `args` (its log `LABEL.log` in the state folder)
/// and records its pid under the name its command line will begin with,
/// `bin` (a program that executes another names that one); returns the pid.
pub(crate) fn spawn_cmd(program: &Path, bin: &str, label: &str, args: &[&str]) -> Result<String, String> {
    use std::os::unix::process::CommandExt;
    let log = fs::File::create(state_dir().join(format!("{label}.log"))).map_err(|e| e.to_string())?;
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        // Its own process group: a later Ctrl-C in this shell leaves it alone.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {bin}: {e}"))?;
    let pid = child.id().to_string();
    record(&format!("pid {pid} {bin}")).map_err(|e| e.to_string())?;
    Ok(pid)
}
