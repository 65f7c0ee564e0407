//! The microcontroller targets: a firmware booted in QEMU's lm3s6965evb
//! board on its own TAP device, its address and seed written into its
//! provisioning block, ready when its console says so and a control
//! session gets its Welcome. Two firmwares share all of it: the C
//! responder on lwIP (`mcu`) and the Rust protocol core on smoltcp
//! (`mcu-smoltcp`, firmware/mcu-smoltcp); they read the same block.

use crate::error::LabError;
use crate::linux::PORT;
use crate::probe::welcome;
use crate::shell::{sh, spawn_cmd};
use crate::state::{record, runs, state_dir};
use stackmeter_proto::auth::Key;
use std::fs;
use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// One firmware as the lab runs it: its label, its file under the
/// binaries' folder and how to build it, its TAP device and subnet number,
/// and the MAC QEMU gives the board (the host's neighbour entry for it is
/// static, so the first probe needs no ARP round).
pub(crate) struct Firmware {
    pub(crate) label: &'static str,
    pub(crate) file: &'static str,
    pub(crate) make: &'static str,
    tap: &'static str,
    net: u8,
    mac: &'static str,
}

/// The C responder's engine on lwIP (c-responder/mcu).
pub(crate) const MCU: Firmware = Firmware {
    label: "mcu",
    file: "mcu/build/stackmeter-mcu.elf",
    make: "make -C c-responder mcu",
    tap: "smlab3",
    net: 16,
    mac: "02:53:4d:00:00:03",
};

/// The Rust protocol core on smoltcp (firmware/mcu-smoltcp).
pub(crate) const MCU_SMOLTCP: Firmware = Firmware {
    label: "mcu-smoltcp",
    file: "mcu/build/stackmeter-mcu-smoltcp.elf",
    make: "make -C c-responder mcu-smoltcp",
    tap: "smlab6",
    net: 17,
    mac: "02:53:4d:00:00:06",
};

/// The provisioning block's address in flash (the last 1 KiB; its layout
/// is in c-responder/mcu/smr_mcu.c).
pub(crate) const MCU_PROV_ADDR: &str = "0x3fc00";
pub(crate) const QEMU: &str = "qemu-system-arm";
/// Longest wait for the firmware's Welcome (QEMU's start included).
pub(crate) const MCU_BOOT_WAIT: Duration = Duration::from_secs(20);

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

/// Boots firmware `fw` in QEMU on its TAP device and waits for its
/// Welcome; returns its `LABEL=ADDR:PORT` line and a note with the boot
/// times.
pub(crate) fn build_mcu(
    fw: &Firmware,
    dir: &Path,
    cpu: usize,
    secret: Option<Key>,
) -> Result<(String, String), LabError> {
    let (label, tap, net) = (fw.label, fw.tap, fw.net);
    let host = format!("198.18.{net}.1/24");
    let ip = [198, 18, net, 2];
    let stack = format!("198.18.{net}.2");
    // Another device with this subnet would take the firmware's traffic.
    let used = Command::new("ip")
        .args(["-o", "addr", "show", "to", &format!("198.18.{net}.0/24")])
        .output()
        .map_err(|e| LabError::Command {
            command: "ip -o addr show".into(),
            why: format!("cannot run ip: {e}"),
        })?;
    if let Some(l) = String::from_utf8_lossy(&used.stdout).lines().next() {
        return Err(LabError::SubnetInUse {
            net: format!("198.18.{net}.0/24"),
            dev: l.split_whitespace().nth(1).unwrap_or("?").to_string(),
        });
    }
    sh("ip", &["tuntap", "add", "dev", tap, "mode", "tap"])?;
    record(&format!("dev {tap}"))?;
    sh("ip", &["addr", "add", &host, "dev", tap])?;
    sh("ip", &["link", "set", tap, "mtu", "1500", "up"])?;
    sh(
        "ip",
        &[
            "neigh",
            "replace",
            &stack,
            "lladdr",
            fw.mac,
            "dev",
            tap,
            "nud",
            "permanent",
        ],
    )?;
    let mut seed = [0u8; 16];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .map_err(LabError::file("/dev/urandom"))?;
    let sd = state_dir();
    let prov = sd.join(format!("{label}-provision.bin"));
    let console = sd.join(format!("{label}.console"));
    fs::write(&prov, mcu_provision(ip, PORT, seed, secret.as_ref())).map_err(LabError::file(&prov))?;
    let firmware = dir.join(fw.file);
    let nic = format!("tap,ifname={tap},script=no,downscript=no,mac={}", fw.mac);
    let (cpu_s, fw, serial, loader) = (
        cpu.to_string(),
        firmware.display().to_string(),
        format!("file:{}", console.display()),
        format!("loader,file={},addr={MCU_PROV_ADDR}", prov.display()),
    );
    let t0 = Instant::now();
    // taskset pins QEMU (all its threads) to the lab's CPU and executes it.
    let pid = spawn_cmd(
        Path::new("taskset"),
        QEMU,
        label,
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
    let addr = SocketAddr::from((ip, PORT));
    let (ready, welcome_at) = wait_ready(label, addr, secret, &pid, t0, &console)?;
    let line = format!("{label}={addr}");
    record(&format!("target {line}"))?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let note = format!(
        "{label}: LM3S6965 in QEMU, firmware ready {:.0} ms and first Welcome {:.0} ms after QEMU started",
        ms(ready.unwrap_or(welcome_at)),
        ms(welcome_at)
    );
    record(&format!("boot {note}"))?;
    Ok((line, note))
}

/// Waits for the firmware in QEMU (pid `pid`, started at `t0`) to say it
/// is ready on its console and to answer a control session at `addr`
/// (proving `secret`, the one it was provisioned with);
/// returns how long after `t0` each came (ready, Welcome). A QEMU that
/// exits, a firmware that panics, or [`MCU_BOOT_WAIT`] passing is an error
/// with the words of the console or QEMU's log.
fn wait_ready(
    label: &str,
    addr: SocketAddr,
    secret: Option<Key>,
    pid: &str,
    t0: Instant,
    console: &Path,
) -> Result<(Option<Duration>, Duration), LabError> {
    let sd = state_dir();
    let mut ready = None;
    let deadline = t0 + MCU_BOOT_WAIT;
    let welcome_at = loop {
        if stackmeter_sys::interrupt::interrupted() {
            return Err(LabError::Interrupted);
        }
        let text = fs::read_to_string(console).unwrap_or_default();
        // taskset has executed QEMU within a few ms; after that, gone is gone.
        if t0.elapsed() > Duration::from_millis(500) && !runs(pid, QEMU) {
            let log = fs::read_to_string(sd.join(format!("{label}.log"))).unwrap_or_default();
            // Its own message comes first (a register dump may follow).
            let why = log.lines().find(|l| l.starts_with("qemu")).or(log.lines().next());
            return Err(LabError::Boot(format!(
                "QEMU exited: {}",
                why.unwrap_or("(no message)")
            )));
        }
        if let Some(l) = text.lines().find(|l| l.contains(": panic: ")) {
            return Err(LabError::Boot(format!("the firmware stopped: {}", l.trim())));
        }
        if ready.is_none() && text.contains(", ready ") {
            ready = Some(t0.elapsed());
        }
        if ready.is_some() && welcome(addr, secret).is_ok() {
            break t0.elapsed();
        }
        if Instant::now() > deadline {
            let log = fs::read_to_string(sd.join(format!("{label}.log"))).unwrap_or_default();
            return Err(LabError::Boot(
                format!(
                    "{label} at {addr}: no Welcome within {} s ({})",
                    MCU_BOOT_WAIT.as_secs(),
                    if ready.is_some() {
                        "the console says ready"
                    } else {
                        "nothing ready on the console"
                    }
                ) + &log.lines().last().map(|l| format!("; QEMU: {l}")).unwrap_or_default(),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ok((ready, welcome_at))
}
