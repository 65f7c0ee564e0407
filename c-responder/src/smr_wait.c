/*
 * How the POSIX backend waits for its sockets: poll(), behind one small
 * interface (smr_posix.h) that another way of waiting can fill in.
 * Sockets are watched under keys (listener l: 2l TCP, 2l + 1 UDP;
 * connection slot i: SMR_KEY_CONN(i)), kept in one pollfd array by key;
 * a wait lists every key, those that found nothing with no readiness.
 */
#include "smr_posix.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

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

unsigned smr_wait_ready(int i, unsigned *ev) {
    *ev = smr_g.pfd[i].fd < 0 ? 0u : (unsigned)(unsigned short)smr_g.pfd[i].revents;
    return (unsigned)i;
}
