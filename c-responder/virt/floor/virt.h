/*
 * virt.h - the board under the virt path floor: QEMU's virt machine
 * (Cortex-A7 or A15, GICv2, virtio-mmio), as the floor's files see it.
 *
 * Why this exists: floor.c, virtio_net.c and board.c need the same few
 * things from the board (a register access, the console, a clock, the
 * address the floor answers for, and for the interrupt build the NIC's
 * interrupt and the GIC it goes through), and one header keeps the
 * addresses in one place, as a9/floor/a9.h does for vexpress-a9.
 *
 * The map (QEMU's hw/arm/virt.c, 32-bit): RAM at 0x40000000, whose first
 * bytes hold the device tree QEMU makes (it puts it at the start of RAM
 * for a kernel that is not Linux); the GICv2's distributor at 0x08000000
 * and its CPU interface at 0x08010000; PL011 UART0 at 0x09000000; 32
 * virtio-mmio transports from 0x0a000000, 0x200 apart, transport n's
 * interrupt being shared peripheral interrupt 16 + n, GIC ID 48 + n. The
 * clock is the architected timer (CNTVCT, at CNTFRQ: 62.5 MHz on QEMU
 * 7.2).
 */
#ifndef VIRT_H
#define VIRT_H

#include <stdint.h>

/* A 32-bit device register, read and written whole and aligned. */
#define VIRT_REG(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* The console (PL011 UART0): text out, nothing in. */
void virt_console_init(void);
void virt_say(const char *s);
void virt_say_uint(uint32_t v);
void virt_say_hex(uint32_t v);

/* The architected timer's virtual count, in nanoseconds since reset. */
uint64_t virt_now_ns(void);

/*
 * The IPv4 address to answer for, a.b.c.d, from the 32-bit word at
 * 0x40100000 (virt.ld: virt_ip_word, 1 MiB into RAM, past QEMU's device
 * tree) whose value is a << 24 | b << 16 | c << 8 | d; 0 when nothing was
 * written there. QEMU's generic loader writes it: -device loader,
 * addr=0x40100000,data=0xC6121602,data-len=4 is 198.18.22.2 (data= in
 * the guest's byte order, read back as a word: no byte swapping).
 */
uint32_t virt_ip(void);

/*
 * The GIC (interrupt build only), as a9.h's: interrupts stay masked in
 * the CPSR, a signalled one only ends a WFI. virt_irq_enable lets ID id
 * through to core 0; virt_irq_wait sleeps until one is signalled and
 * returns GICC_IAR (ID VIRT_IRQ_SPURIOUS when it woke for nothing);
 * virt_irq_done ends it once its cause is cleared at the device.
 */
#define VIRT_IRQ_VIRTIO0 48u
#define VIRT_IRQ_SPURIOUS 1023u
void virt_irq_enable(uint32_t id);
uint32_t virt_irq_wait(void);
void virt_irq_done(uint32_t iar);

/* The virtio-net device's interrupt (virtio_net.c, beside smr_nic.h;
 * interrupt build only): its GIC ID once smr_nic_open found it, and the
 * acknowledgement at the device (InterruptACK), which lowers the line. */
uint32_t virtio_net_irq(void);
void virtio_net_irq_clear(void);

/* Called by start.S (the Cortex-A9 floor's, a9/floor/start.S, which is
 * plain ARMv7-A) on an exception: names it on the console, never
 * returns. Its name is start.S's. */
void a9_trap(uint32_t vector, uint32_t lr);

#endif
