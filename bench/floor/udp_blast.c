/*
 * udp_blast.c - the physical floor for UDP packets per second.
 *
 * Why this exists: stackmeter's paced UDP `stream` (and udp-max) should get
 * as many small datagrams through as the kernel lets one socket pair move.
 * This program is the least a UDP sender and counter can do: one connected
 * socket calling send() of LEN bytes in a loop, unpaced, and one socket
 * calling recv() in a loop. Its received packets/s is the floor that
 * bench/throughput.sh compares stackmeter and iperf3 against.
 *
 * Usage:
 *   udp_blast recv PORT ADDR LEN SECONDS    (the server: receives, counts)
 *   udp_blast send HOST PORT LEN SECONDS    (the client: sends)
 *
 * The counter binds, calls recv() with a LEN-byte buffer until SECONDS have
 * passed since the first datagram arrived, prints one line
 *   "udp_blast recv len=LEN datagrams=N bytes=B seconds=S pps=P"
 * (datagrams received inside the window; the clock is read once every few
 * calls) and exits. Once it has closed its socket the sender's next send()
 * fails with ECONNREFUSED (port unreachable on a connected socket), which is
 * how the sender learns that the measurement is over; it also stops after
 * SECONDS + 10 s. It prints
 *   "udp_blast send len=LEN datagrams=N refused=R seconds=S"
 * for information only (ENOBUFS refusals are counted, not sent): the
 * counter's figure is the result.
 *
 * Every blocking call is bounded by SO_RCVTIMEO/SO_SNDTIMEO (5 s).
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

#define UB_MAX_LEN 65507UL
#define UB_MAX_SECONDS 3600UL
#define UB_SEND_GRACE_S 10
#define UB_CLOCK_EVERY 32UL

/* ---------------------------------------------------------------- counter */

static int ub_run_recv(char **argv)
{
    unsigned long len, seconds;
    unsigned long long count = 0, bytes = 0;
    uint64_t t0, now = 0, end;
    unsigned char *buf;
    pid_t parent = getppid();
    int fd, rc = 1;
    ssize_t n;

    if (floor_parse_ulong(argv[2], 1, UB_MAX_LEN, &len) != 0 ||
        floor_parse_ulong(argv[3], 1, UB_MAX_SECONDS, &seconds) != 0) {
        fprintf(stderr, "udp_blast recv: LEN must be 1..%lu, SECONDS "
                        "1..%lu\n",
                UB_MAX_LEN, UB_MAX_SECONDS);
        return 2;
    }
    buf = floor_alloc_filled(len);
    if (buf == NULL) {
        fprintf(stderr, "udp_blast recv: out of memory\n");
        return 1;
    }
    fd = floor_socket("udp_blast recv", argv[1], argv[0], SOCK_DGRAM, 1, 0);
    if (fd < 0)
        goto out_free;
    /* Wait for the first datagram; give up if the driver script is gone. */
    for (;;) {
        n = recv(fd, buf, len, 0);
        if (n >= 0)
            break;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            fprintf(stderr, "udp_blast recv: recv: %s\n", floor_errstr(errno));
            goto out_close;
        }
        if (getppid() != parent)
            goto out_close;
    }
    t0 = floor_now_ns();
    end = t0 + (uint64_t)seconds * 1000000000ULL;
    count = 1;
    bytes = (unsigned long long)n;
    for (;;) {
        n = recv(fd, buf, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "udp_blast recv: recv: %s\n", floor_errstr(errno));
            goto out_close;
        }
        count++;
        bytes += (unsigned long long)n;
        if (count % UB_CLOCK_EVERY == 0) {
            now = floor_now_ns();
            if (now >= end)
                break;
        }
    }
    {
        double s = (double)(now - t0) / 1e9;

        printf("udp_blast recv len=%lu datagrams=%llu bytes=%llu "
               "seconds=%.6f pps=%.1f\n",
               len, count, bytes, s, (double)count / s);
        fflush(stdout);
    }
    rc = 0;
out_close:
    close(fd);
out_free:
    free(buf);
    return rc;
}

/* ---------------------------------------------------------------- sender */

static int ub_run_send(char **argv)
{
    unsigned long len, seconds;
    unsigned long long count = 0, refused = 0, calls = 0;
    uint64_t t0, now, end;
    unsigned char *buf;
    int fd, rc = 1;

    if (floor_parse_ulong(argv[2], 1, UB_MAX_LEN, &len) != 0 ||
        floor_parse_ulong(argv[3], 1, UB_MAX_SECONDS, &seconds) != 0) {
        fprintf(stderr, "udp_blast send: LEN must be 1..%lu, SECONDS "
                        "1..%lu\n",
                UB_MAX_LEN, UB_MAX_SECONDS);
        return 2;
    }
    buf = floor_alloc_filled(len);
    if (buf == NULL) {
        fprintf(stderr, "udp_blast send: out of memory\n");
        return 1;
    }
    fd = floor_socket("udp_blast send", argv[0], argv[1], SOCK_DGRAM, 0, 0);
    if (fd < 0)
        goto out_free;
    t0 = floor_now_ns();
    end = t0 + (uint64_t)(seconds + UB_SEND_GRACE_S) * 1000000000ULL;
    for (;;) {
        ssize_t n = send(fd, buf, len, 0);

        calls++;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ENOBUFS || errno == EAGAIN) {
                refused++;
            } else if (errno == ECONNREFUSED) {
                /* The counter has closed its socket: its window is over. */
                rc = 0;
                break;
            } else {
                fprintf(stderr, "udp_blast send: send: %s\n",
                        floor_errstr(errno));
                goto out_close;
            }
        } else {
            count++;
        }
        if (calls % UB_CLOCK_EVERY == 0 && floor_now_ns() >= end) {
            fprintf(stderr, "udp_blast send: counter did not stop us within "
                            "SECONDS + %d s\n",
                    UB_SEND_GRACE_S);
            goto out_close;
        }
    }
    now = floor_now_ns();
    printf("udp_blast send len=%lu datagrams=%llu refused=%llu seconds=%.6f\n",
           len, count, refused, (double)(now - t0) / 1e9);
out_close:
    close(fd);
out_free:
    free(buf);
    return rc;
}

static void ub_usage(void)
{
    fprintf(stderr, "usage: udp_blast recv PORT ADDR LEN SECONDS\n"
                    "       udp_blast send HOST PORT LEN SECONDS\n");
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "recv") == 0)
        return ub_run_recv(argv + 2);
    if (argc == 6 && strcmp(argv[1], "send") == 0)
        return ub_run_send(argv + 2);
    ub_usage();
    return 2;
}
