/*
 * lwip_sock.c - the floor for lwIP's sockets API on a TAP device.
 *
 * Why this exists: the lab's lwip-sock (c-responder, `stackmeter lab up`)
 * should cost little more than an application on lwIP's sockets API must
 * cost. This program is the least such an application can do, written
 * only for speed: lwIP with its tcpip thread (timers), one thread that
 * reads the TAP device straight into a pbuf and hands the frame to lwIP
 * holding the core lock (no message per frame), and the main thread with
 * blocking lwip_recv()/lwip_send() on one connection: no poll, no event
 * loop. The thread hand-off that remains (lwIP queues a segment's data on
 * the socket and wakes the reader) is the sockets API's own.
 * bench/lab.sh compares the lab's lwip-sock against it; lwip_raw.c is
 * the raw API's floor.
 *
 * Usage (the TAP device must exist, host side x.y.z.1/24):
 *   lwip_sock TAP IP CPU serve PORT          rr: tcp_pingpong's server protocol
 *   lwip_sock TAP IP CPU serve PORT REQ RESP rr without a header (stackmeter rr --raw)
 *   lwip_sock TAP IP CPU sink PORT SECONDS   stream up: counts what arrives
 *   lwip_sock TAP IP CPU source HOST PORT    stream down: connects, sends
 *
 * The modes are lwip_raw.c's: serve reads an 8-byte header (REQ and RESP,
 * 32-bit big-endian; none when REQ and RESP are on the command line), then
 * answers every REQ bytes with RESP bytes, one connection at a time; sink
 * accepts one connection, counts for SECONDS from the first byte, prints
 *   "lwip_sock sink bytes=B seconds=S mbps=M cpu_s=C"
 * and resets the connection (the sender's cue to stop); source connects
 * and sends until the connection fails, then prints
 *   "lwip_sock source cpu_s=C"
 * (C: the process's CPU seconds, every thread, from getrusage). Every
 * socket wait is bounded (1 s for accept, then the parent is checked; 5 s
 * for data); every mode exits when its parent is gone, and source and
 * sink after 30 s without a peer.
 *
 * Build: cc -std=c99 -O2 $(pkg-config --cflags lwip)
 *        lwip_sock.c $(pkg-config --libs lwip) -lpthread
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include <limits.h> /* SSIZE_MAX before lwIP's arch.h */

#include <errno.h>
#include <fcntl.h>
#include <net/if.h> /* glibc's: lwIP's sockets.h includes it */
#include <linux/if_tun.h>
#include <poll.h>
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
#include "lwip/sockets.h"
#include "lwip/sys.h"
#include "lwip/tcpip.h"
#include "netif/ethernet.h"

#define FL_MAC "\x02\x46\x4c\x00\x00\x03"
#include "lwip_tap.h"

#define FL_WAIT_S 30

static struct netif nif;
static unsigned char buf[65536];
static pid_t parent;
static unsigned long fixed_req, fixed_resp; /* serve without a header */

/* ---------------------------------------------------------------- TAP */

/* The reader thread: every waiting frame, read into a pbuf of a full
 * frame's size, into lwIP under the core lock. */
static void tap_reader(void *arg)
{
    struct pollfd pfd;
    (void)arg;
    pfd.fd = tap_fd;
    pfd.events = POLLIN;
    for (;;) {
        poll(&pfd, 1, -1);
        LOCK_TCPIP_CORE();
        tap_in(&nif);
        UNLOCK_TCPIP_CORE();
    }
}

/* ---------------------------------------------------------------- sockets */

static void set_timeout(int fd, int opt, long s)
{
    struct timeval tv;

    tv.tv_sec = s;
    tv.tv_usec = 0;
    lwip_setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

static void nodelay(int fd)
{
    int one = 1;

    lwip_setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* A connection accepted within `wait_s` seconds, checking the parent each
 * second; -1 when none came or the parent is gone. */
static int accept_one(int l, long wait_s)
{
    long waited;

    for (waited = 0; wait_s == 0 || waited < wait_s; waited++) {
        int c = lwip_accept(l, NULL, NULL);

        if (c >= 0) {
            nodelay(c);
            set_timeout(c, SO_RCVTIMEO, 5);
            set_timeout(c, SO_SNDTIMEO, 5);
            return c;
        }
        if (getppid() != parent)
            return -1;
    }
    fprintf(stderr, "lwip_sock: no peer within %d s\n", FL_WAIT_S);
    return -1;
}

static int send_all(int fd, const unsigned char *p, unsigned long n)
{
    while (n > 0) {
        ssize_t w = lwip_send(fd, p, n > sizeof buf ? sizeof buf : n, 0);

        if (w <= 0)
            return -1;
        n -= (unsigned long)w;
    }
    return 0;
}

static int recv_exact(int fd, unsigned char *p, unsigned long n)
{
    while (n > 0) {
        ssize_t r = lwip_recv(fd, p, n > sizeof buf ? sizeof buf : n, 0);

        if (r <= 0)
            return -1;
        n -= (unsigned long)r;
        if (p != buf)
            p += r;
    }
    return 0;
}

static unsigned long be32(const unsigned char *p)
{
    return ((unsigned long)p[0] << 24) | ((unsigned long)p[1] << 16) | ((unsigned long)p[2] << 8) | p[3];
}

/* rr: one connection at a time, forever (until the parent goes). */
static int serve(int l)
{
    for (;;) {
        unsigned char hdr[8];
        unsigned long req, resp;
        int c = accept_one(l, 0);

        if (c < 0)
            return 1;
        if (fixed_req > 0 || recv_exact(c, hdr, 8) == 0) {
            req = fixed_req > 0 ? fixed_req : be32(hdr);
            resp = fixed_req > 0 ? fixed_resp : be32(hdr + 4);
            while (req > 0 && recv_exact(c, buf, req) == 0 && send_all(c, buf, resp) == 0)
                ;
        }
        lwip_close(c);
    }
}

static int sink(int l, unsigned long seconds)
{
    unsigned long long bytes = 0;
    uint64_t t0 = 0, last = 0, span = (uint64_t)seconds * 1000000000ULL;
    struct linger lg;
    double s;
    int c = accept_one(l, FL_WAIT_S);

    if (c < 0)
        return 1;
    for (;;) {
        ssize_t r = lwip_recv(c, buf, sizeof buf, 0);
        uint64_t t;

        if (r <= 0)
            break;
        t = now_ns();
        if (t0 == 0)
            t0 = t;
        if (t - t0 >= span)
            break;
        bytes += (unsigned long long)r;
        last = t;
    }
    s = (double)(last - t0) / 1e9;
    printf("lwip_sock sink bytes=%llu seconds=%.6f mbps=%.3f cpu_s=%.6f\n", bytes, s,
           s > 0 ? 8.0 * (double)bytes / s / 1e6 : 0.0, cpu_s());
    fflush(stdout);
    lg.l_onoff = 1;
    lg.l_linger = 0;
    lwip_setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg); /* close resets */
    lwip_close(c);
    return 0;
}

static int source(const ip4_addr_t *host, unsigned long port)
{
    struct sockaddr_in a;
    int fd = lwip_socket(AF_INET, SOCK_STREAM, 0);

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = lwip_htons((u16_t)port);
    a.sin_addr.s_addr = ip4_addr_get_u32(host);
    if (fd < 0 || lwip_connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        fprintf(stderr, "lwip_sock: cannot connect\n");
        return 1;
    }
    nodelay(fd);
    set_timeout(fd, SO_SNDTIMEO, 5);
    while (lwip_send(fd, buf, sizeof buf, 0) > 0)
        ;
    lwip_close(fd);
    printf("lwip_sock source cpu_s=%.6f\n", cpu_s());
    return 0;
}

int main(int argc, char **argv)
{
    ip4_addr_t ip, mask, gw, host;
    unsigned long port, seconds = 0;
    int mode, l;

    parent = getppid();
    if (fl_command("lwip_sock", argc, argv, &fixed_req, &fixed_resp) != 0)
        return 2;
    mode = strcmp(argv[4], "serve") == 0 ? 0 : strcmp(argv[4], "sink") == 0 ? 1 : 2;
    if (mode == 2 && strcmp(argv[4], "source") != 0) {
        fprintf(stderr, "lwip_sock: unknown mode %s\n", argv[4]);
        return 2;
    }
    port = strtoul(argv[mode == 2 ? 6 : 5], NULL, 10);
    if (mode == 1)
        seconds = strtoul(argv[6], NULL, 10);
    if (!ip4addr_aton(argv[2], &ip) || port == 0 || port > 65535 || (mode == 1 && seconds == 0) ||
        (mode == 2 && !ip4addr_aton(argv[5], &host))) {
        fprintf(stderr, "lwip_sock: bad address, port or seconds\n");
        return 2;
    }
    /* Pinned before lwIP starts its threads, which inherit the CPU. */
    if (fl_pin("lwip_sock", argv[3]) != 0)
        return 2;
    memset(buf, 0xa5, sizeof buf);
    fl_subnet(&ip, &mask, &gw);
    tcpip_init(NULL, NULL);
    LOCK_TCPIP_CORE();
    if (netif_add(&nif, &ip, &mask, &gw, argv[1], tap_init, netif_input) == NULL) {
        UNLOCK_TCPIP_CORE();
        fprintf(stderr, "lwip_sock: cannot open TAP device %s\n", argv[1]);
        return 1;
    }
    netif_set_default(&nif);
    netif_set_up(&nif);
    netif_set_link_up(&nif);
    UNLOCK_TCPIP_CORE();
    sys_thread_new("tap", tap_reader, NULL, DEFAULT_THREAD_STACKSIZE, DEFAULT_THREAD_PRIO);
    if (mode == 2)
        return source(&host, port);
    {
        struct sockaddr_in a;

        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_port = lwip_htons((u16_t)port);
        l = lwip_socket(AF_INET, SOCK_STREAM, 0);
        if (l < 0 || lwip_bind(l, (struct sockaddr *)&a, sizeof a) != 0 || lwip_listen(l, 4) != 0) {
            fprintf(stderr, "lwip_sock: cannot listen on port %lu\n", port);
            return 1;
        }
        set_timeout(l, SO_RCVTIMEO, 1);
    }
    return mode == 0 ? serve(l) : sink(l, seconds);
}
