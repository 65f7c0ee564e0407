//! The LM3S6965 board as both binaries of this crate use it: the
//! responder (`main.rs`: the Rust protocol core on smoltcp) and the path's
//! floor (`bin/floor.rs`: UDP echo answered with no stack, to measure what
//! QEMU's emulated MAC and the TAP device cost by themselves).
//!
//! `regs.rs` is every register the firmware touches, `mac.rs` the Ethernet
//! MAC as smoltcp's `Device`, `board.rs` the console, clock, provisioning
//! block, stack watermark and panic line; the interrupt and fault handlers
//! are below (cortex-m-rt finds them in any crate of the binary).

#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod board;
pub mod mac;
pub mod regs;

use cortex_m_rt::{exception, ExceptionFrame};

#[exception]
fn SysTick() {
    board::tick();
}

#[exception]
unsafe fn DefaultHandler(irqn: i16) {
    if irqn == regs::MAC_IRQ as i16 {
        mac::irq();
    } else {
        panic!("unexpected interrupt {irqn}");
    }
}

#[exception]
unsafe fn HardFault(f: &ExceptionFrame) -> ! {
    panic!("hard fault at pc {:#010x}", f.pc());
}
