//! stackmeter's responder as Rust firmware for the LM3S6965 (a Cortex-M3
//! with 256 KiB of flash and 64 KiB of SRAM; QEMU's lm3s6965evb board):
//! the protocol core every stackmeter responder runs
//! (`stackmeter_proto::machine`) on smoltcp, through the same driver the
//! lab's hosted smoltcp runs on Linux (`stackmeter_smoltcp::Responder`).
//! Beside the C firmware (c-responder/mcu: the C engine on lwIP), it lets
//! one board be measured with each stack and the same responder logic.
//!
//! The board's support is this crate's library (`lib.rs`: the registers,
//! the MAC as smoltcp's `Device`, console, clock, provisioning, panic and
//! interrupts), shared with the path's floor (`bin/floor.rs`). This file
//! boots, sizes everything for 64 KiB, and runs the loop:
//! poll the interface, one round of the responder, then WFI until a frame
//! (the MAC's interrupt) or the next millisecond tick. Interrupts are
//! masked between the last look at the MAC and WFI, so a frame that comes
//! in between still wakes the core.
//!
//! Memory: the sockets' buffers and the sessions live on a heap (a static
//! of [`HEAP_SIZE`] bytes in .bss, so the link's figures count all of it);
//! the boot line says how much of it the responder took, and a console
//! line says how deep the stack has been whenever it goes deeper (it is
//! painted at boot). Object mode and
//! kernel stamps are not offered (no catalogue, no kernel), and the
//! provisioning block's per-address admission limits (connects per second,
//! sessions in their header) are not enforced: the driver's own rule makes
//! room for a newcomer instead (a header-phase session of the address that
//! holds the most slots is reset).

#![no_std]
#![no_main]
#![deny(unsafe_op_in_unsafe_fn)]

extern crate alloc;

use core::cell::RefCell;
use core::fmt;
use core::mem::MaybeUninit;
use cortex_m_rt::entry;
use smoltcp::iface::{Config as IfaceConfig, Interface, SocketSet};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpCidr, Ipv4Address};
use stackmeter_mcu_smoltcp::board::{self, Events, Provision, NAME};
use stackmeter_mcu_smoltcp::mac;
use stackmeter_proto::admit::Advertised;
use stackmeter_proto::auth::Key;
use stackmeter_proto::machine::{Config, CpuTime, NoObjects, Outgoing, Registry};
use stackmeter_smoltcp::{Platform, Responder, Sizes};

/// Bytes of the heap the sockets and sessions are made from.
const HEAP_SIZE: usize = 50 << 10;

/// 64 KiB of SRAM: 4 sessions (a throughput test both ways takes 3; the C
/// firmware holds 6, its buffers coming from pools all its connections
/// share, while smoltcp's are each socket's own), each with the send
/// buffer the C firmware's lwIP gives a connection (4 segments of 1,460
/// bytes) and half its receive window (2 segments: what is left); 4
/// datagrams of UDP each way, datagrams up to 1,472 bytes (one frame), 16
/// count ids.
const SIZES: Sizes = Sizes {
    slots: 4,
    tcp_rx: 2920,
    tcp_tx: 5840,
    udp_packets: 4,
    udp_bytes: 3000,
    udp_max: 1472,
    counts: 16,
};

/// Responses and source writes are cut from this (in flash), as the C
/// firmware cuts them from its 8 KiB payload.
static PAYLOAD: [u8; 8192] = [0; 8192];

/// The throughput tests (2 of 4 UDP streams each: .cargo/config.toml sizes
/// the registry for this board).
static REGISTRY: Registry = Registry::new();

#[global_allocator]
static HEAP: embedded_alloc::LlffHeap = embedded_alloc::LlffHeap::empty();

/// The board as the driver sees it: SysTick's clock, no CPU accounting,
/// event lines on the console, no objects.
struct Board {
    events: RefCell<Events>,
}

impl Platform for Board {
    type Files = NoObjects;

    fn files(&self) -> NoObjects {
        NoObjects
    }

    fn body(_: &mut NoObjects, _: Outgoing) -> Option<&[u8]> {
        None
    }

    fn has_objects(&self) -> bool {
        false
    }

    fn now_ns(&self) -> u64 {
        board::now_ns()
    }

    fn cpu(&self) -> Option<CpuTime> {
        None
    }

    fn event(&self, line: fmt::Arguments<'_>) {
        self.events.borrow_mut().line(line);
    }
}

#[entry]
fn main() -> ! {
    board::start();
    let _ = fmt::Write::write_fmt(
        &mut board::Console,
        format_args!(
            "\r\n{NAME} {}: LM3S6965, smoltcp 0.14, booting\r\n",
            env!("CARGO_PKG_VERSION")
        ),
    );
    {
        static mut MEMORY: [MaybeUninit<u8>; HEAP_SIZE] = [MaybeUninit::uninit(); HEAP_SIZE];
        // SAFETY: called once, before anything allocates; MEMORY is used
        // by nothing else.
        unsafe { HEAP.init(core::ptr::addr_of_mut!(MEMORY) as usize, HEAP_SIZE) }
    }
    let p = board::provision();
    if !p.found {
        board::say(format_args!("not provisioned (no block at the end of flash): defaults"));
    }
    let (mut mac, addr) = mac::Mac::open();

    let mut cfg = IfaceConfig::new(EthernetAddress(addr).into());
    cfg.random_seed = u64::from_le_bytes([
        p.seed[0], p.seed[1], p.seed[2], p.seed[3], p.seed[4], p.seed[5], p.seed[6], p.seed[7],
    ]);
    let mut iface = Interface::new(cfg, &mut mac, Instant::from_micros(0));
    let ip = Ipv4Address::from(p.ip);
    let prefix = u32::from_be_bytes(p.mask).leading_ones() as u8;
    iface.update_ip_addrs(|a| {
        let _ = a.push(IpCidr::new(ip.into(), prefix));
    });
    let _ = iface.routes_mut().add_default_ipv4_route(Ipv4Address::from(p.gateway));

    let mut sockets = SocketSet::new(alloc::vec::Vec::with_capacity(SIZES.slots + 1));
    let platform = Board {
        events: RefCell::new(Events::default()),
    };
    let (mut responder, bind) = Responder::new(platform, &mut sockets, p.port, &REGISTRY, machine(&p), &PAYLOAD, SIZES);
    if let Some(e) = bind {
        board::say(format_args!("udp {}: {e}", p.port));
    }
    let [a, b, c, d] = p.ip;
    board::say(format_args!(
        "limits: {} sessions, 2 throughput tests; header within 5000 ms; heap {} of {HEAP_SIZE} bytes used",
        SIZES.slots,
        HEAP.used()
    ));
    board::say(format_args!(
        "listening on tcp and udp {a}.{b}.{c}.{d}:{}, {}, ready {} ms after reset",
        p.port,
        if p.key.1 > 0 { "secret required" } else { "no secret" },
        board::ms()
    ));
    let mut stack = 0;
    let mut stack_second = 0;
    loop {
        let now = board::now_ns();
        iface.poll(instant(now), &mut mac, &mut sockets);
        let round = responder.round(&mut sockets, now);
        responder.platform().events.borrow_mut().second();
        if round.busy || mac::pending() {
            continue;
        }
        let delay = match (iface.poll_delay(instant(board::now_ns()), &sockets), round.again) {
            (Some(d), Some(w)) => Some(d.min(w)),
            (d, w) => d.or(w),
        };
        if delay.is_some_and(|d| d.total_millis() == 0) {
            continue;
        }
        // Nothing to do: once a second, a line when the stack has gone
        // deeper than ever (its scan reads the unused stack word by word,
        // so it runs only here, never while a frame or a session waits).
        if board::ms() / 1000 != stack_second {
            stack_second = board::ms() / 1000;
            let peak = board::stack_peak();
            if peak > stack {
                stack = peak;
                board::say(format_args!("stack: {peak} bytes at most so far"));
            }
            continue;
        }
        // Sleep until a frame or the next tick (1 ms): the rounds are
        // cheap, and every deadline is checked at the next one.
        cortex_m::interrupt::disable();
        if !mac::pending() {
            cortex_m::asm::wfi();
        }
        // SAFETY: interrupts were enabled before the disable above.
        unsafe { cortex_m::interrupt::enable() };
    }
}

/// The session machine's settings from the provisioning block.
fn machine(p: &Provision) -> Config {
    let key = match p.key.1 {
        0 => None,
        n => Key::new(&p.key.0[..n]).ok(),
    };
    Config {
        seed: p.seed,
        key,
        limits: Advertised {
            max_test_s: p.max_test_s,
            max_tests_per_client: p.tests_per_client,
            max_rate_bps: p.max_rate_bps,
        },
        ..Config::default()
    }
}

/// smoltcp's time from the clock's nanoseconds.
fn instant(ns: u64) -> Instant {
    Instant::from_micros((ns / 1000) as i64)
}
