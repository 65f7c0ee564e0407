/*
 * main() of stackmeter-lwip-sock, the lwIP sockets-API backend (the
 * "application" path: a responder that talks to an in-process lwIP
 * through lwip_socket/lwip_poll/...): brings lwIP up on a TAP device, then
 * runs the POSIX backend's loop, whose files are compiled with -DSMR_LWIP
 * (smr_posix_int.h maps every socket call to lwip_NAME).
 *
 * Threads: lwIP's tcpip thread (its timers), this one (the responder's
 * loop: lwip_poll, lwip_recv, ...), and one that reads the TAP device
 * (smr_nic_tap.c behind smr_netif.c, MTU 1500) and hands each batch of
 * frames to lwIP itself, holding the core lock (lwIP's core-locking input:
 * no message through the tcpip thread's mailbox per frame). What is left
 * is the sockets API's own hand-off: lwIP wakes this thread for the data
 * it queued on a socket.
 * Usage: lwip-sock TAP-DEVICE IPV4-ADDRESS [--listen ADDR:PORT] [flags]
 */
#include "smr_posix_int.h"
#include "smr_netif.h"
#include "smr_nic.h"

#include "lwip/ip4_addr.h"
#include "lwip/priv/tcp_priv.h" /* tcp_tw_pcbs */
#include "lwip/netif.h"
#include "lwip/sys.h"
#include "lwip/tcpip.h"

#include <poll.h>
#include <stdio.h>

/* Frames handed to lwIP per hold of the core lock. */
#define SMR_FRAMES_PER_LOCK 64u


static struct netif smr_nif;
static ip4_addr_t smr_ip, smr_mask, smr_gw;
static const char *smr_tap;
static sys_sem_t smr_up;
static err_t smr_up_err;

/* No TIME_WAIT kept (smr_lwip_tap.c says why): frees the pcbs in
 * TIME_WAIT whose socket is closed (lwIP's netconn clears the callback
 * argument when it lets go of its pcb). Under the core lock. */
static void smr_drop_time_wait(void) {
    struct tcp_pcb *p = tcp_tw_pcbs, *next;
    for (; p; p = next) {
        next = p->next;
        if (!p->callback_arg) tcp_abort(p);
    }
}

/* The TAP reader: wait for frames, feed them to lwIP under the core lock. */
static void smr_lwip_reader(void *arg) {
    struct pollfd pfd;
    unsigned n;
    (void)arg;
    pfd.fd = smr_nic_fd();
    pfd.events = POLLIN;
    for (;;) {
        if (poll(&pfd, 1, -1) > 0 && (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
            smr_die("the TAP device failed: ", smr_tap);
        do {
            LOCK_TCPIP_CORE();
            smr_drop_time_wait();
            n = smr_netif_poll(&smr_nif, SMR_FRAMES_PER_LOCK);
            UNLOCK_TCPIP_CORE();
        } while (n == SMR_FRAMES_PER_LOCK);
    }
}

/* Runs on the tcpip thread with the core lock held. */
static void smr_lwip_netif(void *arg) {
    (void)arg;
    smr_up_err = ERR_IF;
    if (netif_add(&smr_nif, &smr_ip, &smr_mask, &smr_gw, (void *)(uintptr_t)smr_tap, smr_netif_init, netif_input)) {
        netif_set_default(&smr_nif);
        netif_set_up(&smr_nif);
        netif_set_link_up(&smr_nif);
        smr_up_err = ERR_OK;
    }
    sys_sem_signal(&smr_up);
}

/* Starts lwIP on TAP device `tap` with IPv4 address `ip`/24, the gateway
 * x.y.z.1 (the host side of the TAP); 0 on success. */
static int smr_lwip_start(const char *tap, const char *ip) {
    if (!ip4addr_aton(ip, &smr_ip)) return -1;
    IP4_ADDR(&smr_mask, 255, 255, 255, 0);
    ip4_addr_set_u32(&smr_gw, (ip4_addr_get_u32(&smr_ip) & ip4_addr_get_u32(&smr_mask)) | PP_HTONL(1));
    smr_tap = tap;
    if (sys_sem_new(&smr_up, 0) != ERR_OK) return -1;
    tcpip_init(smr_lwip_netif, NULL);
    sys_sem_wait(&smr_up);
    if (smr_up_err != ERR_OK) return -1;
    sys_thread_new("tap-reader", smr_lwip_reader, NULL, DEFAULT_THREAD_STACKSIZE, DEFAULT_THREAD_PRIO);
    return 0;
}

int main(int argc, char **argv) {
    static struct smr_posix g; /* the backend's one state, handed down */
    struct smr_config cfg;
    smr_default_config(&cfg);
    /* lwip-sock TAP IP [flags]: the stack runs in this process. */
    if (argc < 3 || argv[1][0] == '-') smr_die("usage: " SMR_NAME " TAP-DEVICE IPV4-ADDRESS [flags]", NULL);
    smr_args(argc - 2, argv + 2, &cfg, &g);
    if (smr_lwip_start(argv[1], argv[2]) != 0) smr_die("cannot start lwIP on TAP device ", argv[1]);
    if (g.nlisten == 0) {
        char a[40];
        snprintf(a, sizeof a, "%s:%d", argv[2], SMR_DEFAULT_PORT);
        if (smr_parse_addr(a, &g.listen[0]) != 0) smr_die("bad IPv4 address ", argv[2]);
        g.nlisten = 1;
    }
    return smr_run(&g, &cfg);
}
