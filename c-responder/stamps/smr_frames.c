/*
 * smr_frames.c - driver stamps, the driver's half (smr_frames.h), one copy
 * for every RTOS that stamps frames in its Ethernet driver: the patched
 * driver's hooks (the RTOS's own hook file) pass every frame received and
 * sent; for the frames that are stackmeter echo requests asking for
 * stamps, and the replies to them (docs/protocol.md 4 and 4.3), these keep
 * the sequence number and the time, on the responder's clock
 * (smr_frames_clock()), in two small rings, which the responder reads
 * with smr_frames_stamp() (smr_driver_stamps.c, the responder's half).
 *
 * Why this exists: the UDP echo write-up split its round trip into stack
 * and application time by stamping frames in its board's Ethernet driver;
 * Embox and NuttX do the same here with one copy of the rules. The rings
 * are this file's state because the driver's hooks have no context to
 * pass; they are written where the driver sees a frame (its interrupt
 * handler or work queue, its send path) and read by the responder's loop.
 * An entry's sequence is cleared, its time written, then its sequence
 * set; a reader reads the time between two reads of the sequence, so it
 * never pairs a sequence with another frame's time.
 */
#include "smr_frames.h"

#include <string.h>

#define SMR_RING 16

struct smr_ring {
    volatile uint64_t seq[SMR_RING], ns[SMR_RING];
    volatile unsigned next;
};

static struct smr_ring smr_rings[2]; /* received requests, sent replies */

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
static void smr_frame(int which, const void *frame, size_t len, uint8_t kind) {
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

void smr_frames_rx(const void *frame, size_t len) { smr_frame(SMR_STAMP_RX, frame, len, 1); }

void smr_frames_tx(const void *frame, size_t len) { smr_frame(SMR_STAMP_TX, frame, len, 2); }

int smr_frames_stamp(int which, uint64_t seq, uint64_t *ns) {
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
