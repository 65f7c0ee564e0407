/*
 * tcp_crr.c - the floor of a connect/request/response/close transaction:
 * the least a blocking program does for stackmeter's crr (the link
 * characterisation's connection latency, netperf's TCP_CRR), so "stackmeter
 * crr / floor" is what stackmeter's client and responder add to the
 * kernel's own cost.
 *
 * One transaction, as stackmeter's crr does it: the client makes a socket
 * (TCP_NODELAY, 5 s timeouts), reads the clock, connects, sends an 8-byte
 * header (REQ and RESP, 32-bit big-endian) and REQ bytes in one send,
 * reads exactly RESP bytes, closes, and reads the clock. The server
 * accepts, reads the header and the request, sends RESP bytes in one send,
 * waits for the client's close and closes too, so TIME_WAIT stays on the
 * client (docs/protocol.md, mode 2). One connection at a time.
 *
 *   tcp_crr server PORT [ADDR]
 *   tcp_crr client HOST PORT REQ RESP ITERS WARMUP
 *
 * The client prints one line:
 *   crr 64:64 count=N conn_per_s=R min=.. p50=.. p90=.. p99=.. max=.. us
 * where conn_per_s is timed transactions over the wall time from the
 * first timed connect to the last close (as stackmeter's crr reports),
 * and the percentiles are of the transaction times (nearest rank).
 * Every network wait ends after 5 s.
 */
#include "floor.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <unistd.h>

#define MAX_MSG (64UL << 20)

/* Reads exactly len bytes into buf (wrapping at cap); -1 on error or EOF. */
static int recv_exact(int fd, unsigned char *buf, size_t cap, size_t len)
{
    while (len > 0) {
        size_t want = len < cap ? len : cap;
        ssize_t n = recv(fd, buf, want, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ECONNRESET;
            return -1;
        }
        len -= (size_t)n;
    }
    return 0;
}

static int parse_addr(const char *host, const char *port, struct sockaddr_in *sa)
{
    unsigned long p;

    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    if (floor_parse_ulong(port, 1, 65535, &p) != 0 || inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        return -1;
    sa->sin_port = htons((unsigned short)p);
    return 0;
}

static int server(const char *port, const char *addr)
{
    struct sockaddr_in sa;
    unsigned char hdr[8], *buf;
    int one = 1, lfd;
    size_t cap = 1 << 20;

    if (parse_addr(addr ? addr : "0.0.0.0", port, &sa) != 0) {
        fprintf(stderr, "tcp_crr server: bad address or port\n");
        return 2;
    }
    buf = floor_alloc_filled(cap);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (!buf || lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 128) != 0) {
        fprintf(stderr, "tcp_crr server: cannot listen: %s\n", strerror(errno));
        return 1;
    }
    for (;;) {
        unsigned long req, resp;
        size_t left;
        int fd = accept(lfd, NULL, NULL);

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            fprintf(stderr, "tcp_crr server: accept: %s\n", strerror(errno));
            return 1;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        floor_set_timeouts(fd);
        if (recv_exact(fd, hdr, sizeof hdr, sizeof hdr) != 0) {
            close(fd);
            continue;
        }
        req = floor_get_be32(hdr);
        resp = floor_get_be32(hdr + 4);
        if (req > MAX_MSG || resp > MAX_MSG || recv_exact(fd, buf, cap, req) != 0) {
            close(fd);
            continue;
        }
        for (left = resp; left > 0;) {
            size_t n = left < cap ? left : cap;

            if (floor_send_all(fd, buf, n) != 0)
                break;
            left -= n;
        }
        /* Wait for the client's close (EOF), then close: TIME_WAIT on the client. */
        while (recv(fd, hdr, sizeof hdr, 0) > 0)
            ;
        close(fd);
    }
}

static int client(char **argv)
{
    char head[128];
    struct sockaddr_in sa;
    unsigned long req, resp, iters, warm, i;
    unsigned char *msg, *rbuf;
    uint64_t *t, first = 0, last = 0;
    size_t cap;
    int one = 1;

    if (parse_addr(argv[0], argv[1], &sa) != 0 || floor_parse_ulong(argv[2], 1, MAX_MSG, &req) != 0 ||
        floor_parse_ulong(argv[3], 1, MAX_MSG, &resp) != 0 || floor_parse_ulong(argv[4], 1, 100000000, &iters) != 0 ||
        floor_parse_ulong(argv[5], 0, 100000000, &warm) != 0) {
        fprintf(stderr, "tcp_crr client: usage: tcp_crr client HOST PORT REQ RESP ITERS WARMUP\n");
        return 2;
    }
    cap = resp < (1UL << 20) ? resp : (1UL << 20);
    msg = floor_alloc_filled(8 + req);
    rbuf = floor_alloc_filled(cap);
    t = malloc(iters * sizeof *t);
    if (!msg || !rbuf || !t) {
        fprintf(stderr, "tcp_crr client: out of memory\n");
        return 1;
    }
    floor_put_be32(msg, req);
    floor_put_be32(msg + 4, resp);
    for (i = 0; i < warm + iters; i++) {
        uint64_t t0, t1;
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        if (fd < 0 || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 || floor_set_timeouts(fd) != 0) {
            fprintf(stderr, "tcp_crr client: socket: %s\n", strerror(errno));
            return 1;
        }
        t0 = floor_now_ns();
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || floor_send_all(fd, msg, 8 + req) != 0 ||
            recv_exact(fd, rbuf, cap, resp) != 0) {
            fprintf(stderr, "tcp_crr client: transaction %lu: %s\n", i, floor_errstr(errno));
            return 1;
        }
        close(fd);
        t1 = floor_now_ns();
        if (i >= warm) {
            if (i == warm)
                first = t0;
            last = t1;
            t[i - warm] = t1 - t0;
        }
    }
    snprintf(head, sizeof head, "crr %lu:%lu count=%lu conn_per_s=%.1f", req, resp, iters,
             (double)iters / ((double)(last - first) / 1e9));
    floor_print_rtt(head, t, iters);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "server") == 0)
        return server(argv[2], argc > 3 ? argv[3] : NULL);
    if (argc == 8 && strcmp(argv[1], "client") == 0)
        return client(argv + 2);
    fprintf(stderr, "usage: tcp_crr server PORT [ADDR] | tcp_crr client HOST PORT REQ RESP ITERS WARMUP\n");
    return 2;
}
