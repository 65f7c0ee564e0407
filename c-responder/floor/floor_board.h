/*
 * floor_board.h - what the bare-metal path floors' shared core and each
 * board's own files give one another.
 *
 * Why this exists: the Cortex-A9 floor (a9/floor: QEMU's vexpress-a9, its
 * LAN9118) and the virt floor (virt/floor: QEMU's virt, virtio-net) run
 * one loop (floor_main.c) on the same kind of core with the same console
 * (a PL011) and interrupt controller (the A9's GIC and virt's GICv2 have
 * the same registers: floor_arm.c), and the same start-up (start.S) and
 * string.h functions (libc.c). What differs is the board's: the devices'
 * addresses, the messages naming them, the clock and the NIC. Each board
 * folder keeps those (board.h, board.c, its NIC's driver behind smr_nic.h
 * and the two interrupt functions below, its memory map) and builds the
 * shared files with its folder on the include path, so "board.h" here is
 * that board's.
 *
 * The floor's two builds (floor.mk): polling, and -DFLOOR_IRQ, which
 * sleeps in WFI until the NIC's interrupt reaches core 0 through the GIC.
 * Interrupts stay masked in the CPSR (start.S): a signalled interrupt only
 * ends the WFI, it is never taken as an exception.
 */
#ifndef FLOOR_BOARD_H
#define FLOOR_BOARD_H

#include <stdint.h>

/*
 * The board's header defines: FLOOR_UART0 (its PL011's base), FLOOR_GICD
 * and FLOOR_GICC (the GIC's distributor and CPU interface), FLOOR_NO_ADDR
 * and FLOOR_NO_NIC (what the floor says when the address word is 0 or the
 * NIC does not answer), FLOOR_READY_POLL and FLOOR_READY_IRQ (what the
 * ready line says after "with no stack" in each build).
 */
#include "board.h"

/* A 32-bit device register, read and written whole and aligned; nothing
 * else on these boards needs a volatile access. */
#define FLOOR_REG(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/*
 * The IPv4 address to answer for, a.b.c.d, as the 32-bit word a << 24 |
 * b << 16 | c << 8 | d that QEMU's generic loader writes at the start of
 * the board's provisioning area (its linker script's PROV, floor.ld); 0
 * when nothing was written there. The loader stores data= in the guest's
 * byte order and the floor reads it back as a word, so the number on
 * QEMU's command line is the address as written, no byte swapping.
 */
extern const volatile uint32_t floor_ip_word;

/* The board's (board.c): the receive clock, started once; nanoseconds
 * since it started. */
void floor_clock_start(void);
uint64_t floor_now_ns(void);

/* The board's NIC driver (interrupt build only): floor_nic_irq_on makes
 * the NIC raise its line while a received frame waits, and returns the
 * line's GIC interrupt ID; floor_nic_irq_clear clears the cause at the
 * NIC, which lowers the line until the next frame comes. */
uint32_t floor_nic_irq_on(void);
void floor_nic_irq_clear(void);

/* Shared (floor_arm.c): the console, text out, nothing in. */
void floor_console_init(void);
void floor_say(const char *s);
void floor_say_uint(uint32_t v);
void floor_say_hex(uint32_t v);

/*
 * Shared (floor_arm.c), the GIC (interrupt build only): floor_irq_enable
 * lets interrupt ID id through the distributor and the CPU interface to
 * core 0; floor_irq_wait sleeps (WFI) until one is signalled and
 * acknowledges it, returning GICC_IAR's value (ID 1023 when the core woke
 * for nothing); floor_irq_done ends it (GICC_EOIR), given that value,
 * once its cause is cleared at the device.
 */
void floor_irq_enable(uint32_t id);
uint32_t floor_irq_wait(void);
void floor_irq_done(uint32_t iar);

/* Shared (floor_arm.c), called by start.S on an exception (vector: its
 * number, 1 undefined instruction ... 7 FIQ; lr: the exception's link
 * register): names it on the console, never returns. */
void floor_trap(uint32_t vector, uint32_t lr);

#endif
