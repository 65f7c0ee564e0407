/*
 * nic_echo.c - the floor of a frame path: stackmeter's UDP echo (the
 * `ping` test) answered with no stack at all.
 *
 * Why this exists: a lab stack's round trip is its path (a TAP device, an
 * AF_XDP socket on a veth, QEMU's emulated MAC) plus the stack and the
 * responder. This program is the path alone, as lwip_raw.c is lwIP alone:
 * it pulls each frame through the lab's own controller interface
 * (c-responder/src/smr_nic.h: the TAP driver, or the AF_XDP one when built
 * with -DFL_XDP), and c-responder/floor/frame_echo.c answers it in place: ARP for its
 * address, and a UDP datagram to its port that carries a version 1 echo
 * request turned into the echo reply (kind 2, both responder times the
 * receive time; the addresses and ports swapped, the IPv4 header's sum
 * unchanged by the swap, the UDP checksum 0, which IPv4 allows), which is
 * sent back. Anything else is dropped. bench/path-floors.sh measures it
 * beside the stacks on the same kind of path; the firmwares' twins are
 * firmware/mcu-smoltcp's `floor` binary (the LM3S6965) and
 * c-responder/a9/floor (the Cortex-A9 with a LAN9118), the latter built
 * from the same c-responder/floor/frame_echo.c.
 *
 * Usage: nic_echo DEV IP CPU [HOST_IF]
 *   DEV      the TAP device (or, -DFL_XDP, the veth end to bind)
 *   IP       the address it answers for; UDP port 24680
 *   CPU      the CPU it is pinned to
 *   HOST_IF  (-DFL_XDP) the host's veth end, whose checksum and
 *            segmentation offloads are turned off as lwip-xdp turns them
 *            off, so both see the same frames
 * It runs until killed, and exits by itself when its parent is gone.
 *
 * Build (bench/path-floors.sh does):
 *   cc -std=c99 -O2 -Ic-responder/src -Ic-responder/floor bench/floor/nic_echo.c c-responder/floor/frame_echo.c \
 *       c-responder/src/smr_nic_tap.c
 *   cc -std=c99 -O2 -DFL_XDP -Ic-responder/src -Ic-responder/floor bench/floor/nic_echo.c c-responder/floor/frame_echo.c \
 *       c-responder/src/smr_nic_xdp.c -lxdp -lbpf
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include "frame_echo.h"
#include "smr_nic.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifdef FL_XDP
int smr_nic_xdp_offloads_off(const char *host_if);
void smr_nic_xdp_kick(void);
#endif

static uint8_t fl_mac[6], fl_ip[4];

static uint64_t fl_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void fl_send(const uint8_t *f, size_t len) {
    if (smr_nic_tx_begin(len) != 0) return;
    smr_nic_tx_write(f, len);
    (void)smr_nic_tx_end();
}

int main(int argc, char **argv) {
    static uint8_t f[SMR_NIC_FRAME_MAX];
    struct pollfd pfd;
    cpu_set_t cpus;
    pid_t parent = getppid();
    if (argc < 4 || inet_pton(AF_INET, argv[2], fl_ip) != 1) {
        fprintf(stderr, "usage: nic_echo DEV IP CPU [HOST_IF]\n");
        return 2;
    }
    CPU_ZERO(&cpus);
    CPU_SET(atoi(argv[3]), &cpus);
    if (sched_setaffinity(0, sizeof cpus, &cpus) != 0) {
        fprintf(stderr, "nic_echo: cannot pin to CPU %s\n", argv[3]);
        return 1;
    }
#ifdef FL_XDP
    if (argc > 4 && smr_nic_xdp_offloads_off(argv[4]) != 0) {
        fprintf(stderr, "nic_echo: cannot turn offloads off on %s\n", argv[4]);
        return 1;
    }
#endif
    if (smr_nic_open(argv[1], fl_mac) != 0) {
        fprintf(stderr, "nic_echo: cannot open %s\n", argv[1]);
        return 1;
    }
    fprintf(stderr, "nic_echo: answering udp %s:%u on %s\n", argv[2], FRAME_ECHO_PORT, argv[1]);
    pfd.fd = smr_nic_fd();
    pfd.events = POLLIN;
    for (;;) {
        size_t len;
        if (poll(&pfd, 1, 1000) < 0 || getppid() != parent) return 0;
        while ((len = smr_nic_rx_len()) != 0) {
            uint64_t rx = fl_now();
            smr_nic_rx_read(f, len);
            smr_nic_rx_done();
            len = frame_echo(f, len, fl_mac, fl_ip, FRAME_ECHO_PORT, rx);
            if (len != 0) fl_send(f, len);
        }
#ifdef FL_XDP
        smr_nic_xdp_kick();
#endif
    }
}
