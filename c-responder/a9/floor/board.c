/*
 * board.c - the vexpress-a9 board's own part of the path floor
 * (floor_board.h): the Cortex-A9 global timer as the receive clock.
 *
 * Why this exists: the console, the GIC and the loop are shared with the
 * virt floor (c-responder/floor); the clock is not, the Cortex-A9 having
 * its own global timer where virt's core has the architected timer.
 *
 * The global timer runs with prescaler 0: QEMU's model counts one tick
 * every 10 ns whatever the board's clock (hw/timer/a9gtimer.c), hence
 * A9_GT_NS.
 */
#include "floor_board.h"

#define GT_LO FLOOR_REG(A9_GTIMER + 0x00)
#define GT_HI FLOOR_REG(A9_GTIMER + 0x04)
#define GT_CTRL FLOOR_REG(A9_GTIMER + 0x08)
#define GT_CTRL_ENABLE 1u /* prescaler (bits 15:8) 0: one tick a PERIPHCLK */
#define A9_GT_NS 10u      /* QEMU's global timer: 100 MHz */

void floor_clock_start(void) { GT_CTRL = GT_CTRL_ENABLE; }

/* The 64-bit counter, its halves read until the high one holds still. */
uint64_t floor_now_ns(void) {
    uint32_t hi, lo;
    do {
        hi = GT_HI;
        lo = GT_LO;
    } while (GT_HI != hi);
    return ((uint64_t)hi << 32 | lo) * A9_GT_NS;
}
