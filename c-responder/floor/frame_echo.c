/*
 * frame_echo.c - the frame logic of a path floor (frame_echo.h): ARP and
 * stackmeter's UDP echo answered in place, with no stack.
 *
 * Why this exists: it is the one copy of the rules every C floor answers
 * by, the hosted one (bench/floor/nic_echo.c, on the lab's TAP and AF_XDP drivers)
 * and the bare-metal one (floor_main.c, on QEMU's LAN9118 and virtio-net), so a
 * difference between their figures is their paths', never their code's.
 * C99 with string.h and stdint.h only, bytes only (a board running with
 * its MMU off faults on an unaligned word).
 */
#include "frame_echo.h"

#include <string.h>

#define FE_ETH 14u         /* Ethernet header */
#define FE_ARP_LEN 42u     /* Ethernet header and an IPv4 ARP packet */
#define FE_ECHO_MIN 40u    /* an echo request's payload, at least */

static void fe_put64(uint8_t *p, uint64_t v) {
    int i;
    for (i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}

static unsigned fe_get16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }

static void fe_swap(uint8_t *a, uint8_t *b, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) {
        uint8_t t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

/* The Ethernet header of an answer: back to the sender, from mac. */
static void fe_eth_reply(uint8_t *f, const uint8_t mac[6]) {
    memcpy(f, f + 6, 6);
    memcpy(f + 6, mac, 6);
}

/* An ARP request for ip: the reply, in place; its length, or 0. */
static size_t fe_arp(uint8_t *f, size_t len, const uint8_t mac[6], const uint8_t ip[4]) {
    uint8_t *a = f + FE_ETH;
    if (len < FE_ARP_LEN || a[6] != 0 || a[7] != 1 || memcmp(a + 24, ip, 4) != 0) return 0;
    a[7] = 2;
    memcpy(a + 18, a + 8, 10); /* the asker becomes the target */
    memcpy(a + 8, mac, 6);
    memcpy(a + 14, ip, 4);
    memcpy(f, a + 18, 6); /* to the asker's hardware address */
    memcpy(f + 6, mac, 6);
    return FE_ARP_LEN;
}

/* The echo request's payload p turned into the reply. */
static void fe_echo_reply(uint8_t *p, uint64_t rx_ns) {
    p[5] = 2; /* kind: reply */
    p[6] = 0; /* code */
    p[7] = 1; /* flags: responder times present */
    fe_put64(p + 24, rx_ns);
    fe_put64(p + 32, rx_ns);
}

/* A UDP echo request to ip:port: the reply, in place; its length, or 0. */
static size_t fe_udp(uint8_t *f, size_t len, const uint8_t mac[6], const uint8_t ip[4], uint16_t port,
                     uint64_t rx_ns) {
    uint8_t *iph = f + FE_ETH, *udp, *p;
    size_t ihl, ulen;
    if (len < FE_ETH + 20 || (iph[0] >> 4) != 4 || iph[9] != 17 || memcmp(iph + 16, ip, 4) != 0) return 0;
    ihl = (size_t)(iph[0] & 15) * 4;
    udp = iph + ihl;
    if (len < FE_ETH + ihl + 8 || fe_get16(udp + 2) != port) return 0;
    ulen = fe_get16(udp + 4);
    p = udp + 8;
    if (ulen < 8 + FE_ECHO_MIN || FE_ETH + ihl + ulen > len || memcmp(p, "SMTU", 4) != 0 || p[4] != 1 ||
        p[5] != 1)
        return 0;
    fe_echo_reply(p, rx_ns);
    fe_swap(iph + 12, iph + 16, 4);
    fe_swap(udp, udp + 2, 2);
    udp[6] = udp[7] = 0;
    fe_eth_reply(f, mac);
    return FE_ETH + ihl + ulen;
}

size_t frame_echo(uint8_t *f, size_t len, const uint8_t mac[6], const uint8_t ip[4], uint16_t port,
                  uint64_t rx_ns) {
    if (len < FE_ETH) return 0;
    if (f[12] == 0x08 && f[13] == 0x06) return fe_arp(f, len, mac, ip);
    if (f[12] == 0x08 && f[13] == 0x00) return fe_udp(f, len, mac, ip, port, rx_ns);
    return 0;
}
