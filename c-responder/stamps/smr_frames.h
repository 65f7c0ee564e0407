/*
 * smr_frames.h - the driver stamps' interface, shared by the RTOS builds
 * that stamp frames in their Ethernet driver (Embox on the Cortex-A9,
 * NuttX on QEMU's virt): between the RTOS's own hook file that the
 * patched driver calls (a9/embox/stamps/smr_embox_frames.c,
 * virt/nuttx/stamps/smr_nuttx_frames.c), the rings that keep the stamps
 * (smr_frames.c) and the responder that reads them (smr_driver_stamps.c).
 *
 * Why this exists: the stamps' logic (which frames, the rings, the stamp
 * block) is the same on every RTOS; how its driver's hooks are declared
 * and which clock is the responder's are not. Each build copies these
 * shared files and its own hook file into its tree. Times are
 * nanoseconds on smr_frames_clock(), the responder's own clock.
 */
#ifndef SMR_FRAMES_H
#define SMR_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#define SMR_STAMP_RX 0 /* when the driver had a request from the NIC */
#define SMR_STAMP_TX 1 /* when the driver had a reply for the NIC */

/* The RTOS's (its hook file): the clock the stamps are taken on, ns, the
 * one the responder's smr_now() reads (or is, SMR_PLATFORM_CLOCK). */
uint64_t smr_frames_clock(void);
/* Called by the RTOS's driver hooks: every frame received (rx) or sent
 * (tx), len bytes from its Ethernet header (frame may be NULL). */
void smr_frames_rx(const void *frame, size_t len);
void smr_frames_tx(const void *frame, size_t len);
/* The time of the frame with sequence seq in ring `which`: 1 and *ns,
 * or 0 when the ring no longer (or never) held it. */
int smr_frames_stamp(int which, uint64_t seq, uint64_t *ns);

#endif
