/*
 * Driver stamps on NuttX, the driver's half: our patch to NuttX's
 * virtio-net driver (virtio-net-stamps.patch) calls smr_nuttx_frame_rx()
 * for every frame it hands to the stack and smr_nuttx_frame_tx() for every
 * frame the stack gives it to send; for the frames that are stackmeter
 * echo requests asking for stamps, and the replies to them
 * (docs/protocol.md 4 and 4.3), these keep the sequence number and the
 * time on the responder's clock (CLOCK_MONOTONIC, which is smr_now() on
 * NuttX: its architected timer, to the nanosecond) in two small rings,
 * which the responder reads with smr_nuttx_stamp() (smr_nuttx_stamps.c).
 * The same design as Embox's (c-responder/a9/embox/stamps).
 *
 * In NuttX's flat build the driver and the applications are linked into
 * one image, so the driver calls into this file, built with the
 * responder's application (apps/stackmeter). The driver's receive hook
 * runs where virtio-net gives a received frame to the stack (the network
 * work queue, once the device's interrupt has scheduled it), its send
 * hook where the stack gives it a frame, before the device is told: the
 * equivalents of Linux's software stamps. The rings are written there
 * and read by the responder's task; an entry's sequence is cleared, its
 * time written, then its sequence set, and a reader reads the time
 * between two reads of the sequence, so it never pairs a sequence with
 * another frame's time.
 */
#include "smr_nuttx_frames.h"

#include <stddef.h>
#include <string.h>
#include <time.h>

#define SMR_RING 16

struct smr_ring {
    volatile uint64_t seq[SMR_RING], ns[SMR_RING];
    volatile unsigned next;
};

static struct smr_ring smr_rings[2]; /* received requests, sent replies */

static uint64_t smr_frames_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t smr_be64(const uint8_t *p) {
    uint64_t v = 0;
    int i;
    for (i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}

/* The UDP payload of an Ethernet frame carrying IPv4 and UDP, or NULL;
 * *n its length. */
static const uint8_t *smr_udp_payload(const uint8_t *f, size_t len, size_t *n) {
    const uint8_t *ip = f + 14;
    size_t ihl, ulen;
    if (len < 14 + 20 + 8 || f[12] != 0x08 || f[13] != 0x00) return NULL;
    if ((ip[0] >> 4) != 4 || ip[9] != 17) return NULL;
    ihl = (size_t)(ip[0] & 15) * 4;
    if (len < 14 + ihl + 8) return NULL;
    ulen = (size_t)(ip[ihl + 4] << 8 | ip[ihl + 5]);
    if (ulen < 8 || 14 + ihl + ulen > len) return NULL;
    *n = ulen - 8;
    return ip + ihl + 8;
}

/* Keeps (sequence, now) in ring `which` when the frame is a version 1
 * datagram of `kind` with the stamp block asked for (flags bit 1). */
static void smr_frame(int which, const void *frame, unsigned int len, uint8_t kind) {
    struct smr_ring *r = &smr_rings[which];
    size_t n;
    const uint8_t *p;
    unsigned i;
    if (frame == NULL) return;
    p = smr_udp_payload(frame, len, &n);
    if (!p || n < 40 || memcmp(p, "SMTU", 4) != 0 || p[4] != 1 || p[5] != kind || !(p[7] & 2)) return;
    i = r->next % SMR_RING;
    r->seq[i] = 0;
    r->ns[i] = smr_frames_clock();
    r->seq[i] = smr_be64(p + 8);
    r->next = i + 1;
}

void smr_nuttx_frame_rx(const void *frame, unsigned int len) {
    smr_frame(SMR_STAMP_RX, frame, len, 1);
}

void smr_nuttx_frame_tx(const void *frame, unsigned int len) {
    smr_frame(SMR_STAMP_TX, frame, len, 2);
}

int smr_nuttx_stamp(int which, uint64_t seq, uint64_t *ns) {
    const struct smr_ring *r = &smr_rings[which];
    unsigned i;
    for (i = 0; i < SMR_RING && seq != 0; i++) {
        uint64_t t;
        if (r->seq[i] != seq) continue;
        t = r->ns[i];
        if (r->seq[i] != seq) continue;
        *ns = t;
        return 1;
    }
    return 0;
}
