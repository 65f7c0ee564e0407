//! What `up` made, one line each in a state file (`pid N NAME`, `dev
//! NAME`, `target L=A`, `boot ...`), so that `status` and `down` find it;
//! and whether a recorded process still runs.

use crate::error::LabError;
use std::fs;
use std::io::Write;
use std::path::PathBuf;

pub(crate) fn state_dir() -> PathBuf {
    std::env::var_os("STACKMETER_LAB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/stackmeter-lab"))
}

/// Appends one line to the state file.
pub(crate) fn record(line: &str) -> Result<(), LabError> {
    let path = state_dir().join("state");
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| writeln!(f, "{line}"))
        .map_err(LabError::file(path))
}

pub(crate) fn read_state() -> Vec<String> {
    fs::read_to_string(state_dir().join("state"))
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Whether `pid` still runs the program `bin` (not a reused pid).
pub(crate) fn runs(pid: &str, bin: &str) -> bool {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            String::from_utf8_lossy(&c)
                .split('\0')
                .next()
                .unwrap_or("")
                .ends_with(bin)
        })
        .unwrap_or(false)
}

pub(crate) fn is_root() -> bool {
    // The effective uid is the third field of "Uid:" in /proc/self/status.
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}
