//! The board around the stack: the serial console (UART0), the clock
//! (SysTick at 1 kHz and its counter for sub-millisecond times), the
//! provisioning block, and what a panic prints. The same services
//! c-responder/mcu/smr_mcu.c gives the C firmware, with the same console
//! words (`, booting`, `, ready `, `: panic: `) that `stackmeter lab up`
//! waits for.

use crate::regs::{self, CPU_HZ, SYST_CVR, UART0_DR, UART0_FR, UART_FR_TXFF};
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicU32, Ordering};

/// The firmware's name on its console lines.
pub const NAME: &str = "stackmeter-mcu-smoltcp";

/// Milliseconds since SysTick started (its interrupt counts them).
static MS: AtomicU32 = AtomicU32::new(0);

/// What every binary does first: paints the stack (for [`stack_peak`])
/// and starts SysTick at 1 kHz from the core clock.
pub fn start() {
    paint_stack();
    let Some(mut cp) = cortex_m::Peripherals::take() else {
        panic!("core peripherals taken twice");
    };
    cp.SYST
        .set_clock_source(cortex_m::peripheral::syst::SystClkSource::Core);
    cp.SYST.set_reload(CPU_HZ / 1000 - 1);
    cp.SYST.clear_current();
    cp.SYST.enable_interrupt();
    cp.SYST.enable_counter();
}

/// SysTick's interrupt: one more millisecond.
pub fn tick() {
    MS.fetch_add(1, Ordering::Relaxed);
}

/// Milliseconds since boot (wraps after 49 days).
pub fn ms() -> u32 {
    MS.load(Ordering::Relaxed)
}

/// Nanoseconds since boot: the millisecond count and how far SysTick has
/// counted down into the current one.
pub fn now_ns() -> u64 {
    loop {
        let ms = MS.load(Ordering::Acquire);
        let v = regs::read(SYST_CVR);
        if ms == MS.load(Ordering::Acquire) {
            let into = u64::from(CPU_HZ / 1000 - 1 - v) * u64::from(1_000_000_000 / CPU_HZ);
            // The count wraps at 2^32 ms; the clock goes on past it.
            return u64::from(ms) * 1_000_000 + into;
        }
    }
}

/// The console: UART0, written by polling (no interrupt, no buffer).
pub struct Console;

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            while regs::read(UART0_FR) & UART_FR_TXFF != 0 {}
            regs::write(UART0_DR, u32::from(b));
        }
        Ok(())
    }
}

/// Prints `NAME: line` and a line end.
pub fn say(line: fmt::Arguments<'_>) {
    let _ = write!(Console, "{NAME}: {line}\r\n");
}

/// Event lines printed per second at most: the console is polled, and on
/// a real UART at 115,200 baud a line costs about 7 ms, so a flood of
/// refusals must not become a flood of lines. The rest are counted and the
/// count printed once the second is over (as the C firmware does).
const EVENTS_PER_S: u32 = 10;

/// The event lines of the current second.
#[derive(Default)]
pub struct Events {
    second: u32,
    lines: u32,
    dropped: u32,
}

impl Events {
    /// Prints the count of lines the last second did not print, once it is
    /// over; called with every event and from the loop.
    pub fn second(&mut self) {
        let s = ms() / 1000;
        if s == self.second {
            return;
        }
        if self.dropped > 0 {
            say(format_args!(
                "{} more event lines not printed (at most {EVENTS_PER_S} a second)",
                self.dropped
            ));
        }
        self.second = s;
        self.lines = 0;
        self.dropped = 0;
    }

    /// One event line, or one more counted.
    pub fn line(&mut self, line: fmt::Arguments<'_>) {
        self.second();
        if self.lines >= EVENTS_PER_S {
            self.dropped += 1;
            return;
        }
        self.lines += 1;
        say(line);
    }
}

/// Address of the provisioning block (memory.x: the last 1 KiB of flash).
const PROV_ADDR: usize = 0x0003_FC00;
/// Bytes of it that are read (the layout in c-responder/mcu/smr_mcu.c).
const PROV_LEN: usize = 124;

/// What the provisioning block says, or the defaults of an erased one.
pub struct Provision {
    /// Whether a valid block was found.
    pub found: bool,
    pub port: u16,
    pub ip: [u8; 4],
    pub mask: [u8; 4],
    pub gateway: [u8; 4],
    pub seed: [u8; 16],
    /// The HMAC key of the shared secret (at most 64 bytes), empty for none.
    pub key: ([u8; 64], usize),
    /// Longest test (s), tests per client, highest rate (bit/s): the
    /// limits a Welcome advertises; 0 is none.
    pub max_test_s: u32,
    pub tests_per_client: u32,
    pub max_rate_bps: u64,
}

/// Reads the provisioning block: `SMRP`, version 1, a secret of at most 64
/// bytes, the addresses, port, seed and limits, little-endian. Without one
/// (erased flash) the board is 198.18.17.2/24 on port 24680 with no secret
/// and no limits.
pub fn provision() -> Provision {
    let mut b = [0u8; PROV_LEN];
    for (i, x) in b.iter_mut().enumerate() {
        // SAFETY: PROV_ADDR..+PROV_LEN is flash, always mapped and readable.
        *x = unsafe { core::ptr::read_volatile((PROV_ADDR + i) as *const u8) };
    }
    let le32 = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let four = |at: usize| [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if &b[..4] != b"SMRP" || b[4] != 1 || b[5] > 64 {
        return Provision {
            found: false,
            port: stackmeter_proto::DEFAULT_PORT,
            ip: [198, 18, 17, 2],
            mask: [255, 255, 255, 0],
            gateway: [198, 18, 17, 1],
            seed: [0; 16],
            key: ([0; 64], 0),
            max_test_s: 0,
            tests_per_client: 0,
            max_rate_bps: 0,
        };
    }
    let mut seed = [0u8; 16];
    seed.copy_from_slice(&b[20..36]);
    let mut key = [0u8; 64];
    let klen = usize::from(b[5]);
    key[..klen].copy_from_slice(&b[36..36 + klen]);
    Provision {
        found: true,
        port: u16::from_le_bytes([b[6], b[7]]),
        ip: four(8),
        mask: four(12),
        gateway: four(16),
        seed,
        key: (key, klen),
        max_test_s: le32(100),
        tests_per_client: le32(104),
        max_rate_bps: u64::from(le32(116)) | u64::from(le32(120)) << 32,
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    cortex_m::interrupt::disable();
    let _ = write!(Console, "{NAME}: panic: {}", info.message());
    if let Some(l) = info.location() {
        let _ = write!(Console, " at {}:{}", l.file(), l.line());
    }
    let _ = Console.write_str("\r\n");
    loop {
        cortex_m::asm::wfi();
    }
}

unsafe extern "C" {
    /// The lowest address the stack may reach (cortex-m-rt's link.x: the
    /// end of .bss), and its top (the end of SRAM).
    static _stack_end: u32;
    static _stack_start: u32;
}

/// What a word of the stack holds until the stack first reaches it.
const PAINT: u32 = 0x5AC3_5AC3;

fn stack_bounds() -> (usize, usize) {
    // Only the symbols' addresses are taken, never their values.
    (
        core::ptr::addr_of!(_stack_end) as usize,
        core::ptr::addr_of!(_stack_start) as usize,
    )
}

/// Fills the stack's unused part with [`PAINT`] (once, from [`start`],
/// when the stack is shallow), so [`stack_peak`] can tell how deep it has
/// ever been.
fn paint_stack() {
    let (low, _) = stack_bounds();
    let sp = cortex_m::register::msp::read() as usize;
    let mut p = low;
    // Leave the 256 bytes under the stack pointer to this function.
    while p + 256 < sp {
        // SAFETY: SRAM between the end of .bss and the stack pointer is
        // owned by no object; only the stack grows into it later.
        unsafe { core::ptr::write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
}

/// The most bytes of stack used since boot: from the top of SRAM down to
/// the lowest word no longer holding [`PAINT`].
pub fn stack_peak() -> usize {
    let (low, high) = stack_bounds();
    let mut p = low;
    // SAFETY: as in `paint_stack`: plain SRAM, read word by word.
    while p < high && unsafe { core::ptr::read_volatile(p as *const u32) } == PAINT {
        p += 4;
    }
    high - p
}
