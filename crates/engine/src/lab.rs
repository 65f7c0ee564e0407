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
//! `lab up mcu` (or `all`) boots the C responder's microcontroller firmware
//! instead (or as well): QEMU's lm3s6965evb board (a Cortex-M3 with 64 KiB
//! of SRAM) on TAP `smlab3`, the firmware 198.18.16.2, its address and seed
//! written into its provisioning block (the last 1 KiB of flash) through
//! QEMU's loader, with the shared secret when `up` is given one (then every
//! test of it needs `--secret-file` too). It waits for the firmware's
//! console to say it is ready and for a control session's Welcome, and
//! says how long each took from QEMU's start (boot-to-Welcome).
//!
//! The binaries come from `c-responder/` (`make -C c-responder all lwip`,
//! `make -C c-responder mcu`): `--bin-dir`, else
//! `$STACKMETER_RESPONDER_DIR`, else the `c-responder/` folder of the
//! source tree this binary was built from.

use crate::error::Error;
use stackmeter_client::Endpoint;
use stackmeter_proto::auth::Key;
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

/// The microcontroller target: firmware (under the binaries' folder), TAP,
/// subnet number, the MAC QEMU gives the board (the host's neighbour entry
/// for it is static, so the first probe needs no ARP round), and the
/// address of the provisioning block in flash (c-responder/mcu/smr_mcu.c).
const MCU_FIRMWARE: &str = "mcu/build/stackmeter-mcu.elf";
const MCU_TAP: &str = "smlab3";
const MCU_NET: u8 = 16;
const MCU_MAC: &str = "02:53:4d:00:00:03";
const MCU_PROV_ADDR: &str = "0x3fc00";
const QEMU: &str = "qemu-system-arm";
/// Longest wait for the firmware's Welcome (QEMU's start included).
const MCU_BOOT_WAIT: Duration = Duration::from_secs(20);

/// Which stacks `up` starts: the Linux ones (kernel-c, lwip-raw,
/// lwip-sock), the microcontroller firmware, or all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Set {
    Linux,
    Mcu,
    All,
}

/// What `up` made: one `LABEL=ADDR:PORT` per target, and lines for the
/// user (the firmware's boot times).
#[derive(Debug, Default)]
pub struct Up {
    pub targets: Vec<String>,
    pub notes: Vec<String>,
}

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
/// `cpu` (default: the last one), the firmware provisioned with `secret`
/// (the Linux stacks take none here); returns one `LABEL=ADDR:PORT` per
/// target. On failure (or Ctrl-C) everything made so far is removed.
pub fn up(dir: &Path, cpu: Option<usize>, set: Set, secret: Option<Key>) -> Result<Up, Error> {
    if secret.is_some() && set != Set::Mcu {
        return Err(Error::Local(
            "lab up: a secret is provisioned into the firmware only (lab up mcu --secret-file FILE)".into(),
        ));
    }
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
    if set != Set::Mcu {
        for (_, bin, _, _) in STACKS.iter().chain([&("kernel-c", "stackmeter-responder", "", 0)]) {
            if !dir.join(bin).is_file() {
                return Err(Error::Local(format!(
                    "{} not found; build it with `make -C c-responder all lwip` (or set STACKMETER_RESPONDER_DIR)",
                    dir.join(bin).display()
                )));
            }
        }
    }
    if set != Set::Linux {
        if !dir.join(MCU_FIRMWARE).is_file() {
            return Err(Error::Local(format!(
                "{} not found; build it with `make -C c-responder mcu` (or set STACKMETER_RESPONDER_DIR)",
                dir.join(MCU_FIRMWARE).display()
            )));
        }
        if Command::new(QEMU).arg("--version").output().is_err() {
            return Err(Error::Local(format!(
                "{QEMU} not found; install it (Debian: apt-get install qemu-system-arm)"
            )));
        }
    }
    fs::create_dir_all(&sd).map_err(|e| Error::Local(format!("cannot create {}: {e}", sd.display())))?;
    // Ctrl-C during `up` tears down whatever was made so far.
    let _ = stackmeter_sys::interrupt::catch_interrupts();
    let cpu = cpu.unwrap_or_else(|| std::thread::available_parallelism().map_or(0, |n| n.get() - 1));
    let mut made = Up::default();
    let r = (|| {
        if set != Set::Mcu {
            made.targets = build(dir, cpu)?;
        }
        if set != Set::Linux {
            let (target, note) = build_mcu(dir, cpu, secret)?;
            made.targets.push(target);
            made.notes.push(note);
        }
        Ok::<(), String>(())
    })();
    match r {
        Ok(()) => Ok(made),
        Err(e) => {
            let _ = down();
            Err(Error::Local(format!(
                "lab up: {e} (everything made so far was removed)"
            )))
        }
    }
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
    spawn_cmd(&dir.join(bin), bin, label, args).map(|_| ())
}

/// Starts `program` with `args` (its log `LABEL.log` in the state folder)
/// and records its pid under the name its command line will begin with,
/// `bin` (a program that executes another names that one); returns the pid.
fn spawn_cmd(program: &Path, bin: &str, label: &str, args: &[&str]) -> Result<String, String> {
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

/// One rr transaction (1 byte each way) through the real protocol, every
/// wait bounded; a responder that refuses it for want of the shared
/// secret (a lab firmware provisioned with one) answers too.
fn probe(addr: SocketAddr) -> std::io::Result<()> {
    use stackmeter_proto::header::{Mode, SessionHeader};
    use stackmeter_proto::status::Refusal;
    let t = Duration::from_millis(500);
    let mut s = TcpStream::connect_timeout(&addr, t)?;
    s.set_read_timeout(Some(t))?;
    s.set_write_timeout(Some(t))?;
    let h = SessionHeader {
        mode: Mode::Rr,
        req_size: 1,
        resp_size: 1,
        flags: 0,
    };
    s.write_all(&h.emit())?;
    let mut st = [0u8; 8];
    s.read_exact(&mut st)?;
    if &st[..4] == b"SMTR" && st[5] == Refusal::Auth as u8 {
        return Ok(());
    }
    if &st[..4] != b"SMTR" || st[5] != 0 {
        return Err(std::io::Error::other(format!("refused with code {}", st[5])));
    }
    s.write_all(&[0])?;
    s.read_exact(&mut [0u8; 1])
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

/// The firmware's provisioning block (layout in c-responder/mcu/smr_mcu.c):
/// its address, netmask, gateway and port, 16 random bytes, the secret as
/// HMAC keys with it (at most 64 bytes) or none, and no limits.
fn mcu_provision(ip: [u8; 4], port: u16, seed: [u8; 16], secret: Option<&Key>) -> Vec<u8> {
    let key = secret.map_or(&[][..], Key::hmac_key);
    let mut b = Vec::with_capacity(124);
    b.extend_from_slice(b"SMRP");
    b.extend_from_slice(&[1, key.len() as u8]);
    b.extend_from_slice(&port.to_le_bytes());
    b.extend_from_slice(&ip);
    b.extend_from_slice(&[255, 255, 255, 0]);
    b.extend_from_slice(&[ip[0], ip[1], ip[2], 1]);
    b.extend_from_slice(&seed);
    b.extend_from_slice(key);
    b.resize(124, 0);
    b
}

/// Boots the firmware in QEMU on its TAP device and waits for its Welcome;
/// returns its `mcu=ADDR:PORT` line and a note with the boot times.
fn build_mcu(dir: &Path, cpu: usize, secret: Option<Key>) -> Result<(String, String), String> {
    let host = format!("198.18.{MCU_NET}.1/24");
    let ip = [198, 18, MCU_NET, 2];
    let stack = format!("198.18.{MCU_NET}.2");
    // Another device with this subnet would take the firmware's traffic.
    let used = Command::new("ip")
        .args(["-o", "addr", "show", "to", &format!("198.18.{MCU_NET}.0/24")])
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if let Some(l) = String::from_utf8_lossy(&used.stdout).lines().next() {
        let dev = l.split_whitespace().nth(1).unwrap_or("?");
        return Err(format!("198.18.{MCU_NET}.0/24 is already in use on {dev}"));
    }
    sh("ip", &["tuntap", "add", "dev", MCU_TAP, "mode", "tap"])?;
    record(&format!("dev {MCU_TAP}")).map_err(|e| e.to_string())?;
    sh("ip", &["addr", "add", &host, "dev", MCU_TAP])?;
    sh("ip", &["link", "set", MCU_TAP, "mtu", "1500", "up"])?;
    sh(
        "ip",
        &[
            "neigh",
            "replace",
            &stack,
            "lladdr",
            MCU_MAC,
            "dev",
            MCU_TAP,
            "nud",
            "permanent",
        ],
    )?;
    let mut seed = [0u8; 16];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
    let sd = state_dir();
    let prov = sd.join("mcu-provision.bin");
    let console = sd.join("mcu.console");
    fs::write(&prov, mcu_provision(ip, PORT, seed, secret.as_ref())).map_err(|e| e.to_string())?;
    let firmware = dir.join(MCU_FIRMWARE);
    let (cpu_s, fw, serial, loader) = (
        cpu.to_string(),
        firmware.display().to_string(),
        format!("file:{}", console.display()),
        format!("loader,file={},addr={MCU_PROV_ADDR}", prov.display()),
    );
    let nic = format!("tap,ifname={MCU_TAP},script=no,downscript=no,mac={MCU_MAC}");
    let t0 = Instant::now();
    // taskset pins QEMU (all its threads) to the lab's CPU and executes it.
    let pid = spawn_cmd(
        Path::new("taskset"),
        QEMU,
        "mcu",
        &[
            "-c",
            &cpu_s,
            QEMU,
            "-M",
            "lm3s6965evb",
            "-display",
            "none",
            "-monitor",
            "none",
            "-serial",
            &serial,
            "-kernel",
            &fw,
            "-device",
            &loader,
            "-nic",
            &nic,
        ],
    )?;
    let addr: SocketAddr = format!("{stack}:{PORT}").parse().map_err(|e| format!("{e}"))?;
    let mut ready = None;
    let deadline = t0 + MCU_BOOT_WAIT;
    let welcome = loop {
        if stackmeter_sys::interrupt::interrupted() {
            return Err("interrupted".into());
        }
        let text = fs::read_to_string(&console).unwrap_or_default();
        // taskset has executed QEMU within a few ms; after that, gone is gone.
        if t0.elapsed() > Duration::from_millis(500) && !runs(&pid, QEMU) {
            let log = fs::read_to_string(sd.join("mcu.log")).unwrap_or_default();
            // Its own message comes first (a register dump may follow).
            let why = log.lines().find(|l| l.starts_with("qemu")).or(log.lines().next());
            return Err(format!("QEMU exited: {}", why.unwrap_or("(no message)")));
        }
        if let Some(l) = text.lines().find(|l| l.contains(": panic: ")) {
            return Err(format!("the firmware stopped: {}", l.trim()));
        }
        if ready.is_none() && text.contains(", ready ") {
            ready = Some(t0.elapsed());
        }
        if ready.is_some() && probe_welcome(addr, secret).is_ok() {
            break t0.elapsed();
        }
        if Instant::now() > deadline {
            let log = fs::read_to_string(sd.join("mcu.log")).unwrap_or_default();
            return Err(format!(
                "mcu at {addr}: no Welcome within {} s ({})",
                MCU_BOOT_WAIT.as_secs(),
                if ready.is_some() {
                    "the console says ready"
                } else {
                    "nothing ready on the console"
                }
            ) + &log.lines().last().map(|l| format!("; QEMU: {l}")).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let line = format!("mcu={addr}");
    record(&format!("target {line}")).map_err(|e| e.to_string())?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let note = format!(
        "mcu: LM3S6965 in QEMU, firmware ready {:.0} ms and first Welcome {:.0} ms after QEMU started",
        ms(ready.unwrap_or(welcome)),
        ms(welcome)
    );
    record(&format!("boot {note}")).map_err(|e| e.to_string())?;
    Ok((line, note))
}

/// Opens a control session (proving `secret`, if given: the client's own
/// handshake) and reads its status and Welcome: the first thing a
/// throughput test gets from a responder.
fn probe_welcome(addr: SocketAddr, secret: Option<Key>) -> std::io::Result<()> {
    use stackmeter_proto::control::{ServerRecord, HEAD_LEN};
    use stackmeter_proto::header::{Mode, SessionHeader};
    let h = SessionHeader {
        mode: Mode::Control,
        req_size: 0,
        resp_size: 0,
        flags: 0,
    };
    let mut s = stackmeter_client::open_session(&Endpoint::new(addr, secret), &h, Duration::from_millis(200))
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut rec = vec![0u8; HEAD_LEN];
    s.read_exact(&mut rec)?;
    let len = usize::from(u16::from_be_bytes([rec[2], rec[3]]));
    rec.resize(len.max(HEAD_LEN), 0);
    s.read_exact(&mut rec[HEAD_LEN..])?;
    match ServerRecord::parse(&rec) {
        Ok((ServerRecord::Welcome(_), _)) => Ok(()),
        _ => Err(std::io::Error::other("no Welcome after the status record")),
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
