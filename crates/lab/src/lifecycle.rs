//! `up`, `status` and `down`: the lab as a whole, made or removed all at
//! once (a failed or interrupted `up` removes what it made); which boards
//! a word of `lab up` names, and how each starts, is the table's
//! (`boards.rs`).

use crate::boards::{boards_of, Board, Runs, System};
use crate::error::LabError;
use crate::linux::build;
use crate::probe::rr_answers;
use crate::qemu::{boot, Guest, QEMU};
use crate::shell::sh;
use crate::state::{is_root, read_state, runs, state_dir};
use crate::{a9, mcu, virt};
use stackmeter_proto::auth::Key;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The board `b` as QEMU boots it, or why it cannot be (not built).
fn guest(b: &'static Board, system: System, dir: &Path, secret: Option<&Key>) -> Result<Guest, LabError> {
    match system {
        System::Firmware => mcu::guest(b, dir, secret),
        System::Embox => a9::embox(b, dir),
        System::LinuxA9 => a9::linux(b, dir),
        System::Nuttx => virt::nuttx(b, dir),
        System::LinuxVirt => virt::linux(b, dir),
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
/// `cpu` (default: the last one), the boards the words of `lab up` name
/// (`words`: a group of the table, or `all`), the microcontroller
/// firmware provisioned with `secret` (no other stack takes one here);
/// returns one `LABEL=ADDR:PORT` per target. On failure (or Ctrl-C)
/// everything made so far is removed.
pub fn up(dir: &Path, cpu: Option<usize>, words: &[String], secret: Option<Key>) -> Result<Up, LabError> {
    // Each board once, required when any word that names it requires it.
    let mut wanted: Vec<(&'static Board, bool)> = Vec::new();
    for w in words {
        let boards = boards_of(w).ok_or_else(|| LabError::NoSuchBoard(w.clone()))?;
        for (b, required) in boards {
            match wanted.iter_mut().find(|(x, _)| std::ptr::eq(*x, b)) {
                Some(x) => x.1 |= required,
                None => wanted.push((b, required)),
            }
        }
    }
    // A proxy stands in front of the file server: it comes up first.
    if wanted.iter().any(|(b, _)| matches!(b.runs, Runs::Proxy(_)))
        && !wanted.iter().any(|(b, _)| b.runs == Runs::Files)
    {
        let files = crate::boards::BOARDS.iter().find(|b| b.runs == Runs::Files);
        wanted.extend(files.map(|f| (f, true)));
    }
    let firmware_only = wanted.iter().all(|(b, _)| b.runs == Runs::Qemu(System::Firmware));
    if secret.is_some() && !firmware_only {
        return Err(LabError::SecretWithoutFirmware);
    }
    if !is_root() {
        return Err(LabError::NotRoot);
    }
    let sd = state_dir();
    if sd.join("state").exists() {
        return Err(LabError::AlreadyUp(sd));
    }
    fs::create_dir_all(&sd).map_err(LabError::file(&sd))?;
    let no_qemu = Command::new(QEMU).arg("--version").output().is_err();
    let mut hosted = Vec::new();
    let mut served = Vec::new();
    let mut guests = Vec::new();
    let mut skipped = Vec::new();
    for (b, required) in wanted {
        let system = match b.runs {
            Runs::Qemu(s) => s,
            Runs::Kernel | Runs::Tap(_) | Runs::Xdp => {
                hosted.push(b);
                continue;
            }
            Runs::Files | Runs::Proxy(_) => {
                served.push((b, required));
                continue;
            }
        };
        let g = match no_qemu {
            true => Err(LabError::NoQemu(QEMU)),
            false => guest(b, system, dir, secret.as_ref()),
        };
        match g {
            Ok(g) => guests.push(g),
            Err(why) if required => {
                let _ = fs::remove_dir_all(&sd);
                return Err(why);
            }
            Err(why) => skipped.push(format!("{}: not started: {why}", b.label)),
        }
    }
    // Ctrl-C during `up` tears down whatever was made so far.
    let _ = stackmeter_sys::interrupt::catch_interrupts();
    let cpu = cpu.unwrap_or_else(|| std::thread::available_parallelism().map_or(0, |n| n.get() - 1));
    let mut made = Up::default();
    let r = (|| {
        if !hosted.is_empty() {
            let (targets, notes) = build(dir, cpu, &hosted)?;
            if targets.is_empty() && guests.is_empty() && served.is_empty() {
                return Err(LabError::NothingUp(notes));
            }
            (made.targets, made.notes) = (targets, notes);
        }
        let (targets, notes) = crate::proxies::start(cpu, &served)?;
        made.targets.extend(targets);
        made.notes.extend(notes);
        for g in &guests {
            let (targets, note) = boot(g, cpu, secret)?;
            made.targets.extend(targets);
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
