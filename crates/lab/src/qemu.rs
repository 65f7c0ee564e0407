//! An emulated board as a lab target: QEMU started on a TAP device of its
//! own, pinned with `taskset`, its console in the state folder, ready
//! when the console says so and a control session gets its Welcome. The
//! microcontroller firmwares (`mcu.rs`) and the Cortex-A9 systems
//! (`a9.rs`) describe their board as a [`Guest`]; this starts it, waits
//! for it and records it, the same way for all of them.

use crate::boards::Board;
use crate::error::LabError;
use crate::probe::welcome;
use crate::shell::{sh, spawn_pinned};
use crate::state::{record, runs, state_dir};
use stackmeter_proto::auth::Key;
use std::fs;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

pub(crate) const QEMU: &str = "qemu-system-arm";

/// One board as `up` boots it: its row of the table (label, link,
/// targets), and what its machine's file made of its image.
pub(crate) struct Guest {
    /// Its row.
    pub(crate) board: &'static Board,
    /// QEMU's arguments before `-serial`, `-nic` (the board, its image).
    pub(crate) args: Vec<String>,
    /// How its NIC is given to QEMU.
    pub(crate) nic: Nic,
    /// The words on the console that say the responder is listening.
    pub(crate) ready: &'static str,
    /// The longest wait for its Welcome, QEMU's start included.
    pub(crate) boot_wait: Duration,
}

/// Checks that the image `elf` of board `b`, whose build wrote the
/// address and MAC it holds into `addr` ("IP MAC"), was built for the
/// table's: one built for another is refused, with the command that
/// builds it again.
pub(crate) fn built_for(b: &Board, elf: &Path, addr: &Path) -> Result<(), LabError> {
    let text = fs::read_to_string(addr).map_err(LabError::file(addr))?;
    let link = b.link();
    let want = format!("{} {}", link.board(), link.mac.unwrap_or_default());
    match text.trim() == want {
        true => Ok(()),
        false => Err(LabError::Boot(format!(
            "{} was built for {}, the lab's table has {want}: build it again with `{}` (c-responder/boards.mk)",
            elf.display(),
            text.trim(),
            b.make
        ))),
    }
}

/// A board's NIC on its TAP device, as QEMU takes it.
#[derive(Clone, Copy)]
pub(crate) enum Nic {
    /// `-nic tap,...`, with this model (none: the board's own NIC).
    Model(Option<&'static str>),
    /// `-netdev tap,...` and `-device NAME,netdev=...`: a device `-nic`
    /// does not take (QEMU 7.2's `-nic` takes PCI models only, and the
    /// virt board's virtio-net is a virtio-mmio device).
    Device(&'static str),
}

/// Boots `g` on CPU `cpu` and waits until it answers (proving `secret`,
/// the one it was provisioned with, if any); returns its target lines and
/// a note with the boot times.
pub(crate) fn boot(g: &Guest, cpu: usize, secret: Option<Key>) -> Result<(Vec<String>, String), LabError> {
    let b = g.board;
    let link = b.link();
    let net = link.net();
    let host = format!("{}/24", link.host());
    // Another device with this subnet would take the board's traffic.
    let used = Command::new("ip")
        .args(["-o", "addr", "show", "to", &net])
        .output()
        .map_err(|e| LabError::Command {
            command: "ip -o addr show".into(),
            why: format!("cannot run ip: {e}"),
        })?;
    if let Some(l) = String::from_utf8_lossy(&used.stdout).lines().next() {
        return Err(LabError::SubnetInUse {
            net,
            dev: l.split_whitespace().nth(1).unwrap_or("?").to_string(),
        });
    }
    let tap = link.device;
    sh("ip", &["tuntap", "add", "dev", tap, "mode", "tap"])?;
    record(&format!("dev {tap}"))?;
    sh("ip", &["addr", "add", &host, "dev", tap])?;
    sh("ip", &["link", "set", tap, "mtu", "1500", "up"])?;
    let ip = link.board().to_string();
    let mac = link.mac.unwrap_or_default();
    sh(
        "ip",
        &["neigh", "replace", &ip, "lladdr", mac, "dev", tap, "nud", "permanent"],
    )?;
    let console = state_dir().join(format!("{}.console", b.label));
    let tap_opts = format!("tap,ifname={tap},script=no,downscript=no");
    let nic: Vec<String> = match g.nic {
        Nic::Model(None) => vec!["-nic".into(), format!("{tap_opts},mac={mac}")],
        Nic::Model(Some(m)) => vec!["-nic".into(), format!("{tap_opts},mac={mac},model={m}")],
        Nic::Device(d) => vec![
            "-netdev".into(),
            format!("{tap_opts},id=n0"),
            "-device".into(),
            format!("{d},netdev=n0,mac={mac}"),
        ],
    };
    let cpu_s = cpu.to_string();
    let serial = format!("file:{}", console.display());
    let mut args: Vec<&str> = g.args.iter().map(String::as_str).collect();
    args.extend(["-display", "none", "-monitor", "none", "-serial", &serial]);
    args.extend(nic.iter().map(String::as_str));
    let t0 = Instant::now();
    // taskset pins QEMU (all its threads) to the lab's CPU and executes it.
    let pid = spawn_pinned(Path::new(QEMU), QEMU, b.label, &cpu_s, &args)?;
    let addr = b.addr();
    let (ready, welcome_at) = wait_ready(g, addr, secret, &pid, t0, &console)?;
    let mut lines = Vec::new();
    for (label, port) in b.targets {
        let line = format!("{label}={}", SocketAddr::from((link.board(), *port)));
        record(&format!("target {line}"))?;
        lines.push(line);
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let note = format!(
        "{}: {} in QEMU, ready {:.0} ms and first Welcome {:.0} ms after QEMU started",
        b.label,
        b.what,
        ms(ready.unwrap_or(welcome_at)),
        ms(welcome_at)
    );
    record(&format!("boot {note}"))?;
    Ok((lines, note))
}

/// Waits for the board in QEMU (pid `pid`, started at `t0`) to say it is
/// ready on its console and to answer a control session at `addr`
/// (proving `secret`); returns how long after `t0` each came (ready,
/// Welcome). A QEMU that exits, a board that panics, or its boot wait
/// passing is an error with the words of the console or QEMU's log.
fn wait_ready(
    g: &Guest,
    addr: SocketAddr,
    secret: Option<Key>,
    pid: &str,
    t0: Instant,
    console: &Path,
) -> Result<(Option<Duration>, Duration), LabError> {
    let label = g.board.label;
    let log_path = state_dir().join(format!("{label}.log"));
    let mut ready = None;
    let deadline = t0 + g.boot_wait;
    loop {
        if stackmeter_sys::interrupt::interrupted() {
            return Err(LabError::Interrupted);
        }
        let text = fs::read_to_string(console).unwrap_or_default();
        // taskset has executed QEMU within a few ms; after that, gone is gone.
        if t0.elapsed() > Duration::from_millis(500) && !runs(pid, QEMU) {
            let log = fs::read_to_string(&log_path).unwrap_or_default();
            // Its own message comes first (a register dump may follow).
            let why = log.lines().find(|l| l.starts_with("qemu")).or(log.lines().next());
            return Err(LabError::Boot(format!(
                "QEMU exited: {}",
                why.unwrap_or("(no message)")
            )));
        }
        if let Some(l) = text.lines().find(|l| l.contains(": panic: ")) {
            return Err(LabError::Boot(format!("{label} stopped: {}", l.trim())));
        }
        if ready.is_none() && text.contains(g.ready) {
            ready = Some(t0.elapsed());
        }
        if ready.is_some() && welcome(addr, secret).is_ok() {
            return Ok((ready, t0.elapsed()));
        }
        if Instant::now() > deadline {
            let log = fs::read_to_string(&log_path).unwrap_or_default();
            return Err(LabError::Boot(
                format!(
                    "{label} at {addr}: no Welcome within {} s ({})",
                    g.boot_wait.as_secs(),
                    if ready.is_some() {
                        "the console says ready"
                    } else {
                        "nothing ready on the console"
                    }
                ) + &log.lines().last().map(|l| format!("; QEMU: {l}")).unwrap_or_default(),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
