/*
 * smr_netif.c: the lwIP side of an Ethernet driver (smr_netif.h) over any
 * controller behind smr_nic.h. What it does is what every board's
 * ethernetif does, written once:
 *
 * Receive: the controller says how long its next frame is; a pbuf (chain)
 * of exactly that length is allocated with pbuf_alloc(PBUF_RAW, len,
 * SMR_NETIF_RX_PBUF), the frame is read into it piece by piece (each
 * piece no longer than its pbuf), and handed to nif->input. No frame is
 * ever copied into a buffer of a size fixed in advance.
 *
 * Why the type is a build choice: on a board lwIP's pools are lwIP's own
 * and PBUF_POOL is right (a fixed number of fixed buffers, nothing to
 * fragment). Debian's liblwip 2.1.3, which the lab links, has a PBUF_POOL
 * element smaller than its pbuf_alloc() fills: its memp.c includes glibc's
 * <netinet/tcp.h> (through lwIP's sockets.h), whose TCP_MSS (512, a socket
 * option's name) silently replaces lwipopts.h's 1460, so each element is
 * a malloc() of 616 bytes, while pbuf.c, which sees 1460, puts up to
 * 1,536 bytes in one. Its own tapif reads every frame into such a pbuf, so
 * a frame over 592 bytes overruns the heap (the MTU 576 the lab once ran
 * at; docs/lab.md). The lab builds with -DSMR_NETIF_RX_PBUF=PBUF_RAM: one
 * malloc() of the frame's size, correct whatever the pools are.
 *
 * ETH_PAD_SIZE (a board's choice, for 4-byte aligned IP headers) is
 * allocated and skipped around the controller's bytes as lwIP expects.
 */
#include <limits.h> /* SSIZE_MAX first: the unix port's arch.h defines ssize_t without it */

#include "smr_netif.h"
#include "smr_nic.h"

#include "lwip/etharp.h"
#include "lwip/pbuf.h"
#include "netif/ethernet.h"
#if LWIP_IPV6
#include "lwip/ethip6.h"
#endif

#ifndef SMR_NETIF_RX_PBUF
#define SMR_NETIF_RX_PBUF PBUF_POOL
#endif

struct smr_netif_stats smr_netif_stats;

static err_t smr_netif_tx(struct netif *nif, struct pbuf *p) {
    struct pbuf *q;
    int r = -1;
    (void)nif;
#if ETH_PAD_SIZE
    pbuf_remove_header(p, ETH_PAD_SIZE);
#endif
    if (p->tot_len <= SMR_NIC_FRAME_MAX && smr_nic_tx_begin(p->tot_len) == 0) {
        for (q = p; q; q = q->next) smr_nic_tx_write(q->payload, q->len);
        r = smr_nic_tx_end();
    }
#if ETH_PAD_SIZE
    pbuf_add_header(p, ETH_PAD_SIZE);
#endif
    if (r != 0) {
        smr_netif_stats.tx_err++;
        return ERR_IF;
    }
    smr_netif_stats.tx++;
    return ERR_OK;
}

err_t smr_netif_init(struct netif *nif) {
    if (smr_nic_open((const char *)nif->state, nif->hwaddr) != 0) return ERR_IF;
    nif->hwaddr_len = 6;
    nif->name[0] = 'e';
    nif->name[1] = 'n';
    nif->mtu = 1500;
    nif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET;
    nif->output = etharp_output;
#if LWIP_IPV6
    nif->output_ip6 = ethip6_output;
#endif
    nif->linkoutput = smr_netif_tx;
    return ERR_OK;
}

unsigned smr_netif_poll(struct netif *nif, unsigned max) {
    unsigned n = 0;
    size_t len;
    while (n < max && (len = smr_nic_rx_len()) != 0) {
        struct pbuf *p = NULL, *q;
        n++;
        if (len <= SMR_NIC_FRAME_MAX) p = pbuf_alloc(PBUF_RAW, (u16_t)(len + ETH_PAD_SIZE), SMR_NETIF_RX_PBUF);
        if (!p) {
            smr_nic_rx_done(); /* dropped: the sender's TCP sends it again */
            smr_netif_stats.rx_nomem++;
            continue;
        }
#if ETH_PAD_SIZE
        pbuf_remove_header(p, ETH_PAD_SIZE);
#endif
        for (q = p; q; q = q->next) smr_nic_rx_read(q->payload, q->len);
        smr_nic_rx_done();
#if ETH_PAD_SIZE
        pbuf_add_header(p, ETH_PAD_SIZE);
#endif
        smr_netif_stats.rx++;
        if (nif->input(p, nif) != ERR_OK) pbuf_free(p);
    }
    return n;
}
