//! The floor of the board's path: stackmeter's UDP echo (the `ping` test)
//! answered with no stack, on the same emulated LM3S6965, MAC and TAP
//! device as the two firmwares. What a firmware's round trip costs beyond
//! this is its stack and responder; this much is QEMU's MAC, the TAP
//! device and the host. The twin of bench/floor/nic_echo.c (the TAP and
//! AF_XDP paths), with the same rules: answer ARP for the board's address;
//! turn a UDP datagram to its port carrying a version 1 echo request into
//! the reply in place (kind 2, both responder times the receive time,
//! addresses and ports swapped, UDP checksum 0); drop everything else.
//! The address and port come from the provisioning block, as for the
//! responder. bench/path-floors.sh boots it.

#![no_std]
#![no_main]

use cortex_m_rt::entry;
use smoltcp::phy::{Device, RxToken, TxToken};
use smoltcp::time::Instant;
use stackmeter_mcu_smoltcp::{board, mac};

/// The floor allocates nothing; smoltcp (linked for its `Device` trait,
/// built with `alloc` for the responder) needs an allocator to exist. This
/// one has no memory: an allocation would panic.
#[global_allocator]
static NONE: embedded_alloc::LlffHeap = embedded_alloc::LlffHeap::empty();

#[entry]
fn main() -> ! {
    board::start();
    let p = board::provision();
    let (mut nic, own) = mac::Mac::open();
    let [a, b, c, d] = p.ip;
    board::say(format_args!(
        "floor: answering udp {a}.{b}.{c}.{d}:{} with no stack, ready {} ms after reset",
        p.port,
        board::ms()
    ));
    let mut f = [0u8; 1514];
    loop {
        let Some((rx, tx)) = nic.receive(Instant::from_micros(0)) else {
            cortex_m::interrupt::disable();
            if !mac::pending() {
                cortex_m::asm::wfi();
            }
            // SAFETY: interrupts were enabled before the disable above.
            unsafe { cortex_m::interrupt::enable() };
            continue;
        };
        let now = board::now_ns();
        let len = rx.consume(|frame| {
            f[..frame.len()].copy_from_slice(frame);
            frame.len()
        });
        let out = match u16::from_be_bytes([f[12], f[13]]) {
            0x0806 => arp(&mut f[..len], &own, &p.ip),
            0x0800 => udp(&mut f[..len], &own, &p.ip, p.port, now),
            _ => None,
        };
        if let Some(n) = out {
            tx.consume(n, |b| b.copy_from_slice(&f[..n]));
        }
    }
}

/// An ARP request for `ip`: the reply in place; its length.
fn arp(f: &mut [u8], own: &[u8; 6], ip: &[u8; 4]) -> Option<usize> {
    if f.len() < 42 || f[20..22] != [0, 1] || f[38..42] != ip[..] {
        return None;
    }
    f[21] = 2;
    f.copy_within(22..32, 32); // the asker becomes the target
    f[22..28].copy_from_slice(own);
    f[28..32].copy_from_slice(ip);
    f.copy_within(32..38, 0);
    f[6..12].copy_from_slice(own);
    Some(42)
}

/// A UDP echo request to `ip`:`port`: the reply in place; its length.
fn udp(f: &mut [u8], own: &[u8; 6], ip: &[u8; 4], port: u16, now: u64) -> Option<usize> {
    if f.len() < 34 || f[14] >> 4 != 4 || f[23] != 17 || f[30..34] != ip[..] {
        return None;
    }
    let u = 14 + usize::from(f[14] & 15) * 4;
    if f.len() < u + 8 || u16::from_be_bytes([f[u + 2], f[u + 3]]) != port {
        return None;
    }
    let ulen = usize::from(u16::from_be_bytes([f[u + 4], f[u + 5]]));
    let p = u + 8;
    if ulen < 8 + 40 || u + ulen > f.len() || f[p..p + 4] != *b"SMTU" || f[p + 4] != 1 || f[p + 5] != 1 {
        return None;
    }
    f[p + 5] = 2;
    f[p + 6] = 0;
    f[p + 7] = 1;
    f[p + 24..p + 32].copy_from_slice(&now.to_be_bytes());
    f[p + 32..p + 40].copy_from_slice(&now.to_be_bytes());
    let (mut src, mut sport) = ([0u8; 4], [0u8; 2]);
    src.copy_from_slice(&f[26..30]);
    f.copy_within(30..34, 26);
    f[30..34].copy_from_slice(&src);
    sport.copy_from_slice(&f[u..u + 2]);
    f.copy_within(u + 2..u + 4, u);
    f[u + 2..u + 4].copy_from_slice(&sport);
    f[u + 6..u + 8].copy_from_slice(&[0, 0]);
    f.copy_within(6..12, 0);
    f[6..12].copy_from_slice(own);
    Some(u + ulen)
}
