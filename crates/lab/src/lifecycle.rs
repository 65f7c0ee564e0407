//! `up`, `status` and `down`: the lab as a whole, made or removed all at
//! once (a failed or interrupted `up` removes what it made).

use crate::a9;
use crate::error::LabError;
use crate::linux::build;
use crate::mcu::{guest as mcu_guest, Firmware, MCU, MCU_SMOLTCP};
use crate::probe::rr_answers;
use crate::qemu::{boot, Guest, QEMU};
use crate::shell::sh;
use crate::state::{is_root, read_state, runs, state_dir};
use stackmeter_proto::auth::Key;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A group of stacks `up` starts, as named on its command line: the
/// Linux ones (kernel-c, lwip-raw, lwip-sock, smoltcp, lwip-xdp), one
/// board in QEMU (a microcontroller firmware: the C engine on lwIP, or
/// the Rust core on smoltcp; Embox or Linux on a Cortex-A9), or all of
/// them (`all`: the boards that are built).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// kernel-c, lwip-raw, lwip-sock, smoltcp and lwip-xdp (when built: `make -C c-responder xdp`).
    Linux,
    /// The C responder's firmware (lwIP) on an emulated Cortex-M3 board (QEMU lm3s6965evb).
    Mcu,
    /// The Rust protocol core on smoltcp as firmware for the same board (make -C c-responder mcu-smoltcp).
    McuSmoltcp,
    /// Embox RTOS with the C responder on an emulated Cortex-A9 (QEMU vexpress-a9; make -C c-responder embox).
    Embox,
    /// Linux with the C responder on the same emulated Cortex-A9 (linux-a9, and linux-a9-rt under SCHED_FIFO; make -C c-responder linux-a9).
    LinuxA9,
    /// All of them (the boards that are built).
    All,
}

/// One emulated board of the lab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Board {
    Mcu(&'static Firmware),
    Embox,
    LinuxA9,
}

impl Board {
    const ALL: [Board; 4] = [Board::Mcu(&MCU), Board::Mcu(&MCU_SMOLTCP), Board::Embox, Board::LinuxA9];

    fn label(self) -> &'static str {
        match self {
            Board::Mcu(fw) => fw.label,
            Board::Embox => "embox",
            Board::LinuxA9 => "linux-a9",
        }
    }

    /// It as QEMU boots it, or why it cannot be (not built).
    fn guest(self, dir: &Path, secret: Option<&Key>) -> Result<Guest, LabError> {
        match self {
            Board::Mcu(fw) if !dir.join(fw.file).is_file() => Err(LabError::NotBuilt {
                path: dir.join(fw.file),
                make: fw.make,
            }),
            Board::Mcu(fw) => mcu_guest(fw, dir, secret),
            Board::Embox => a9::embox(dir),
            Board::LinuxA9 => a9::linux(dir),
        }
    }
}

impl Group {
    /// The boards this group boots, and whether they must (a board named
    /// by itself must; `all` goes on without those not built).
    fn boards(self) -> (Vec<Board>, bool) {
        match self {
            Group::Linux => (vec![], false),
            Group::Mcu => (vec![Board::Mcu(&MCU)], true),
            Group::McuSmoltcp => (vec![Board::Mcu(&MCU_SMOLTCP)], true),
            Group::Embox => (vec![Board::Embox], true),
            Group::LinuxA9 => (vec![Board::LinuxA9], true),
            Group::All => (Board::ALL.to_vec(), false),
        }
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
/// `cpu` (default: the last one), the microcontroller firmware
/// provisioned with `secret` (no other stack takes one here); returns one
/// `LABEL=ADDR:PORT` per target. On failure (or Ctrl-C) everything made
/// so far is removed.
pub fn up(dir: &Path, cpu: Option<usize>, groups: &[Group], secret: Option<Key>) -> Result<Up, LabError> {
    let firmware_only = groups.iter().all(|g| matches!(g, Group::Mcu | Group::McuSmoltcp));
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
    let has_linux = groups.iter().any(|g| matches!(g, Group::Linux | Group::All));
    // Each board once, required when any group that names it requires it.
    let mut wanted: Vec<(Board, bool)> = Vec::new();
    for g in groups {
        let (boards, required) = g.boards();
        for b in boards {
            match wanted.iter_mut().find(|(w, _)| *w == b) {
                Some(w) => w.1 |= required,
                None => wanted.push((b, required)),
            }
        }
    }
    fs::create_dir_all(&sd).map_err(LabError::file(&sd))?;
    let no_qemu = Command::new(QEMU).arg("--version").output().is_err();
    let mut guests = Vec::new();
    let mut skipped = Vec::new();
    for (b, required) in wanted {
        let g = match no_qemu {
            true => Err(LabError::NoQemu(QEMU)),
            false => b.guest(dir, secret.as_ref()),
        };
        match g {
            Ok(g) => guests.push(g),
            Err(why) if required => {
                let _ = fs::remove_dir_all(&sd);
                return Err(why);
            }
            Err(why) => skipped.push(format!("{}: not started: {why}", b.label())),
        }
    }
    // Ctrl-C during `up` tears down whatever was made so far.
    let _ = stackmeter_sys::interrupt::catch_interrupts();
    let cpu = cpu.unwrap_or_else(|| std::thread::available_parallelism().map_or(0, |n| n.get() - 1));
    let mut made = Up::default();
    let r = (|| {
        if has_linux {
            (made.targets, made.notes) = build(dir, cpu)?;
        }
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
