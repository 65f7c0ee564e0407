/*
 * board.c - QEMU virt's part of the path floor (virt.h): the PL011
 * console, the architected timer as the receive clock, the provisioned
 * address word, the exception report, and the GICv2 through which the
 * interrupt build's NIC wakes the core.
 *
 * Why this exists: floor.c should read as the floor's loop and nothing
 * else; the few registers a bare board needs beside its NIC live here,
 * as a9/floor/board.c has them for vexpress-a9. Both builds compile it;
 * the GIC's functions are linked only into the interrupt build
 * (--gc-sections drops them).
 *
 * The clock: CNTVCT (the virtual count; the virtual offset is 0 on a
 * guest QEMU boots in non-secure SVC) at CNTFRQ ticks a second, which the
 * firmware (here QEMU) sets; read with MRRC, turned into nanoseconds
 * without overflow as whole seconds plus the remainder.
 *
 * The GIC is set up as a9/floor/board.c sets the Cortex-A9's (GICv2 has
 * the same distributor and CPU interface registers): one interrupt,
 * level-sensitive, middling priority, core 0 its target; WFI ends when it
 * is signalled and the floor acknowledges it by reading GICC_IAR.
 */
#include "virt.h"

#define UART0 0x09000000u
#define UART_DR VIRT_REG(UART0 + 0x00)
#define UART_FR VIRT_REG(UART0 + 0x18)
#define UART_CR VIRT_REG(UART0 + 0x30)
#define UART_FR_TXFF (1u << 5)
#define UART_CR_UARTEN (1u << 0)
#define UART_CR_TXE (1u << 8)

#define GICD 0x08000000u
#define GICC 0x08010000u
#define GICD_CTLR VIRT_REG(GICD + 0x000)
#define GICD_ISENABLER 0x100u
#define GICD_ICPENDR 0x280u
#define GICD_IPRIORITYR 0x400u
#define GICD_ITARGETSR 0x800u
#define GICC_CTLR VIRT_REG(GICC + 0x00)
#define GICC_PMR VIRT_REG(GICC + 0x04)
#define GICC_IAR VIRT_REG(GICC + 0x0c)
#define GICC_EOIR VIRT_REG(GICC + 0x10)
#define GIC_ENABLE 1u
#define GIC_PMR_ALL 0xffu
#define GIC_PRIORITY 0x80u
#define GIC_CORE0 1u
#define GIC_IAR_ID(v) ((v) & 0x3ffu)

extern const volatile uint32_t virt_ip_word; /* virt.ld */

void virt_console_init(void) { UART_CR = UART_CR_UARTEN | UART_CR_TXE; }

static void virt_putc(char c) {
    while (UART_FR & UART_FR_TXFF) {
    }
    UART_DR = (uint32_t)(unsigned char)c;
}

void virt_say(const char *s) {
    for (; *s != '\0'; s++) {
        if (*s == '\n') virt_putc('\r');
        virt_putc(*s);
    }
}

void virt_say_uint(uint32_t v) {
    char b[11];
    int i = 10;
    b[i] = '\0';
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    virt_say(b + i);
}

void virt_say_hex(uint32_t v) {
    char b[11] = "0x";
    int i;
    for (i = 0; i < 8; i++) b[2 + i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 15];
    b[10] = '\0';
    virt_say(b);
}

uint64_t virt_now_ns(void) {
    uint32_t lo, hi, freq;
    uint64_t t;
    __asm__ volatile("isb\n\tmrrc p15, 1, %0, %1, c14" : "=r"(lo), "=r"(hi));
    __asm__ volatile("mrc p15, 0, %0, c14, c0, 0" : "=r"(freq));
    if (freq == 0) return 0;
    t = (uint64_t)hi << 32 | lo;
    return t / freq * 1000000000u + t % freq * 1000000000u / freq;
}

uint32_t virt_ip(void) { return virt_ip_word; }

static void gic_bit(uint32_t array, uint32_t id) { VIRT_REG(GICD + array + 4 * (id / 32)) = 1u << (id % 32); }

static void gic_byte(uint32_t array, uint32_t id, uint32_t v) {
    uint32_t addr = GICD + array + (id & ~3u), shift = 8 * (id & 3u);
    VIRT_REG(addr) = (VIRT_REG(addr) & ~(0xffu << shift)) | v << shift;
}

void virt_irq_enable(uint32_t id) {
    gic_bit(GICD_ICPENDR, id);
    gic_byte(GICD_IPRIORITYR, id, GIC_PRIORITY);
    gic_byte(GICD_ITARGETSR, id, GIC_CORE0);
    gic_bit(GICD_ISENABLER, id);
    GICD_CTLR = GIC_ENABLE;
    GICC_PMR = GIC_PMR_ALL;
    GICC_CTLR = GIC_ENABLE;
}

uint32_t virt_irq_wait(void) {
    __asm__ volatile("dsb\n\twfi" ::: "memory");
    return GICC_IAR;
}

void virt_irq_done(uint32_t iar) {
    if (GIC_IAR_ID(iar) != VIRT_IRQ_SPURIOUS) GICC_EOIR = iar;
}

void a9_trap(uint32_t vector, uint32_t lr) {
    static const char *const name[8] = {"reset", "undefined instruction", "SVC", "prefetch abort",
                                        "data abort", "reserved", "IRQ", "FIQ"};
    virt_say("floor: ");
    virt_say(name[vector & 7]);
    virt_say(" (lr ");
    virt_say_hex(lr);
    virt_say("), stopped\n");
    for (;;) {
    }
}
