/*
 * Driver stamps on Embox, its own part: the hooks our patch to Embox's
 * LAN9118 driver (lan9118-stamps.patch) calls, smr_embox_frame_rx() for
 * every frame it has read from the MAC and smr_embox_frame_tx() for every
 * frame it has written to it, and the clock the stamps and the responder
 * share. The rules, the rings and the stamp block are the shared
 * c-responder/stamps (smr_frames.c, smr_driver_stamps.c), which
 * a9/embox/build.sh copies beside this file.
 *
 * Why this exists: the hooks take what the driver has (an int length),
 * and Embox needs its own clock (below). Built with smr_frames.c as a
 * module of its own (stackmeter.frames in the Mybuild): Embox makes a
 * command's symbols local to it, so the driver can only call a library
 * module.
 *
 * The clock: the Cortex-A9's global timer (PERIPHBASE + 0x200: counter
 * low, high, control), a 64-bit counter at PERIPHCLK, half the core's
 * clock: 100 MHz for this template's 200 MHz core and in QEMU's model.
 * Embox's own clock_gettime() adds the private timer's count to its tick
 * count, and a read inside an interrupt handler while a tick is pending
 * comes out one tick (1 ms) early: the driver's receive stamp is taken in
 * one. The responder's smr_now() is this clock too (smr_embox.h:
 * SMR_PLATFORM_CLOCK).
 */
#include "smr_frames.h"

#define SMR_GTIMER ((volatile uint32_t *)0x1e000200u)
#define SMR_GTIMER_NS 10u

uint64_t smr_frames_clock(void) {
    volatile uint32_t *gt = SMR_GTIMER;
    uint32_t hi, lo;
    if (!(gt[2] & 1u)) gt[2] = gt[2] | 1u;
    do {
        hi = gt[1];
        lo = gt[0];
    } while (gt[1] != hi);
    return ((uint64_t)hi << 32 | lo) * SMR_GTIMER_NS;
}

void smr_embox_frame_rx(const void *frame, int len);
void smr_embox_frame_tx(const void *frame, int len);

void smr_embox_frame_rx(const void *frame, int len) {
    if (len > 0) smr_frames_rx(frame, (size_t)len);
}

void smr_embox_frame_tx(const void *frame, int len) {
    if (len > 0) smr_frames_tx(frame, (size_t)len);
}
