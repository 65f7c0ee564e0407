/*
 * a9.h - the board under the Cortex-A9 path floor: QEMU's vexpress-a9
 * (the legacy "A-series" memory map), as the floor's files see it.
 *
 * Why this exists: floor.c, lan9118.c and board.c need the same few
 * things from the board (a register access, the console, a clock, the
 * address the floor answers for, and for the interrupt build the NIC's
 * interrupt and the GIC it goes through), and one header keeps the
 * addresses in one place. Only what the floor's two builds use is here.
 *
 * The map: RAM at 0x60000000 (128 MiB by default), the LAN9118 at
 * 0x4e000000 (lan9118.c), PL011 UART0 at 0x10009000, the Cortex-A9's
 * private peripherals (PERIPHBASE) at 0x1e000000: the GIC's CPU interface
 * 0x100 above, its global timer 0x200 above, the GIC's distributor 0x1000
 * above. The LAN9118's interrupt line is the board's shared peripheral
 * interrupt 15, GIC interrupt ID 32 + 15 = 47.
 */
#ifndef A9_H
#define A9_H

#include <stdint.h>

/* A 32-bit device register. Device registers are read and written whole
 * and aligned; nothing else on this board needs a volatile access. */
#define A9_REG(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* The console (PL011 UART0): text out, nothing in. */
void a9_console_init(void);
void a9_say(const char *s);
void a9_say_uint(uint32_t v);
void a9_say_hex(uint32_t v);

/* The Cortex-A9 global timer, started once; nanoseconds since. */
void a9_timer_start(void);
uint64_t a9_now_ns(void);

/*
 * The IPv4 address to answer for, a.b.c.d, from the 32-bit word at the
 * start of RAM (a9.ld: a9_ip_word, 0x60000000) whose value is
 * a << 24 | b << 16 | c << 8 | d; 0 when nothing was written there. QEMU's
 * generic loader writes it: -device loader,addr=0x60000000,data=0xC6121802,
 * data-len=4 is 198.18.24.2. The loader stores data= in the guest's byte
 * order (little-endian here) and the floor reads it back as a word, so the
 * number on the command line is the address as written, no byte swapping.
 */
uint32_t a9_ip(void);

/*
 * The GIC (interrupt build only). Interrupts stay masked in the CPSR: an
 * interrupt the GIC signals is never taken as an exception here, it only
 * ends a WFI (which wakes on a pending interrupt whatever the mask).
 * a9_irq_enable lets interrupt ID id through the distributor and the CPU
 * interface to core 0; a9_irq_wait sleeps (WFI) until one is signalled
 * and acknowledges it, returning GICC_IAR's value (ID A9_IRQ_SPURIOUS when
 * the core woke for nothing); a9_irq_done ends it (GICC_EOIR), given that
 * value, once its cause is cleared at the device.
 */
#define A9_IRQ_LAN9118 47u
#define A9_IRQ_SPURIOUS 1023u
void a9_irq_enable(uint32_t id);
uint32_t a9_irq_wait(void);
void a9_irq_done(uint32_t iar);

/* The LAN9118's receive interrupt (lan9118.c, beside smr_nic.h; interrupt
 * build only): lan9118_rx_irq_on raises the chip's line, active high,
 * while a received frame's status waits and its cause is not cleared;
 * lan9118_rx_irq_clear clears the cause, which lowers the line until the
 * next frame comes (frames already in the FIFO stay there). */
void lan9118_rx_irq_on(void);
void lan9118_rx_irq_clear(void);

/* Called by start.S on an exception (vector: its number, 1 undefined
 * instruction ... 7 FIQ; lr: the exception's link register); names it on
 * the console, never returns. */
void a9_trap(uint32_t vector, uint32_t lr);

#endif
