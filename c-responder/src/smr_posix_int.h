/*
 * The POSIX sockets backend's shared declarations: what a build chooses
 * (which socket calls, kernel timestamps, real-time knobs), the backend's
 * state, and the functions its files give each other. Every file of the
 * backend includes this header first.
 *
 * The backend is these files, one concern each:
 *   smr_main.c    main() of stackmeter-responder (or smr_lwip_sock.c:
 *                 main() of the same loop on lwIP's sockets API): defines
 *                 the one struct smr_posix and hands it down
 *   smr_args.c    the command line into the engine's config and the
 *                 backend's settings
 *   smr_posix.c   the loop: accept, TCP reads and writes, UDP echo,
 *                 deadlines, one pass after another
 *   smr_sockets.c addresses and the listening sockets
 *   smr_wait.c    waiting for the sockets: epoll, or poll()
 *   smr_stamps.c  kernel timestamps (Linux SO_TIMESTAMPING): stamp blocks
 *   smr_knobs.c   CPU pinning, scheduling priority, locked memory
 *   smr_log.c     event lines on stderr, the one-line errors
 * with the engine (smr.h) and admission (smr_admit.h), both pure. Calls go
 * one way: main calls smr_args.c and smr_posix.c; smr_args.c calls
 * smr_sockets.c and smr_knobs.c; smr_posix.c calls smr_sockets.c,
 * smr_wait.c, smr_stamps.c and smr_log.c, giving each the part of the
 * state it works on (struct smr_wait, struct smr_ts, a listener's
 * sockets, a buffer); those call nothing of the backend but smr_log.c,
 * and no file keeps state of its own.
 */
#ifndef SMR_POSIX_INT_H
#define SMR_POSIX_INT_H

#if defined(__linux__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#else
#define _POSIX_C_SOURCE 200809L
#endif

#ifdef SMR_LWIP
/* lwIP's sockets API (lwip_socket, lwip_poll, ...), its stack in this
 * process (smr_lwip_sock.c); SSIZE_MAX before lwIP's arch.h. */
#include <limits.h>
#include "lwip/sockets.h"
#define SMR_SOCK(name) lwip_##name
#ifndef SMR_NAME
#define SMR_NAME "stackmeter-lwip-sock"
#endif
#endif

#include "smr.h"
#include "smr_admit.h"

#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#if defined(__linux__) && !defined(SMR_LWIP) && !defined(SMR_NO_TS)
#define SMR_TS 1 /* kernel timestamps: stamp blocks (docs/protocol.md 4.3) */
#endif
/* How the loop waits (smr_wait.c): epoll on Linux, poll() elsewhere and
 * with -DSMR_POLL (the small build: what a board has). */
#if defined(__linux__) && !defined(SMR_LWIP) && !defined(SMR_POLL)
#define SMR_EPOLL 1
#include <sys/epoll.h>
#endif
/* The real-time knobs (--priority, --mlock, --busy-poll), Linux only and
 * left out by -DSMR_NO_KNOBS (an RTOS sets its task's priority where the
 * firmware creates the task). */
#if defined(__linux__) && !defined(SMR_NO_KNOBS)
#define SMR_KNOBS 1
#endif

/* Stamps taken by the platform's Ethernet driver instead of the kernel
 * (-DSMR_DRIVER_TS: Embox and NuttX, c-responder/stamps): the platform
 * supplies smr_udp_driver_stamped below; UDP echo only. */
#if defined(SMR_DRIVER_TS) && defined(SMR_TS)
#error "SMR_DRIVER_TS is for a platform without kernel timestamps"
#endif

#ifndef SMR_SOCK
#define SMR_SOCK(name) name /* plain libc socket calls */
#endif
#ifndef SMR_O_NONBLOCK
#define SMR_O_NONBLOCK O_NONBLOCK /* a stack whose fcntl flag differs */
#endif
#ifndef SMR_MAX_LISTEN
#define SMR_MAX_LISTEN 4
#endif
#ifndef SMR_RX_BUF
#define SMR_RX_BUF 65536
#endif
#define SMR_NCONN (SMR_MAX_CONNS + SMR_SPARE_CONNS)
/* Keys of the watched sockets: listener l's TCP 2l and UDP 2l + 1, then
 * connection slot i. */
#define SMR_KEY_CONN(i) (2u * SMR_MAX_LISTEN + (unsigned)(i))
#define SMR_NKEYS (2 * SMR_MAX_LISTEN + SMR_NCONN)
/* Readiness: what a key waits for, what a wait found; poll()'s bits,
 * which epoll's equal (smr_wait.c checks). */
#define SMR_IN ((unsigned)POLLIN)
#define SMR_OUT ((unsigned)POLLOUT)
#define SMR_ERR ((unsigned)(POLLERR | POLLHUP)) /* found only */
#define SMR_WATCHED 0x80u                        /* epoll: registered */
/* Passes after one wait, while the bound cuts them short (smr_posix.c):
 * between them only the UDP sockets are looked at. */
#ifndef SMR_PASSES_PER_WAIT
#define SMR_PASSES_PER_WAIT 4
#endif
#ifndef SMR_EVENTS
#define SMR_EVENTS 128 /* epoll: ready sockets taken per wait (the rest next) */
#endif
#ifndef SMR_VERSION
#define SMR_VERSION "unknown" /* the build passes the workspace's version */
#endif
#ifndef SMR_NAME
#define SMR_NAME "stackmeter-responder"
#endif

/* A function the compiler must not inline (where it can be told). */
#if defined(__GNUC__)
#define SMR_NOINLINE __attribute__((noinline))
#else
#define SMR_NOINLINE
#endif

union smr_addr {
    struct sockaddr sa;
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
};

#ifdef SMR_TS
/* Per connection: timestamps on, the last read's kernel receive stamp and
 * the wall clock after it, the latest response send stamp known. */
struct smr_ts {
    uint64_t rx_kernel, app_rx, prev_id, prev_tx;
    uint8_t on, prev;
};
/* Per UDP socket: stamps on, stamped replies sent (the next key), the last
 * one's client and sequence, the latest send stamp known. */
struct smr_uts {
    union smr_addr last_peer, prev_peer;
    uint64_t last_seq, prev_seq, prev_tx;
    uint32_t sent;
    uint8_t on, last, prev;
};
#endif

/* What the wait keeps (smr_wait.c): the sockets watched under their keys. */
struct smr_wait {
#ifdef SMR_EPOLL
    int epfd;
    uint8_t watch[SMR_NKEYS]; /* what each key waits for, 0: not in the set */
    struct epoll_event ev[SMR_EVENTS];
#else
    unsigned npfd;                /* 1 + the highest key watched */
    unsigned first;               /* the slot the connections' turns begin at */
    struct pollfd pfd[SMR_NKEYS]; /* by key; fd -1: not watched */
#endif
};

/* Everything the backend keeps, in one place. A program has one, defined
 * where it starts (smr_main.c, smr_lwip_sock.c) and handed to
 * smr_args() and smr_run(); the files below smr_posix.c are given only
 * the parts they work on. */
struct smr_posix {
    struct smr_ctx x;
    struct smr_admit adm;
    int quiet;
    int nlisten;
    int busy_poll; /* SO_BUSY_POLL microseconds on every socket, 0: not set */
    int tcp[SMR_MAX_LISTEN], udp[SMR_MAX_LISTEN];
    union smr_addr listen[SMR_MAX_LISTEN];
    int fd[SMR_NCONN];
    union smr_addr peer[SMR_NCONN];
    uint8_t nagle[SMR_NCONN]; /* TCP_NODELAY already cleared for a source */
    uint64_t due;             /* the next deadline: the wait's timeout */
    struct smr_wait w;
#ifdef SMR_TS
    struct smr_ts ts[SMR_NCONN];
    struct smr_uts uts[SMR_MAX_LISTEN];
#endif
    uint8_t rx[SMR_RX_BUF];
};

/* smr_posix.c: the monotonic clock, ns (CLOCK_MONOTONIC; a platform that
 * defines SMR_PLATFORM_CLOCK supplies its own, as Embox's driver stamps
 * do, c-responder/stamps/smr_driver_stamps.c) */
uint64_t smr_now(void);
/* Binds every --listen address of g (0.0.0.0:24680 when none), installs
 * the engine's hooks, serves forever. */
int smr_run(struct smr_posix *g, const struct smr_config *cfg);

/* smr_sockets.c */
/* "A.B.C.D:PORT" or "[V6]:PORT": 0, or -1. */
int smr_parse_addr(const char *s, union smr_addr *a);
/* The bytes of a's address (4 or 16): for networks and client tags. */
const uint8_t *smr_abytes(const union smr_addr *a, size_t *n);
void smr_nonblock(int fd);
/* TCP listening on a, then UDP on the port TCP got (retrying when port 0
 * collides), both non-blocking, SO_BUSY_POLL when busy_poll: 0 with
 * *tcp, *udp and a (its port) set, or -1 (errno says why). */
int smr_bind_pair(union smr_addr *a, int busy_poll, int *tcp, int *udp);
#ifndef SMR_NO_AUTH
/* The bytes a UDP client's replay window is keyed by: port and address. */
size_t smr_peer_key(const union smr_addr *a, uint8_t *k);
#endif

/* smr_wait.c */
void smr_wait_init(struct smr_wait *w);
/* Watch fd under key for SMR_IN and SMR_OUT (0: errors only). */
void smr_wait_set(struct smr_wait *w, unsigned key, int fd, unsigned ev);
/* key's socket is about to be closed. */
void smr_wait_forget(struct smr_wait *w, unsigned key);
/* Waits up to timeout_ms (-1: no limit); returns how many keys to look at
 * (with poll every watched one: those with nothing have *ev 0 below). */
int smr_wait(struct smr_wait *w, int timeout_ms);
/* Puts the n ready keys in order: listeners first, then the connections
 * in the order of their turns in x (smr_turn). */
void smr_wait_order(struct smr_wait *w, const struct smr_ctx *x, int n);
/* The i-th ready key, and what it is ready for in *ev. */
unsigned smr_wait_ready(const struct smr_wait *w, int i, unsigned *ev);

/* smr_args.c: the command line (argv[0] skipped) into cfg and g's
 * settings (listeners, admission, --quiet, --busy-poll). */
void smr_args(int argc, char **argv, struct smr_config *cfg, struct smr_posix *g);

/* smr_knobs.c */
void smr_pin(unsigned long cpu);
void smr_priority(const char *v);
void smr_mlock(void);

/* smr_log.c */
void smr_die(const char *msg, const char *arg);
void smr_fmt_addr(const union smr_addr *a, char *out, size_t cap);
/* The start of every event line: "NAME: 2026-11-23T00:40:01.123Z LEVEL: ". */
void smr_log_head(const char *level);
/* An info line: a, then b. */
void smr_log_info(const char *a, const char *b);
/* One line for a refusal or an aborted session of the client at peer
 * (what and detail as the engine's log hook gives them). */
void smr_log_event(const union smr_addr *peer, const char *what, const char *detail);
void smr_log_objects(const struct smr_config *cfg);

#ifdef SMR_TS
/* smr_stamps.c */
uint64_t smr_real(void);
int smr_ts_enable(int fd, int tx);
ssize_t smr_ts_recv(int fd, void *buf, size_t len, union smr_addr *a, socklen_t *al, uint64_t *stamp);
int smr_ts_next(int fd, uint32_t *key, uint64_t *ns);
/* The stamps of a response about to go on connection stamps t (the
 * engine's stamps hook, smr_ctx.stamps). */
unsigned smr_ts_block(const struct smr_ts *t, uint64_t v[5]);
void smr_ts_tcp(struct smr_ts *t, const struct smr_conn *c, int fd);
/* Sends the stamped UDP reply of r bytes in buf (before the MAC trailer)
 * to peer on socket fd of UDP listener stamps u; t: the request's
 * receive time, its kernel receive stamp (0: none), the reply's send
 * time, all wall clock when wall (else monotonic, and no stamps). */
void smr_udp_stamped(const struct smr_ctx *x, struct smr_uts *u, int fd, uint8_t *buf, size_t r,
                     const union smr_addr *peer, socklen_t pl, const uint64_t t[3], int wall);
#endif
#ifdef SMR_DRIVER_TS
/* The platform's (SMR_DRIVER_TS): sends the UDP reply of r bytes in buf
 * (before the MAC trailer) to peer on socket fd with the stamp block
 * written from its driver's stamps; app_rx is the request's receive time
 * on smr_now()'s clock, which the driver's stamps share. */
void smr_udp_driver_stamped(const struct smr_ctx *x, int fd, uint8_t *buf, size_t r, const union smr_addr *peer,
                            socklen_t pl, uint64_t app_rx);
#endif

#endif
