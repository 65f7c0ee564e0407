/*
 * smr_netif.h: an lwIP Ethernet netif over the controller of smr_nic.h:
 * the lwIP half of a NIC driver, the same for the lab's TAP device and the
 * firmware's MAC. Receive buffers are allocated at each frame's size
 * (SMR_NETIF_RX_PBUF: PBUF_POOL chains on a board, PBUF_RAM where the
 * pools are the C library's heap), MTU 1500, full-size frames both ways.
 *
 *   netif_add(&nif, &ip, &mask, &gw, state, smr_netif_init, input)
 *     state: the device's name for smr_nic_open() (NULL on a board);
 *     input: ethernet_input (the caller holds the core lock or runs
 *     without an OS) or tcpip_input.
 *   smr_netif_poll(&nif, max): up to max waiting frames into lwIP.
 */
#ifndef SMR_NETIF_H
#define SMR_NETIF_H

#include "lwip/err.h"
#include "lwip/netif.h"

#include <stdint.h>

/* What the glue saw, for a board's console and the tests. */
struct smr_netif_stats {
    uint32_t rx, tx;       /* frames passed up, frames sent */
    uint32_t rx_nomem;     /* frames dropped: no receive buffer */
    uint32_t tx_err;       /* frames the controller refused */
};
extern struct smr_netif_stats smr_netif_stats;

err_t smr_netif_init(struct netif *nif);
/* Moves up to max received frames into lwIP (nif->input); returns how
 * many the controller had (dropped ones included). */
unsigned smr_netif_poll(struct netif *nif, unsigned max);

#endif
