/*
 * The driver stamps' interface between NuttX's virtio-net driver
 * (patched by virtio-net-stamps.patch), the rings that keep the stamps
 * (smr_nuttx_frames.c) and the responder that reads them
 * (smr_nuttx_stamps.c). Times are CLOCK_MONOTONIC nanoseconds, the
 * responder's own clock (smr_now()).
 */
#ifndef SMR_NUTTX_FRAMES_H
#define SMR_NUTTX_FRAMES_H

#include <stdint.h>

#define SMR_STAMP_RX 0 /* when the driver handed a request to the stack */
#define SMR_STAMP_TX 1 /* when the stack handed a reply to the driver */

/* The driver's hooks: every frame it received (rx) or is to send (tx). */
void smr_nuttx_frame_rx(const void *frame, unsigned int len);
void smr_nuttx_frame_tx(const void *frame, unsigned int len);
/* The time of the frame with sequence seq in ring `which`: 1 and *ns,
 * or 0 when the ring no longer (or never) held it. */
int smr_nuttx_stamp(int which, uint64_t seq, uint64_t *ns);

#endif
