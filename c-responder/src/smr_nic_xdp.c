/*
 * smr_nic_xdp.c: an AF_XDP socket as the Ethernet controller of smr_nic.h
 * (the lab's lwip-xdp): frames go from a network device straight to the
 * user-space stack, past the kernel's IP and TCP, the kernel-bypass path
 * DPDK or an AF_XDP driver gives a user-space stack on real hardware.
 *
 * libxdp loads its default XDP program on the device (queue 0), which
 * redirects every frame to this socket. The UMEM, the memory frames live
 * in, is SMR_XDP_FRAMES frames of SMR_XDP_FRAME bytes: the first half is
 * handed to the kernel for receiving (the fill ring), the second half is
 * this driver's for sending, each frame back on a free list once the
 * completion ring says it went. Receive is pull-shaped as smr_nic.h asks:
 * the next descriptor of the RX ring is peeked, read from the UMEM in
 * place, and released (its frame refilled) when the glue is done.
 *
 * The mode is the one any device has (XDP_FLAGS_SKB_MODE, XDP_COPY):
 * generic XDP, one copy into the UMEM each way. A driver with native XDP
 * and zero-copy would save that copy; veth, the lab's device, has neither
 * for AF_XDP, so the copy is part of this path's figures (docs/lab.md).
 * Non-blocking: the caller waits on smr_nic_fd() (poll) and pulls frames
 * until none is left.
 */
#define _GNU_SOURCE
#include "smr_nic.h"

#include <errno.h>
#include <stdio.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xdp/xsk.h>

#define SMR_XDP_FRAMES 4096u
#define SMR_XDP_FRAME XSK_UMEM__DEFAULT_FRAME_SIZE
#define SMR_XDP_RING XSK_RING_CONS__DEFAULT_NUM_DESCS

static struct {
    struct xsk_umem *umem;
    struct xsk_socket *xsk;
    struct xsk_ring_prod fill, tx;
    struct xsk_ring_cons comp, rx;
    uint8_t *area;
    /* The frame held from the RX ring: its place, length, bytes read. */
    int held;
    uint64_t rx_addr;
    size_t rx_len, rx_off;
    /* Frames free for sending (UMEM addresses), and the one being filled. */
    uint64_t free_tx[SMR_XDP_FRAMES / 2];
    unsigned n_free;
    uint64_t tx_addr;
    size_t tx_len, tx_got;
    int tx_bad;
    /* Frames this driver could not send (no free frame, a full TX ring),
     * kicks the kernel refused; and what the last report said. */
    uint64_t tx_nofree, tx_ringfull, kick_err;
    uint64_t said[8];
} smr_xdp;

void smr_nic_xdp_kick(void);
void smr_nic_xdp_report(const char *name);

int smr_nic_fd(void) { return smr_xdp.xsk ? xsk_socket__fd(smr_xdp.xsk) : -1; }

/* The device's own MAC address: the stack answers as the device would. */
static int smr_xdp_mac(const char *name, uint8_t mac[6]) {
    struct ifreq ifr;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;
    if (s < 0) return -1;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, name, strlen(name));
    r = ioctl(s, SIOCGIFHWADDR, &ifr);
    close(s);
    if (r != 0) return -1;
    memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
    return 0;
}

int smr_nic_open(const char *name, uint8_t mac[6]) {
    struct xsk_socket_config cfg;
    uint32_t idx, i;
    size_t size = (size_t)SMR_XDP_FRAMES * SMR_XDP_FRAME;
    if (!name || strlen(name) >= IFNAMSIZ || smr_xdp_mac(name, mac) != 0) return -1;
    smr_xdp.area = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (smr_xdp.area == MAP_FAILED) return -1;
    if (xsk_umem__create(&smr_xdp.umem, smr_xdp.area, size, &smr_xdp.fill, &smr_xdp.comp, NULL) != 0) return -1;
    memset(&cfg, 0, sizeof cfg);
    cfg.rx_size = SMR_XDP_RING;
    cfg.tx_size = SMR_XDP_RING;
    cfg.xdp_flags = XDP_FLAGS_SKB_MODE;
    cfg.bind_flags = XDP_COPY;
    if (xsk_socket__create(&smr_xdp.xsk, name, 0, smr_xdp.umem, &smr_xdp.rx, &smr_xdp.tx, &cfg) != 0) return -1;
    /* The first half receives: all of it into the fill ring. */
    if (xsk_ring_prod__reserve(&smr_xdp.fill, SMR_XDP_FRAMES / 2, &idx) != SMR_XDP_FRAMES / 2) return -1;
    for (i = 0; i < SMR_XDP_FRAMES / 2; i++) *xsk_ring_prod__fill_addr(&smr_xdp.fill, idx + i) = (uint64_t)i * SMR_XDP_FRAME;
    xsk_ring_prod__submit(&smr_xdp.fill, SMR_XDP_FRAMES / 2);
    for (i = 0; i < SMR_XDP_FRAMES / 2; i++) smr_xdp.free_tx[i] = (uint64_t)(SMR_XDP_FRAMES / 2 + i) * SMR_XDP_FRAME;
    smr_xdp.n_free = SMR_XDP_FRAMES / 2;
    return 0;
}

size_t smr_nic_rx_len(void) {
    uint32_t idx;
    while (!smr_xdp.held) {
        const struct xdp_desc *d;
        if (xsk_ring_cons__peek(&smr_xdp.rx, 1, &idx) != 1) return 0;
        d = xsk_ring_cons__rx_desc(&smr_xdp.rx, idx);
        smr_xdp.rx_addr = d->addr;
        smr_xdp.rx_len = d->len;
        smr_xdp.rx_off = 0;
        smr_xdp.held = 1;
        if (d->len < SMR_NIC_FRAME_MIN || d->len > SMR_NIC_FRAME_MAX) smr_nic_rx_done(); /* dropped */
    }
    return smr_xdp.rx_len;
}

void smr_nic_rx_read(void *dst, size_t n) {
    if (n > smr_xdp.rx_len - smr_xdp.rx_off) n = smr_xdp.rx_len - smr_xdp.rx_off;
    memcpy(dst, (const uint8_t *)xsk_umem__get_data(smr_xdp.area, smr_xdp.rx_addr) + smr_xdp.rx_off, n);
    smr_xdp.rx_off += n;
}

void smr_nic_rx_done(void) {
    uint32_t idx;
    if (!smr_xdp.held) return;
    xsk_ring_cons__release(&smr_xdp.rx, 1);
    /* The frame goes back to the kernel for the next receive. The fill
     * ring has room for every receive frame, so this never fails. */
    if (xsk_ring_prod__reserve(&smr_xdp.fill, 1, &idx) == 1) {
        *xsk_ring_prod__fill_addr(&smr_xdp.fill, idx) = xsk_umem__extract_addr(smr_xdp.rx_addr);
        xsk_ring_prod__submit(&smr_xdp.fill, 1);
    }
    smr_xdp.held = 0;
}

/* Frames the kernel has sent go back on the free list. */
static void smr_xdp_reclaim(void) {
    uint32_t idx, n = xsk_ring_cons__peek(&smr_xdp.comp, SMR_XDP_RING, &idx), i;
    for (i = 0; i < n; i++) smr_xdp.free_tx[smr_xdp.n_free++] = *xsk_ring_cons__comp_addr(&smr_xdp.comp, idx + i);
    xsk_ring_cons__release(&smr_xdp.comp, n);
}

int smr_nic_tx_begin(size_t len) {
    smr_xdp.tx_bad = 1;
    if (len < SMR_NIC_FRAME_MIN || len > SMR_NIC_FRAME_MAX) return -1;
    smr_xdp_reclaim();
    if (smr_xdp.n_free == 0) { /* every frame in flight: a busy wire drops it, TCP sends again */
        smr_xdp.tx_nofree++;
        return -1;
    }
    smr_xdp.tx_addr = smr_xdp.free_tx[--smr_xdp.n_free];
    smr_xdp.tx_len = len;
    smr_xdp.tx_got = 0;
    smr_xdp.tx_bad = 0;
    return 0;
}

void smr_nic_tx_write(const void *src, size_t n) {
    if (smr_xdp.tx_bad || n > smr_xdp.tx_len - smr_xdp.tx_got) {
        smr_xdp.tx_bad = 1;
        return;
    }
    memcpy((uint8_t *)xsk_umem__get_data(smr_xdp.area, smr_xdp.tx_addr) + smr_xdp.tx_got, src, n);
    smr_xdp.tx_got += n;
}

int smr_nic_tx_end(void) {
    uint32_t idx;
    struct xdp_desc *d;
    if (smr_xdp.tx_bad || smr_xdp.tx_got != smr_xdp.tx_len || xsk_ring_prod__reserve(&smr_xdp.tx, 1, &idx) != 1) {
        if (smr_xdp.tx_got == smr_xdp.tx_len && !smr_xdp.tx_bad) smr_xdp.tx_ringfull++;
        if (smr_xdp.tx_len) smr_xdp.free_tx[smr_xdp.n_free++] = smr_xdp.tx_addr; /* the frame taken in tx_begin */
        smr_xdp.tx_bad = 1;
        smr_xdp.tx_len = 0;
        return -1;
    }
    d = xsk_ring_prod__tx_desc(&smr_xdp.tx, idx);
    d->addr = smr_xdp.tx_addr;
    d->len = (uint32_t)smr_xdp.tx_len;
    xsk_ring_prod__submit(&smr_xdp.tx, 1);
    smr_xdp.tx_bad = 1;
    smr_xdp.tx_len = 0;
    smr_nic_xdp_kick();
    return 0;
}

/* Copy mode sends only when asked: a kick after each frame, and one per
 * look at the device (smr_lwip_tap.c), so a frame the kernel could not
 * take at its kick (EAGAIN, EBUSY) goes at the next one, not when lwIP
 * happens to send again. */
void smr_nic_xdp_kick(void) {
    /* Nothing the kernel has not taken yet: no system call. */
    if (!smr_xdp.xsk || xsk_prod_nb_free(&smr_xdp.tx, SMR_XDP_RING) == SMR_XDP_RING) return;
    while (sendto(xsk_socket__fd(smr_xdp.xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS) smr_xdp.kick_err++;
        break;
    }
}

/* One line on stderr when a drop counter moved since the last call: the
 * kernel's (XDP_STATISTICS: frames dropped, the RX ring full, the fill
 * ring empty, TX descriptors invalid) and this driver's. */
void smr_nic_xdp_report(const char *name) {
    struct xdp_statistics st;
    socklen_t len = sizeof st;
    uint64_t now[8];
    unsigned i;
    int moved = 0;
    memset(&st, 0, sizeof st);
    if (!smr_xdp.xsk || getsockopt(xsk_socket__fd(smr_xdp.xsk), SOL_XDP, XDP_STATISTICS, &st, &len) != 0) return;
    now[0] = st.rx_dropped;
    now[1] = st.rx_ring_full;
    now[2] = st.rx_fill_ring_empty_descs;
    now[3] = st.rx_invalid_descs;
    now[4] = st.tx_invalid_descs;
    now[5] = smr_xdp.tx_nofree;
    now[6] = smr_xdp.tx_ringfull;
    now[7] = smr_xdp.kick_err;
    for (i = 0; i < 8; i++) moved |= now[i] != smr_xdp.said[i];
    if (!moved) return;
    memcpy(smr_xdp.said, now, sizeof now);
    fprintf(stderr,
            "%s: warning: AF_XDP drops so far: rx dropped %llu, rx ring full %llu, fill ring empty %llu, rx invalid %llu, "
            "tx invalid %llu; no free tx frame %llu, tx ring full %llu, kicks failed %llu\n",
            name, (unsigned long long)now[0], (unsigned long long)now[1], (unsigned long long)now[2],
            (unsigned long long)now[3], (unsigned long long)now[4], (unsigned long long)now[5],
            (unsigned long long)now[6], (unsigned long long)now[7]);
}

/* Checksums and segmentation done by the sender: a device that offloads
 * them hands a frame to XDP with its TCP checksum unfinished (the kernel
 * leaves it to the hardware), and lwIP checks every checksum. So the
 * sending side of the link (the host's end of the veth pair) computes its
 * checksums and sends frames of at most its MTU. 0, or -1. */
int smr_nic_xdp_offloads_off(const char *host_if) {
    static const uint32_t cmds[] = {ETHTOOL_STXCSUM, ETHTOOL_STSO, ETHTOOL_SGSO};
    struct ifreq ifr;
    struct ethtool_value ev;
    unsigned i;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), bad = 0;
    if (s < 0 || strlen(host_if) >= IFNAMSIZ) return -1;
    for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        memset(&ifr, 0, sizeof ifr);
        memcpy(ifr.ifr_name, host_if, strlen(host_if));
        ev.cmd = cmds[i];
        ev.data = 0;
        ifr.ifr_data = (void *)&ev;
        if (ioctl(s, SIOCETHTOOL, &ifr) != 0 && errno != EOPNOTSUPP) bad = 1;
    }
    close(s);
    return bad ? -1 : 0;
}
