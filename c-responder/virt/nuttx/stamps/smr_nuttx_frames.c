/*
 * Driver stamps on NuttX, its own part: the hooks our patch to NuttX's
 * virtio-net driver (virtio-net-stamps.patch) calls, smr_nuttx_frame_rx()
 * for every frame it hands to the stack and smr_nuttx_frame_tx() for every
 * frame the stack gives it to send, and the clock the stamps are taken on.
 * The rules, the rings and the stamp block are the shared
 * c-responder/stamps (smr_frames.c, smr_driver_stamps.c), as on Embox;
 * virt/nuttx/build.sh copies them beside this file into apps/stackmeter.
 *
 * Why this exists: the hooks take what the driver has (an unsigned
 * length), and the clock is NuttX's. In NuttX's flat build the driver and
 * the applications are linked into one image, so the driver calls into
 * the responder's application. The receive hook runs where virtio-net
 * gives a received frame to the stack (the network work queue, once the
 * device's interrupt has scheduled it), the send hook where the stack
 * gives it a frame, before the device is told: the equivalents of
 * Linux's software stamps.
 *
 * The clock: CLOCK_MONOTONIC, which is the responder's smr_now() on NuttX
 * (the backend's own): its architected timer, to the nanosecond.
 */
#include "smr_frames.h"

#include <time.h>

void smr_nuttx_frame_rx(const void *frame, unsigned int len);
void smr_nuttx_frame_tx(const void *frame, unsigned int len);

uint64_t smr_frames_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void smr_nuttx_frame_rx(const void *frame, unsigned int len) { smr_frames_rx(frame, len); }

void smr_nuttx_frame_tx(const void *frame, unsigned int len) { smr_frames_tx(frame, len); }
