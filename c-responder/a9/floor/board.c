/*
 * board.c - the vexpress-a9 board's part of the path floor (a9.h): the
 * PL011 console, the Cortex-A9 global timer as the receive clock, the
 * provisioned address word, the exception report, and the GIC through
 * which the interrupt build's NIC wakes the core.
 *
 * Why this exists: floor.c should read as the floor's loop and nothing
 * else; the few registers a bare board needs beside its NIC live here.
 * Both builds (polling, interrupt) compile it; the GIC's functions are
 * linked only into the interrupt build (--gc-sections drops them).
 *
 * The console writes only (the floor has nothing to read), after the
 * UART is enabled; QEMU's PL011 needs no baud rate, a real board's boot
 * monitor has set one. The clock is the global timer with prescaler 0:
 * QEMU's model counts one tick every 10 ns whatever the board's clock
 * (hw/timer/a9gtimer.c), hence A9_GT_NS.
 *
 * The GIC (version 1, the Cortex-A9's own) is set up for one interrupt,
 * level-sensitive as the board wires its shared peripheral interrupts:
 * its pending state cleared, a middling priority, core 0 its target, then
 * enabled; the distributor and core 0's CPU interface are enabled with a
 * priority mask that lets every priority through. Nothing is taken as an
 * exception (the CPSR's I bit stays set, start.S): WFI ends when the CPU
 * interface signals the interrupt, and the floor acknowledges it by
 * reading GICC_IAR, as a handler would.
 */
#include "a9.h"

#define UART0 0x10009000u
#define UART_DR A9_REG(UART0 + 0x00)
#define UART_FR A9_REG(UART0 + 0x18)
#define UART_CR A9_REG(UART0 + 0x30)
#define UART_FR_TXFF (1u << 5)
#define UART_CR_UARTEN (1u << 0)
#define UART_CR_TXE (1u << 8)

#define GTIMER 0x1e000200u
#define GT_LO A9_REG(GTIMER + 0x00)
#define GT_HI A9_REG(GTIMER + 0x04)
#define GT_CTRL A9_REG(GTIMER + 0x08)
#define GT_CTRL_ENABLE 1u /* prescaler (bits 15:8) 0: one tick a PERIPHCLK */
#define A9_GT_NS 10u      /* QEMU's global timer: 100 MHz */

#define GICC 0x1e000100u
#define GICC_CTLR A9_REG(GICC + 0x00)
#define GICC_PMR A9_REG(GICC + 0x04)
#define GICC_IAR A9_REG(GICC + 0x0c)
#define GICC_EOIR A9_REG(GICC + 0x10)
#define GICD 0x1e001000u
#define GICD_CTLR A9_REG(GICD + 0x000)
#define GICD_ISENABLER 0x100u /* one bit an ID, 32 IDs a word */
#define GICD_ICPENDR 0x280u
#define GICD_IPRIORITYR 0x400u /* one byte an ID, 4 IDs a word */
#define GICD_ITARGETSR 0x800u
#define GIC_ENABLE 1u
#define GIC_PMR_ALL 0xffu     /* mask nothing (unimplemented low bits read 0) */
#define GIC_PRIORITY 0x80u    /* below the mask whatever bits are implemented */
#define GIC_CORE0 1u          /* ITARGETSR: CPU interface 0 */
#define GIC_IAR_ID(v) ((v) & 0x3ffu)

extern const volatile uint32_t a9_ip_word; /* a9.ld */

void a9_console_init(void) { UART_CR = UART_CR_UARTEN | UART_CR_TXE; }

static void a9_putc(char c) {
    while (UART_FR & UART_FR_TXFF) {
    }
    UART_DR = (uint32_t)(unsigned char)c;
}

void a9_say(const char *s) {
    for (; *s != '\0'; s++) {
        if (*s == '\n') a9_putc('\r');
        a9_putc(*s);
    }
}

void a9_say_uint(uint32_t v) {
    char b[11];
    int i = 10;
    b[i] = '\0';
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    a9_say(b + i);
}

void a9_say_hex(uint32_t v) {
    char b[11] = "0x";
    int i;
    for (i = 0; i < 8; i++) b[2 + i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 15];
    b[10] = '\0';
    a9_say(b);
}

void a9_timer_start(void) { GT_CTRL = GT_CTRL_ENABLE; }

/* The 64-bit counter, its halves read until the high one holds still. */
uint64_t a9_now_ns(void) {
    uint32_t hi, lo;
    do {
        hi = GT_HI;
        lo = GT_LO;
    } while (GT_HI != hi);
    return ((uint64_t)hi << 32 | lo) * A9_GT_NS;
}

uint32_t a9_ip(void) { return a9_ip_word; }

/* Writes ID id's bit in a distributor array of one bit an ID. */
static void gic_bit(uint32_t array, uint32_t id) { A9_REG(GICD + array + 4 * (id / 32)) = 1u << (id % 32); }

/* Sets ID id's byte in a distributor array of one byte an ID. */
static void gic_byte(uint32_t array, uint32_t id, uint32_t v) {
    uint32_t addr = GICD + array + (id & ~3u), shift = 8 * (id & 3u);
    A9_REG(addr) = (A9_REG(addr) & ~(0xffu << shift)) | v << shift;
}

void a9_irq_enable(uint32_t id) {
    gic_bit(GICD_ICPENDR, id);
    gic_byte(GICD_IPRIORITYR, id, GIC_PRIORITY);
    gic_byte(GICD_ITARGETSR, id, GIC_CORE0);
    gic_bit(GICD_ISENABLER, id);
    GICD_CTLR = GIC_ENABLE;
    GICC_PMR = GIC_PMR_ALL;
    GICC_CTLR = GIC_ENABLE;
}

uint32_t a9_irq_wait(void) {
    __asm__ volatile("dsb\n\twfi" ::: "memory");
    return GICC_IAR;
}

void a9_irq_done(uint32_t iar) {
    if (GIC_IAR_ID(iar) != A9_IRQ_SPURIOUS) GICC_EOIR = iar;
}

void a9_trap(uint32_t vector, uint32_t lr) {
    static const char *const name[8] = {"reset", "undefined instruction", "SVC", "prefetch abort",
                                        "data abort", "reserved", "IRQ", "FIQ"};
    a9_say("floor: ");
    a9_say(name[vector & 7]);
    a9_say(" (lr ");
    a9_say_hex(lr);
    a9_say("), stopped\n");
    for (;;) {
    }
}
