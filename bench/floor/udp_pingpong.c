/*
 * udp_pingpong.c - the physical floor for UDP echo latency.
 *
 * Why this exists: stackmeter's `ping` test (UDP echo) should add almost
 * nothing to the kernel's own datagram round trip. This program is the least
 * a UDP ping-pong can do: one connected socket, blocking send()/recv(), one
 * datagram in flight, nothing but two clock reads around the exchange. Its
 * RTT is the floor that bench/latency.sh compares stackmeter and the peer
 * tools against.
 *
 * Usage:
 *   udp_pingpong server PORT [ADDR]
 *   udp_pingpong client HOST PORT REQ RESP ITERS WARMUP
 *
 * REQ must equal RESP: it is the datagram size (the server echoes each
 * datagram back unchanged). When the size is at least 4 bytes the client puts
 * a big-endian sequence number in the first 4 bytes and ignores stale replies.
 * A reply not seen within 5 s (SO_RCVTIMEO) counts as lost; the client gives
 * up after PP_MAX_LOST losses. The server exits when its parent is gone.
 *
 * Timing: CLOCK_MONOTONIC read right before send() and right after recv()
 * returns the matching reply. The client prints one line:
 * "udp SIZE:SIZE count=N lost=L min=.. p50=.. p90=.. p99=.. max=.. us"
 * (nearest-rank percentiles over the sorted samples, warm-up excluded).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
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

#define PP_TIMEOUT_S 5
#define PP_MAX_DGRAM 65507UL
#define PP_MAX_ITERS 50000000UL
#define PP_MAX_LOST 3UL

static int is_timeout(int err)
{
    return err == EAGAIN || err == EWOULDBLOCK;
}

/* ---------------------------------------------------------------- server */

static int run_server(const char *port, const char *addr)
{
    static unsigned char buf[PP_MAX_DGRAM + 1];
    pid_t parent = getppid();
    int fd = floor_socket("udp_pingpong server", addr, port, SOCK_DGRAM, 1, 0);

    if (fd < 0)
        return 1;
    for (;;) {
        struct sockaddr_storage peer;
        socklen_t plen = sizeof peer;
        ssize_t n = recvfrom(fd, buf, sizeof buf, 0,
                             (struct sockaddr *)&peer, &plen);
        if (n < 0) {
            /* Timeouts wake us every 5 s to check that whoever started us
             * still exists, so no orphaned server is left behind. */
            if (!is_timeout(errno) && errno != EINTR)
                perror("udp_pingpong server: recvfrom");
            if (getppid() != parent)
                break;
            continue;
        }
        /* A failed echo is the client's loss to count, not ours to report
         * per datagram. */
        (void)sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&peer, plen);
    }
    close(fd);
    return 0;
}

/* ---------------------------------------------------------------- client */

static uint64_t elapsed_ns(const struct timespec *a, const struct timespec *b)
{
    return (uint64_t)(b->tv_sec - a->tv_sec) * 1000000000ULL +
           (uint64_t)b->tv_nsec - (uint64_t)a->tv_nsec;
}

/*
 * Wait for the reply to datagram `seq`. Returns 0 when it arrived, 1 on a
 * timeout (lost), -1 on any other error. Stale or wrong-sized replies (from
 * an earlier, timed-out exchange) are dropped and the wait continues.
 */
static int await_reply(int fd, unsigned char *rbuf, size_t size,
                       unsigned long seq)
{
    for (;;) {
        ssize_t n = recv(fd, rbuf, size + 1, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return is_timeout(errno) ? 1 : -1;
        }
        if ((size_t)n != size)
            continue;
        if (size >= 4 && floor_get_be32(rbuf) != (seq & 0xffffffffUL))
            continue;
        return 0;
    }
}

static int run_client(char **argv)
{
    char head[96];
    unsigned long size, resp, iters, warmup, i, lost = 0;
    size_t count = 0;
    unsigned char *sbuf = NULL, *rbuf = NULL;
    uint64_t *samples = NULL;
    struct timespec t0, t1;
    int fd, rc = 1;

    if (floor_parse_ulong(argv[2], 1, PP_MAX_DGRAM, &size) != 0 ||
        floor_parse_ulong(argv[3], 1, PP_MAX_DGRAM, &resp) != 0 || resp != size ||
        floor_parse_ulong(argv[4], 1, PP_MAX_ITERS, &iters) != 0 ||
        floor_parse_ulong(argv[5], 0, PP_MAX_ITERS, &warmup) != 0) {
        fprintf(stderr, "udp_pingpong client: REQ must equal RESP, 1..%lu; "
                        "ITERS 1..%lu, WARMUP 0..%lu\n",
                PP_MAX_DGRAM, PP_MAX_ITERS, PP_MAX_ITERS);
        return 2;
    }
    sbuf = floor_alloc_filled(size);
    rbuf = floor_alloc_filled(size + 1); /* +1: detect oversized replies */
    samples = malloc(iters * sizeof *samples);
    if (sbuf == NULL || rbuf == NULL || samples == NULL) {
        fprintf(stderr, "udp_pingpong client: out of memory\n");
        goto out_free;
    }
    /* Touch every page now: no page fault between timed iterations. */
    memset(samples, 0, iters * sizeof *samples);
    fd = floor_socket("udp_pingpong client", argv[0], argv[1], SOCK_DGRAM, 0, 0);
    if (fd < 0)
        goto out_free;
    for (i = 0; i < warmup + iters; i++) {
        ssize_t n;
        int r;

        if (size >= 4)
            floor_put_be32(sbuf, i & 0xffffffffUL);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        n = send(fd, sbuf, size, 0);
        if (n < 0 || (size_t)n != size) {
            fprintf(stderr, "udp_pingpong client: send (iteration %lu): %s\n",
                    i, n < 0 ? strerror(errno) : "short send");
            goto out_close;
        }
        r = await_reply(fd, rbuf, size, i);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (r < 0) {
            fprintf(stderr, "udp_pingpong client: recv (iteration %lu): %s\n",
                    i, strerror(errno));
            goto out_close;
        }
        if (r > 0) {
            lost++;
            fprintf(stderr, "udp_pingpong client: no reply within %d s "
                            "(iteration %lu)\n", PP_TIMEOUT_S, i);
            if (lost >= PP_MAX_LOST) {
                fprintf(stderr, "udp_pingpong client: giving up after %lu "
                                "losses\n", lost);
                goto out_close;
            }
            continue;
        }
        if (i >= warmup)
            samples[count++] = elapsed_ns(&t0, &t1);
    }
    if (count == 0) {
        fprintf(stderr, "udp_pingpong client: no samples\n");
        goto out_close;
    }
    snprintf(head, sizeof head, "udp %lu:%lu count=%lu lost=%lu", size, size, (unsigned long)count, lost);
    floor_print_rtt(head, samples, count);
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
    fprintf(stderr, "usage: udp_pingpong server PORT [ADDR]\n"
                    "       udp_pingpong client HOST PORT SIZE SIZE ITERS "
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
