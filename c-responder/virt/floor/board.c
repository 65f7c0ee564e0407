/*
 * board.c - QEMU virt's own part of the path floor (floor_board.h): the
 * architected timer as the receive clock.
 *
 * Why this exists: the console, the GIC and the loop are shared with the
 * Cortex-A9 floor (c-responder/floor); the clock is not, virt's core
 * having the architected timer where the Cortex-A9 has its global timer.
 *
 * The clock: CNTVCT (the virtual count; the virtual offset is 0 on a
 * guest QEMU boots in non-secure SVC) at CNTFRQ ticks a second, which the
 * firmware (here QEMU) sets (62.5 MHz on QEMU 7.2); read with MRRC,
 * turned into nanoseconds without overflow as whole seconds plus the
 * remainder. It runs from reset: there is nothing to start.
 */
#include "floor_board.h"

void floor_clock_start(void) {}

uint64_t floor_now_ns(void) {
    uint32_t lo, hi, freq;
    uint64_t t;
    __asm__ volatile("isb\n\tmrrc p15, 1, %0, %1, c14" : "=r"(lo), "=r"(hi));
    __asm__ volatile("mrc p15, 0, %0, c14, c0, 0" : "=r"(freq));
    if (freq == 0) return 0;
    t = (uint64_t)hi << 32 | lo;
    return t / freq * 1000000000u + t % freq * 1000000000u / freq;
}
