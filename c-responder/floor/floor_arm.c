/*
 * floor_arm.c - the devices both bare-metal path floors' boards have, at
 * the addresses their board.h gives (floor_board.h): the PL011 console,
 * the GIC through which the interrupt build's NIC wakes the core, and the
 * exception report.
 *
 * Why this exists: vexpress-a9 and QEMU's virt put the same PL011 and the
 * same GIC registers at different addresses; one copy serves both floors,
 * whose board.c keeps only the clock. Both builds (polling, interrupts)
 * compile it; the GIC's functions are linked only into the interrupt
 * build (--gc-sections drops them).
 *
 * The console writes only (the floor has nothing to read), after the
 * UART is enabled; QEMU's PL011 needs no baud rate, a real board's boot
 * monitor has set one.
 *
 * The GIC (version 1 on the Cortex-A9, version 2 on virt: the same
 * distributor and CPU interface registers) is set up for one interrupt,
 * level-sensitive as both boards wire their shared peripheral interrupts:
 * its pending state cleared, a middling priority, core 0 its target, then
 * enabled; the distributor and core 0's CPU interface are enabled with a
 * priority mask that lets every priority through. Nothing is taken as an
 * exception (the CPSR's I bit stays set, start.S): WFI ends when the CPU
 * interface signals the interrupt, and the floor acknowledges it by
 * reading GICC_IAR, as a handler would.
 */
#include "floor_board.h"

#define UART_DR FLOOR_REG(FLOOR_UART0 + 0x00)
#define UART_FR FLOOR_REG(FLOOR_UART0 + 0x18)
#define UART_CR FLOOR_REG(FLOOR_UART0 + 0x30)
#define UART_FR_TXFF (1u << 5)
#define UART_CR_UARTEN (1u << 0)
#define UART_CR_TXE (1u << 8)

#define GICC_CTLR FLOOR_REG(FLOOR_GICC + 0x00)
#define GICC_PMR FLOOR_REG(FLOOR_GICC + 0x04)
#define GICC_IAR FLOOR_REG(FLOOR_GICC + 0x0c)
#define GICC_EOIR FLOOR_REG(FLOOR_GICC + 0x10)
#define GICD_CTLR FLOOR_REG(FLOOR_GICD + 0x000)
#define GICD_ISENABLER 0x100u /* one bit an ID, 32 IDs a word */
#define GICD_ICPENDR 0x280u
#define GICD_IPRIORITYR 0x400u /* one byte an ID, 4 IDs a word */
#define GICD_ITARGETSR 0x800u
#define GIC_ENABLE 1u
#define GIC_PMR_ALL 0xffu  /* mask nothing (unimplemented low bits read 0) */
#define GIC_PRIORITY 0x80u /* below the mask whatever bits are implemented */
#define GIC_CORE0 1u       /* ITARGETSR: CPU interface 0 */
#define GIC_IAR_ID(v) ((v) & 0x3ffu)
#define GIC_SPURIOUS 1023u

void floor_console_init(void) { UART_CR = UART_CR_UARTEN | UART_CR_TXE; }

static void floor_putc(char c) {
    while (UART_FR & UART_FR_TXFF) {
    }
    UART_DR = (uint32_t)(unsigned char)c;
}

void floor_say(const char *s) {
    for (; *s != '\0'; s++) {
        if (*s == '\n') floor_putc('\r');
        floor_putc(*s);
    }
}

void floor_say_uint(uint32_t v) {
    char b[11];
    int i = 10;
    b[i] = '\0';
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    floor_say(b + i);
}

void floor_say_hex(uint32_t v) {
    char b[11] = "0x";
    int i;
    for (i = 0; i < 8; i++) b[2 + i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 15];
    b[10] = '\0';
    floor_say(b);
}

/* Writes ID id's bit in a distributor array of one bit an ID. */
static void gic_bit(uint32_t array, uint32_t id) { FLOOR_REG(FLOOR_GICD + array + 4 * (id / 32)) = 1u << (id % 32); }

/* Sets ID id's byte in a distributor array of one byte an ID. */
static void gic_byte(uint32_t array, uint32_t id, uint32_t v) {
    uint32_t addr = FLOOR_GICD + array + (id & ~3u), shift = 8 * (id & 3u);
    FLOOR_REG(addr) = (FLOOR_REG(addr) & ~(0xffu << shift)) | v << shift;
}

void floor_irq_enable(uint32_t id) {
    gic_bit(GICD_ICPENDR, id);
    gic_byte(GICD_IPRIORITYR, id, GIC_PRIORITY);
    gic_byte(GICD_ITARGETSR, id, GIC_CORE0);
    gic_bit(GICD_ISENABLER, id);
    GICD_CTLR = GIC_ENABLE;
    GICC_PMR = GIC_PMR_ALL;
    GICC_CTLR = GIC_ENABLE;
}

uint32_t floor_irq_wait(void) {
    __asm__ volatile("dsb\n\twfi" ::: "memory");
    return GICC_IAR;
}

void floor_irq_done(uint32_t iar) {
    if (GIC_IAR_ID(iar) != GIC_SPURIOUS) GICC_EOIR = iar;
}

void floor_trap(uint32_t vector, uint32_t lr) {
    static const char *const name[8] = {"reset", "undefined instruction", "SVC", "prefetch abort",
                                        "data abort", "reserved", "IRQ", "FIQ"};
    floor_say("floor: ");
    floor_say(name[vector & 7]);
    floor_say(" (lr ");
    floor_say_hex(lr);
    floor_say("), stopped\n");
    for (;;) {
    }
}
