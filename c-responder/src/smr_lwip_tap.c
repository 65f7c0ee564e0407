/*
 * main() of lwip-raw: lwIP's raw API backend (smr_lwip_raw.c) on a Linux
 * TAP device, in one thread, as it runs on a board: lwIP without its
 * tcpip thread (lwip_init, no tcpip_init), the TAP as the NIC
 * (smr_nic_tap.c behind smr_netif.c, MTU 1500), and one loop that waits
 * for a frame or the next timer (poll), pulls every waiting frame into
 * lwIP, runs lwIP's timers and the engine's. Nothing is handed from one
 * thread to another: a request goes from read() through lwIP into the
 * engine and its answer out through write() in one call chain. The
 * microcontroller firmware's loop (mcu/smr_mcu.c) is this one with the
 * wait in WFI instead of poll.
 * Built with smr_nic_xdp.c instead of smr_nic_tap.c (-DSMR_NIC_XDP) it is
 * lwip-xdp: the same stack and loop on an AF_XDP socket, the kernel-bypass
 * path; HOST-DEVICE is the sending end of the link, whose checksum and
 * segmentation offloads it turns off (smr_nic_xdp.c says why).
 * Usage: lwip-raw TAP-DEVICE IPV4-ADDRESS [PORT] [CPU]
 *        lwip-xdp DEVICE IPV4-ADDRESS [PORT] [CPU] [HOST-DEVICE]
 */
#define _GNU_SOURCE
#include <limits.h> /* SSIZE_MAX before lwIP's arch.h */

#include "smr_lwip_raw.h"
#include "smr_netif.h"
#include "smr_nic.h"

#include "lwip/init.h"
#include "lwip/priv/tcp_priv.h" /* tcp_tw_pcbs */
#include "lwip/ip4_addr.h"
#include "lwip/netif.h"
#include "lwip/timeouts.h"

#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef SMR_NIC_XDP
#define SMR_NAME "stackmeter-lwip-xdp"
#define SMR_USAGE " DEVICE IPV4-ADDRESS [PORT] [CPU] [HOST-DEVICE]"
#define SMR_MAX_ARGS 6
int smr_nic_xdp_offloads_off(const char *host_if);
void smr_nic_xdp_kick(void);
void smr_nic_xdp_report(const char *name);
#else
#define SMR_NAME "stackmeter-lwip-raw"
#define SMR_USAGE " TAP-DEVICE IPV4-ADDRESS [PORT] [CPU]"
#define SMR_MAX_ARGS 5
#endif
/* The engine's deadlines are looked at this often (ns). */
#define SMR_TIMER_NS 5000000u
/* Frames pulled from the TAP per look before the timers get a turn. */
#define SMR_FRAMES_PER_LOOK 64u

uint64_t smr_raw_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void smr_raw_event(const char *line) { fprintf(stderr, SMR_NAME ": %s\n", line); }

static int smr_pin(const char *cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(cpu), &set);
    return sched_setaffinity(0, sizeof set, &set);
}

/* Frees the pcbs in TIME_WAIT that the responder has let go of (no
 * callback argument: smr_raw_detach cleared it); one it still holds, whose
 * peer's FIN came after its own, is freed once it lets go. Outside every
 * callback of lwIP's. */
static void smr_drop_time_wait(void) {
    struct tcp_pcb *p = tcp_tw_pcbs, *next;
    for (; p; p = next) {
        next = p->next;
        if (!p->callback_arg) tcp_abort(p);
    }
}

int main(int argc, char **argv) {
    static struct netif nif;
    static struct smr_admit adm; /* no limits: the lab is one machine's */
    struct smr_config cfg;
    ip4_addr_t ip, mask, gw;
    uint8_t seed[16] = {0};
    uint64_t next;
#ifdef SMR_NIC_XDP
    uint64_t report = 0; /* the next look at the drop counters */
#endif
    unsigned port;
    struct pollfd pfd;
    if (argc < 3 || argc > SMR_MAX_ARGS || argv[1][0] == '-') {
        fprintf(stderr, "usage: " SMR_NAME SMR_USAGE "\n");
        return 2;
    }
    port = argc > 3 ? (unsigned)atoi(argv[3]) : SMR_DEFAULT_PORT;
    if (port == 0 || port > 65535 || !ip4addr_aton(argv[2], &ip)) {
        fprintf(stderr, SMR_NAME ": error: bad address %s or port %s\n", argv[2], argc > 3 ? argv[3] : "");
        return 2;
    }
    if (argc > 4 && smr_pin(argv[4]) != 0) {
        fprintf(stderr, SMR_NAME ": error: cannot pin to CPU %s\n", argv[4]);
        return 2;
    }
#ifdef SMR_NIC_XDP
    if (argc > 5 && smr_nic_xdp_offloads_off(argv[5]) != 0) {
        fprintf(stderr, SMR_NAME ": error: cannot turn checksum and segmentation offloads off on %s\n", argv[5]);
        return 1;
    }
#endif
    IP4_ADDR(&mask, 255, 255, 255, 0);
    ip4_addr_set_u32(&gw, (ip4_addr_get_u32(&ip) & ip4_addr_get_u32(&mask)) | PP_HTONL(1));
    lwip_init();
    if (!netif_add(&nif, &ip, &mask, &gw, argv[1], smr_netif_init, netif_input)) {
        fprintf(stderr, SMR_NAME ": error: cannot open device %s (does it exist? are we root? AF_XDP for lwip-xdp)\n",
                argv[1]);
        return 1;
    }
    netif_set_default(&nif);
    netif_set_up(&nif);
    netif_set_link_up(&nif);
    smr_default_config(&cfg);
    if (smr_raw_start(&cfg, &adm, seed, (uint16_t)port) != 0) {
        fprintf(stderr, SMR_NAME ": error: cannot listen on port %u\n", port);
        return 1;
    }
    fprintf(stderr, SMR_NAME ": listening on tcp %s:%u\n" SMR_NAME ": listening on udp %s:%u\n", argv[2], port,
            argv[2], port);
    pfd.fd = smr_nic_fd();
    pfd.events = POLLIN;
    next = smr_raw_clock() + SMR_TIMER_NS;
    for (;;) {
        uint64_t now = smr_raw_clock();
        u32_t lw = sys_timeouts_sleeptime();
        int ms = now >= next ? 0 : (int)((next - now + 999999u) / 1000000u);
        if (lw < (u32_t)ms) ms = (int)lw;
        if (poll(&pfd, 1, ms) > 0 && (pfd.revents & (POLLERR | POLLHUP | POLLNVAL))) {
            fprintf(stderr, SMR_NAME ": error: device %s failed\n", argv[1]);
            return 1;
        }
        /* No TIME_WAIT kept (docs/lab.md), before the frames that came:
         * lwIP answers a SYN that reuses the ports of a connection in
         * TIME_WAIT with an ACK (RFC 793), where Linux accepts it (RFC
         * 6191), so a Linux client reusing a port it closed second waited
         * out its connect timeout. */
        smr_drop_time_wait();
        while (smr_netif_poll(&nif, SMR_FRAMES_PER_LOOK) == SMR_FRAMES_PER_LOOK) sys_check_timeouts();
        sys_check_timeouts();
#ifdef SMR_NIC_XDP
        smr_nic_xdp_kick();
#endif
        if ((now = smr_raw_clock()) >= next) {
            smr_raw_timers();
            next = now + SMR_TIMER_NS;
#ifdef SMR_NIC_XDP
            if (now >= report) {
                smr_nic_xdp_report(SMR_NAME);
                report = now + 1000000000u;
            }
#endif
        }
    }
}
