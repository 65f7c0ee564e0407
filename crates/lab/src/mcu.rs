//! The microcontroller targets: a firmware for QEMU's lm3s6965evb board,
//! its address and seed written into its provisioning block, booted as a
//! [`Guest`] (`qemu.rs`: its own TAP device, ready when its console says
//! so and a control session gets its Welcome). Two firmwares share all of
//! it: the C responder on lwIP (`mcu`) and the Rust protocol core on
//! smoltcp (`mcu-smoltcp`, firmware/mcu-smoltcp); they read the same
//! block.

use crate::boards::{Board, PORT};
use crate::error::LabError;
use crate::qemu::{Guest, Nic};
use crate::state::state_dir;
use stackmeter_proto::auth::Key;
use std::fs;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// The provisioning block's address in flash (the last 1 KiB; its layout
/// is in c-responder/mcu/smr_mcu.c).
pub(crate) const MCU_PROV_ADDR: &str = "0x3fc00";
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

/// The board `b` boots as: QEMU's lm3s6965evb with its firmware and its
/// provisioning block (its address from the table, the port, `seed`,
/// `secret`) written through QEMU's loader.
pub(crate) fn guest(b: &'static Board, dir: &Path, secret: Option<&Key>) -> Result<Guest, LabError> {
    let elf = dir.join(b.image);
    if !elf.is_file() {
        return Err(LabError::NotBuilt {
            path: elf,
            make: b.make,
        });
    }
    let ip = b.link().board().octets();
    let mut seed = [0u8; 16];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .map_err(LabError::file("/dev/urandom"))?;
    let prov = state_dir().join(format!("{}-provision.bin", b.label));
    fs::write(&prov, mcu_provision(ip, PORT, seed, secret)).map_err(LabError::file(&prov))?;
    let args = [
        "-M".to_string(),
        "lm3s6965evb".into(),
        "-kernel".into(),
        elf.display().to_string(),
        "-device".into(),
        format!("loader,file={},addr={MCU_PROV_ADDR}", prov.display()),
    ];
    Ok(Guest {
        board: b,
        args: args.to_vec(),
        nic: Nic::Model(None),
        ready: ", ready ",
        boot_wait: MCU_BOOT_WAIT,
    })
}
