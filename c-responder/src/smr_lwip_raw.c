/*
 * lwIP raw callback API backend: the "in-stack module" of seed 000. The
 * engine runs inside lwIP's tcpip thread (callbacks hold the core lock):
 * received pbufs go straight into the engine, responses are queued with
 * tcp_write() from the static payload buffer without copying, refilled from
 * the tcp_sent callback, tcp_sndbuf() bytes at a time. UDP echo replies
 * reuse the received pbuf. The main thread only wakes for timeouts.
 * Usage: lwip-raw TAP-DEVICE IPV4-ADDRESS [PORT] [CPU]
 */
#define _GNU_SOURCE
#include <limits.h> /* SSIZE_MAX before lwIP's arch.h */

#include "smr.h"
#include "smr_lwip_common.h"

#include "lwip/pbuf.h"
#include "lwip/tcp.h"
#include "lwip/udp.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SMR_NAME "stackmeter-lwip-raw"
#define SMR_NCONN (SMR_MAX_CONNS + SMR_SPARE_CONNS)

static struct smr_raw {
    struct smr_ctx x;
    uint16_t port;
    struct tcp_pcb *pcb[SMR_NCONN];
    struct pbuf *held[SMR_NCONN]; /* input the engine could not take yet */
    uint16_t held_off[SMR_NCONN];
    ip_addr_t peer[SMR_NCONN];
    uint16_t peer_port[SMR_NCONN];
    uint8_t udp[65536];
} smr_r;

static uint64_t smr_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void smr_raw_log(void *user, const struct smr_conn *c, const char *what, const char *detail) {
    size_t i = smr_conn_index(&smr_r.x, c);
    char a[IPADDR_STRLEN_MAX];
    (void)user;
    ipaddr_ntoa_r(&smr_r.peer[i], a, sizeof a);
    if (strcmp(what, "aborted") == 0)
        fprintf(stderr, SMR_NAME ": %s:%u: session ended: %s\n", a, smr_r.peer_port[i], detail);
    else
        fprintf(stderr, SMR_NAME ": refused %s:%u: %s: %s\n", a, smr_r.peer_port[i], what, detail);
}

static void smr_raw_detach(size_t i) {
    struct tcp_pcb *p = smr_r.pcb[i];
    smr_r.pcb[i] = NULL;
    if (smr_r.held[i]) pbuf_free(smr_r.held[i]);
    smr_r.held[i] = NULL;
    if (!p) return;
    tcp_arg(p, NULL);
    tcp_recv(p, NULL);
    tcp_sent(p, NULL);
    tcp_err(p, NULL);
    if (tcp_close(p) != ERR_OK) tcp_abort(p);
}

/* Feeds held input to the engine; acknowledges what it consumed. */
static void smr_raw_feed(struct smr_conn *c, size_t i) {
    while (smr_r.held[i] && !(smr_conn_flags(c) & SMR_F_CLOSE)) {
        struct pbuf *p = smr_r.held[i], *q = p;
        uint16_t off = smr_r.held_off[i];
        size_t n;
        while (q && off >= q->len) {
            off = (uint16_t)(off - q->len);
            q = q->next;
        }
        if (!q) {
            tcp_recved(smr_r.pcb[i], p->tot_len);
            pbuf_free(p);
            smr_r.held[i] = NULL;
            smr_r.held_off[i] = 0;
            return;
        }
        n = smr_conn_input(&smr_r.x, c, (const uint8_t *)q->payload + off, (size_t)(q->len - off), smr_now());
        if (n == 0) return;
        smr_r.held_off[i] = (uint16_t)(smr_r.held_off[i] + n);
    }
}

/* Queues what the engine has to send, as far as the send buffer allows. */
static void smr_raw_pump(struct smr_conn *c) {
    size_t i = smr_conn_index(&smr_r.x, c);
    struct tcp_pcb *pcb = smr_r.pcb[i];
    const uint8_t *p;
    size_t n;
    unsigned f;
    if (!pcb) return;
    smr_raw_feed(c, i);
    while ((n = smr_conn_output(&smr_r.x, c, &p)) > 0) {
        u16_t room = tcp_sndbuf(pcb);
        u8_t fl = p == smr_payload ? 0 : TCP_WRITE_FLAG_COPY;
        if (room == 0) break;
        if (n > room) n = room;
        if (tcp_write(pcb, p, (u16_t)n, fl) != ERR_OK) break;
        smr_conn_sent(&smr_r.x, c, n, smr_now());
    }
    tcp_output(pcb);
    f = smr_conn_flags(c);
    if (f & SMR_F_SHUT) {
        tcp_shutdown(pcb, 0, 1);
        smr_conn_shut_done(c);
    }
    if (f & SMR_F_CLOSE) {
        smr_raw_detach(i);
        smr_conn_free(&smr_r.x, c, smr_now());
    }
}

/* Sessions of throughput tests affect each other (Stop, final Report). */
static void smr_raw_pump_all(void) {
    size_t i;
    for (i = 0; i < smr_r.x.hi; i++)
        if (smr_r.pcb[i]) smr_raw_pump(&smr_r.x.conns[i]);
}

static int smr_raw_tests_open(void) {
    size_t i;
    for (i = 0; i < SMR_MAX_TESTS; i++)
        if (smr_r.x.tests[i].id) return 1;
    return 0;
}

static err_t smr_raw_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err) {
    struct smr_conn *c = arg;
    size_t i;
    (void)err;
    if (!c) {
        if (p) pbuf_free(p);
        return ERR_OK;
    }
    i = smr_conn_index(&smr_r.x, c);
    if (!p) {
        smr_conn_eof(&smr_r.x, c, smr_now());
    } else if (smr_r.held[i]) {
        pbuf_cat(smr_r.held[i], p);
    } else {
        smr_r.held[i] = p;
        smr_r.held_off[i] = 0;
    }
    (void)pcb;
    smr_raw_pump(c);
    if (smr_raw_tests_open()) smr_raw_pump_all();
    return ERR_OK;
}

static err_t smr_raw_sent(void *arg, struct tcp_pcb *pcb, u16_t len) {
    (void)pcb;
    (void)len;
    if (arg) smr_raw_pump(arg);
    return ERR_OK;
}

static void smr_raw_err(void *arg, err_t err) {
    struct smr_conn *c = arg;
    size_t i;
    (void)err;
    if (!c) return;
    i = smr_conn_index(&smr_r.x, c);
    smr_r.pcb[i] = NULL; /* lwIP has freed it */
    smr_raw_log(NULL, c, "aborted", "connection reset");
    smr_raw_detach(i);
    smr_conn_free(&smr_r.x, c, smr_now());
    if (smr_raw_tests_open()) smr_raw_pump_all();
}

static err_t smr_raw_accept(void *arg, struct tcp_pcb *pcb, err_t err) {
    struct smr_conn *c;
    size_t i;
    (void)arg;
    if (err != ERR_OK || !pcb) return ERR_VAL;
    c = smr_conn_open(&smr_r.x, smr_now());
    if (!c) {
        tcp_abort(pcb);
        return ERR_ABRT;
    }
    i = smr_conn_index(&smr_r.x, c);
    smr_r.pcb[i] = pcb;
    ip_addr_copy(smr_r.peer[i], pcb->remote_ip);
    smr_r.peer_port[i] = pcb->remote_port;
    tcp_arg(pcb, c);
    tcp_nagle_disable(pcb);
    tcp_recv(pcb, smr_raw_recv);
    tcp_sent(pcb, smr_raw_sent);
    tcp_err(pcb, smr_raw_err);
    smr_conn_start(&smr_r.x, c, smr_now());
    smr_raw_pump(c);
    return ERR_OK;
}

/* UDP echo: the reply is written into the received pbuf and sent back. */
static void smr_raw_udp(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16_t port) {
    uint64_t rx = smr_now();
    size_t n;
    (void)arg;
    if (p->next) { /* chained: work on a contiguous copy */
        size_t len = pbuf_copy_partial(p, smr_r.udp, 65535, 0);
        n = smr_udp_input(&smr_r.x, smr_r.udp, len, rx);
        if (n) {
            struct pbuf *q = pbuf_alloc(PBUF_TRANSPORT, (u16_t)n, PBUF_RAM);
            smr_udp_stamp_tx(smr_r.udp, smr_now());
            if (q && pbuf_take(q, smr_r.udp, (u16_t)n) == ERR_OK) udp_sendto(pcb, q, addr, port);
            if (q) pbuf_free(q);
        }
    } else {
        n = smr_udp_input(&smr_r.x, p->payload, p->len, rx);
        if (n) {
            pbuf_realloc(p, (u16_t)n);
            smr_udp_stamp_tx(p->payload, smr_now());
            udp_sendto(pcb, p, addr, port);
        }
    }
    pbuf_free(p);
}

/* On the tcpip thread, once the netif is up. */
static void smr_raw_listen(void) {
    struct tcp_pcb *t = tcp_new_ip_type(IPADDR_TYPE_ANY);
    struct udp_pcb *u = udp_new_ip_type(IPADDR_TYPE_ANY);
    if (!t || !u || tcp_bind(t, IP_ANY_TYPE, smr_r.port) != ERR_OK || udp_bind(u, IP_ANY_TYPE, smr_r.port) != ERR_OK) {
        fprintf(stderr, SMR_NAME ": error: cannot listen on port %u\n", smr_r.port);
        _exit(1);
    }
    t = tcp_listen_with_backlog(t, 255);
    tcp_accept(t, smr_raw_accept);
    udp_recv(u, smr_raw_udp, NULL);
}

/* Timeouts and drain deadlines, checked every few milliseconds. */
static void smr_raw_timers(void) {
    uint64_t now = smr_now();
    size_t i;
    LOCK_TCPIP_CORE();
    for (i = 0; i < smr_r.x.hi; i++) {
        struct smr_conn *c = &smr_r.x.conns[i];
        if (smr_r.pcb[i] && smr_conn_deadline(c) <= now) {
            smr_conn_timeout(&smr_r.x, c, now);
            smr_raw_pump(c);
        }
    }
    smr_tick(&smr_r.x, now);
    if (smr_raw_tests_open()) smr_raw_pump_all();
    UNLOCK_TCPIP_CORE();
}

int main(int argc, char **argv) {
    struct smr_config cfg;
    if (argc < 3 || argc > 5 || argv[1][0] == '-') {
        fprintf(stderr, "usage: " SMR_NAME " TAP-DEVICE IPV4-ADDRESS [PORT] [CPU]\n");
        return 2;
    }
    smr_r.port = (uint16_t)(argc > 3 ? atoi(argv[3]) : SMR_DEFAULT_PORT);
    if (argc > 4) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(atoi(argv[4]), &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            fprintf(stderr, SMR_NAME ": error: cannot pin to CPU %s\n", argv[4]);
            return 2;
        }
    }
    smr_default_config(&cfg);
    smr_init(&smr_r.x, &cfg);
    smr_r.x.log = smr_raw_log;
    smr_lwip_ready = smr_raw_listen;
    if (smr_lwip_start(argv[1], argv[2]) != 0) {
        fprintf(stderr, SMR_NAME ": error: cannot start lwIP on TAP device %s with %s\n", argv[1], argv[2]);
        return 1;
    }
    fprintf(stderr, SMR_NAME ": listening on tcp %s:%u\n" SMR_NAME ": listening on udp %s:%u\n", argv[2],
            smr_r.port, argv[2], smr_r.port);
    for (;;) {
        usleep(5000);
        smr_raw_timers();
    }
}
