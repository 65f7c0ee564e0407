/*
 * Shared start-up of the two lwIP backends (Debian liblwip-dev, unix port,
 * NO_SYS=0): the tcpip thread, and one netif on a preconfigured TAP device
 * (PRECONFIGURED_TAPIF) with address IP/24 and gateway x.y.z.1 (the host
 * side of the TAP). Include once, from the backend's .c file.
 */
#ifndef SMR_LWIP_COMMON_H
#define SMR_LWIP_COMMON_H

#include "lwip/init.h"
#include "lwip/ip4_addr.h"
#include "lwip/netif.h"
#include "lwip/sys.h"
#include "lwip/tcpip.h"
#include "netif/tapif.h"

#include <stdlib.h>

static struct netif smr_nif;
static ip4_addr_t smr_ip, smr_mask, smr_gw;
static sys_sem_t smr_up;
static void (*smr_lwip_ready)(void);

/* Runs on the tcpip thread with the core lock held. */
static void smr_lwip_netif(void *arg) {
    (void)arg;
    netif_add(&smr_nif, &smr_ip, &smr_mask, &smr_gw, NULL, tapif_init, tcpip_input);
    netif_set_default(&smr_nif);
    netif_set_up(&smr_nif);
    netif_set_link_up(&smr_nif);
    if (smr_lwip_ready) smr_lwip_ready();
    sys_sem_signal(&smr_up);
}

/* Starts lwIP on TAP device `tap` with IPv4 address `ip`; 0 on success. */
static int smr_lwip_start(const char *tap, const char *ip) {
    if (!ip4addr_aton(ip, &smr_ip)) return -1;
    IP4_ADDR(&smr_mask, 255, 255, 255, 0);
    ip4_addr_set_u32(&smr_gw, (ip4_addr_get_u32(&smr_ip) & ip4_addr_get_u32(&smr_mask)) | PP_HTONL(1));
    if (setenv("PRECONFIGURED_TAPIF", tap, 1) != 0) return -1;
    if (sys_sem_new(&smr_up, 0) != ERR_OK) return -1;
    tcpip_init(smr_lwip_netif, NULL);
    sys_sem_wait(&smr_up);
    return 0;
}

#endif
