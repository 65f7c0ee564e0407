/*
 * The POSIX sockets backend: one thread, one loop, TCP and UDP on the same
 * port, every connection non-blocking. It binds the listeners
 * (smr_sockets.c), admits connections (smr_admit.h) and starts them in
 * the engine, closing at once any the engine gives up to make room (fair
 * slots, smr_conn_start), moves bytes between the sockets and the engine,
 * echoes UDP, and turns the engine's deadlines into wait timeouts. Its
 * state is the struct smr_posix that main hands to smr_run.
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
#include "smr_posix_int.h"

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

#ifndef SMR_PLATFORM_CLOCK
uint64_t smr_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

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

static void smr_settle(struct smr_posix *g, struct smr_conn *c, uint64_t now);

static void smr_close(struct smr_posix *g, struct smr_conn *c, uint64_t now) {
    size_t i = smr_conn_index(&g->x, c);
    smr_wait_forget(&g->w, SMR_KEY_CONN(i));
    SMR_SOCK(close)(g->fd[i]);
    g->fd[i] = -1;
    smr_conn_free(&g->x, c, now);
}

static void smr_service(struct smr_posix *g, struct smr_conn *c, unsigned ev, uint64_t now);

/* New connections, up to 64: admitted (smr_admit.h), given a slot, and
 * started; one given up to make room (smr_conn_start) is sent its record
 * and closed at once. */
static void smr_accept(struct smr_posix *g, int lfd, uint64_t now) {
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
        struct smr_conn *c = NULL, *v;
        const uint8_t *ab;
        size_t al;
        uint32_t tag;
        if (fd < 0) return;
        ab = smr_abytes(&peer, &al);
        /* Limits of an address: closed at once, nothing read or written. */
        if (!smr_admit_tcp(&g->adm, &g->x, ab, al, now, &tag) || !(c = smr_conn_open(&g->x, now))) {
            SMR_SOCK(close)(fd);
            continue;
        }
        c->client = tag;
#if !defined(__linux__) || defined(SMR_LWIP)
        smr_nonblock(fd);
#endif
        SMR_SOCK(setsockopt)(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        g->nagle[smr_conn_index(&g->x, c)] = 0;
#ifdef SMR_TS
        memset(&g->ts[smr_conn_index(&g->x, c)], 0, sizeof g->ts[0]);
#endif
        g->fd[smr_conn_index(&g->x, c)] = fd;
        g->peer[smr_conn_index(&g->x, c)] = peer;
        v = smr_conn_start(&g->x, c, now);
        smr_settle(g, c, now);
        if (v) smr_service(g, v, SMR_OUT, now);
    }
}

/* The datagrams waiting on UDP listener l, up to 64, each answered as it
 * comes: allowed (smr_admit.h), echoed by the engine in g->rx, sealed
 * with a secret's MAC, and with stamps (SMR_TS) timed by the kernel. */
static void smr_udp(struct smr_posix *g, int l) {
    int k, fd = g->udp[l];
    for (k = 0; k < 64; k++) {
        union smr_addr peer;
        socklen_t pl = sizeof peer;
        ssize_t n;
        size_t r, al;
        const uint8_t *ab;
        uint64_t t[3] = {0, 0, 0}; /* receive, the kernel's receive stamp, send */
#ifdef SMR_TS
        int wall = g->uts[l].on;
        if (wall) {
            uint32_t key;
            uint64_t ns;
            while (smr_ts_next(fd, &key, &ns)) /* stray stamps: POLLERR */
                ;
            n = smr_ts_recv(fd, g->rx, sizeof g->rx, &peer, &pl, &t[1]);
        } else
#endif
            n = SMR_SOCK(recvfrom)(fd, g->rx, sizeof g->rx, 0, &peer.sa, &pl);
        if (n < 0) return;
        ab = smr_abytes(&peer, &al);
        if (!smr_admit_allowed(&g->adm, ab, al)) continue;
#ifdef SMR_TS
        t[0] = wall ? smr_real() : smr_now();
        if (!wall && n >= SMR_UDP_HDR + SMR_BLOCK_LEN && (g->rx[7] & 2) && g->rx[5] == 1)
            g->uts[l].on = (uint8_t)smr_ts_enable(fd, 0);
#else
        t[0] = smr_now();
#endif
#ifndef SMR_NO_AUTH
        {
            uint8_t key[SMR_PEER_KEY];
            r = smr_udp_input_from(&g->x, g->rx, (size_t)n, t[0], key, smr_peer_key(&peer, key));
        }
#else
        r = smr_udp_input(&g->x, g->rx, (size_t)n, t[0]);
#endif
#ifdef SMR_TS
        if (r && (g->rx[7] & 2)) {
            t[2] = wall ? smr_real() : smr_now();
            smr_udp_stamped(&g->x, &g->uts[l], fd, g->rx, r, &peer, pl, t, wall);
            continue;
        }
#endif
#ifdef SMR_DRIVER_TS
        if (r && (g->rx[7] & 2)) {
            smr_udp_driver_stamped(&g->x, fd, g->rx, r, &peer, pl, t[0]);
            continue;
        }
#endif
        if (r) {
            smr_udp_stamp_tx(g->rx, smr_now());
            r = smr_udp_seal(&g->x, g->rx, r);
            SMR_SOCK(sendto)(fd, g->rx, r, 0, &peer.sa, pl);
        }
    }
}

/* Sends what the engine offers (within the pass) until the socket takes
 * less than offered: a full socket says so at the next wait. */
static int smr_write(struct smr_posix *g, struct smr_conn *c, int fd) {
    const uint8_t *p[2];
    size_t n[2], k;
    for (;;) {
        struct iovec v[2];
        ssize_t w;
        k = smr_conn_iov(&g->x, c, p, n);
        if (!k) return 0;
        v[0].iov_base = (void *)(uintptr_t)p[0];
        v[0].iov_len = n[0];
        v[1].iov_base = (void *)(uintptr_t)(k > 1 ? p[1] : p[0]);
        v[1].iov_len = k > 1 ? n[1] : 0;
        w = SMR_SOCK(writev)(fd, v, (int)k);
        if (w < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
        smr_conn_sent(&g->x, c, (size_t)w, smr_now());
        if ((size_t)w < v[0].iov_len + v[1].iov_len) return 0;
    }
}

#ifndef SMR_NODELAY_FROM
/* Sources writing less than this per call get Nagle back (docs/protocol.md,
 * mode 5): small writes are meant to be coalesced, as a bulk sender's are. */
#define SMR_NODELAY_FROM 16384u
#endif

static void smr_nagle_for_source(struct smr_posix *g, const struct smr_conn *c, int fd) {
    size_t i = smr_conn_index(&g->x, c);
    int zero = 0;
    if (g->nagle[i] || c->mode != 5 || c->resp_size >= SMR_NODELAY_FROM) return;
    SMR_SOCK(setsockopt)(fd, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero);
    g->nagle[i] = 1;
}

/* Reads what the engine wants (within the pass) until the socket has
 * less than asked for; returns -1 when the socket failed. */
static int smr_read(struct smr_posix *g, struct smr_conn *c, int fd) {
#ifdef SMR_TS
    struct smr_ts *t = &g->ts[smr_conn_index(&g->x, c)];
    smr_ts_tcp(t, c, fd);
#endif
    for (;;) {
        size_t want = smr_conn_read_max(&g->x, c);
        ssize_t r;
        if (want == 0 || (c->flags & SMR_F_CLOSE)) return 0;
        want = want < sizeof g->rx ? want : sizeof g->rx;
#ifdef SMR_TS
        if (t->on) {
            uint64_t stamp;
            r = smr_ts_recv(fd, g->rx, want, NULL, NULL, &stamp);
            if (r > 0) {
                t->rx_kernel = stamp;
                t->app_rx = smr_real();
            }
        } else
#endif
            r = SMR_SOCK(recv)(fd, g->rx, want, 0);
        if (r > 0) {
            smr_conn_input(&g->x, c, g->rx, (size_t)r, smr_now());
            smr_nagle_for_source(g, c, fd);
#ifdef SMR_TS
            smr_ts_tcp(t, c, fd); /* on before the status record goes out */
#endif
            if ((size_t)r < want) return 0;
        } else if (r == 0) {
            smr_conn_eof(&g->x, c, smr_now());
            return 0;
        } else {
            return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
        }
    }
}

/* After a connection's turn: the half-close or close the engine asks for,
 * and what its socket waits for next. */
static void smr_settle(struct smr_posix *g, struct smr_conn *c, uint64_t now) {
    size_t i = smr_conn_index(&g->x, c);
    int fd = g->fd[i];
    unsigned f = smr_conn_flags(c);
    if (f & SMR_F_SHUT) {
        SMR_SOCK(shutdown)(fd, SHUT_WR);
        smr_conn_shut_done(c);
    }
    if (f & SMR_F_CLOSE) {
        smr_close(g, c, now);
        return;
    }
    smr_wait_set(&g->w, SMR_KEY_CONN(i), fd,
                 (smr_conn_want(c) ? SMR_IN : 0u) | (smr_conn_has_output(&g->x, c) ? SMR_OUT : 0u));
}

/* The engine's log hook: one line naming the client (unless --quiet). */
static void smr_log_hook(void *user, const struct smr_conn *c, const char *what, const char *detail) {
    const struct smr_posix *g = user;
    if (!g->quiet) smr_log_event(&g->peer[smr_conn_index(&g->x, c)], what, detail);
}

/* One connection's turn: read if the wait found it readable, write what
 * is due if the wait found it at all (ev 0: only settle it). Kept out of
 * line: gcc 12 inlined it into the loop at -Oz with LTO, 900 bytes more
 * of the small build's .text. */
SMR_NOINLINE static void smr_service(struct smr_posix *g, struct smr_conn *c, unsigned ev, uint64_t now) {
    int fd = g->fd[smr_conn_index(&g->x, c)];
    if ((ev & (SMR_IN | SMR_ERR)) && smr_read(g, c, fd) < 0) {
        smr_log_hook(g, c, "aborted", "connection reset or failed");
        smr_close(g, c, now);
        return;
    }
    if (ev && smr_write(g, c, fd) < 0) {
        smr_log_hook(g, c, "aborted", "send failed (client gone mid-response)");
        smr_close(g, c, now);
        return;
    }
    smr_settle(g, c, now);
}

/* Every connection, when a deadline is due or a throughput test is open
 * (its sessions act on each other: Stop, the final Report, pacing): the
 * timeout, the close or half-close, and what its socket waits for (what
 * it now has to send goes when the next wait finds the socket writable,
 * no write on a socket that may be full); then the next deadline, the
 * wait's timeout. */
static void smr_sweep(struct smr_posix *g, uint64_t now) {
    size_t i;
    if (smr_tick(&g->x, now) || now >= g->due)
        for (i = 0; i < g->x.hi; i++) {
            struct smr_conn *c = &g->x.conns[i];
            if (g->fd[i] < 0) continue;
            if (smr_conn_deadline(c) <= now) smr_conn_timeout(&g->x, c, now);
            smr_service(g, c, 0, now);
        }
    g->due = smr_next_deadline(&g->x);
}

/* Up to the next deadline, rounded up to a millisecond; a minute at most
 * (with no deadline at all the loop wakes once a minute, for nothing). */
static int smr_timeout_ms(const struct smr_posix *g, uint64_t now) {
    uint64_t d = g->due > now ? (g->due - now) / 1000000u + 1u : 0u;
    return d > 60000 ? 60000 : (int)d;
}

/* One wait and the passes after it. Datagrams and new connections first:
 * a probe waits behind no TCP work of this pass. Then the ready
 * connections, each once, in turn order; a pass the bound cut short is
 * followed by another that looks at the UDP sockets with a read (a
 * cheaper look than a wait) and goes on with the next connection. */
static void smr_round(struct smr_posix *g) {
    int n = smr_wait(&g->w, smr_timeout_ms(g, smr_now())), i, l, pass;
    uint64_t now = smr_now();
    unsigned ev, k;
    smr_wait_order(&g->w, &g->x, n);
    smr_pass_begin(&g->x);
    for (i = 0; i < n && (k = smr_wait_ready(&g->w, i, &ev)) < SMR_KEY_CONN(0); i++) {
        if (!ev) continue;
        if (k & 1)
            smr_udp(g, (int)(k >> 1));
        else
            smr_accept(g, g->tcp[k >> 1], now);
    }
    for (pass = 0; pass < SMR_PASSES_PER_WAIT && i < n; pass++) {
        if (pass) {
            smr_pass_begin(&g->x);
            for (l = 0; l < g->nlisten; l++) smr_udp(g, l);
        }
        while (i < n) {
            k = smr_wait_ready(&g->w, i++, &ev);
            if (ev && g->fd[k - SMR_KEY_CONN(0)] >= 0) smr_service(g, &g->x.conns[k - SMR_KEY_CONN(0)], ev, now);
            if (!g->x.pass_left) break;
        }
    }
    smr_sweep(g, now);
}

#ifdef SMR_DRIVER_TS
/* A driver stamps UDP frames only: a stamped rr response's block says
 * nothing is known (flags 0), as docs/protocol.md 4.3 allows. */
static unsigned smr_no_stamps_hook(void *user, const struct smr_conn *c, uint64_t v[5]) {
    (void)user;
    (void)c;
    v[0] = v[1] = v[2] = v[3] = v[4] = 0;
    return 0;
}
#endif

#ifdef SMR_TS
/* The engine's stamps hook: the block of connection c's next response. */
static unsigned smr_stamps_hook(void *user, const struct smr_conn *c, uint64_t v[5]) {
    const struct smr_posix *g = user;
    return smr_ts_block(&g->ts[smr_conn_index(&g->x, c)], v);
}
#endif

/* The engine, its hooks and (with a secret) its 16 random bytes. */
static void smr_setup(struct smr_posix *g, const struct smr_config *cfg) {
    smr_init(&g->x, cfg);
#ifndef SMR_NO_AUTH
    if (cfg->key_len) {
        /* Nonces must not repeat across restarts: 16 random bytes. */
        int fd = open("/dev/urandom", O_RDONLY);
        if (fd < 0 || read(fd, g->x.seed, sizeof g->x.seed) != (ssize_t)sizeof g->x.seed)
            smr_die("cannot read /dev/urandom for challenge nonces", NULL);
        close(fd);
        smr_log_info("authentication on: clients must prove the shared secret", "");
    }
#endif
    g->x.user = g;
    g->x.log = smr_log_hook;
    g->x.cpu = smr_cpu;
#if defined(__linux__) && !defined(SMR_LWIP)
    g->x.tcpinfo = smr_tcpinfo;
#endif
#ifdef SMR_TS
    g->x.stamps = smr_stamps_hook;
#endif
#ifdef SMR_DRIVER_TS
    g->x.stamps = smr_no_stamps_hook;
#endif
}

int smr_run(struct smr_posix *g, const struct smr_config *cfg) {
    char lim[SMR_LIMITS_LINE];
    int l;
    if (g->nlisten == 0) {
        smr_parse_addr("0.0.0.0:24680", &g->listen[0]);
        g->nlisten = 1;
    }
    signal(SIGPIPE, SIG_IGN);
    smr_setup(g, cfg);
    for (l = 0; l < SMR_NCONN; l++) g->fd[l] = -1;
    smr_wait_init(&g->w);
    for (l = 0; l < g->nlisten; l++) {
        char a[64];
        smr_fmt_addr(&g->listen[l], a, sizeof a);
        if (smr_bind_pair(&g->listen[l], g->busy_poll, &g->tcp[l], &g->udp[l]) != 0) {
            fprintf(stderr, SMR_NAME ": error: cannot listen on %s: %s\n", a, strerror(errno));
            return 1;
        }
        smr_wait_set(&g->w, 2u * (unsigned)l, g->tcp[l], SMR_IN);
        smr_wait_set(&g->w, 2u * (unsigned)l + 1u, g->udp[l], SMR_IN);
        smr_fmt_addr(&g->listen[l], a, sizeof a);
        smr_log_info("listening on tcp ", a);
        smr_log_info("listening on udp ", a);
    }
    smr_limits_line(&g->x.cfg, lim);
    smr_log_info(lim, "");
    if (!g->quiet) smr_log_objects(cfg);
    for (;;) smr_round(g);
    return 0;
}
