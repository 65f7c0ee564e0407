/*
 * lwIP raw callback API backend (smr_lwip_raw.h): the "in-stack module"
 * of the latency-grid scenario (docs/scenarios.md). The engine
 * runs in lwIP's own context: received pbufs go straight into the engine,
 * responses are queued with tcp_write() from the static payload buffer
 * without copying, refilled from the tcp_sent callback, tcp_sndbuf() bytes
 * at a time. Everything else the engine offers (status and control
 * records, object-mode bytes generated into its scratch buffer) is only
 * valid until the next engine call, so it is queued with
 * TCP_WRITE_FLAG_COPY. UDP echo replies reuse the received pbuf.
 *
 * Each callback from lwIP is one pass of the engine (smr.h, bounded work
 * per pass): it starts with smr_pass_begin(), so what one callback queues
 * with tcp_write() is at most SMR_PASS_BYTES, and a UDP probe in the NIC's
 * queue waits behind at most that. What a pass leaves goes out from the
 * next tcp_sent callback, or the timer's pass.
 *
 * Admission (smr_admit.h) decides before the engine sees a connection;
 * with a secret, UDP requests carry a MAC trailer (smr_udp_input_from,
 * smr_udp_seal) and sessions prove it in the header. No OS call here: the
 * clock and the event lines are the program's (smr_raw_clock,
 * smr_raw_event), so the same file runs on Linux and on a board.
 */
#include <limits.h> /* SSIZE_MAX first: the unix port's arch.h defines ssize_t without it */

#include "smr_lwip_raw.h"

#include "lwip/pbuf.h"
#include "lwip/tcp.h"
#include "lwip/udp.h"

#include <string.h>

#define SMR_NCONN (SMR_MAX_CONNS + SMR_SPARE_CONNS)
/* Largest UDP datagram served when lwIP hands one over in several pbufs
 * (reassembled from fragments): it is copied into a buffer of this size
 * first. A board sets it to about one MTU; longer ones are dropped. */
#ifndef SMR_RAW_UDP_MAX
#define SMR_RAW_UDP_MAX 65535
#endif

static struct smr_raw {
    struct smr_ctx x;
    struct smr_admit adm;
    struct tcp_pcb *pcb[SMR_NCONN];
    struct pbuf *held[SMR_NCONN]; /* input the engine could not take yet */
    uint16_t held_off[SMR_NCONN];
    ip_addr_t peer[SMR_NCONN];
    uint16_t peer_port[SMR_NCONN];
    uint8_t udp[SMR_RAW_UDP_MAX];
} smr_r;

/* Appends s to line (at most cap - 1 bytes and a NUL in all). */
static size_t smr_raw_cat(char *line, size_t at, size_t cap, const char *s) {
    while (*s && at + 1 < cap) line[at++] = *s++;
    line[at] = 0;
    return at;
}

static void smr_raw_log(void *user, const struct smr_conn *c, const char *what, const char *detail) {
    size_t i = smr_conn_index(&smr_r.x, c), at = 0, k = 6;
    unsigned port = smr_r.peer_port[i];
    int aborted = strcmp(what, "aborted") == 0;
    char line[160], num[6];
    (void)user;
    num[--k] = 0;
    do num[--k] = (char)('0' + port % 10); while ((port /= 10) && k);
    if (!aborted) at = smr_raw_cat(line, at, sizeof line, "refused ");
    ipaddr_ntoa_r(&smr_r.peer[i], line + at, sizeof line - at);
    at = smr_raw_cat(line, strlen(line), sizeof line, ":");
    at = smr_raw_cat(line, at, sizeof line, num + k);
    at = smr_raw_cat(line, at, sizeof line, aborted ? ": session ended: " : ": ");
    if (!aborted) at = smr_raw_cat(line, smr_raw_cat(line, at, sizeof line, what), sizeof line, ": ");
    smr_raw_cat(line, at, sizeof line, detail);
    smr_raw_event(line);
}

/* Lets go of slot i's pcb: closed, its callbacks gone. At the lowest
 * priority, so that while it waits for the client's FIN (up to lwIP's
 * FIN_WAIT_2 timeout, 20 s, when the client never closes: a flood's
 * connections given up) lwIP may take it back for a new connection
 * when its pool of pcbs is empty (tcp_alloc's tcp_kill_prio). */
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
    tcp_setprio(p, TCP_PRIO_MIN);
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
        n = smr_conn_input(&smr_r.x, c, (const uint8_t *)q->payload + off, (size_t)(q->len - off), smr_raw_clock());
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
    /* Room first: object bytes are generated by smr_conn_output(). */
    while (tcp_sndbuf(pcb) > 0 && (n = smr_conn_output(&smr_r.x, c, &p)) > 0) {
        u16_t room = tcp_sndbuf(pcb);
        /* By reference only from the static payload (smr.h, output lifetime). */
        u8_t fl = p == smr_payload ? 0 : TCP_WRITE_FLAG_COPY;
        if (n > room) n = room;
        if (tcp_write(pcb, p, (u16_t)n, fl) != ERR_OK) break;
        smr_conn_sent(&smr_r.x, c, n, smr_raw_clock());
    }
    tcp_output(pcb);
    f = smr_conn_flags(c);
    if (f & SMR_F_SHUT) {
        tcp_shutdown(pcb, 0, 1);
        smr_conn_shut_done(c);
    }
    if (f & SMR_F_CLOSE) {
        smr_raw_detach(i);
        smr_conn_free(&smr_r.x, c, smr_raw_clock());
    }
}

/* Sessions of throughput tests affect each other (Stop, final Report).
 * In the order of turns (smr_turn: from the slot after the last one that
 * moved bytes), so none starves in a pass. */
static void smr_raw_pump_all(void) {
    size_t i, k, first = smr_r.x.turn;
    for (k = 0; k < smr_r.x.hi; k++)
        if (smr_r.pcb[i = (k + first) % smr_r.x.hi]) smr_raw_pump(&smr_r.x.conns[i]);
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
    (void)pcb;
    smr_pass_begin(&smr_r.x);
    if (!c) {
        if (p) pbuf_free(p);
        return ERR_OK;
    }
    i = smr_conn_index(&smr_r.x, c);
    if (!p) {
        smr_conn_eof(&smr_r.x, c, smr_raw_clock());
    } else if (smr_r.held[i]) {
        pbuf_cat(smr_r.held[i], p);
    } else {
        smr_r.held[i] = p;
        smr_r.held_off[i] = 0;
    }
    smr_raw_pump(c);
    if (smr_raw_tests_open()) smr_raw_pump_all();
    return ERR_OK;
}

static err_t smr_raw_sent(void *arg, struct tcp_pcb *pcb, u16_t len) {
    (void)pcb;
    (void)len;
    smr_pass_begin(&smr_r.x);
    if (arg) smr_raw_pump(arg);
    return ERR_OK;
}

static void smr_raw_err(void *arg, err_t err) {
    struct smr_conn *c = arg;
    size_t i;
    (void)err;
    if (!c) return;
    smr_pass_begin(&smr_r.x);
    i = smr_conn_index(&smr_r.x, c);
    smr_r.pcb[i] = NULL; /* lwIP has freed it */
    smr_raw_log(NULL, c, "aborted", "connection reset");
    smr_raw_detach(i);
    smr_conn_free(&smr_r.x, c, smr_raw_clock());
    if (smr_raw_tests_open()) smr_raw_pump_all();
}

/* An address's bytes for the admission rules (4 for IPv4, 16 for IPv6). */
static const uint8_t *smr_raw_abytes(const ip_addr_t *a, size_t *len) {
#if LWIP_IPV6
    if (IP_IS_V6(a)) {
        *len = 16;
        return (const uint8_t *)ip_2_ip6(a)->addr;
    }
#endif
    *len = 4;
    return (const uint8_t *)&ip_2_ip4(a)->addr;
}

/* A new connection: admitted (smr_admit.h), given a slot and started;
 * one given up to make room (smr_conn_start) is sent its record and
 * closed at once. */
static err_t smr_raw_accept(void *arg, struct tcp_pcb *pcb, err_t err) {
    struct smr_conn *c = NULL, *v;
    uint64_t now = smr_raw_clock();
    const uint8_t *ab;
    size_t i, al;
    uint32_t tag;
    (void)arg;
    if (err != ERR_OK || !pcb) return ERR_VAL;
    smr_pass_begin(&smr_r.x);
    ab = smr_raw_abytes(&pcb->remote_ip, &al);
    /* Limits of an address, or no slot left: reset at once, nothing read. */
    if (!smr_admit_tcp(&smr_r.adm, &smr_r.x, ab, al, now, &tag) || !(c = smr_conn_open(&smr_r.x, now))) {
        tcp_abort(pcb);
        return ERR_ABRT;
    }
    c->client = tag;
    i = smr_conn_index(&smr_r.x, c);
    smr_r.pcb[i] = pcb;
    ip_addr_copy(smr_r.peer[i], pcb->remote_ip);
    smr_r.peer_port[i] = pcb->remote_port;
    tcp_arg(pcb, c);
    tcp_nagle_disable(pcb);
    tcp_recv(pcb, smr_raw_recv);
    tcp_sent(pcb, smr_raw_sent);
    tcp_err(pcb, smr_raw_err);
    v = smr_conn_start(&smr_r.x, c, now);
    smr_raw_pump(c);
    if (v) smr_raw_pump(v);
    return ERR_OK;
}

/* The engine's answer to the datagram in buf (len bytes) from addr:port,
 * in place: the reply's length, 0 for none. */
static size_t smr_raw_answer(uint8_t *buf, size_t len, const ip_addr_t *addr, u16_t port) {
    uint64_t rx = smr_raw_clock();
    size_t r;
#ifndef SMR_NO_AUTH
    uint8_t key[SMR_PEER_KEY];
    size_t al;
    const uint8_t *ab = smr_raw_abytes(addr, &al);
    key[0] = (uint8_t)(port >> 8);
    key[1] = (uint8_t)port;
    memcpy(key + 2, ab, al);
    r = smr_udp_input_from(&smr_r.x, buf, len, rx, key, 2 + al);
#else
    (void)addr;
    (void)port;
    r = smr_udp_input(&smr_r.x, buf, len, rx);
#endif
    if (!r) return 0;
    smr_udp_stamp_tx(buf, smr_raw_clock());
    return smr_udp_seal(&smr_r.x, buf, r);
}

/* UDP echo: the reply is written into the received pbuf and sent back
 * (a chained one is copied into one buffer first). */
static void smr_raw_udp(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16_t port) {
    size_t n, al;
    const uint8_t *ab = smr_raw_abytes(addr, &al);
    (void)arg;
    if (!smr_admit_allowed(&smr_r.adm, ab, al)) {
        pbuf_free(p);
        return;
    }
    if (!p->next) {
        n = smr_raw_answer(p->payload, p->len, addr, port);
        if (n) {
            pbuf_realloc(p, (u16_t)n);
            udp_sendto(pcb, p, addr, port);
        }
#if SMR_RAW_UDP_MAX < 65535
    } else if (p->tot_len <= SMR_RAW_UDP_MAX) {
#else
    } else {
#endif
        size_t len = pbuf_copy_partial(p, smr_r.udp, p->tot_len, 0);
        n = smr_raw_answer(smr_r.udp, len, addr, port);
        if (n) {
            struct pbuf *q = pbuf_alloc(PBUF_TRANSPORT, (u16_t)n, PBUF_RAM);
            if (q && pbuf_take(q, smr_r.udp, (u16_t)n) == ERR_OK) udp_sendto(pcb, q, addr, port);
            if (q) pbuf_free(q);
        }
    }
    pbuf_free(p);
}

int smr_raw_start(const struct smr_config *cfg, const struct smr_admit *adm, const uint8_t seed[16], uint16_t port) {
    struct tcp_pcb *t = tcp_new_ip_type(IPADDR_TYPE_ANY), *l;
    struct udp_pcb *u = udp_new_ip_type(IPADDR_TYPE_ANY);
    char lim[SMR_LIMITS_LINE];
    smr_init(&smr_r.x, cfg);
    smr_r.x.log = smr_raw_log;
    smr_r.adm = *adm;
#ifndef SMR_NO_AUTH
    memcpy(smr_r.x.seed, seed, sizeof smr_r.x.seed);
#else
    (void)seed;
#endif
    if (!t || !u || tcp_bind(t, IP_ANY_TYPE, port) != ERR_OK || udp_bind(u, IP_ANY_TYPE, port) != ERR_OK ||
        !(l = tcp_listen_with_backlog(t, 255))) {
        if (t) tcp_close(t);
        if (u) udp_remove(u);
        return -1;
    }
    tcp_accept(l, smr_raw_accept);
    udp_recv(u, smr_raw_udp, NULL);
    smr_limits_line(&smr_r.x.cfg, lim);
    smr_raw_event(lim);
    return 0;
}

void smr_raw_timers(void) {
    uint64_t now = smr_raw_clock();
    size_t i;
    smr_pass_begin(&smr_r.x);
    for (i = 0; i < smr_r.x.hi; i++) {
        struct smr_conn *c = &smr_r.x.conns[i];
        if (smr_r.pcb[i] && smr_conn_deadline(c) <= now) {
            smr_conn_timeout(&smr_r.x, c, now);
            smr_raw_pump(c);
        }
    }
    smr_tick(&smr_r.x, now);
    smr_raw_pump_all(); /* and whatever a pass left with nothing in flight */
}
