//! `stackmeter lab up|status|down`: real second stacks on this machine.
//!
//! The user scenarios (docs/scenarios.md) compare two implementations of one
//! job (in-stack module vs application on QNX io-sock; kernel stack vs lwIP).
//! `lab up` makes those comparisons reproducible on one Linux host: one TAP
//! device per user-space stack (host side 198.18.N.1/24, the stack
//! 198.18.N.2, from the benchmarking range 198.18.0.0/15), lwIP's raw
//! callback API responder (`lwip-raw`, the in-stack module) and its sockets
//! API responder (`lwip-sock`, the application) on them, and the C responder
//! on the kernel stack (`kernel-c`, 127.0.0.1:24690), all pinned to one CPU.
//! It prints one `LABEL=ADDR:PORT` line per target once each answers a real
//! rr probe, and records what it made in a state file so `status` and `down`
//! find it.
//!
//! The binaries come from `c-responder/` (`make -C c-responder all lwip`):
//! `--bin-dir`, else `$STACKMETER_RESPONDER_DIR`, else the `c-responder/`
//! folder of the source tree this binary was built from.

use crate::error::Error;
use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The host side of each TAP: full-size (1514-byte) Ethernet frames, as on
/// a board's wire. The lwIP programs read frames with their own netif glue
/// (c-responder/src/smr_netif.c), not Debian's tapif, which overruns its
/// receive buffers on frames over 592 bytes (docs/lab.md says why).
const TAP_MTU: &str = "1500";
/// Port of the user-space stacks' responders.
const PORT: u16 = 24680;
/// The kernel-stack C responder's address (a port of its own, so a
/// `stackmeter serve` on the default port keeps running beside it).
const KERNEL_ADDR: &str = "127.0.0.1:24690";

/// One user-space stack: label, responder binary, TAP name, subnet number.
const STACKS: [(&str, &str, &str, u8); 2] = [
    ("lwip-raw", "lwip-raw", "smlab1", 1),
    ("lwip-sock", "lwip-sock", "smlab2", 2),
];

fn state_dir() -> PathBuf {
    std::env::var_os("STACKMETER_LAB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/stackmeter-lab"))
}

/// The folder of the responder binaries: `flag`, else
/// `$STACKMETER_RESPONDER_DIR`, else `c-responder/` of this source tree.
pub fn bin_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| std::env::var_os("STACKMETER_RESPONDER_DIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../c-responder")))
}

fn is_root() -> bool {
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

/// What `up` made, one line each: `pid N NAME`, `dev NAME`, `target L=A`.
fn record(line: &str) -> std::io::Result<()> {
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(state_dir().join("state"))?;
    writeln!(f, "{line}")
}

fn sh(cmd: &str, args: &[&str]) -> Result<(), String> {
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

/// Brings the lab up with the binaries in `dir`, every responder pinned to
/// `cpu` (default: the last one); returns one `LABEL=ADDR:PORT` per target.
/// On failure (or Ctrl-C) everything made so far is removed.
pub fn up(dir: &Path, cpu: Option<usize>) -> Result<Vec<String>, Error> {
    if !is_root() {
        return Err(Error::Local(
            "stackmeter lab needs root (it creates TAP devices); run it with sudo".into(),
        ));
    }
    let sd = state_dir();
    if sd.join("state").exists() {
        return Err(Error::Local(format!(
            "a lab is already up ({}); run `stackmeter lab down` first",
            sd.display()
        )));
    }
    for (_, bin, _, _) in STACKS.iter().chain([&("kernel-c", "stackmeter-responder", "", 0)]) {
        if !dir.join(bin).is_file() {
            return Err(Error::Local(format!(
                "{} not found; build it with `make -C c-responder all lwip` (or set STACKMETER_RESPONDER_DIR)",
                dir.join(bin).display()
            )));
        }
    }
    fs::create_dir_all(&sd).map_err(|e| Error::Local(format!("cannot create {}: {e}", sd.display())))?;
    // Ctrl-C during `up` tears down whatever was made so far.
    let _ = stackmeter_sys::interrupt::catch_interrupts();
    let cpu = cpu.unwrap_or_else(|| std::thread::available_parallelism().map_or(0, |n| n.get() - 1));
    build(dir, cpu).map_err(|e| {
        let _ = down();
        Error::Local(format!("lab up: {e} (everything made so far was removed)"))
    })
}

/// Creates the devices, starts the responders, waits for each to answer.
fn build(dir: &Path, cpu: usize) -> Result<Vec<String>, String> {
    let cpu_s = cpu.to_string();
    let mut targets = Vec::new();
    for (label, bin, tap, n) in STACKS {
        let host = format!("198.18.{n}.1/24");
        let stack = format!("198.18.{n}.2");
        sh("ip", &["tuntap", "add", "dev", tap, "mode", "tap"])?;
        record(&format!("dev {tap}")).map_err(|e| e.to_string())?;
        sh("ip", &["addr", "add", &host, "dev", tap])?;
        sh("ip", &["link", "set", tap, "mtu", TAP_MTU, "up"])?;
        let port = PORT.to_string();
        let args: Vec<&str> = if bin == "lwip-raw" {
            vec![tap, &stack, &port, &cpu_s]
        } else {
            vec![tap, &stack, "--affinity", &cpu_s]
        };
        spawn(dir, bin, label, &args)?;
        targets.push((label, format!("{stack}:{PORT}")));
    }
    spawn(
        dir,
        "stackmeter-responder",
        "kernel-c",
        &["--listen", KERNEL_ADDR, "--affinity", &cpu_s],
    )?;
    targets.insert(0, ("kernel-c", KERNEL_ADDR.to_string()));
    let mut lines = Vec::new();
    for (label, addr) in targets {
        let a: SocketAddr = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
        wait_answers(a).map_err(|e| format!("{label} at {addr}: {e}"))?;
        let line = format!("{label}={addr}");
        record(&format!("target {line}")).map_err(|e| e.to_string())?;
        lines.push(line);
    }
    Ok(lines)
}

fn spawn(dir: &Path, bin: &str, label: &str, args: &[&str]) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let log = fs::File::create(state_dir().join(format!("{label}.log"))).map_err(|e| e.to_string())?;
    let child = Command::new(dir.join(bin))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        // Its own process group: a later Ctrl-C in this shell leaves it alone.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {bin}: {e}"))?;
    record(&format!("pid {} {bin}", child.id())).map_err(|e| e.to_string())
}

/// One rr transaction (1 byte each way) through the real protocol.
fn probe(addr: SocketAddr) -> std::io::Result<()> {
    let t = Duration::from_millis(500);
    let mut s = TcpStream::connect_timeout(&addr, t)?;
    s.set_read_timeout(Some(t))?;
    s.set_write_timeout(Some(t))?;
    let h = stackmeter_proto::header::SessionHeader {
        mode: stackmeter_proto::header::Mode::Rr,
        req_size: 1,
        resp_size: 1,
        flags: 0,
    };
    s.write_all(&h.emit())?;
    let mut st = [0u8; 8];
    s.read_exact(&mut st)?;
    if &st[..4] != b"SMTR" || st[5] != 0 {
        return Err(std::io::Error::other(format!("refused with code {}", st[5])));
    }
    s.write_all(&[0])?;
    s.read_exact(&mut st[..1])
}

fn wait_answers(addr: SocketAddr) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if stackmeter_sys::interrupt::interrupted() {
            return Err("interrupted".into());
        }
        match probe(addr) {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() > deadline => return Err(format!("no answer within 15 s ({e})")),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

fn read_state() -> Vec<String> {
    fs::read_to_string(state_dir().join("state"))
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default()
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
                .is_some_and(|a| probe(a).is_ok());
            (t.to_string(), ok)
        })
        .collect()
}

/// Whether `pid` still runs the program `bin` (not a reused pid).
fn runs(pid: &str, bin: &str) -> bool {
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

/// Stops every recorded process, deletes every recorded device, removes the
/// state. Returns how many things it removed.
pub fn down() -> Result<usize, Error> {
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
        fs::remove_dir_all(&sd).map_err(|e| Error::Local(format!("cannot remove {}: {e}", sd.display())))?;
    }
    Ok(n)
}
