//! `up`, `status` and `down`: the lab as a whole, made or removed all at
//! once (a failed or interrupted `up` removes what it made).

use crate::error::LabError;
use crate::linux::build;
use crate::mcu::{build_mcu, Firmware, MCU, MCU_SMOLTCP, QEMU};
use crate::probe::rr_answers;
use crate::shell::sh;
use crate::state::{is_root, read_state, runs, state_dir};
use stackmeter_proto::auth::Key;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Which stacks `up` starts: the Linux ones (kernel-c, lwip-raw,
/// lwip-sock, smoltcp, lwip-xdp), one microcontroller firmware (the C
/// engine on lwIP, or the Rust core on smoltcp), or all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Set {
    Linux,
    Mcu,
    McuSmoltcp,
    All,
}

impl Set {
    /// The firmwares this set boots, and whether they must (`all` names
    /// a firmware that is not built, or a missing QEMU, and goes on).
    fn firmwares(self) -> (&'static [&'static Firmware], bool) {
        match self {
            Set::Linux => (&[], false),
            Set::Mcu => (&[&MCU], true),
            Set::McuSmoltcp => (&[&MCU_SMOLTCP], true),
            Set::All => (&[&MCU, &MCU_SMOLTCP], false),
        }
    }

    fn has_linux(self) -> bool {
        matches!(self, Set::Linux | Set::All)
    }
}

/// What `up` made: one `LABEL=ADDR:PORT` per target, and lines for the
/// user (the firmware's boot times).
#[derive(Debug, Default)]
pub struct Up {
    pub targets: Vec<String>,
    pub notes: Vec<String>,
}

/// The folder of the responder binaries: `flag`, else
/// `$STACKMETER_RESPONDER_DIR`, else `c-responder/` of this source tree.
pub fn bin_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| std::env::var_os("STACKMETER_RESPONDER_DIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../c-responder")))
}

/// Brings the lab up with the binaries in `dir`, every responder pinned to
/// `cpu` (default: the last one), the firmware provisioned with `secret`
/// (the Linux stacks take none here); returns one `LABEL=ADDR:PORT` per
/// target. On failure (or Ctrl-C) everything made so far is removed.
pub fn up(dir: &Path, cpu: Option<usize>, set: Set, secret: Option<Key>) -> Result<Up, LabError> {
    if secret.is_some() && !matches!(set, Set::Mcu | Set::McuSmoltcp) {
        return Err(LabError::SecretWithoutFirmware);
    }
    if !is_root() {
        return Err(LabError::NotRoot);
    }
    let sd = state_dir();
    if sd.join("state").exists() {
        return Err(LabError::AlreadyUp(sd));
    }
    let (wanted, required) = set.firmwares();
    let mut firmwares = Vec::new();
    let mut skipped = Vec::new();
    let no_qemu = Command::new(QEMU).arg("--version").output().is_err();
    for &fw in wanted {
        let why = if !dir.join(fw.file).is_file() {
            LabError::NotBuilt {
                path: dir.join(fw.file),
                make: fw.make,
            }
        } else if no_qemu {
            LabError::NoQemu(QEMU)
        } else {
            firmwares.push(fw);
            continue;
        };
        if required {
            return Err(why);
        }
        skipped.push(format!("{}: not started: {why}", fw.label));
    }
    fs::create_dir_all(&sd).map_err(LabError::file(&sd))?;
    // Ctrl-C during `up` tears down whatever was made so far.
    let _ = stackmeter_sys::interrupt::catch_interrupts();
    let cpu = cpu.unwrap_or_else(|| std::thread::available_parallelism().map_or(0, |n| n.get() - 1));
    let mut made = Up::default();
    let r = (|| {
        if set.has_linux() {
            (made.targets, made.notes) = build(dir, cpu)?;
        }
        for fw in &firmwares {
            let (target, note) = build_mcu(fw, dir, cpu, secret)?;
            made.targets.push(target);
            made.notes.push(note);
        }
        made.notes.extend(skipped);
        Ok::<(), LabError>(())
    })();
    match r {
        Ok(()) => Ok(made),
        Err(e) => {
            let _ = down();
            Err(LabError::Up(Box::new(e)))
        }
    }
}

/// The lab's targets (`LABEL=ADDR`) and whether each answers a probe now;
/// empty when no lab is up.
pub fn status() -> Vec<(String, bool)> {
    read_state()
        .iter()
        .filter_map(|l| l.strip_prefix("target "))
        .map(|t| {
            let ok = t
                .split_once('=')
                .and_then(|(_, a)| a.parse().ok())
                .is_some_and(rr_answers);
            (t.to_string(), ok)
        })
        .collect()
}

/// What `lab status` prints: a line per target, `LABEL=ADDR answers` (or
/// `NOT ANSWERING`), or that no lab is up.
pub fn status_text() -> String {
    let targets = status();
    if targets.is_empty() {
        return "no lab is up\n".into();
    }
    targets
        .iter()
        .map(|(t, ok)| format!("{t} {}\n", if *ok { "answers" } else { "NOT ANSWERING" }))
        .collect()
}

/// Stops every recorded process, deletes every recorded device, removes the
/// state. Returns how many things it removed.
pub fn down() -> Result<usize, LabError> {
    let lines = read_state();
    let mut n = 0;
    for l in &lines {
        let w: Vec<&str> = l.split_whitespace().collect();
        if let ["pid", pid, bin] = w[..] {
            if runs(pid, bin) {
                let _ = sh("kill", &["-TERM", pid]);
                let t = Instant::now();
                while runs(pid, bin) && t.elapsed() < Duration::from_secs(2) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                if runs(pid, bin) {
                    let _ = sh("kill", &["-KILL", pid]);
                }
                n += 1;
            }
        }
    }
    for l in &lines {
        if let Some(dev) = l.strip_prefix("dev ") {
            if sh("ip", &["link", "del", dev]).is_ok() {
                n += 1;
            }
        }
    }
    let sd = state_dir();
    if sd.exists() {
        fs::remove_dir_all(&sd).map_err(LabError::file(&sd))?;
    }
    Ok(n)
}
