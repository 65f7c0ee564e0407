/*
 * How the POSIX backend waits for its sockets: epoll on Linux, poll()
 * everywhere else (QNX io-sock, BSD, Embox, lwIP's sockets API) and in the
 * small build (-DSMR_POLL: what a board has). Chosen at compile time
 * behind one interface (smr_posix_int.h): sockets are watched under keys
 * (listener l: 2l TCP, 2l + 1 UDP; connection slot i: SMR_KEY_CONN(i)),
 * a change of what a key waits for is made only when it changes (with
 * epoll a system call, with poll a store), and a wait lists the keys
 * that are ready (poll: every key, those that found nothing with no
 * readiness): the listeners first, then the connections in the order of
 * their turns (smr_turn).
 *
 * epoll costs nothing per idle socket at each wait; poll() passes the
 * whole set to the kernel each time, which on Linux cost the open-loop
 * rr test a poll over every socket per wake-up.
 *
 * It works on its own state (struct smr_wait), handed in by the loop
 * (smr_posix.c), and reads the engine's order of turns; it knows nothing
 * else of the backend.
 */
#include "smr_posix_int.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#ifdef SMR_EPOLL
#include <sys/epoll.h>

/* Readiness bits pass between epoll and the loop as they are. */
typedef char smr_check_bits[EPOLLIN == POLLIN && EPOLLOUT == POLLOUT && EPOLLERR == POLLERR && EPOLLHUP == POLLHUP &&
                                    ((POLLIN | POLLOUT | POLLERR | POLLHUP) & SMR_WATCHED) == 0
                                ? 1
                                : -1];

void smr_wait_init(struct smr_wait *w) {
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (w->epfd < 0) smr_die("epoll_create1 failed", NULL);
}

void smr_wait_set(struct smr_wait *w, unsigned key, int fd, unsigned ev) {
    struct epoll_event e;
    uint8_t want = (uint8_t)(ev | SMR_WATCHED);
    if (w->watch[key] == want) return;
    e.events = ev;
    e.data.u64 = key;
    if (epoll_ctl(w->epfd, w->watch[key] ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &e) != 0)
        smr_die("epoll_ctl failed", NULL);
    w->watch[key] = want;
}

/* Closing the socket takes it out of the epoll set. */
void smr_wait_forget(struct smr_wait *w, unsigned key) { w->watch[key] = 0; }

int smr_wait(struct smr_wait *w, int timeout_ms) {
    int n = epoll_wait(w->epfd, w->ev, SMR_EVENTS, timeout_ms);
    if (n < 0 && errno != EINTR) smr_die("epoll_wait failed", NULL);
    return n < 0 ? 0 : n;
}

/* A ready key's place: listeners first, then connections in turn order. */
static size_t smr_rank(const struct smr_ctx *x, unsigned key) {
    return key < SMR_KEY_CONN(0) ? key : SMR_KEY_CONN(0) + smr_turn(x, &x->conns[key - SMR_KEY_CONN(0)]);
}

/* Insertion sort: a wait finds a handful of sockets, at most SMR_EVENTS. */
void smr_wait_order(struct smr_wait *w, const struct smr_ctx *x, int n) {
    int i, j;
    for (i = 1; i < n; i++) {
        struct epoll_event e = w->ev[i];
        size_t r = smr_rank(x, (unsigned)e.data.u64);
        for (j = i; j > 0 && smr_rank(x, (unsigned)w->ev[j - 1].data.u64) > r; j--) w->ev[j] = w->ev[j - 1];
        w->ev[j] = e;
    }
}

unsigned smr_wait_ready(const struct smr_wait *w, int i, unsigned *ev) {
    *ev = w->ev[i].events;
    return (unsigned)w->ev[i].data.u64;
}

#else

/* Every fd -1: poll() skips the keys not watched. */
void smr_wait_init(struct smr_wait *w) { memset(w->pfd, 0xff, sizeof w->pfd); }

void smr_wait_set(struct smr_wait *w, unsigned key, int fd, unsigned ev) {
    w->pfd[key].fd = fd;
    w->pfd[key].events = (short)ev;
    if (key >= w->npfd) w->npfd = key + 1;
}

/* (npfd stays: poll() skips an fd of -1.) */
void smr_wait_forget(struct smr_wait *w, unsigned key) { w->pfd[key].fd = -1; }

/* Every watched key in order: the loop skips those that found nothing. */
int smr_wait(struct smr_wait *w, int timeout_ms) {
    if (SMR_SOCK(poll)(w->pfd, w->npfd, timeout_ms) >= 0) return (int)w->npfd;
    if (errno != EINTR) smr_die("poll failed", NULL);
    return 0;
}

/* The array stays in key order; the connections' part is read from the
 * slot where the turns begin, round to the one before it. */
void smr_wait_order(struct smr_wait *w, const struct smr_ctx *x, int n) {
    unsigned slots = (unsigned)n > SMR_KEY_CONN(0) ? (unsigned)n - SMR_KEY_CONN(0) : 1u;
    w->first = x->turn < slots ? x->turn : 0u;
}

unsigned smr_wait_ready(const struct smr_wait *w, int i, unsigned *ev) {
    unsigned k = (unsigned)i;
    if (k >= SMR_KEY_CONN(0) && (k += w->first) >= w->npfd) k -= w->npfd - SMR_KEY_CONN(0); /* round */
    *ev = w->pfd[k].fd < 0 ? 0u : (unsigned)(unsigned short)w->pfd[k].revents;
    return k;
}

#endif
