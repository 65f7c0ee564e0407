/*
 * Driver stamps on Embox, the driver's half: our patch to Embox's LAN9118
 * driver (lan9118-stamps.patch) calls smr_embox_frame_rx() for every
 * frame it has read from the MAC and smr_embox_frame_tx() for every frame
 * it has written to it; for the frames that are stackmeter echo requests
 * asking for stamps, and the replies to them (docs/protocol.md 4 and
 * 4.3), these keep the sequence number and the time, on the responder's
 * clock (smr_embox_clock(), which is smr_now() on Embox), in two small rings, which the
 * responder reads with smr_embox_stamp() (smr_embox_stamps.c, the
 * responder's half).
 *
 * A module of its own (stackmeter.frames in the Mybuild): Embox makes a
 * command's symbols local to it, so the driver can only call a library
 * module. The rings are this file's state because the driver's hooks
 * have no context to pass; they are written in the driver's interrupt
 * handler (receive) and send path and read by the responder's loop. An
 * entry's sequence is cleared, its time written, then its sequence set;
 * a reader reads the time between two reads of the sequence, so it never
 * pairs a sequence with another frame's time.
 */
#include "smr_embox_frames.h"

#include <string.h>

#define SMR_RING 16

struct smr_ring {
    volatile uint64_t seq[SMR_RING], ns[SMR_RING];
    volatile unsigned next;
};

static struct smr_ring smr_rings[2]; /* received requests, sent replies */

/* The Cortex-A9's global timer (PERIPHBASE + 0x200: counter low, high,
 * control), a 64-bit counter at PERIPHCLK, half the core's clock: 100 MHz
 * for this template's 200 MHz core and in QEMU's model. Embox's own
 * clock_gettime() adds the private timer's count to its tick count, and a
 * read inside an interrupt handler while a tick is pending comes out one
 * tick (1 ms) early: the driver's receive stamp is taken in one. */
#define SMR_GTIMER ((volatile uint32_t *)0x1e000200u)
#define SMR_GTIMER_NS 10u

uint64_t smr_embox_clock(void) {
    volatile uint32_t *gt = SMR_GTIMER;
    uint32_t hi, lo;
    if (!(gt[2] & 1u)) gt[2] = gt[2] | 1u;
    do {
        hi = gt[1];
        lo = gt[0];
    } while (gt[1] != hi);
    return ((uint64_t)hi << 32 | lo) * SMR_GTIMER_NS;
}

static uint64_t smr_be64(const uint8_t *p) {
    uint64_t v = 0;
    int i;
    for (i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}

/* The UDP payload of an Ethernet frame carrying IPv4 and UDP, or NULL;
 * *n its length. */
static const uint8_t *smr_udp_payload(const uint8_t *f, int len, size_t *n) {
    const uint8_t *ip = f + 14;
    size_t ihl, ulen;
    if (len < 14 + 20 + 8 || f[12] != 0x08 || f[13] != 0x00) return NULL;
    if ((ip[0] >> 4) != 4 || ip[9] != 17) return NULL;
    ihl = (size_t)(ip[0] & 15) * 4;
    if ((size_t)len < 14 + ihl + 8) return NULL;
    ulen = (size_t)(ip[ihl + 4] << 8 | ip[ihl + 5]);
    if (ulen < 8 || 14 + ihl + ulen > (size_t)len) return NULL;
    *n = ulen - 8;
    return ip + ihl + 8;
}

/* Keeps (sequence, now) in ring `which` when the frame is a version 1
 * datagram of `kind` with the stamp block asked for (flags bit 1). */
static void smr_frame(int which, const void *frame, int len, uint8_t kind) {
    struct smr_ring *r = &smr_rings[which];
    size_t n;
    const uint8_t *p = smr_udp_payload(frame, len, &n);
    unsigned i;
    if (!p || n < 40 || memcmp(p, "SMTU", 4) != 0 || p[4] != 1 || p[5] != kind || !(p[7] & 2)) return;
    i = r->next % SMR_RING;
    r->seq[i] = 0;
    r->ns[i] = smr_embox_clock();
    r->seq[i] = smr_be64(p + 8);
    r->next = i + 1;
}

void smr_embox_frame_rx(const void *frame, int len) {
    smr_frame(SMR_STAMP_RX, frame, len, 1);
}

void smr_embox_frame_tx(const void *frame, int len) {
    smr_frame(SMR_STAMP_TX, frame, len, 2);
}

int smr_embox_stamp(int which, uint64_t seq, uint64_t *ns) {
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
