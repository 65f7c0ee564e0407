//! The LM3S6965's Ethernet MAC as smoltcp's [`Device`]: the Rust twin of
//! c-responder/mcu/smr_nic_stellaris.c, the same data sheet, read through
//! smoltcp's token API instead of smr_nic.h.
//!
//! The MAC has a 2 KiB receive FIFO and a 2 KiB transmit FIFO, each read
//! or written one 32-bit word at a time through one data register; no DMA.
//! A received frame comes as [length: 2 bytes, little-endian, counting
//! itself, the frame and the FCS][frame][FCS: 4 bytes], padded to whole
//! words; NP counts the frames waiting. A frame to send is written as
//! [length of the frame after its 14-byte header: 2 bytes][frame], then
//! TR sends it; the MAC pads short frames and adds the FCS. A frame is
//! copied once each way, between the FIFO and a buffer of this driver.
//! The interrupt only wakes the core from WFI (main.rs); frames are pulled
//! by the main loop.

use crate::regs::{self, *};
use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};
use smoltcp::time::Instant;

/// Largest frame without its FCS (1,500 bytes of payload).
const FRAME_MAX: usize = 1514;
/// Smallest frame the MAC hands over (the FCS excluded).
const FRAME_MIN: usize = 14;
/// Reads of TR before a frame is given up (the MAC still sending the last).
const TX_SPIN: u32 = 100_000;

/// The MAC and its two frame buffers.
pub struct Mac {
    rx: [u8; FRAME_MAX + 4],
    tx: [u8; FRAME_MAX + 2],
    /// Frames dropped: too short or long, or no room to send.
    pub dropped: u32,
}

/// The MAC's interrupt, as the NVIC numbers it.
#[derive(Clone, Copy)]
struct MacIrq;

// SAFETY: 42 is the LM3S6965's Ethernet interrupt, a valid NVIC number.
unsafe impl cortex_m::interrupt::InterruptNumber for MacIrq {
    fn number(self) -> u16 {
        regs::MAC_IRQ
    }
}

/// Acknowledges the MAC's interrupt (called from the interrupt).
pub fn irq() {
    regs::write(MAC_RIS, MAC_INT_RX | MAC_INT_FOV);
}

/// Whether a frame waits in the receive FIFO.
pub fn pending() -> bool {
    regs::read(MAC_NP) != 0
}

impl Mac {
    /// Resets the FIFOs, turns the MAC on (full duplex, FCS added, bad
    /// FCS dropped) and its receive interrupt (which only wakes the core
    /// from WFI); returns it with its address
    /// (QEMU's `-nic mac=`, or a locally administered one when unset).
    pub fn open() -> (Mac, [u8; 6]) {
        regs::write(MAC_IM, 0);
        regs::write(MAC_RCTL, MAC_RCTL_RSTFIFO);
        regs::write(MAC_RCTL, MAC_RCTL_RXEN | MAC_RCTL_BADCRC);
        regs::write(
            MAC_TCTL,
            MAC_TCTL_TXEN | MAC_TCTL_PADEN | MAC_TCTL_CRC | MAC_TCTL_DUPLEX,
        );
        regs::write(MAC_THR, 0x3f);
        regs::write(MAC_RIS, 0x7f);
        let (mut a0, mut a1) = (regs::read(MAC_IA0), regs::read(MAC_IA1));
        if a0 | (a1 & 0xffff) == 0 {
            // 02:53:4d:00:00:06, as `lab up mcu-smoltcp` gives it.
            a0 = 0x004d_5302;
            a1 = 0x0600;
            regs::write(MAC_IA0, a0);
            regs::write(MAC_IA1, a1);
        }
        let a = a0.to_le_bytes();
        let b = a1.to_le_bytes();
        regs::write(MAC_IM, MAC_INT_RX | MAC_INT_FOV);
        // SAFETY: the handler (lib.rs's DefaultHandler) only acknowledges it.
        unsafe { cortex_m::peripheral::NVIC::unmask(MacIrq) };
        let mac = Mac {
            rx: [0; FRAME_MAX + 4],
            tx: [0; FRAME_MAX + 2],
            dropped: 0,
        };
        (mac, [a[0], a[1], a[2], a[3], b[0], b[1]])
    }

    /// Pulls the next frame into `rx`; its length, or `None` when none
    /// waits. Frames of impossible lengths are dropped and counted.
    fn pull(&mut self) -> Option<usize> {
        loop {
            if !pending() {
                return None;
            }
            let w = regs::read(MAC_DATA);
            let total = (w & 0xffff) as usize;
            let words = if total >= 4 { total.div_ceil(4) - 1 } else { 0 };
            let len = total.saturating_sub(6);
            if !(FRAME_MIN..=FRAME_MAX).contains(&len) {
                for _ in 0..words {
                    let _ = regs::read(MAC_DATA);
                }
                self.dropped += 1;
                continue;
            }
            self.rx[..2].copy_from_slice(&w.to_le_bytes()[2..]);
            // The rest of the frame and its FCS, whole words.
            for i in 0..words {
                let at = 2 + 4 * i;
                self.rx[at..at + 4].copy_from_slice(&regs::read(MAC_DATA).to_le_bytes());
            }
            return Some(len);
        }
    }
}

/// A received frame.
pub struct Rx<'a>(&'a [u8]);

/// Room for one frame to send.
pub struct Tx<'a> {
    buf: &'a mut [u8; FRAME_MAX + 2],
    dropped: &'a mut u32,
}

impl phy::RxToken for Rx<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.0)
    }
}

impl phy::TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let len = len.min(FRAME_MAX);
        // The frame is written two bytes in, after the length field.
        let r = f(&mut self.buf[2..2 + len]);
        if len < FRAME_MIN || !send(&mut self.buf[..2 + len], len) {
            *self.dropped += 1;
        }
        r
    }
}

/// Writes `[length][frame]` (the frame already at `buf[2..]`) into the
/// transmit FIFO and asks the MAC to send it; false if the MAC stayed busy.
fn send(buf: &mut [u8], len: usize) -> bool {
    let mut spin = TX_SPIN;
    while regs::read(MAC_TR) & 1 != 0 {
        spin -= 1;
        if spin == 0 {
            return false;
        }
    }
    if regs::read(MAC_RIS) & MAC_INT_TXER != 0 {
        regs::write(MAC_RIS, MAC_INT_TXER); // also empties the FIFO
    }
    buf[..2].copy_from_slice(&((len - 14) as u16).to_le_bytes());
    for w in buf.chunks(4) {
        let mut b = [0u8; 4];
        b[..w.len()].copy_from_slice(w);
        regs::write(MAC_DATA, u32::from_le_bytes(b));
    }
    regs::write(MAC_TR, 1);
    true
}

impl Device for Mac {
    type RxToken<'a> = Rx<'a>;
    type TxToken<'a> = Tx<'a>;

    fn receive(&mut self, _: Instant) -> Option<(Rx<'_>, Tx<'_>)> {
        let len = self.pull()?;
        let tx = Tx {
            buf: &mut self.tx,
            dropped: &mut self.dropped,
        };
        Some((Rx(&self.rx[..len]), tx))
    }

    fn transmit(&mut self, _: Instant) -> Option<Tx<'_>> {
        Some(Tx {
            buf: &mut self.tx,
            dropped: &mut self.dropped,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ethernet;
        c.max_transmission_unit = FRAME_MAX;
        c.max_burst_size = Some(1);
        c
    }
}
