/*
 * POSIX sockets backend and main(): one thread, one poll() loop, TCP and
 * UDP on the same port, every connection non-blocking. Builds on Linux,
 * BSD, macOS, QNX (io-sock) and Embox; Linux-only extras (TCP_INFO, CPU
 * pinning) are behind #ifdef __linux__.
 *
 * The same file is the lwIP sockets-API backend: smr_lwip_sock.c defines
 * SMR_LWIP and SMR_SOCK(name) as lwip_##name and includes it.
 */
#if defined(__linux__)
#define _GNU_SOURCE
#else
#define _POSIX_C_SOURCE 200809L
#endif
#include "smr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sched.h>
#include <sys/mman.h>
#endif
#if defined(__linux__) && !defined(SMR_LWIP) && !defined(SMR_NO_TS)
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#define SMR_TS 1 /* kernel timestamps: stamp blocks (docs/protocol.md 4.3) */
#endif
/* The real-time knobs (--priority, --mlock, --busy-poll), Linux only and
 * left out by -DSMR_NO_KNOBS (an RTOS sets its task's priority where the
 * firmware creates the task). */
#if defined(__linux__) && !defined(SMR_NO_KNOBS)
#define SMR_KNOBS 1
#endif

#ifndef SMR_SOCK
#define SMR_SOCK(name) name /* plain libc socket calls */
#endif
#ifndef SMR_O_NONBLOCK
#define SMR_O_NONBLOCK O_NONBLOCK
#endif
#ifndef SMR_MAX_LISTEN
#define SMR_MAX_LISTEN 4
#endif
#ifndef SMR_RX_BUF
#define SMR_RX_BUF 65536
#endif
#define SMR_NCONN (SMR_MAX_CONNS + SMR_SPARE_CONNS)
#ifndef SMR_MAX_ALLOW
#define SMR_MAX_ALLOW 8
#endif
#ifndef SMR_BUCKETS
#define SMR_BUCKETS 64
#endif
#ifndef SMR_VERSION
#define SMR_VERSION "unknown" /* the Makefile passes the workspace's version */
#endif
#ifndef SMR_NAME
#define SMR_NAME "stackmeter-responder"
#endif

union smr_addr {
    struct sockaddr sa;
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
};

/* Everything the backend keeps, in one place. */
static struct smr_posix {
    struct smr_ctx x;
    int quiet;
    int nlisten;
    int busy_poll; /* SO_BUSY_POLL microseconds on every socket, 0: not set */
    int tcp[SMR_MAX_LISTEN], udp[SMR_MAX_LISTEN];
    union smr_addr listen[SMR_MAX_LISTEN];
    int fd[SMR_NCONN];
    union smr_addr peer[SMR_NCONN];
    struct pollfd pfd[2 * SMR_MAX_LISTEN + SMR_NCONN];
    short pix[SMR_NCONN]; /* conn -> pfd index, -1 when not polled */
    uint8_t nagle[SMR_NCONN]; /* TCP_NODELAY already cleared for a source */
    /* The operator's limits the backend keeps (docs/protocol.md 5.1):
     * --max-idle-per-client, --max-connects-per-second and its token
     * buckets (the least recently used address forgotten first), --allow. */
    uint32_t max_idle, max_cps;
    int nallow;
    struct smr_net {
        uint8_t len, bits, a[16];
    } allow[SMR_MAX_ALLOW];
    struct smr_bucket {
        uint32_t client;
        uint64_t last, micro;
    } bucket[SMR_BUCKETS];
#ifdef SMR_TS
    /* Per connection: timestamps on, the last read's kernel receive stamp
     * and the wall clock after it, the latest response send stamp known. */
    struct smr_ts {
        uint64_t rx_kernel, app_rx, prev_id, prev_tx;
        uint8_t on, prev;
    } ts[SMR_NCONN];
    /* Per UDP socket: stamps on, stamped replies sent (the next key), the
     * last one's client and sequence, the latest send stamp known. */
    struct smr_uts {
        union smr_addr last_peer, prev_peer;
        uint64_t last_seq, prev_seq, prev_tx;
        uint32_t sent;
        uint8_t on, last, prev;
    } uts[SMR_MAX_LISTEN];
#endif
    uint8_t rx[SMR_RX_BUF];
} smr_g;

static uint64_t smr_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#ifdef SMR_TS
static uint64_t smr_real(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Software stamps on fd: receive, and every send when tx (else only the
 * sends that ask, smr_ts_send). OPT_ID keys send stamps. */
static int smr_ts_enable(int fd, int tx) {
    int v = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_ID |
            SOF_TIMESTAMPING_OPT_TSONLY | (tx ? SOF_TIMESTAMPING_TX_SOFTWARE : 0);
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &v, sizeof v) == 0;
}

/* The SCM_TIMESTAMPING stamp among msg's control messages (0: none); with
 * key, the OPT_ID key of an error-queue stamp (left alone if none). */
static uint64_t smr_ts_of(struct msghdr *m, uint32_t *key) {
    struct cmsghdr *c;
    uint64_t ns = 0;
    for (c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) {
            struct timespec t;
            memcpy(&t, CMSG_DATA(c), sizeof t);
            ns = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
        } else if (key && ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
                           (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR))) {
            struct sock_extended_err e;
            memcpy(&e, CMSG_DATA(c), sizeof e);
            if (e.ee_origin == SO_EE_ORIGIN_TIMESTAMPING) *key = e.ee_data;
        }
    }
    return ns;
}

/* recvmsg with the receive stamp (and the source address when a != NULL). */
static ssize_t smr_ts_recv(int fd, void *buf, size_t len, union smr_addr *a, socklen_t *al, uint64_t *stamp) {
    uint64_t ctl[32];
    struct iovec v;
    struct msghdr m;
    ssize_t n;
    memset(&m, 0, sizeof m);
    v.iov_base = buf;
    v.iov_len = len;
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    if (a) {
        m.msg_name = a;
        m.msg_namelen = *al;
    }
    n = recvmsg(fd, &m, 0);
    if (a) *al = m.msg_namelen;
    *stamp = n >= 0 ? smr_ts_of(&m, NULL) : 0;
    return n;
}

/* One send stamp from fd's error queue: 1 and *key, *ns; 0 when empty. */
static int smr_ts_next(int fd, uint32_t *key, uint64_t *ns) {
    uint64_t ctl[32];
    uint8_t d[64];
    struct iovec v;
    struct msghdr m;
    memset(&m, 0, sizeof m);
    v.iov_base = d;
    v.iov_len = sizeof d;
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return 0;
    *key = (uint32_t)-1;
    *ns = smr_ts_of(&m, key);
    return 1;
}

/* The engine's stamps hook: the last read's stamps, the send time now,
 * and the latest response send stamp. */
static unsigned smr_ts_hook(void *user, const struct smr_conn *c, uint64_t v[5]) {
    struct smr_posix *g = user;
    struct smr_ts *t = &g->ts[smr_conn_index(&g->x, c)];
    unsigned f = 1;
    v[0] = t->rx_kernel;
    v[1] = t->app_rx;
    v[2] = smr_real();
    v[3] = t->prev_id;
    v[4] = t->prev_tx;
    if (t->rx_kernel) f |= 2;
    if (t->prev) f |= 4;
    return f;
}

/* A stamped rr session: takes the send stamps waiting on its error queue
 * (keys are stream offsets from the status record's first byte; the one
 * ending the latest complete response is kept), then turns stamps on if
 * the engine just accepted the session. */
static void smr_ts_tcp(struct smr_conn *c, int fd) {
    struct smr_ts *t = &smr_g.ts[smr_conn_index(&smr_g.x, c)];
    uint32_t key;
    uint64_t ns;
    if (!(c->flags & SMR_F_STAMPS)) return;
    if (!t->on) {
        t->on = 1;
        smr_ts_enable(fd, 1);
    }
    while (smr_ts_next(fd, &key, &ns))
        if (c->served && key == (uint32_t)(8u + (uint64_t)c->served * c->resp_size - 1u)) {
            t->prev_id = c->served - 1;
            t->prev_tx = ns;
            t->prev = 1;
        }
}
#endif

static void smr_fmt_addr(const union smr_addr *a, char *out, size_t cap) {
    char ip[INET6_ADDRSTRLEN];
    int v6 = a->sa.sa_family == AF_INET6;
    inet_ntop(a->sa.sa_family, v6 ? (const void *)&a->v6.sin6_addr : (const void *)&a->v4.sin_addr, ip, sizeof ip);
    snprintf(out, cap, v6 ? "[%s]:%u" : "%s:%u", ip, (unsigned)ntohs(v6 ? a->v6.sin6_port : a->v4.sin_port));
}

/* The start of every event line: "NAME: 2026-11-23T00:40:01.123Z LEVEL: ",
 * the wall clock in UTC with milliseconds, as the Rust responder logs;
 * LEVEL is "info", or "warn" for a refused or broken session. */
static void smr_stamp(const char *level) {
    struct timespec ts;
    struct tm tm;
    char t[24] = "";
    clock_gettime(CLOCK_REALTIME, &ts);
    if (gmtime_r(&ts.tv_sec, &tm)) strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(stderr, SMR_NAME ": %s.%03ldZ %s: ", t, (long)(ts.tv_nsec / 1000000L), level);
}

static void smr_logline(void *user, const struct smr_conn *c, const char *what, const char *detail) {
    struct smr_posix *g = user;
    char a[64];
    int ab;
    if (g->quiet) return;
    smr_fmt_addr(&g->peer[smr_conn_index(&g->x, c)], a, sizeof a);
    smr_stamp("warn");
    ab = strcmp(what, "aborted") == 0;
    fprintf(stderr, ab ? "%s: session ended%s: %s\n" : "refused %s: %s: %s\n", a, ab ? "" : what, detail);
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

static void smr_die(const char *msg, const char *arg) {
    fprintf(stderr, SMR_NAME ": error: %s%s\n", msg, arg ? arg : "");
    exit(2);
}

static void smr_nonblock(int fd) {
    int fl = SMR_SOCK(fcntl)(fd, F_GETFL, 0);
    if (SMR_SOCK(fcntl)(fd, F_SETFL, fl | SMR_O_NONBLOCK) != 0) smr_die("cannot make a socket non-blocking", NULL);
}

/* "A.B.C.D:PORT" or "[V6]:PORT". */
static int smr_parse_addr(const char *s, union smr_addr *a) {
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

/* A number with an optional K, M or G of k (1024 for sizes, 1000 for rates). */
static unsigned long smr_num(const char *flag, const char *v, unsigned long max, unsigned long k) {
    char *end;
    unsigned long n, m = 1;
    if (!v) smr_die("missing value for ", flag);
    n = strtoul(v, &end, 10);
    if (*end == 'K' || *end == 'M' || *end == 'G') {
        m = *end == 'K' ? k : *end == 'M' ? k * k : k * k * k;
        end++;
    }
    if (end == v || *end || n > max / m) {
        fprintf(stderr, SMR_NAME ": error: %s: bad value '%s' (at most %lu)\n", flag, v, max);
        exit(2);
    }
    return n * m;
}

/* One item of a size list, as the Rust CLI reads it: digits, then no unit
 * or B, K, KB, KiB, M, MB, MiB, G, GB, GiB in any case (K = 1024), spaces
 * around allowed; 1 .. 4G-1. Returns 0 and *out, or -1. */
static int smr_size(const char *s, size_t len, uint32_t *out) {
    static const char *const units[] = {"b", "k", "kb", "kib", "m", "mb", "mib", "g", "gb", "gib"};
    static const uint8_t shift[] = {0, 10, 10, 10, 20, 20, 20, 30, 30, 30};
    uint64_t v = 0;
    size_t i = 0, u;
    while (len && s[len - 1] == ' ') len--;
    while (i < len && s[i] == ' ') i++;
    if (i == len || s[i] < '0' || s[i] > '9') return -1;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
        if ((v = v * 10 + (uint64_t)(s[i] - '0')) > 0xffffffffu) return -1;
    for (u = 0; i < len && u < sizeof units / sizeof units[0]; u++) {
        size_t k = 0;
        while (i + k < len && units[u][k] && (s[i + k] | 0x20) == units[u][k]) k++;
        if (i + k == len && !units[u][k]) break;
    }
    if (i < len && u == sizeof units / sizeof units[0]) return -1;
    if (i < len) v <<= shift[u];
    if (v == 0 || v > 0xffffffffu) return -1;
    *out = (uint32_t)v;
    return 0;
}

/* --objects SIZES: "4K,64K,1M,8800K", at most SMR_MAX_OBJECTS of them. */
static void smr_objects(const char *v, struct smr_config *cfg) {
    const char *item = v;
    if (!v) smr_die("missing value for --objects", NULL);
    cfg->nobjects = 0;
    for (;;) {
        const char *end = strchr(item, ',');
        size_t len = end ? (size_t)(end - item) : strlen(item);
        if (cfg->nobjects == SMR_MAX_OBJECTS) {
            fprintf(stderr, SMR_NAME ": error: --objects: more than %d objects (this build's SMR_MAX_OBJECTS)\n",
                    SMR_MAX_OBJECTS);
            exit(2);
        }
        if (smr_size(item, len, &cfg->object_size[cfg->nobjects]) != 0) {
            fprintf(stderr, SMR_NAME ": error: --objects: bad size list item '%.*s' (sizes such as 64, 4K, 1M)\n",
                    (int)len, item);
            exit(2);
        }
        cfg->nobjects++;
        if (!end) return;
        item = end + 1;
    }
}

static void smr_usage(void) {
    printf("usage: " SMR_NAME " [--listen ADDR:PORT]... [--max-sessions N] [--max-msg SIZE]\n"
           "       [--header-timeout-ms MS] [--idle-timeout-ms MS] [--objects SIZES | --no-objects]\n"
           "       [--affinity CPU] [--priority fifo:N|rr:N|nice:N] [--mlock] [--busy-poll US]\n"
           "       [--secret-file FILE] [--max-test-seconds S] [--max-source-rate BITS/S]\n"
           "       [--max-tests-per-client N] [--max-idle-per-client N] [--max-connects-per-second N]\n"
           "       [--allow CIDR]... [--quiet] [--version]\n"
           "stackmeter protocol v1 responder (TCP and UDP on each address; default 0.0.0.0:24680)\n"
           "--objects: synthetic objects for object mode, K = 1024 (default 4K,64K,1M,8800K)\n");
    exit(0);
}

static void smr_pin(unsigned long cpu) {
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) smr_die("--affinity: cannot pin to that CPU", NULL);
#else
    (void)cpu;
    smr_die("--affinity is only supported on Linux", NULL);
#endif
}

/* Real-time knobs (seed 004: nice -n -20, chrt --rr 99), Linux only:
 * --priority fifo:N|rr:N|nice:N for the one thread, --mlock. */
#if defined(SMR_KNOBS)
/* smr_priority indexes its names by policy number. */
typedef char smr_check_sched[SCHED_OTHER == 0 && SCHED_FIFO == 1 && SCHED_RR == 2 ? 1 : -1];
#endif

static void smr_priority(const char *v) {
#if defined(SMR_KNOBS)
    /* Indexed by policy: SCHED_OTHER (0, with nice), SCHED_FIFO (1), SCHED_RR (2). */
    static const char *const pols[] = {"nice", "fifo", "rr"};
    struct sched_param p;
    char name[5];
    int k = 0, used = 0, pol = 3;
    if (v && sscanf(v, "%4[a-z]:%3d%n", name, &k, &used) == 2 && !v[used])
        for (pol = 0; pol < 3 && strcmp(name, pols[pol]) != 0; pol++)
            ;
    if (pol == 3 || (pol ? k < 1 || k > 99 : k < -20 || k > 19))
        smr_die("--priority wants fifo:N or rr:N (N 1..99), or nice:N (N -20..19), got ", v ? v : "nothing");
    memset(&p, 0, sizeof p);
    p.sched_priority = pol ? k : 0;
    if (sched_setscheduler(0, pol, &p) != 0 || (!pol && setpriority(PRIO_PROCESS, 0, k) != 0))
        smr_die("--priority: not permitted (run as root, or give the process CAP_SYS_NICE or an RLIMIT_RTPRIO / "
                "RLIMIT_NICE that allows it): ", v);
#else
    (void)v;
    smr_die("--priority is only in Linux builds with the knobs (not -DSMR_NO_KNOBS)", NULL);
#endif
}

static void smr_mlock(void) {
#if defined(SMR_KNOBS)
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
        smr_die("--mlock: cannot lock this process's memory (run as root, or raise RLIMIT_MEMLOCK with ulimit -l)",
                NULL);
#else
    smr_die("--mlock is only in Linux builds with the knobs (not -DSMR_NO_KNOBS)", NULL);
#endif
}

/* The bytes of a's address (4 or 16): for networks and client tags. */
static const uint8_t *smr_abytes(const union smr_addr *a, size_t *n) {
    *n = a->sa.sa_family == AF_INET6 ? 16 : 4;
    return *n == 16 ? a->v6.sin6_addr.s6_addr : (const uint8_t *)&a->v4.sin_addr;
}

/* A client address as the engine's tag (smr_conn.client): FNV-1a of its
 * bytes. Two addresses with one tag share their per-address limits. */
static uint32_t smr_tag(const union smr_addr *a) {
    size_t n, i;
    const uint8_t *b = smr_abytes(a, &n);
    uint32_t h = 2166136261u;
    for (i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
    return h;
}

/* --allow: "10.0.0.0/8", "fd00::/8" or an address; at most SMR_MAX_ALLOW. */
static void smr_allow(const char *v) {
    char host[INET6_ADDRSTRLEN];
    struct smr_net *w = &smr_g.allow[smr_g.nallow];
    const char *slash = v ? strchr(v, '/') : NULL;
    size_t hl = !v ? 0 : slash ? (size_t)(slash - v) : strlen(v);
    if (hl >= sizeof host || smr_g.nallow == SMR_MAX_ALLOW) hl = 0;
    memcpy(host, v ? v : "", hl);
    host[hl] = 0;
    w->len = 4;
    if (inet_pton(AF_INET, host, w->a) != 1 && (w->len = 16, inet_pton(AF_INET6, host, w->a) != 1))
        smr_die("--allow wants a network such as 10.0.0.0/8 or fd00::/8, or an address (at most 8), got ",
                v ? v : "nothing");
    w->bits = (uint8_t)(slash ? smr_num("--allow", slash + 1, w->len * 8u, 1000) : w->len * 8u);
    smr_g.nallow++;
}

/* Whether a client at a may use the responder (no --allow: everyone). */
static int smr_allowed(const union smr_addr *a) {
    size_t n, i;
    const uint8_t *b = smr_abytes(a, &n);
    int k;
    for (k = 0; k < smr_g.nallow; k++) {
        const struct smr_net *w = &smr_g.allow[k];
        unsigned bits = w->bits;
        if (w->len != n) continue;
        for (i = 0; bits >= 8 && b[i] == w->a[i]; i++) bits -= 8;
        if (!bits || (bits < 8 && !((b[i] ^ w->a[i]) & (0xff00u >> bits) & 0xffu))) return 1;
    }
    return !smr_g.nallow;
}

/* --max-connects-per-second N: a bucket of N tokens per address, refilled
 * at N per second (in micro-tokens); a connection takes one or is closed.
 * The buckets are a table indexed by the address's tag: an address that
 * lands on another's slot starts it again, full. */
static int smr_connect_ok(uint32_t tag, uint64_t now) {
    uint64_t cap = (uint64_t)smr_g.max_cps * 1000000u;
    struct smr_bucket *b = &smr_g.bucket[tag % SMR_BUCKETS];
    if (!smr_g.max_cps) return 1;
    if (!b->last || b->client != tag) {
        b->client = tag;
        b->micro = cap;
        b->last = now;
    }
    b->micro += (now - b->last) / 1000u * smr_g.max_cps;
    if (b->micro > cap) b->micro = cap;
    b->last = now;
    if (b->micro < 1000000u) return 0;
    b->micro -= 1000000u;
    return 1;
}

#ifndef SMR_NO_AUTH
/* --secret-file: a regular file only its owner may read or write, 1 to
 * 4096 bytes after trailing line ends (docs/protocol.md section 10). */
static void smr_secret(const char *path, struct smr_config *cfg) {
    static uint8_t b[4098];
    struct stat st;
    ssize_t n;
    int fd = path ? open(path, O_RDONLY) : -1;
    if (fd < 0) smr_die("--secret-file: cannot open ", path ? path : "nothing");
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077))
        smr_die("secret file is not a regular file only its owner may read or write (chmod 600): ", path);
    n = read(fd, b, sizeof b);
    close(fd);
    while (n > 0 && (b[n - 1] == '\n' || b[n - 1] == '\r')) n--;
    if (n <= 0 || n > 4096) smr_die("secret file is empty or longer than 4096 bytes: ", path);
    smr_auth_key(cfg, b, (size_t)n);
}

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

/* The numeric flags, their largest values and their multiplier bases
 * (K/M/G: 1024 for sizes and counts, 1000 from --max-test-seconds on). */
static const char *const smr_numflag[] = {"--max-sessions", "--max-msg", "--header-timeout-ms",
                                          "--idle-timeout-ms", "--affinity", "--busy-poll",
                                          "--max-test-seconds", "--max-source-rate", "--max-tests-per-client",
                                          "--max-idle-per-client", "--max-connects-per-second"};
#define SMR_NNUM (sizeof smr_numflag / sizeof smr_numflag[0])

static void smr_args(int argc, char **argv, struct smr_config *cfg) {
    static const unsigned long max[SMR_NNUM] = {SMR_MAX_CONNS, 0xffffffffu, 86400000u, 86400000u, 1023, 1000000u,
                                         31536000u, sizeof(long) > 4 ? 10000000000ull : 0xffffffffu,
                                         SMR_MAX_CONNS, SMR_MAX_CONNS, 1000000u};
    unsigned long n[SMR_NNUM];
    size_t k;
    int i;
    n[0] = cfg->max_sessions;
    n[1] = cfg->max_msg;
    n[2] = (unsigned long)(cfg->header_timeout_ns / 1000000u);
    n[3] = (unsigned long)(cfg->idle_timeout_ns / 1000000u);
    n[4] = (unsigned long)-1;
    for (k = 5; k < SMR_NNUM; k++) n[k] = 0;
    for (i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) smr_usage();
        if (strcmp(f, "--version") == 0 || strcmp(f, "-V") == 0) {
            printf(SMR_NAME " " SMR_VERSION " (stackmeter protocol 1, C99 engine)\n");
            exit(0);
        }
        if (strcmp(f, "--quiet") == 0) {
            smr_g.quiet = 1;
            continue;
        }
        if (strcmp(f, "--no-objects") == 0) {
            cfg->nobjects = 0;
            continue;
        }
        if (strcmp(f, "--mlock") == 0) {
            smr_mlock();
            continue;
        }
        i++;
        for (k = 0; k < SMR_NNUM && strcmp(f, smr_numflag[k]) != 0; k++)
            ;
        if (k < SMR_NNUM) {
            n[k] = smr_num(f, v, max[k], k < 6 ? 1024 : 1000);
        } else if (strcmp(f, "--listen") == 0) {
            if (!v || smr_g.nlisten == SMR_MAX_LISTEN || smr_parse_addr(v, &smr_g.listen[smr_g.nlisten]) != 0)
                smr_die("--listen wants ADDR:PORT (e.g. 127.0.0.1:24680 or [::1]:24680), got ", v ? v : "nothing");
            smr_g.nlisten++;
        } else if (strcmp(f, "--objects") == 0) {
            smr_objects(v, cfg);
        } else if (strcmp(f, "--priority") == 0) {
            smr_priority(v);
        } else if (strcmp(f, "--allow") == 0) {
            smr_allow(v);
#ifndef SMR_NO_AUTH
        } else if (strcmp(f, "--secret-file") == 0) {
            smr_secret(v, cfg);
#endif
        } else {
            smr_die("unknown flag ", f);
        }
    }
    cfg->max_sessions = (uint32_t)n[0];
    cfg->max_msg = (uint32_t)n[1];
    cfg->header_timeout_ns = (uint64_t)n[2] * 1000000u;
    cfg->idle_timeout_ns = (uint64_t)n[3] * 1000000u;
    if (n[4] != (unsigned long)-1) smr_pin(n[4]);
    smr_g.busy_poll = (int)n[5];
#ifndef SMR_KNOBS
    if (n[5]) smr_die("--busy-poll is only in Linux builds with the knobs (not -DSMR_NO_KNOBS)", NULL);
#endif
    cfg->max_test_s = (uint32_t)n[6];
    cfg->max_rate_bps = n[7];
    cfg->max_tests_per_client = (uint32_t)n[8];
    smr_g.max_idle = (uint32_t)n[9];
    smr_g.max_cps = (uint32_t)n[10];
}

/* One line naming the catalogue, or saying object mode is off. */
static void smr_log_objects(const struct smr_config *cfg) {
    char name[SMR_OBJ_NAME_LEN + 1];
    uint32_t i;
    if (!cfg->nobjects) {
        smr_stamp("info");
        fprintf(stderr, "objects: off\n");
        return;
    }
    smr_stamp("info");
    fprintf(stderr, "objects: %u in the catalogue:", (unsigned)cfg->nobjects);
    for (i = 0; i < cfg->nobjects; i++) {
        name[smr_object_name(cfg, i, name)] = 0;
        fprintf(stderr, " %s", name);
    }
    fprintf(stderr, "\n");
}

static void smr_close(struct smr_conn *c, uint64_t now) {
    size_t i = smr_conn_index(&smr_g.x, c);
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
        uint32_t tag;
        if (fd < 0) return;
        tag = smr_tag(&peer);
        /* Limits of an address: closed at once, nothing read or written. */
        if (!smr_allowed(&peer) || !smr_connect_ok(tag, now) ||
            (smr_g.max_idle && smr_client_count(&smr_g.x, tag, 1) >= smr_g.max_idle) ||
            !(c = smr_conn_open(&smr_g.x, now))) {
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
    }
}

#ifdef SMR_TS
/* A UDP reply with the stamp block (docs/protocol.md 4.3), sent asking for
 * its own send stamp, which is read right after and kept for the next
 * reply to the same client. */
static void smr_udp_stamped(int l, int fd, size_t r, const union smr_addr *peer, socklen_t pl, uint64_t rx,
                            uint64_t rx_kernel, int wall) {
    struct smr_uts *u = &smr_g.uts[l];
    uint64_t v[5], ns, tx = wall ? smr_real() : smr_now(), ctl[4] = {0, 0, 0, 0};
    unsigned f = wall ? 1u : 0u;
    uint32_t key;
    struct iovec io;
    struct msghdr m;
    struct cmsghdr *c;
    v[0] = rx_kernel;
    v[1] = rx;
    v[2] = tx;
    v[3] = u->prev_seq;
    v[4] = u->prev_tx;
    if (wall && rx_kernel) f |= 2;
    if (u->prev && memcmp(&u->prev_peer, peer, pl) == 0) f |= 4;
    smr_put_block(smr_g.rx + SMR_UDP_HDR, f, v);
    smr_udp_stamp_tx(smr_g.rx, tx);
    r = smr_udp_seal(&smr_g.x, smr_g.rx, r);
    memset(&m, 0, sizeof m);
    io.iov_base = smr_g.rx;
    io.iov_len = r;
    m.msg_name = (void *)(uintptr_t)peer;
    m.msg_namelen = pl;
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = CMSG_SPACE(sizeof(uint32_t));
    c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SO_TIMESTAMPING;
    c->cmsg_len = CMSG_LEN(sizeof(uint32_t));
    key = SOF_TIMESTAMPING_TX_SOFTWARE;
    memcpy(CMSG_DATA(c), &key, sizeof key);
    if (sendmsg(fd, &m, 0) >= 0) {
        u->last = 1;
        u->last_peer = *peer;
        for (u->last_seq = 0, key = 8; key < 16; key++) u->last_seq = u->last_seq << 8 | smr_g.rx[key];
        u->sent++;
    }
    while (smr_ts_next(fd, &key, &ns))
        if (u->last && key == u->sent - 1) {
            u->prev = 1;
            u->prev_peer = u->last_peer;
            u->prev_seq = u->last_seq;
            u->prev_tx = ns;
        }
}
#endif

static void smr_udp(int l) {
    int k, fd = smr_g.udp[l];
    for (k = 0; k < 64; k++) {
        union smr_addr peer;
        socklen_t pl = sizeof peer;
        ssize_t n;
        size_t r;
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
        if (!smr_allowed(&peer)) continue;
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

/* Sends what the engine offers until the socket takes no more, or for at
 * most 64 calls: a source with small writes and a fast reader would never
 * see EAGAIN and would starve every other connection. */
static int smr_write(struct smr_conn *c, int fd) {
    const uint8_t *p[2];
    size_t n[2], k;
    int round;
    for (round = 0; round < 64; round++) {
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
    }
    return 0;
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

/* Reads what the engine wants; returns -1 when the socket failed. */
static int smr_read(struct smr_conn *c, int fd) {
    int k;
#ifdef SMR_TS
    struct smr_ts *t = &smr_g.ts[smr_conn_index(&smr_g.x, c)];
    smr_ts_tcp(c, fd);
#endif
    for (k = 0; k < 16; k++) {
        size_t want = smr_conn_want(c);
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
        } else if (r == 0) {
            smr_conn_eof(&smr_g.x, c, smr_now());
            return 0;
        } else {
            return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
        }
    }
    return 0;
}

static void smr_service(struct smr_conn *c, short rev, uint64_t now) {
    int fd = smr_g.fd[smr_conn_index(&smr_g.x, c)];
    unsigned f;
    if ((rev & (POLLIN | POLLHUP | POLLERR)) && smr_read(c, fd) < 0) {
        smr_logline(&smr_g, c, "aborted", "connection reset or failed");
        smr_close(c, now);
        return;
    }
    if (smr_write(c, fd) < 0) {
        smr_logline(&smr_g, c, "aborted", "send failed (client gone mid-response)");
        smr_close(c, now);
        return;
    }
    f = smr_conn_flags(c);
    if (f & SMR_F_SHUT) {
        SMR_SOCK(shutdown)(fd, SHUT_WR);
        smr_conn_shut_done(c);
    }
    if (f & SMR_F_CLOSE) smr_close(c, now);
}

/* Builds the poll set; returns its length. */
static nfds_t smr_pollset(void) {
    nfds_t n = 0;
    size_t i;
    int l;
    for (l = 0; l < smr_g.nlisten; l++) {
        smr_g.pfd[n].fd = smr_g.tcp[l];
        smr_g.pfd[n++].events = POLLIN;
        smr_g.pfd[n].fd = smr_g.udp[l];
        smr_g.pfd[n++].events = POLLIN;
    }
    for (i = 0; i < smr_g.x.hi; i++) {
        struct smr_conn *c = &smr_g.x.conns[i];
        smr_g.pix[i] = -1;
        if (smr_g.fd[i] < 0) continue;
        smr_g.pix[i] = (short)n;
        smr_g.pfd[n].fd = smr_g.fd[i];
        smr_g.pfd[n].events =
            (short)((smr_conn_want(c) ? POLLIN : 0) | (smr_conn_has_output(&smr_g.x, c) ? POLLOUT : 0));
        smr_g.pfd[n++].revents = 0;
    }
    return n;
}

static int smr_timeout_ms(uint64_t now) {
    uint64_t d = smr_next_deadline(&smr_g.x);
    if (d == (uint64_t)-1) return -1;
    if (d <= now) return 0;
    d = (d - now + 999999u) / 1000000u;
    return d > 60000 ? 60000 : (int)d;
}

static void smr_loop(void) {
    for (;;) {
        nfds_t n = smr_pollset(), j;
        uint64_t now = smr_now();
        size_t i;
        int l;
        if (SMR_SOCK(poll)(smr_g.pfd, n, smr_timeout_ms(now)) < 0 && errno != EINTR) smr_die("poll failed", NULL);
        now = smr_now();
        for (l = 0; l < smr_g.nlisten; l++) {
            if (smr_g.pfd[2 * l].revents) smr_accept(smr_g.tcp[l], now);
            if (smr_g.pfd[2 * l + 1].revents) smr_udp(l);
        }
        for (i = 0; i < smr_g.x.hi; i++) {
            struct smr_conn *c = &smr_g.x.conns[i];
            if (smr_g.fd[i] < 0 || smr_g.pix[i] < 0) continue;
            j = (nfds_t)smr_g.pix[i];
            if (smr_conn_deadline(c) <= now) smr_conn_timeout(&smr_g.x, c, now);
            smr_service(c, smr_g.pfd[j].revents, now);
        }
        smr_tick(&smr_g.x, now);
    }
}

int main(int argc, char **argv) {
    struct smr_config cfg;
    size_t i;
    int l;
    smr_default_config(&cfg);
#ifdef SMR_LWIP
    /* lwip-sock TAP IP [flags]: the stack runs in this process. */
    if (argc < 3 || argv[1][0] == '-') smr_die("usage: " SMR_NAME " TAP-DEVICE IPV4-ADDRESS [flags]", NULL);
    smr_args(argc - 2, argv + 2, &cfg);
    if (smr_lwip_start(argv[1], argv[2]) != 0) smr_die("cannot start lwIP on TAP device ", argv[1]);
    if (smr_g.nlisten == 0) {
        char a[40];
        snprintf(a, sizeof a, "%s:%d", argv[2], SMR_DEFAULT_PORT);
        if (smr_parse_addr(a, &smr_g.listen[0]) != 0) smr_die("bad IPv4 address ", argv[2]);
        smr_g.nlisten = 1;
    }
#else
    smr_args(argc, argv, &cfg);
#endif
    if (smr_g.nlisten == 0) {
        smr_parse_addr("0.0.0.0:24680", &smr_g.listen[0]);
        smr_g.nlisten = 1;
    }
    signal(SIGPIPE, SIG_IGN);
    smr_init(&smr_g.x, &cfg);
#ifndef SMR_NO_AUTH
    if (cfg.key_len) {
        /* Nonces must not repeat across restarts: 16 random bytes. */
        int fd = open("/dev/urandom", O_RDONLY);
        if (fd < 0 || read(fd, smr_g.x.seed, sizeof smr_g.x.seed) != (ssize_t)sizeof smr_g.x.seed)
            smr_die("cannot read /dev/urandom for challenge nonces", NULL);
        close(fd);
        smr_stamp("info");
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
    for (i = 0; i < SMR_NCONN; i++) smr_g.fd[i] = -1;
    for (l = 0; l < smr_g.nlisten; l++) {
        char a[64];
        smr_fmt_addr(&smr_g.listen[l], a, sizeof a);
        if (smr_bind_pair(l) != 0) {
            fprintf(stderr, SMR_NAME ": error: cannot listen on %s: %s\n", a, strerror(errno));
            return 1;
        }
        smr_fmt_addr(&smr_g.listen[l], a, sizeof a);
        smr_stamp("info");
        fprintf(stderr, "listening on tcp %s\n", a);
        smr_stamp("info");
        fprintf(stderr, "listening on udp %s\n", a);
    }
    if (!smr_g.quiet) smr_log_objects(&cfg);
    smr_loop();
    return 0;
}
