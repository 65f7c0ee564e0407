//! The LM3S6965's registers this firmware touches (UART0, the Ethernet
//! MAC, SysTick), at the data sheet's addresses, which QEMU's lm3s6965evb
//! emulates at the same places (c-responder/mcu/lm3s6965.h has the same
//! list for the C firmware). Every volatile access in the firmware goes
//! through [`read`] and [`write`].

/// A memory-mapped 32-bit register.
#[derive(Clone, Copy)]
pub struct Reg(usize);

pub const UART0_DR: Reg = Reg(0x4000_C000);
pub const UART0_FR: Reg = Reg(0x4000_C018);
/// UART0_FR: the transmit FIFO is full.
pub const UART_FR_TXFF: u32 = 1 << 5;

const MAC: usize = 0x4004_8000;
/// Read: raw interrupt status; write: acknowledge.
pub const MAC_RIS: Reg = Reg(MAC);
pub const MAC_IM: Reg = Reg(MAC + 0x04);
pub const MAC_RCTL: Reg = Reg(MAC + 0x08);
pub const MAC_TCTL: Reg = Reg(MAC + 0x0c);
pub const MAC_DATA: Reg = Reg(MAC + 0x10);
pub const MAC_IA0: Reg = Reg(MAC + 0x14);
pub const MAC_IA1: Reg = Reg(MAC + 0x18);
pub const MAC_THR: Reg = Reg(MAC + 0x1c);
/// Frames waiting in the receive FIFO.
pub const MAC_NP: Reg = Reg(MAC + 0x34);
/// Transmission request (bit 0, set while the MAC sends).
pub const MAC_TR: Reg = Reg(MAC + 0x38);
pub const MAC_INT_RX: u32 = 0x01;
pub const MAC_INT_TXER: u32 = 0x02;
pub const MAC_INT_FOV: u32 = 0x08;
pub const MAC_RCTL_RXEN: u32 = 0x01;
pub const MAC_RCTL_BADCRC: u32 = 0x08;
pub const MAC_RCTL_RSTFIFO: u32 = 0x10;
pub const MAC_TCTL_TXEN: u32 = 0x01;
pub const MAC_TCTL_PADEN: u32 = 0x02;
pub const MAC_TCTL_CRC: u32 = 0x04;
pub const MAC_TCTL_DUPLEX: u32 = 0x08;
/// The MAC's interrupt number.
pub const MAC_IRQ: u16 = 42;

pub const SYST_CVR: Reg = Reg(0xE000_E018);

/// The core clock after reset (RCC's reset value: 200 MHz PLL / 16), which
/// SysTick counts.
pub const CPU_HZ: u32 = 12_500_000;

/// Reads `r`.
#[inline(always)]
pub fn read(r: Reg) -> u32 {
    // SAFETY: every `Reg` above is a register of this part, word-aligned
    // and always mapped; reading one has no effect the firmware does not
    // expect (MAC_DATA pops the FIFO, which only mac.rs reads).
    unsafe { core::ptr::read_volatile(r.0 as *const u32) }
}

/// Writes `v` to `r`.
#[inline(always)]
pub fn write(r: Reg, v: u32) {
    // SAFETY: as for `read`; each write is one the data sheet defines.
    unsafe { core::ptr::write_volatile(r.0 as *mut u32, v) }
}
