/*
 * How the POSIX backend waits for its sockets: epoll on Linux, poll()
 * everywhere else (QNX io-sock, BSD, Embox, lwIP's sockets API) and in the
 * small build (-DSMR_POLL: what a board has). Chosen at compile time
 * behind one interface (smr_posix.h): sockets are watched under keys
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
 */
#include "smr_posix.h"

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

void smr_wait_init(void) {
    smr_g.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (smr_g.epfd < 0) smr_die("epoll_create1 failed", NULL);
}

void smr_wait_set(unsigned key, int fd, unsigned ev) {
    struct epoll_event e;
    uint8_t w = (uint8_t)(ev | SMR_WATCHED);
    if (smr_g.watch[key] == w) return;
    e.events = ev;
    e.data.u64 = key;
    if (epoll_ctl(smr_g.epfd, smr_g.watch[key] ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &e) != 0)
        smr_die("epoll_ctl failed", NULL);
    smr_g.watch[key] = w;
}

/* Closing the socket takes it out of the epoll set. */
void smr_wait_forget(unsigned key) { smr_g.watch[key] = 0; }

int smr_wait(int timeout_ms) {
    int n = epoll_wait(smr_g.epfd, smr_g.ev, SMR_EVENTS, timeout_ms);
    if (n < 0 && errno != EINTR) smr_die("epoll_wait failed", NULL);
    return n < 0 ? 0 : n;
}

/* A ready key's place: listeners first, then connections in turn order. */
static size_t smr_rank(unsigned key) {
    return key < SMR_KEY_CONN(0) ? key : SMR_KEY_CONN(0) + smr_turn(&smr_g.x, &smr_g.x.conns[key - SMR_KEY_CONN(0)]);
}

/* Insertion sort: a wait finds a handful of sockets, at most SMR_EVENTS. */
void smr_wait_order(int n) {
    int i, j;
    for (i = 1; i < n; i++) {
        struct epoll_event e = smr_g.ev[i];
        size_t r = smr_rank((unsigned)e.data.u64);
        for (j = i; j > 0 && smr_rank((unsigned)smr_g.ev[j - 1].data.u64) > r; j--) smr_g.ev[j] = smr_g.ev[j - 1];
        smr_g.ev[j] = e;
    }
}

unsigned smr_wait_ready(int i, unsigned *ev) {
    *ev = smr_g.ev[i].events;
    return (unsigned)smr_g.ev[i].data.u64;
}

#else

/* Every fd -1: poll() skips the keys not watched. */
void smr_wait_init(void) { memset(smr_g.pfd, 0xff, sizeof smr_g.pfd); }

void smr_wait_set(unsigned key, int fd, unsigned ev) {
    smr_g.pfd[key].fd = fd;
    smr_g.pfd[key].events = (short)ev;
    if (key >= smr_g.npfd) smr_g.npfd = key + 1;
}

/* (npfd stays: poll() skips an fd of -1.) */
void smr_wait_forget(unsigned key) { smr_g.pfd[key].fd = -1; }

/* Every watched key in order: the loop skips those that found nothing. */
int smr_wait(int timeout_ms) {
    if (SMR_SOCK(poll)(smr_g.pfd, smr_g.npfd, timeout_ms) >= 0) return (int)smr_g.npfd;
    if (errno != EINTR) smr_die("poll failed", NULL);
    return 0;
}

/* The array stays in key order; the connections' part is read from the
 * slot where the turns begin, round to the one before it. */
void smr_wait_order(int n) {
    unsigned slots = (unsigned)n > SMR_KEY_CONN(0) ? (unsigned)n - SMR_KEY_CONN(0) : 1u;
    smr_g.first = smr_g.x.turn < slots ? smr_g.x.turn : 0u;
}

unsigned smr_wait_ready(int i, unsigned *ev) {
    unsigned k = (unsigned)i;
    if (k >= SMR_KEY_CONN(0) && (k += smr_g.first) >= smr_g.npfd) k -= smr_g.npfd - SMR_KEY_CONN(0); /* round */
    *ev = smr_g.pfd[k].fd < 0 ? 0u : (unsigned)(unsigned short)smr_g.pfd[k].revents;
    return k;
}

#endif
