/*
 * tcp_stream.c - the physical floor for one-way TCP throughput.
 *
 * Why this exists: stackmeter's `stream` test should move bytes about as fast
 * as the kernel lets one connection move them. This program is the least a
 * bulk sender and receiver can do: one connection, a blocking send() or
 * recv() of LEN bytes in a loop, nothing else. Its received rate is the
 * floor that bench/throughput.sh compares stackmeter and iperf3 against.
 *
 * Usage:
 *   tcp_stream recv PORT ADDR LEN SECONDS    (the server: receives, counts)
 *   tcp_stream send HOST PORT LEN SECONDS [nodelay]   (the client: sends)
 *
 * The receiver accepts one connection, calls recv() with LEN bytes until
 * SECONDS have passed since the first byte arrived, prints one line
 *   "tcp_stream recv len=LEN bytes=B calls=C seconds=S mbps=M"
 * (M = 8 * B / S / 10^6, bytes received inside the window) and exits. The
 * clock is read once every few recv() calls, not around each one. Closing
 * the connection with data unread resets it, which is how the sender learns
 * that the measurement is over: it sends LEN bytes per send() until the
 * connection fails (or SECONDS + 10 s have passed), then prints
 *   "tcp_stream send len=LEN bytes=B calls=C seconds=S"
 * for information only: the receiver's count is the figure. With
 * "nodelay" the sender sets TCP_NODELAY (as stackmeter does on every
 * connection); without it the socket keeps the kernel's defaults (Nagle on,
 * as iperf3's default), which lets small writes share segments.
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

#define TS_MAX_LEN (64UL * 1024 * 1024)
#define TS_MAX_SECONDS 3600UL
/* Extra time the sender keeps going after SECONDS if nobody stops it. */
#define TS_SEND_GRACE_S 10
/* Read the clock after this many calls (and after every call of >= 4 KiB). */
#define TS_CLOCK_EVERY 32UL

/* ---------------------------------------------------------------- receiver */

static int ts_run_recv(char **argv)
{
    unsigned long len, seconds, every;
    unsigned long long bytes = 0, calls = 0;
    uint64_t t0, now = 0, end;
    unsigned char *buf;
    pid_t parent = getppid();
    int lfd, fd = -1, rc = 1;
    ssize_t n;

    if (floor_parse_ulong(argv[2], 1, TS_MAX_LEN, &len) != 0 ||
        floor_parse_ulong(argv[3], 1, TS_MAX_SECONDS, &seconds) != 0) {
        fprintf(stderr, "tcp_stream recv: LEN must be 1..%lu, SECONDS "
                        "1..%lu\n",
                TS_MAX_LEN, TS_MAX_SECONDS);
        return 2;
    }
    buf = floor_alloc_filled(len);
    if (buf == NULL) {
        fprintf(stderr, "tcp_stream recv: out of memory\n");
        return 1;
    }
    lfd = floor_socket("tcp_stream recv", argv[1], argv[0], SOCK_STREAM, 1, 0);
    if (lfd < 0)
        goto out_free;
    /* SO_RCVTIMEO bounds accept(): give up if the driver script is gone. */
    while (fd < 0) {
        fd = accept(lfd, NULL, NULL);
        if (fd >= 0)
            break;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
            errno != ECONNABORTED) {
            perror("tcp_stream recv: accept");
            goto out_listen;
        }
        if (getppid() != parent)
            goto out_listen;
    }
    if (floor_set_timeouts(fd) != 0) {
        perror("tcp_stream recv: setsockopt");
        goto out_close;
    }
    /* The window opens when the first byte is in; that byte counts. */
    do
        n = recv(fd, buf, len, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
        fprintf(stderr, "tcp_stream recv: first recv: %s\n",
                n == 0 ? "sender closed" : floor_errstr(errno));
        goto out_close;
    }
    t0 = floor_now_ns();
    end = t0 + (uint64_t)seconds * 1000000000ULL;
    bytes = (unsigned long long)n;
    calls = 1;
    every = len >= 4096 ? 1 : TS_CLOCK_EVERY;
    for (;;) {
        n = recv(fd, buf, len, 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            fprintf(stderr, "tcp_stream recv: recv: %s\n",
                    n == 0 ? "sender closed before the window ended"
                           : floor_errstr(errno));
            goto out_close;
        }
        bytes += (unsigned long long)n;
        calls++;
        if (calls % every == 0) {
            now = floor_now_ns();
            if (now >= end)
                break;
        }
    }
    {
        double s = (double)(now - t0) / 1e9;

        printf("tcp_stream recv len=%lu bytes=%llu calls=%llu seconds=%.6f "
               "mbps=%.3f\n",
               len, bytes, calls, s, 8.0 * (double)bytes / s / 1e6);
        fflush(stdout);
    }
    rc = 0;
out_close:
    close(fd);
out_listen:
    close(lfd);
out_free:
    free(buf);
    return rc;
}

/* ---------------------------------------------------------------- sender */

static int ts_run_send(char **argv, int nodelay)
{
    unsigned long len, seconds;
    unsigned long long bytes = 0, calls = 0;
    uint64_t t0, now, end;
    unsigned char *buf;
    int fd, rc = 1;

    if (floor_parse_ulong(argv[2], 1, TS_MAX_LEN, &len) != 0 ||
        floor_parse_ulong(argv[3], 1, TS_MAX_SECONDS, &seconds) != 0) {
        fprintf(stderr, "tcp_stream send: LEN must be 1..%lu, SECONDS "
                        "1..%lu\n",
                TS_MAX_LEN, TS_MAX_SECONDS);
        return 2;
    }
    buf = floor_alloc_filled(len);
    if (buf == NULL) {
        fprintf(stderr, "tcp_stream send: out of memory\n");
        return 1;
    }
    fd = floor_socket("tcp_stream send", argv[0], argv[1], SOCK_STREAM, 0, nodelay);
    if (fd < 0)
        goto out_free;
    t0 = floor_now_ns();
    end = t0 + (uint64_t)(seconds + TS_SEND_GRACE_S) * 1000000000ULL;
    now = t0;
    for (;;) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            /* The receiver closes when its window is over: a reset. */
            if (errno == ECONNRESET || errno == EPIPE) {
                rc = 0;
                break;
            }
            fprintf(stderr, "tcp_stream send: send: %s\n", floor_errstr(errno));
            goto out_close;
        }
        bytes += (unsigned long long)n;
        calls++;
        if (calls % TS_CLOCK_EVERY == 0) {
            now = floor_now_ns();
            if (now >= end) {
                fprintf(stderr, "tcp_stream send: receiver did not stop us "
                                "within SECONDS + %d s\n",
                        TS_SEND_GRACE_S);
                goto out_close;
            }
        }
    }
    now = floor_now_ns();
    printf("tcp_stream send len=%lu bytes=%llu calls=%llu seconds=%.6f\n", len,
           bytes, calls, (double)(now - t0) / 1e9);
out_close:
    close(fd);
out_free:
    free(buf);
    return rc;
}

static void ts_usage(void)
{
    fprintf(stderr, "usage: tcp_stream recv PORT ADDR LEN SECONDS\n"
                    "       tcp_stream send HOST PORT LEN SECONDS "
                    "[nodelay]\n");
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "recv") == 0)
        return ts_run_recv(argv + 2);
    if (argc == 6 && strcmp(argv[1], "send") == 0)
        return ts_run_send(argv + 2, 0);
    if (argc == 7 && strcmp(argv[1], "send") == 0 &&
        strcmp(argv[6], "nodelay") == 0)
        return ts_run_send(argv + 2, 1);
    ts_usage();
    return 2;
}
