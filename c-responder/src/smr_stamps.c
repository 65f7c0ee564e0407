/*
 * Kernel timestamps for stamp blocks (docs/protocol.md 4.3), Linux only
 * (SO_TIMESTAMPING, software stamps): turning them on per socket, reading
 * a receive stamp with the data, taking send stamps from the error queue,
 * the stamps of an rr response, and the stamped UDP echo reply. Builds
 * without SMR_TS (other systems, lwIP, -DSMR_NO_TS) compile none of it.
 * The loop (smr_posix.c) hands each function the stamps it works on (a
 * connection's struct smr_ts, a UDP socket's struct smr_uts) and the
 * datagram's buffer; nothing here reaches into the backend's state.
 */
#include "smr_posix_int.h"

#ifdef SMR_TS
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

uint64_t smr_real(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Software stamps on fd: receive, and every send when tx (else only the
 * sends that ask, smr_udp_stamped). OPT_ID keys send stamps. */
int smr_ts_enable(int fd, int tx) {
    int v = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_ID |
            SOF_TIMESTAMPING_OPT_TSONLY | (tx ? SOF_TIMESTAMPING_TX_SOFTWARE : 0);
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &v, sizeof v) == 0;
}

/* The SCM_TIMESTAMPING stamp among msg's control messages (0: none); with
 * key, the OPT_ID key of an error-queue stamp (left alone if none). */
static uint64_t smr_ts_of(struct msghdr *m, uint32_t *key) {
    struct cmsghdr *c;
    uint64_t ns = 0;
    for (c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) {
            struct timespec t;
            memcpy(&t, CMSG_DATA(c), sizeof t);
            ns = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
        } else if (key && ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
                           (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR))) {
            struct sock_extended_err e;
            memcpy(&e, CMSG_DATA(c), sizeof e);
            if (e.ee_origin == SO_EE_ORIGIN_TIMESTAMPING) *key = e.ee_data;
        }
    }
    return ns;
}

/* recvmsg with the receive stamp (and the source address when a != NULL). */
ssize_t smr_ts_recv(int fd, void *buf, size_t len, union smr_addr *a, socklen_t *al, uint64_t *stamp) {
    uint64_t ctl[32];
    struct iovec v;
    struct msghdr m;
    ssize_t n;
    memset(&m, 0, sizeof m);
    v.iov_base = buf;
    v.iov_len = len;
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    if (a) {
        m.msg_name = a;
        m.msg_namelen = *al;
    }
    n = recvmsg(fd, &m, 0);
    if (a) *al = m.msg_namelen;
    *stamp = n >= 0 ? smr_ts_of(&m, NULL) : 0;
    return n;
}

/* One send stamp from fd's error queue: 1 and *key, *ns; 0 when empty. */
int smr_ts_next(int fd, uint32_t *key, uint64_t *ns) {
    uint64_t ctl[32];
    uint8_t d[64];
    struct iovec v;
    struct msghdr m;
    memset(&m, 0, sizeof m);
    v.iov_base = d;
    v.iov_len = sizeof d;
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return 0;
    *key = (uint32_t)-1;
    *ns = smr_ts_of(&m, key);
    return 1;
}

/* A stamped rr response's block: the last read's stamps, the send time
 * now, and the latest response send stamp. */
unsigned smr_ts_block(const struct smr_ts *t, uint64_t v[5]) {
    unsigned f = 1;
    v[0] = t->rx_kernel;
    v[1] = t->app_rx;
    v[2] = smr_real();
    v[3] = t->prev_id;
    v[4] = t->prev_tx;
    if (t->rx_kernel) f |= 2;
    if (t->prev) f |= 4;
    return f;
}

/* A stamped rr session: takes the send stamps waiting on its error queue
 * (keys are stream offsets from the status record's first byte; the one
 * ending the latest complete response is kept), then turns stamps on if
 * the engine just accepted the session. */
void smr_ts_tcp(struct smr_ts *t, const struct smr_conn *c, int fd) {
    uint32_t key;
    uint64_t ns;
    if (!(c->flags & SMR_F_STAMPS)) return;
    if (!t->on) {
        t->on = 1;
        smr_ts_enable(fd, 1);
    }
    while (smr_ts_next(fd, &key, &ns))
        if (c->served && key == (uint32_t)(8u + (uint64_t)c->served * c->resp_size - 1u)) {
            t->prev_id = c->served - 1;
            t->prev_tx = ns;
            t->prev = 1;
        }
}

/* Takes the send stamps waiting on UDP socket fd's error queue: the one
 * of the last stamped reply is kept for the next reply to its client. */
static void smr_uts_take(struct smr_uts *u, int fd) {
    uint32_t key;
    uint64_t ns;
    while (smr_ts_next(fd, &key, &ns))
        if (u->last && key == u->sent - 1) {
            u->prev = 1;
            u->prev_peer = u->last_peer;
            u->prev_seq = u->last_seq;
            u->prev_tx = ns;
        }
}

/* A UDP reply with the stamp block, sent asking for its own send stamp,
 * which is read right after (smr_uts_take). */
void smr_udp_stamped(const struct smr_ctx *x, struct smr_uts *u, int fd, uint8_t *buf, size_t r,
                     const union smr_addr *peer, socklen_t pl, const uint64_t t[3], int wall) {
    uint64_t v[5], ctl[4] = {0, 0, 0, 0};
    unsigned f = wall ? 1u : 0u;
    uint32_t key;
    struct iovec io;
    struct msghdr m;
    struct cmsghdr *c;
    v[0] = t[1];
    v[1] = t[0];
    v[2] = t[2];
    v[3] = u->prev_seq;
    v[4] = u->prev_tx;
    if (wall && t[1]) f |= 2;
    if (u->prev && memcmp(&u->prev_peer, peer, pl) == 0) f |= 4;
    smr_put_block(buf + SMR_UDP_HDR, f, v);
    smr_udp_stamp_tx(buf, t[2]);
    r = smr_udp_seal(x, buf, r);
    memset(&m, 0, sizeof m);
    io.iov_base = buf;
    io.iov_len = r;
    m.msg_name = (void *)(uintptr_t)peer;
    m.msg_namelen = pl;
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = CMSG_SPACE(sizeof(uint32_t));
    c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SO_TIMESTAMPING;
    c->cmsg_len = CMSG_LEN(sizeof(uint32_t));
    key = SOF_TIMESTAMPING_TX_SOFTWARE;
    memcpy(CMSG_DATA(c), &key, sizeof key);
    if (sendmsg(fd, &m, 0) >= 0) {
        u->last = 1;
        u->last_peer = *peer;
        for (u->last_seq = 0, key = 8; key < 16; key++) u->last_seq = u->last_seq << 8 | buf[key];
        u->sent++;
    }
    smr_uts_take(u, fd);
}
#else
/* ISO C wants at least one declaration in a file. */
typedef int smr_stamps_none;
#endif
