/*
 * The POSIX backend's addresses and listening sockets: "ADDR:PORT" read
 * into a socket address, an address's bytes (for admission and client
 * tags) and the key of a UDP client's replay window, and each listener's
 * TCP and UDP sockets bound on one port, non-blocking. Its own file so
 * that the loop (smr_posix.c) is only the loop; it keeps no state, and
 * what it sets up comes in as arguments.
 */
#include "smr_posix_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void smr_nonblock(int fd) {
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

static int smr_socket(union smr_addr *a, int type, int busy_poll) {
    int one = 1, fd = SMR_SOCK(socket)(a->sa.sa_family, type, 0);
    if (fd < 0) return -1;
    if (type == SOCK_STREAM) SMR_SOCK(setsockopt)(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (a->sa.sa_family == AF_INET6) SMR_SOCK(setsockopt)(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
#if defined(SMR_KNOBS) && !defined(SMR_LWIP)
    /* Accepted sockets inherit it from the listener. */
    if (busy_poll && SMR_SOCK(setsockopt)(fd, SOL_SOCKET, SO_BUSY_POLL, &busy_poll, sizeof busy_poll) != 0)
        smr_die("--busy-poll: not permitted above net.core.busy_read without CAP_NET_ADMIN (run as root)", NULL);
#else
    (void)busy_poll;
#endif
    if (SMR_SOCK(bind)(fd, &a->sa, smr_alen(a)) != 0 || (type == SOCK_STREAM && SMR_SOCK(listen)(fd, 1024) != 0)) {
        SMR_SOCK(close)(fd);
        return -1;
    }
    smr_nonblock(fd);
    return fd;
}

int smr_bind_pair(union smr_addr *a, int busy_poll, int *tcp, int *udp) {
    int try;
    for (try = 0; try < 16; try++) {
        union smr_addr got = *a;
        socklen_t n = sizeof got;
        int t = smr_socket(a, SOCK_STREAM, busy_poll), u;
        if (t < 0) return -1;
        SMR_SOCK(getsockname)(t, &got.sa, &n);
        u = smr_socket(&got, SOCK_DGRAM, busy_poll);
        if (u >= 0) {
#ifndef SMR_LWIP
            /* As the Rust responder: room for a burst (or a junk flood)
             * while the loop serves TCP; best effort, capped by rmem_max. */
            int rcv = 4 << 20;
            setsockopt(u, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
#endif
            *tcp = t;
            *udp = u;
            *a = got;
            return 0;
        }
        SMR_SOCK(close)(t);
        if (errno != EADDRINUSE || (a->sa.sa_family == AF_INET6 ? a->v6.sin6_port : a->v4.sin_port) != 0) return -1;
    }
    return -1;
}

#ifndef SMR_NO_AUTH
size_t smr_peer_key(const union smr_addr *a, uint8_t *k) {
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
