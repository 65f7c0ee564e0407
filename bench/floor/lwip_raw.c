/*
 * lwip_raw.c - the floor for lwIP's raw callback API on a TAP device.
 *
 * Why this exists: the lab's lwip-raw (c-responder, `stackmeter lab up`)
 * should cost little more than lwIP itself on the same path. This program
 * is the least a responder on Debian's liblwip and a TAP device can do,
 * written only for speed: one thread, lwIP without its tcpip thread, the
 * TAP read straight into a pbuf (no copy) and written straight from one,
 * answers sent by reference from one static buffer. bench/lab.sh compares
 * the lab's targets against it (and lwip_sock.c, the sockets API's floor).
 *
 * Usage (the TAP device must exist, host side x.y.z.1/24):
 *   lwip_raw TAP IP CPU serve PORT          rr: tcp_pingpong's server protocol
 *   lwip_raw TAP IP CPU serve PORT REQ RESP rr without a header (stackmeter rr --raw)
 *   lwip_raw TAP IP CPU sink PORT SECONDS   stream up: counts what arrives
 *   lwip_raw TAP IP CPU source HOST PORT    stream down: connects, sends
 *
 * serve: per connection an 8-byte header (REQ and RESP, 32-bit big-endian),
 * then for every REQ bytes received RESP bytes back (tcp_pingpong client
 * measures); with REQ and RESP on the command line there is no header, so
 * `stackmeter rr --raw REQ:RESP` measures the floor with the same client
 * that measures the lab's targets. sink: accepts one connection (tcp_stream send), counts the
 * bytes lwIP delivers for SECONDS from the first one, prints
 *   "lwip_raw sink bytes=B seconds=S mbps=M cpu_s=C"
 * aborts the connection (the sender's cue to stop) and exits. source:
 * connects to HOST:PORT (tcp_stream recv, which measures) and sends until
 * the connection ends, prints "lwip_raw source cpu_s=C" and exits (C: the
 * process's CPU seconds, from getrusage). Every mode exits when its parent is
 * gone (checked each second), and source and sink after 30 s without the
 * peer they wait for.
 *
 * Build: cc -std=c99 -O2 $(pkg-config --cflags lwip)
 *        lwip_raw.c $(pkg-config --libs lwip)
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
#include "lwip/init.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/tcp.h"
#include "lwip/timeouts.h"
#include "netif/ethernet.h"

#define FL_MAC "\x02\x46\x4c\x00\x00\x02"
#include "lwip_tap.h"

#define FL_CONNS 8
#define FL_WAIT_NS (30ULL * 1000000000ULL)

static unsigned char payload[65536];

/* ---------------------------------------------------------------- modes */

enum { SERVE, SINK, SOURCE };

static struct conn {
    struct tcp_pcb *pcb;
    unsigned char hdr[8];
    unsigned hgot;
    unsigned long req, resp, rx_left;
    unsigned long long tx_left;
} conns[FL_CONNS];

static int mode, done, connected;
static unsigned long fixed_req, fixed_resp; /* serve without a header */
static unsigned long seconds;
static unsigned long long sink_bytes;
static uint64_t sink_t0, sink_last;

static unsigned long be32(const unsigned char *p)
{
    return ((unsigned long)p[0] << 24) | ((unsigned long)p[1] << 16) | ((unsigned long)p[2] << 8) | p[3];
}

/* Queues what is owed (by reference) as far as the send buffer allows. */
static void push(struct tcp_pcb *pcb, unsigned long long *left)
{
    while (*left > 0 && tcp_sndbuf(pcb) > 0) {
        unsigned long n = tcp_sndbuf(pcb); /* at most 65535: u16_t */

        if (*left < n)
            n = (unsigned long)*left;
        if (tcp_write(pcb, payload, (u16_t)n, 0) != ERR_OK)
            break;
        *left -= n;
    }
    tcp_output(pcb);
}

static void conn_end(struct conn *c)
{
    if (c->pcb != NULL) {
        tcp_arg(c->pcb, NULL);
        tcp_recv(c->pcb, NULL);
        tcp_sent(c->pcb, NULL);
        tcp_err(c->pcb, NULL);
        if (tcp_close(c->pcb) != ERR_OK)
            tcp_abort(c->pcb);
    }
    c->pcb = NULL;
}

/* serve: header, then RESP bytes owed per REQ bytes received. */
static void serve_bytes(struct conn *c, const unsigned char *p, unsigned long n)
{
    while (n > 0) {
        if (c->hgot < 8) {
            c->hdr[c->hgot++] = *p++;
            n--;
            if (c->hgot == 8) {
                c->req = c->rx_left = be32(c->hdr);
                c->resp = be32(c->hdr + 4);
            }
            continue;
        }
        if (c->req == 0)
            return;
        if (n < c->rx_left) {
            c->rx_left -= n;
            return;
        }
        n -= c->rx_left;
        p += c->rx_left;
        c->rx_left = c->req;
        c->tx_left += c->resp;
    }
}

static err_t on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
    struct conn *c = arg;
    struct pbuf *q;
    (void)err;
    if (p == NULL) {
        conn_end(c);
        if (mode == SOURCE)
            done = 1;
        return ERR_OK;
    }
    if (mode == SINK) {
        uint64_t t = now_ns();

        if (sink_t0 == 0)
            sink_t0 = t;
        if (t - sink_t0 < (uint64_t)seconds * 1000000000ULL) {
            sink_bytes += p->tot_len;
            sink_last = t;
        } else if (!done) {
            done = 1;
        }
    } else if (mode == SERVE) {
        for (q = p; q != NULL; q = q->next)
            serve_bytes(c, q->payload, q->len);
    }
    tcp_recved(pcb, p->tot_len);
    pbuf_free(p);
    if (mode == SERVE)
        push(pcb, &c->tx_left);
    return ERR_OK;
}

static err_t on_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
    struct conn *c = arg;
    (void)len;
    push(pcb, &c->tx_left);
    return ERR_OK;
}

static void on_err(void *arg, err_t err)
{
    struct conn *c = arg;
    (void)err;
    c->pcb = NULL;
    if (mode == SOURCE)
        done = 1;
}

static struct conn *conn_new(struct tcp_pcb *pcb)
{
    int i;

    for (i = 0; i < FL_CONNS; i++) {
        if (conns[i].pcb == NULL) {
            memset(&conns[i], 0, sizeof conns[i]);
            conns[i].pcb = pcb;
            tcp_arg(pcb, &conns[i]);
            tcp_nagle_disable(pcb);
            tcp_recv(pcb, on_recv);
            tcp_sent(pcb, on_sent);
            tcp_err(pcb, on_err);
            if (fixed_req > 0) {
                conns[i].hgot = 8;
                conns[i].req = conns[i].rx_left = fixed_req;
                conns[i].resp = fixed_resp;
            }
            return &conns[i];
        }
    }
    return NULL;
}

static err_t on_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
    (void)arg;
    if (err != ERR_OK || pcb == NULL)
        return ERR_VAL;
    if (conn_new(pcb) == NULL) {
        tcp_abort(pcb);
        return ERR_ABRT;
    }
    connected = 1;
    return ERR_OK;
}

static err_t on_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
    struct conn *c = arg;
    (void)err;
    connected = 1;
    c->tx_left = ~0ULL;
    push(pcb, &c->tx_left);
    return ERR_OK;
}

int main(int argc, char **argv)
{
    static struct netif nif;
    ip4_addr_t ip, mask, gw;
    ip_addr_t host;
    unsigned long port = 0;
    uint64_t start, last_check;
    pid_t parent = getppid();
    struct pollfd pfd;

    if (fl_command("lwip_raw", argc, argv, &fixed_req, &fixed_resp) != 0)
        return 2;
    mode = strcmp(argv[4], "serve") == 0 ? SERVE : strcmp(argv[4], "sink") == 0 ? SINK : SOURCE;
    if (mode == SOURCE && strcmp(argv[4], "source") != 0) {
        fprintf(stderr, "lwip_raw: unknown mode %s\n", argv[4]);
        return 2;
    }
    port = strtoul(argv[mode == SOURCE ? 6 : 5], NULL, 10);
    seconds = mode == SINK ? strtoul(argv[6], NULL, 10) : 0;
    if (!ip4addr_aton(argv[2], &ip) || port == 0 || port > 65535 || (mode == SINK && seconds == 0) ||
        (mode == SOURCE && !ipaddr_aton(argv[5], &host))) {
        fprintf(stderr, "lwip_raw: bad address, port or seconds\n");
        return 2;
    }
    if (fl_pin("lwip_raw", argv[3]) != 0)
        return 2;
    memset(payload, 0xa5, sizeof payload);
    fl_subnet(&ip, &mask, &gw);
    lwip_init();
    if (netif_add(&nif, &ip, &mask, &gw, argv[1], tap_init, netif_input) == NULL) {
        fprintf(stderr, "lwip_raw: cannot open TAP device %s\n", argv[1]);
        return 1;
    }
    netif_set_default(&nif);
    netif_set_up(&nif);
    netif_set_link_up(&nif);
    if (mode == SOURCE) {
        struct tcp_pcb *pcb = tcp_new();
        struct conn *c = pcb != NULL ? conn_new(pcb) : NULL;

        if (c == NULL || tcp_connect(pcb, &host, (u16_t)port, on_connected) != ERR_OK) {
            fprintf(stderr, "lwip_raw: cannot connect\n");
            return 1;
        }
    } else {
        struct tcp_pcb *pcb = tcp_new();

        if (pcb == NULL || tcp_bind(pcb, IP_ANY_TYPE, (u16_t)port) != ERR_OK ||
            (pcb = tcp_listen(pcb)) == NULL) {
            fprintf(stderr, "lwip_raw: cannot listen on port %lu\n", port);
            return 1;
        }
        tcp_accept(pcb, on_accept);
    }
    pfd.fd = tap_fd;
    pfd.events = POLLIN;
    start = last_check = now_ns();
    while (!done) {
        u32_t ms = sys_timeouts_sleeptime();
        uint64_t t;

        poll(&pfd, 1, ms > 1000 ? 1000 : (int)ms);
        tap_in(&nif);
        sys_check_timeouts();
        t = now_ns();
        if (t - last_check >= 1000000000ULL) {
            last_check = t;
            if (getppid() != parent)
                return 1;
            if (mode != SERVE && !connected && t - start > FL_WAIT_NS) {
                fprintf(stderr, "lwip_raw: no peer within 30 s\n");
                return 1;
            }
            if (mode == SINK && sink_t0 != 0 && t - sink_t0 >= (uint64_t)seconds * 1000000000ULL)
                done = 1;
        }
    }
    if (mode == SINK) {
        double s = (double)(sink_last - sink_t0) / 1e9;
        int i;

        printf("lwip_raw sink bytes=%llu seconds=%.6f mbps=%.3f cpu_s=%.6f\n", sink_bytes, s,
               s > 0 ? 8.0 * (double)sink_bytes / s / 1e6 : 0.0, cpu_s());
        fflush(stdout);
        for (i = 0; i < FL_CONNS; i++)
            if (conns[i].pcb != NULL)
                tcp_abort(conns[i].pcb);
        tap_in(&nif);
    } else if (mode == SOURCE) {
        printf("lwip_raw source cpu_s=%.6f\n", cpu_s());
    }
    return 0;
}
