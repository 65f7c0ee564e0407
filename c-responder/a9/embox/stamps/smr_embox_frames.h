/*
 * The driver stamps' interface between Embox's LAN9118 driver (patched
 * by lan9118-stamps.patch), the ring module that keeps the stamps
 * (smr_embox_frames.c) and the responder that reads them
 * (smr_embox_stamps.c). Times are CLOCK_MONOTONIC nanoseconds, the
 * responder's own clock.
 */
#ifndef SMR_EMBOX_FRAMES_H
#define SMR_EMBOX_FRAMES_H

#include <stdint.h>

#define SMR_STAMP_RX 0 /* when the driver read a request from the MAC */
#define SMR_STAMP_TX 1 /* when the driver wrote a reply to the MAC */

/* The board's monotonic clock, ns: the A9's global timer. */
uint64_t smr_embox_clock(void);
/* The driver's hooks: every frame it read (rx) or wrote (tx). */
void smr_embox_frame_rx(const void *frame, int len);
void smr_embox_frame_tx(const void *frame, int len);
/* The time of the frame with sequence seq in ring `which`: 1 and *ns,
 * or 0 when the ring no longer (or never) held it. */
int smr_embox_stamp(int which, uint64_t seq, uint64_t *ns);

#endif
