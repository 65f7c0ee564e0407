/*
 * smr_driver_stamps.c - driver stamps, the responder's half, one copy for
 * every RTOS that stamps frames in its Ethernet driver (Embox, NuttX): a
 * request asking for stamps is answered with the stamp block of
 * docs/protocol.md 4.3: the time the driver saw this request as the
 * kernel receive stamp, the responder's two application times, and the
 * time the driver saw the previous stamped reply to the same client as
 * the earlier send stamp (smr_frames.c keeps them).
 *
 * Why this exists: an RTOS has no SO_TIMESTAMPING; with SMR_DRIVER_TS the
 * POSIX backend calls smr_udp_driver_stamped() for a stamped echo, and
 * the host's `ping --timestamps` then shows the board's stack in (driver
 * to application), its application, and its stack out (application to
 * driver). The last reply is this file's state: the backend's loop calls
 * it with no place of its own for it.
 *
 * The clock: the driver's stamps and the backend's smr_now() must be one.
 * Where the RTOS's own clock will do (NuttX: CLOCK_MONOTONIC), smr_now()
 * is the backend's and the hook file reads the same; where it will not
 * (Embox, whose clock_gettime() comes out a tick early in an interrupt
 * handler), the build defines SMR_PLATFORM_CLOCK and smr_now() is here,
 * the hook file's smr_frames_clock().
 */
#include "smr_posix_int.h"
#include "smr_frames.h"

#include <string.h>

#ifdef SMR_PLATFORM_CLOCK
/* The backend's clock (SMR_PLATFORM_CLOCK): the driver stamps' own. */
uint64_t smr_now(void) { return smr_frames_clock(); }
#endif

static union smr_addr smr_last_peer;
static uint64_t smr_last_seq;
static int smr_last;

void smr_udp_driver_stamped(const struct smr_ctx *x, int fd, uint8_t *buf, size_t r, const union smr_addr *peer,
                            socklen_t pl, uint64_t app_rx) {
    uint64_t v[5] = {0, 0, 0, 0, 0}, seq = 0;
    unsigned f = 1, i;
    for (i = 8; i < 16; i++) seq = seq << 8 | buf[i];
    /* The engine set flags bit 1 in buf[7]: r holds the block. */
    if (smr_frames_stamp(SMR_STAMP_RX, seq, &v[0])) f |= 2;
    v[1] = app_rx;
    if (smr_last && memcmp(&smr_last_peer, peer, pl) == 0 && smr_frames_stamp(SMR_STAMP_TX, smr_last_seq, &v[4])) {
        v[3] = smr_last_seq;
        f |= 4;
    }
    v[2] = smr_now();
    smr_put_block(buf + SMR_UDP_HDR, f, v);
    smr_udp_stamp_tx(buf, v[2]);
    r = smr_udp_seal(x, buf, r);
    if (SMR_SOCK(sendto)(fd, buf, r, 0, &peer->sa, pl) >= 0) {
        memcpy(&smr_last_peer, peer, pl);
        smr_last_seq = seq;
        smr_last = 1;
    }
}
