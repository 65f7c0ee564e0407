/*
 * tcp_pingpong.c - the physical floor for TCP request/response latency.
 *
 * Why this exists: stackmeter's `rr` test should add almost nothing to the
 * kernel's own round trip. This program is the least a TCP ping-pong can do:
 * one connection, blocking send()/recv(), TCP_NODELAY, no event loop and
 * nothing but two clock reads around the exchange. Its RTT is the floor that
 * bench/latency.sh compares stackmeter and the peer tools against.
 *
 * Usage:
 *   tcp_pingpong server PORT [ADDR]
 *   tcp_pingpong client HOST PORT REQ RESP ITERS WARMUP
 *
 * Protocol: the client opens with an 8-byte header, REQ then RESP as 32-bit
 * big-endian integers. Then, per iteration, the client sends REQ bytes and the
 * server reads exactly REQ bytes and writes RESP bytes. The server serves one
 * connection at a time, forever; it exits when its parent process is gone.
 *
 * Timing: CLOCK_MONOTONIC read right before the first send() of the request
 * and right after the last byte of the reply has been received. The client
 * prints one line: "tcp REQ:RESP count=N min=.. p50=.. p90=.. p99=.. max=.. us"
 * (nearest-rank percentiles over the sorted samples, warm-up excluded).
 *
 * Every blocking network call is bounded by SO_RCVTIMEO/SO_SNDTIMEO (5 s).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

#define PP_MAX_MSG (64UL * 1024 * 1024)
#define PP_MAX_ITERS 50000000UL
#define PP_HDR_LEN 8

/* recv_all() result when the peer closed the connection cleanly. */
#define PP_EOF (-2)

/* 0 on success, PP_EOF if the peer closed first, -1 on error (errno set). */
static int recv_all(int fd, unsigned char *buf, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t n = recv(fd, buf + off, len - off, 0);
        if (n == 0)
            return PP_EOF;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        off += (size_t)n;
    }
    return 0;
}

/* ---------------------------------------------------------------- server */

/* Serve one connection until the client closes it or misbehaves. */
static void serve_conn(int fd)
{
    unsigned char hdr[PP_HDR_LEN];
    unsigned long req, resp;
    unsigned char *buf;
    int r;

    if (floor_set_timeouts(fd) != 0 || floor_nodelay(fd) != 0) {
        perror("tcp_pingpong server: setsockopt");
        return;
    }
    r = recv_all(fd, hdr, sizeof hdr);
    if (r != 0) {
        if (r != PP_EOF)
            fprintf(stderr, "tcp_pingpong server: header: %s\n",
                    floor_errstr(errno));
        return;
    }
    req = floor_get_be32(hdr);
    resp = floor_get_be32(hdr + 4);
    if (req == 0 || resp == 0 || req > PP_MAX_MSG || resp > PP_MAX_MSG) {
        fprintf(stderr, "tcp_pingpong server: bad sizes %lu:%lu\n", req,
                resp);
        return;
    }
    buf = floor_alloc_filled(req > resp ? req : resp);
    if (buf == NULL) {
        fprintf(stderr, "tcp_pingpong server: out of memory\n");
        return;
    }
    for (;;) {
        r = recv_all(fd, buf, req);
        if (r == PP_EOF)
            break;
        if (r != 0) {
            fprintf(stderr, "tcp_pingpong server: recv: %s\n",
                    floor_errstr(errno));
            break;
        }
        if (floor_send_all(fd, buf, resp) != 0) {
            fprintf(stderr, "tcp_pingpong server: send: %s\n",
                    floor_errstr(errno));
            break;
        }
    }
    free(buf);
}

static int run_server(const char *port, const char *addr)
{
    pid_t parent = getppid();
    int lfd = floor_socket("tcp_pingpong server", addr, port, SOCK_STREAM, 1, 0);

    if (lfd < 0)
        return 1;
    for (;;) {
        /* SO_RCVTIMEO bounds accept() too: wake every 5 s to check that
         * whoever started us still exists, so a killed driver script
         * cannot leave an orphaned server behind. */
        int cfd = accept(lfd, NULL, NULL);
        if (cfd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                errno != ECONNABORTED)
                perror("tcp_pingpong server: accept");
            if (getppid() != parent)
                break;
            continue;
        }
        serve_conn(cfd);
        close(cfd);
        if (getppid() != parent)
            break;
    }
    close(lfd);
    return 0;
}

/* ---------------------------------------------------------------- client */

static uint64_t elapsed_ns(const struct timespec *a, const struct timespec *b)
{
    return (uint64_t)(b->tv_sec - a->tv_sec) * 1000000000ULL +
           (uint64_t)b->tv_nsec - (uint64_t)a->tv_nsec;
}

static int run_client(char **argv)
{
    char head[96];
    unsigned long req, resp, iters, warmup, i;
    unsigned char hdr[PP_HDR_LEN];
    unsigned char *sbuf = NULL, *rbuf = NULL;
    uint64_t *samples = NULL;
    struct timespec t0, t1;
    int fd, rc = 1;

    if (floor_parse_ulong(argv[2], 1, PP_MAX_MSG, &req) != 0 ||
        floor_parse_ulong(argv[3], 1, PP_MAX_MSG, &resp) != 0 ||
        floor_parse_ulong(argv[4], 1, PP_MAX_ITERS, &iters) != 0 ||
        floor_parse_ulong(argv[5], 0, PP_MAX_ITERS, &warmup) != 0) {
        fprintf(stderr, "tcp_pingpong client: REQ/RESP must be 1..%lu, "
                        "ITERS 1..%lu, WARMUP 0..%lu\n",
                PP_MAX_MSG, PP_MAX_ITERS, PP_MAX_ITERS);
        return 2;
    }
    sbuf = floor_alloc_filled(req);
    rbuf = floor_alloc_filled(resp);
    samples = malloc(iters * sizeof *samples);
    if (sbuf == NULL || rbuf == NULL || samples == NULL) {
        fprintf(stderr, "tcp_pingpong client: out of memory\n");
        goto out_free;
    }
    /* Touch every page now: no page fault between timed iterations. */
    memset(samples, 0, iters * sizeof *samples);
    fd = floor_socket("tcp_pingpong client", argv[0], argv[1], SOCK_STREAM, 0, 1);
    if (fd < 0)
        goto out_free;
    floor_put_be32(hdr, req);
    floor_put_be32(hdr + 4, resp);
    if (floor_send_all(fd, hdr, sizeof hdr) != 0) {
        fprintf(stderr, "tcp_pingpong client: header: %s\n", floor_errstr(errno));
        goto out_close;
    }
    for (i = 0; i < warmup + iters; i++) {
        int r;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (floor_send_all(fd, sbuf, req) != 0) {
            fprintf(stderr, "tcp_pingpong client: send (iteration %lu): %s\n",
                    i, floor_errstr(errno));
            goto out_close;
        }
        r = recv_all(fd, rbuf, resp);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (r != 0) {
            fprintf(stderr, "tcp_pingpong client: recv (iteration %lu): %s\n",
                    i, r == PP_EOF ? "server closed" : floor_errstr(errno));
            goto out_close;
        }
        if (i >= warmup)
            samples[i - warmup] = elapsed_ns(&t0, &t1);
    }
    snprintf(head, sizeof head, "tcp %lu:%lu count=%lu", req, resp, iters);
    floor_print_rtt(head, samples, iters);
    rc = 0;
out_close:
    close(fd);
out_free:
    free(samples);
    free(rbuf);
    free(sbuf);
    return rc;
}

static void usage(void)
{
    fprintf(stderr, "usage: tcp_pingpong server PORT [ADDR]\n"
                    "       tcp_pingpong client HOST PORT REQ RESP ITERS "
                    "WARMUP\n");
}

int main(int argc, char **argv)
{
    if (argc >= 3 && argc <= 4 && strcmp(argv[1], "server") == 0)
        return run_server(argv[2], argc == 4 ? argv[3] : NULL);
    if (argc == 8 && strcmp(argv[1], "client") == 0)
        return run_client(argv + 2);
    usage();
    return 2;
}
