/*
 * lwip_tap.h - what the two lwIP floors (lwip_raw.c, lwip_sock.c) share:
 * the clock, the process's CPU time, pinning to a CPU, the TAP's
 * subnet, and the TAP device as an lwIP netif (open, send a pbuf chain
 * with one writev, read every waiting frame into a pbuf of its own). Static functions in a header, so each floor stays
 * one translation unit built with one cc command (bench/lab.sh).
 *
 * Receive buffers are PBUF_RAM at a full frame's size, never PBUF_POOL:
 * Debian's liblwip has pool elements smaller than its pbuf code fills
 * (docs/lab.md). Define FL_MAC (6 bytes, a string) before including.
 */
#ifndef LWIP_TAP_H
#define LWIP_TAP_H

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "lwip/etharp.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"

#define FL_FRAME 1514

static int tap_fd = -1;

/* The command line both floors take: argv[1] TAP, [2] IP, [3] CPU, [4]
 * the mode, then serve PORT [REQ RESP] | sink PORT SECONDS | source HOST
 * PORT. Checks its shape and reads REQ and RESP (0 when not given): 0,
 * or 2 after one line starting with who. */
static int fl_command(const char *who, int argc, char **argv, unsigned long *req, unsigned long *resp)
{
    *req = *resp = 0;
    if (argc < 6 || (strcmp(argv[4], "serve") == 0 ? argc != 6 && argc != 8 : argc != 7)) {
        fprintf(stderr, "usage: %s TAP IP CPU serve PORT [REQ RESP] | sink PORT SECONDS | source HOST PORT\n", who);
        return 2;
    }
    if (argc == 8) {
        *req = strtoul(argv[6], NULL, 10);
        *resp = strtoul(argv[7], NULL, 10);
        if (*req == 0) {
            fprintf(stderr, "%s: REQ must be at least 1\n", who);
            return 2;
        }
    }
    return 0;
}

/* Pins this process to CPU cpu (threads started later inherit it): 0, or
 * -1 after one line starting with who. */
static int fl_pin(const char *who, const char *cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(atoi(cpu), &set);
    if (sched_setaffinity(0, sizeof set, &set) == 0)
        return 0;
    fprintf(stderr, "%s: cannot pin to CPU %s\n", who, cpu);
    return -1;
}

/* The TAP's network: ip/24, the host side x.y.z.1 as the gateway. */
static void fl_subnet(const ip4_addr_t *ip, ip4_addr_t *mask, ip4_addr_t *gw)
{
    IP4_ADDR(mask, 255, 255, 255, 0);
    ip4_addr_set_u32(gw, (ip4_addr_get_u32(ip) & ip4_addr_get_u32(mask)) | PP_HTONL(1));
}

static uint64_t now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* CPU time this process has used (every thread), seconds: bench/lab.sh
 * divides it by the bytes moved. */
static double cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static err_t tap_out(struct netif *nif, struct pbuf *p)
{
    struct iovec v[8];
    int k = 0;
    (void)nif;
    for (; p != NULL && k < 8; p = p->next, k++) {
        v[k].iov_base = p->payload;
        v[k].iov_len = p->len;
    }
    return writev(tap_fd, v, k) > 0 ? ERR_OK : ERR_IF;
}

/* netif_add's init: opens the TAP device named by the netif's state. */
static err_t tap_init(struct netif *nif)
{
    struct ifreq ifr;
    const char *name = nif->state;

    tap_fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK);
    memset(&ifr, 0, sizeof ifr);
    strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    if (tap_fd < 0 || ioctl(tap_fd, TUNSETIFF, &ifr) != 0)
        return ERR_IF;
    memcpy(nif->hwaddr, FL_MAC, 6);
    nif->hwaddr_len = 6;
    nif->mtu = 1500;
    nif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET;
    nif->output = etharp_output;
    nif->linkoutput = tap_out;
    return ERR_OK;
}

/* Every waiting frame, read into a pbuf of a full frame's size and handed
 * to lwIP; returns when none is left. */
static void tap_in(struct netif *nif)
{
    for (;;) {
        struct pbuf *p = pbuf_alloc(PBUF_RAW, FL_FRAME, PBUF_RAM);
        ssize_t n;

        if (p == NULL)
            return;
        n = read(tap_fd, p->payload, FL_FRAME);
        if (n < 14) {
            pbuf_free(p);
            if (n < 0 && errno == EINTR)
                continue;
            return;
        }
        pbuf_realloc(p, (u16_t)n);
        if (nif->input(p, nif) != ERR_OK)
            pbuf_free(p);
    }
}

#endif
