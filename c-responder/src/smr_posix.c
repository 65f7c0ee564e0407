/*
 * The POSIX sockets backend: one thread, one loop, TCP and UDP on the same
 * port, every connection non-blocking. It binds the listeners, admits
 * connections (smr_admit.h), moves bytes between the sockets and the
 * engine, echoes UDP, and turns the engine's deadlines into wait timeouts.
 * Builds on Linux, BSD, macOS, QNX (io-sock) and Embox, and with
 * -DSMR_LWIP on lwIP's sockets API (smr_lwip_sock.c); Linux-only extras
 * (TCP_INFO, accept4, kernel timestamps) are behind #ifdef __linux__.
 *
 * The loop is one pass after another (smr.h, bounded work per pass): a
 * wait (smr_wait.c), then the UDP datagrams that have come, new
 * connections, and the ready connections, each once, in the order of
 * their turns (smr_turn: slots in order from the one after the last
 * connection that moved bytes), until the pass's SMR_PASS_BYTES are
 * moved. A pass the bound cut short is followed, up to
 * SMR_PASSES_PER_WAIT times, by another that looks at the UDP sockets
 * with a read (a cheaper look than a wait) and goes on with the next
 * connection. A UDP probe so waits behind at most one pass of bulk data,
 * and no connection waits for its turn behind busier ones. Reads take
 * every queued rr request in one call, and a read or write that the
 * socket cut short ends that connection's turn: the next wait says when
 * there is more (no call that would find nothing).
 */
#include "smr_posix.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

struct smr_posix smr_g;

uint64_t smr_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int smr_cpu(void *user, uint64_t *u, uint64_t *s) {
    struct rusage ru;
    (void)user;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    *u = (uint64_t)ru.ru_utime.tv_sec * 1000000000u + (uint64_t)ru.ru_utime.tv_usec * 1000u;
    *s = (uint64_t)ru.ru_stime.tv_sec * 1000000000u + (uint64_t)ru.ru_stime.tv_usec * 1000u;
    return 1;
}

#if defined(__linux__) && !defined(SMR_LWIP)
static int smr_tcpinfo(void *user, const struct smr_conn *c, struct smr_tcpinfo *ti) {
    struct smr_posix *g = user;
    struct tcp_info i;
    socklen_t n = sizeof i;
    if (getsockopt(g->fd[smr_conn_index(&g->x, c)], IPPROTO_TCP, TCP_INFO, &i, &n) != 0) return 0;
    ti->retrans = i.tcpi_total_retrans;
    ti->cwnd_bytes = i.tcpi_snd_cwnd * i.tcpi_snd_mss;
    ti->rtt_us = i.tcpi_rtt;
    return 1;
}
#endif

static void smr_nonblock(int fd) {
    int fl = SMR_SOCK(fcntl)(fd, F_GETFL, 0);
    if (SMR_SOCK(fcntl)(fd, F_SETFL, fl | SMR_O_NONBLOCK) != 0) smr_die("cannot make a socket non-blocking", NULL);
}

int smr_parse_addr(const char *s, union smr_addr *a) {
    char host[INET6_ADDRSTRLEN + 2];
    const char *colon = strrchr(s, ':');
    char *end;
    unsigned long port;
    size_t hl;
    if (!colon) return -1;
    hl = (size_t)(colon - s);
    if (hl == 0 || hl >= sizeof host) return -1;
    port = strtoul(colon + 1, &end, 10);
    if (*end || colon[1] == 0 || port > 65535) return -1;
    memset(a, 0, sizeof *a);
    if (s[0] == '[' && s[hl - 1] == ']') {
        memcpy(host, s + 1, hl - 2);
        host[hl - 2] = 0;
        a->v6.sin6_family = AF_INET6;
        a->v6.sin6_port = htons((unsigned short)port);
        return inet_pton(AF_INET6, host, &a->v6.sin6_addr) == 1 ? 0 : -1;
    }
    memcpy(host, s, hl);
    host[hl] = 0;
    a->v4.sin_family = AF_INET;
    a->v4.sin_port = htons((unsigned short)port);
    return inet_pton(AF_INET, host, &a->v4.sin_addr) == 1 ? 0 : -1;
}

const uint8_t *smr_abytes(const union smr_addr *a, size_t *n) {
    *n = a->sa.sa_family == AF_INET6 ? 16 : 4;
    return *n == 16 ? a->v6.sin6_addr.s6_addr : (const uint8_t *)&a->v4.sin_addr;
}

static socklen_t smr_alen(const union smr_addr *a) {
    return a->sa.sa_family == AF_INET6 ? sizeof a->v6 : sizeof a->v4;
}

static int smr_socket(union smr_addr *a, int type) {
    int one = 1, fd = SMR_SOCK(socket)(a->sa.sa_family, type, 0);
    if (fd < 0) return -1;
    if (type == SOCK_STREAM) SMR_SOCK(setsockopt)(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (a->sa.sa_family == AF_INET6) SMR_SOCK(setsockopt)(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
#if defined(SMR_KNOBS) && !defined(SMR_LWIP)
    /* Accepted sockets inherit it from the listener. */
    if (smr_g.busy_poll &&
        SMR_SOCK(setsockopt)(fd, SOL_SOCKET, SO_BUSY_POLL, &smr_g.busy_poll, sizeof smr_g.busy_poll) != 0)
        smr_die("--busy-poll: not permitted above net.core.busy_read without CAP_NET_ADMIN (run as root)", NULL);
#endif
    if (SMR_SOCK(bind)(fd, &a->sa, smr_alen(a)) != 0 || (type == SOCK_STREAM && SMR_SOCK(listen)(fd, 1024) != 0)) {
        SMR_SOCK(close)(fd);
        return -1;
    }
    smr_nonblock(fd);
    return fd;
}

/* Binds TCP, then UDP on the port TCP got (retrying when port 0 collides). */
static int smr_bind_pair(int i) {
    union smr_addr *a = &smr_g.listen[i];
    int try;
    for (try = 0; try < 16; try++) {
        union smr_addr got = *a;
        socklen_t n = sizeof got;
        int t = smr_socket(a, SOCK_STREAM), u;
        if (t < 0) return -1;
        SMR_SOCK(getsockname)(t, &got.sa, &n);
        u = smr_socket(&got, SOCK_DGRAM);
        if (u >= 0) {
#ifndef SMR_LWIP
            /* As the Rust responder: room for a burst (or a junk flood)
             * while the loop serves TCP; best effort, capped by rmem_max. */
            int rcv = 4 << 20;
            setsockopt(u, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
#endif
            smr_g.tcp[i] = t;
            smr_g.udp[i] = u;
            *a = got;
            return 0;
        }
        SMR_SOCK(close)(t);
        if (errno != EADDRINUSE || (a->sa.sa_family == AF_INET6 ? a->v6.sin6_port : a->v4.sin_port) != 0) return -1;
    }
    return -1;
}

#ifndef SMR_NO_AUTH
/* The bytes a UDP client's replay window is keyed by: port and address. */
static size_t smr_peer_key(const union smr_addr *a, uint8_t *k) {
    if (a->sa.sa_family == AF_INET6) {
        memcpy(k, &a->v6.sin6_port, 2);
        memcpy(k + 2, &a->v6.sin6_addr, 16);
        return 18;
    }
    memcpy(k, &a->v4.sin_port, 2);
    memcpy(k + 2, &a->v4.sin_addr, 4);
    return 6;
}
#endif

static void smr_settle(struct smr_conn *c, uint64_t now);

static void smr_close(struct smr_conn *c, uint64_t now) {
    size_t i = smr_conn_index(&smr_g.x, c);
    smr_wait_forget(SMR_KEY_CONN(i));
    SMR_SOCK(close)(smr_g.fd[i]);
    smr_g.fd[i] = -1;
    smr_conn_free(&smr_g.x, c, now);
}

static void smr_accept(int lfd, uint64_t now) {
    int k;
    for (k = 0; k < 64; k++) {
        union smr_addr peer;
        socklen_t n = sizeof peer;
#if defined(__linux__) && !defined(SMR_LWIP)
        /* Non-blocking from the start: two fcntl calls fewer per connection. */
        int one = 1, fd = accept4(lfd, &peer.sa, &n, SOCK_NONBLOCK);
#else
        int one = 1, fd = SMR_SOCK(accept)(lfd, &peer.sa, &n);
#endif
        struct smr_conn *c = NULL;
        const uint8_t *ab;
        size_t al;
        uint32_t tag;
        if (fd < 0) return;
        ab = smr_abytes(&peer, &al);
        /* Limits of an address: closed at once, nothing read or written. */
        if (!smr_admit_tcp(&smr_g.adm, &smr_g.x, ab, al, now, &tag) || !(c = smr_conn_open(&smr_g.x, now))) {
            SMR_SOCK(close)(fd);
            continue;
        }
        c->client = tag;
#if !defined(__linux__) || defined(SMR_LWIP)
        smr_nonblock(fd);
#endif
        SMR_SOCK(setsockopt)(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        smr_g.nagle[smr_conn_index(&smr_g.x, c)] = 0;
#ifdef SMR_TS
        memset(&smr_g.ts[smr_conn_index(&smr_g.x, c)], 0, sizeof smr_g.ts[0]);
#endif
        smr_g.fd[smr_conn_index(&smr_g.x, c)] = fd;
        smr_g.peer[smr_conn_index(&smr_g.x, c)] = peer;
        smr_conn_start(&smr_g.x, c, now);
        smr_settle(c, now);
    }
}

static void smr_udp(int l) {
    int k, fd = smr_g.udp[l];
    for (k = 0; k < 64; k++) {
        union smr_addr peer;
        socklen_t pl = sizeof peer;
        ssize_t n;
        size_t r, al;
        const uint8_t *ab;
        uint64_t rx;
#ifdef SMR_TS
        uint64_t rx_kernel = 0;
        int wall = smr_g.uts[l].on;
        if (wall) {
            uint32_t key;
            uint64_t ns;
            while (smr_ts_next(fd, &key, &ns)) /* stray stamps: POLLERR */
                ;
            n = smr_ts_recv(fd, smr_g.rx, sizeof smr_g.rx, &peer, &pl, &rx_kernel);
        } else
#endif
            n = SMR_SOCK(recvfrom)(fd, smr_g.rx, sizeof smr_g.rx, 0, &peer.sa, &pl);
        if (n < 0) return;
        ab = smr_abytes(&peer, &al);
        if (!smr_admit_allowed(&smr_g.adm, ab, al)) continue;
#ifdef SMR_TS
        rx = wall ? smr_real() : smr_now();
        if (!wall && n >= SMR_UDP_HDR + SMR_BLOCK_LEN && (smr_g.rx[7] & 2) && smr_g.rx[5] == 1)
            smr_g.uts[l].on = (uint8_t)smr_ts_enable(fd, 0);
#else
        rx = smr_now();
#endif
#ifndef SMR_NO_AUTH
        {
            uint8_t key[SMR_PEER_KEY];
            r = smr_udp_input_from(&smr_g.x, smr_g.rx, (size_t)n, rx, key, smr_peer_key(&peer, key));
        }
#else
        r = smr_udp_input(&smr_g.x, smr_g.rx, (size_t)n, rx);
#endif
#ifdef SMR_TS
        if (r && (smr_g.rx[7] & 2)) {
            smr_udp_stamped(l, fd, r, &peer, pl, rx, rx_kernel, wall);
            continue;
        }
#endif
        if (r) {
            smr_udp_stamp_tx(smr_g.rx, smr_now());
            r = smr_udp_seal(&smr_g.x, smr_g.rx, r);
            SMR_SOCK(sendto)(fd, smr_g.rx, r, 0, &peer.sa, pl);
        }
    }
}

/* Sends what the engine offers (within the pass) until the socket takes
 * less than offered: a full socket says so at the next wait. */
static int smr_write(struct smr_conn *c, int fd) {
    const uint8_t *p[2];
    size_t n[2], k;
    for (;;) {
        struct iovec v[2];
        ssize_t w;
        k = smr_conn_iov(&smr_g.x, c, p, n);
        if (!k) return 0;
        v[0].iov_base = (void *)(uintptr_t)p[0];
        v[0].iov_len = n[0];
        v[1].iov_base = (void *)(uintptr_t)(k > 1 ? p[1] : p[0]);
        v[1].iov_len = k > 1 ? n[1] : 0;
        w = SMR_SOCK(writev)(fd, v, (int)k);
        if (w < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
        smr_conn_sent(&smr_g.x, c, (size_t)w, smr_now());
        if ((size_t)w < v[0].iov_len + v[1].iov_len) return 0;
    }
}

#ifndef SMR_NODELAY_FROM
/* Sources writing less than this per call get Nagle back (docs/protocol.md,
 * mode 5): small writes are meant to be coalesced, as a bulk sender's are. */
#define SMR_NODELAY_FROM 16384u
#endif

static void smr_nagle_for_source(struct smr_conn *c, int fd) {
    size_t i = smr_conn_index(&smr_g.x, c);
    int zero = 0;
    if (smr_g.nagle[i] || c->mode != 5 || c->resp_size >= SMR_NODELAY_FROM) return;
    SMR_SOCK(setsockopt)(fd, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero);
    smr_g.nagle[i] = 1;
}

/* Reads what the engine wants (within the pass) until the socket has
 * less than asked for; returns -1 when the socket failed. */
static int smr_read(struct smr_conn *c, int fd) {
#ifdef SMR_TS
    struct smr_ts *t = &smr_g.ts[smr_conn_index(&smr_g.x, c)];
    smr_ts_tcp(c, fd);
#endif
    for (;;) {
        size_t want = smr_conn_read_max(&smr_g.x, c);
        ssize_t r;
        if (want == 0 || (c->flags & SMR_F_CLOSE)) return 0;
        want = want < sizeof smr_g.rx ? want : sizeof smr_g.rx;
#ifdef SMR_TS
        if (t->on) {
            uint64_t stamp;
            r = smr_ts_recv(fd, smr_g.rx, want, NULL, NULL, &stamp);
            if (r > 0) {
                t->rx_kernel = stamp;
                t->app_rx = smr_real();
            }
        } else
#endif
            r = SMR_SOCK(recv)(fd, smr_g.rx, want, 0);
        if (r > 0) {
            smr_conn_input(&smr_g.x, c, smr_g.rx, (size_t)r, smr_now());
            smr_nagle_for_source(c, fd);
#ifdef SMR_TS
            smr_ts_tcp(c, fd); /* on before the status record goes out */
#endif
            if ((size_t)r < want) return 0;
        } else if (r == 0) {
            smr_conn_eof(&smr_g.x, c, smr_now());
            return 0;
        } else {
            return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
        }
    }
}

/* After a connection's turn: the half-close or close the engine asks for,
 * and what its socket waits for next. */
static void smr_settle(struct smr_conn *c, uint64_t now) {
    size_t i = smr_conn_index(&smr_g.x, c);
    int fd = smr_g.fd[i];
    unsigned f = smr_conn_flags(c);
    if (f & SMR_F_SHUT) {
        SMR_SOCK(shutdown)(fd, SHUT_WR);
        smr_conn_shut_done(c);
    }
    if (f & SMR_F_CLOSE) {
        smr_close(c, now);
        return;
    }
    smr_wait_set(SMR_KEY_CONN(i), fd,
                 (smr_conn_want(c) ? SMR_IN : 0u) | (smr_conn_has_output(&smr_g.x, c) ? SMR_OUT : 0u));
}

/* One connection's turn: read if the wait found it readable, write what
 * is due if the wait found it at all (ev 0: only settle it). Kept out of
 * line: gcc 12 inlined it into the loop at -Oz with LTO, 900 bytes more
 * of the small build's .text. */
SMR_NOINLINE static void smr_service(struct smr_conn *c, unsigned ev, uint64_t now) {
    int fd = smr_g.fd[smr_conn_index(&smr_g.x, c)];
    if ((ev & (SMR_IN | SMR_ERR)) && smr_read(c, fd) < 0) {
        smr_logline(&smr_g, c, "aborted", "connection reset or failed");
        smr_close(c, now);
        return;
    }
    if (ev && smr_write(c, fd) < 0) {
        smr_logline(&smr_g, c, "aborted", "send failed (client gone mid-response)");
        smr_close(c, now);
        return;
    }
    smr_settle(c, now);
}

/* Every connection, when a deadline is due or a throughput test is open
 * (its sessions act on each other: Stop, the final Report, pacing): the
 * timeout, the close or half-close, and what its socket waits for (what
 * it now has to send goes when the next wait finds the socket writable,
 * no write on a socket that may be full); then the next deadline, the
 * wait's timeout. */
static void smr_sweep(uint64_t now) {
    size_t i;
    if (smr_tick(&smr_g.x, now) || now >= smr_g.due)
        for (i = 0; i < smr_g.x.hi; i++) {
            struct smr_conn *c = &smr_g.x.conns[i];
            if (smr_g.fd[i] < 0) continue;
            if (smr_conn_deadline(c) <= now) smr_conn_timeout(&smr_g.x, c, now);
            smr_service(c, 0, now);
        }
    smr_g.due = smr_next_deadline(&smr_g.x);
}

/* Up to the next deadline, rounded up to a millisecond; a minute at most
 * (with no deadline at all the loop wakes once a minute, for nothing). */
static int smr_timeout_ms(uint64_t now) {
    uint64_t d = smr_g.due > now ? (smr_g.due - now) / 1000000u + 1u : 0u;
    return d > 60000 ? 60000 : (int)d;
}

static void smr_loop(void) {
    for (;;) {
        int n = smr_wait(smr_timeout_ms(smr_now())), i, l, pass;
        uint64_t now = smr_now();
        unsigned ev, k;
        smr_wait_order(n);
        smr_pass_begin(&smr_g.x);
        /* Datagrams and new connections first: a probe waits behind no
         * TCP work of this pass. */
        for (i = 0; i < n && (k = smr_wait_ready(i, &ev)) < SMR_KEY_CONN(0); i++) {
            if (!ev) continue;
            if (k & 1)
                smr_udp((int)(k >> 1));
            else
                smr_accept(smr_g.tcp[k >> 1], now);
        }
        /* The ready connections, each once, in turn order. A pass the
         * bound cut short is followed by another that looks at the UDP
         * sockets with a read (a cheaper look than a wait) and goes on
         * with the next connection. */
        for (pass = 0; pass < SMR_PASSES_PER_WAIT && i < n; pass++) {
            if (pass) {
                smr_pass_begin(&smr_g.x);
                for (l = 0; l < smr_g.nlisten; l++) smr_udp(l);
            }
            while (i < n) {
                k = smr_wait_ready(i++, &ev);
                if (ev && smr_g.fd[k - SMR_KEY_CONN(0)] >= 0)
                    smr_service(&smr_g.x.conns[k - SMR_KEY_CONN(0)], ev, now);
                if (!smr_g.x.pass_left) break;
            }
        }
        smr_sweep(now);
    }
}

int smr_run(struct smr_config *cfg) {
    int l;
    if (smr_g.nlisten == 0) {
        smr_parse_addr("0.0.0.0:24680", &smr_g.listen[0]);
        smr_g.nlisten = 1;
    }
    signal(SIGPIPE, SIG_IGN);
    smr_init(&smr_g.x, cfg);
#ifndef SMR_NO_AUTH
    if (cfg->key_len) {
        /* Nonces must not repeat across restarts: 16 random bytes. */
        int fd = open("/dev/urandom", O_RDONLY);
        if (fd < 0 || read(fd, smr_g.x.seed, sizeof smr_g.x.seed) != (ssize_t)sizeof smr_g.x.seed)
            smr_die("cannot read /dev/urandom for challenge nonces", NULL);
        close(fd);
        smr_log_head("info");
        fprintf(stderr, "authentication on: clients must prove the shared secret\n");
    }
#endif
    smr_g.x.user = &smr_g;
    smr_g.x.log = smr_logline;
    smr_g.x.cpu = smr_cpu;
#if defined(__linux__) && !defined(SMR_LWIP)
    smr_g.x.tcpinfo = smr_tcpinfo;
#endif
#ifdef SMR_TS
    smr_g.x.stamps = smr_ts_hook;
#endif
    for (l = 0; l < SMR_NCONN; l++) smr_g.fd[l] = -1;
    smr_wait_init();
    for (l = 0; l < smr_g.nlisten; l++) {
        char a[64];
        smr_fmt_addr(&smr_g.listen[l], a, sizeof a);
        if (smr_bind_pair(l) != 0) {
            fprintf(stderr, SMR_NAME ": error: cannot listen on %s: %s\n", a, strerror(errno));
            return 1;
        }
        smr_wait_set(2u * (unsigned)l, smr_g.tcp[l], SMR_IN);
        smr_wait_set(2u * (unsigned)l + 1u, smr_g.udp[l], SMR_IN);
        smr_fmt_addr(&smr_g.listen[l], a, sizeof a);
        smr_log_head("info");
        fprintf(stderr, "listening on tcp %s\n", a);
        smr_log_head("info");
        fprintf(stderr, "listening on udp %s\n", a);
    }
    if (!smr_g.quiet) smr_log_objects(cfg);
    smr_loop();
    return 0;
}
