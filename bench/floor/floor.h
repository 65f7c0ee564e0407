/*
 * floor.h - helpers the floor programs share (the .c files beside it): page-aligned
 * written buffers, socket timeouts, error text, argument parsing, the clock,
 * big-endian fields, a whole send, a socket bound or connected by name,
 * and nearest-rank percentiles of sorted samples with the one line that
 * prints them. Static inline functions in a header: each floor stays one
 * translation unit, built with one cc command, with nothing to link.
 */
#ifndef FLOOR_H
#define FLOOR_H

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
#include <time.h>
#include <unistd.h>

/* Every socket wait of a floor program ends after this many seconds. */
#define FLOOR_TIMEOUT_S 5

/*
 * A page-aligned buffer whose every page is written. Aligned like
 * stackmeter's buffers (the kernel copy runs much slower into a buffer 16
 * bytes past a page on AMD Zen); written, because memory that is only read
 * maps the kernel's shared zero page.
 */
static inline unsigned char *floor_alloc_filled(size_t len)
{
    void *p = NULL;

    if (posix_memalign(&p, 4096, len) != 0)
        return NULL;
    memset(p, 0xa5, len);
    return p;
}

static inline int floor_set_timeouts(int fd)
{
    struct timeval tv;

    tv.tv_sec = FLOOR_TIMEOUT_S;
    tv.tv_usec = 0;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
        return -1;
    return setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static inline const char *floor_errstr(int err)
{
    if (err == EAGAIN || err == EWOULDBLOCK)
        return "timed out (5 s)";
    return strerror(err);
}

/* Parse a decimal integer in [lo, hi]; 0 on success. */
static inline int floor_parse_ulong(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
    char *end = NULL;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static inline uint64_t floor_now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static inline void floor_put_be32(unsigned char *p, unsigned long v)
{
    p[0] = (unsigned char)((v >> 24) & 0xff);
    p[1] = (unsigned char)((v >> 16) & 0xff);
    p[2] = (unsigned char)((v >> 8) & 0xff);
    p[3] = (unsigned char)(v & 0xff);
}

static inline unsigned long floor_get_be32(const unsigned char *p)
{
    return ((unsigned long)p[0] << 24) | ((unsigned long)p[1] << 16) | ((unsigned long)p[2] << 8) |
           (unsigned long)p[3];
}

/* send() until all of buf is taken; -1 on error (errno set). */
static inline int floor_send_all(int fd, const unsigned char *buf, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        off += (size_t)n;
    }
    return 0;
}

/* qsort order of uint64_t samples. */
static inline int floor_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted ns samples, in us; permille in 0..1000
 * (0: the minimum). */
static inline double floor_pct_us(const uint64_t *s, size_t n, unsigned long permille)
{
    size_t rank = (size_t)((permille * (unsigned long long)n + 999) / 1000);

    if (rank < 1)
        rank = 1;
    return (double)s[rank - 1] / 1000.0;
}

/* Sorts n ns samples and prints HEAD then their minimum, p50, p90, p99 and
 * maximum in us, one line (bench/latency.sh reads it). */
static inline void floor_print_rtt(const char *head, uint64_t *s, size_t n)
{
    qsort(s, n, sizeof *s, floor_cmp_u64);
    printf("%s min=%.3f p50=%.3f p90=%.3f p99=%.3f max=%.3f us\n", head, floor_pct_us(s, n, 0),
           floor_pct_us(s, n, 500), floor_pct_us(s, n, 900), floor_pct_us(s, n, 990), floor_pct_us(s, n, 1000));
}

static inline int floor_nodelay(int fd)
{
    int one = 1;

    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/*
 * A socket of type (SOCK_STREAM, SOCK_DGRAM) for host:port (host NULL: any
 * address), every wait bounded (FLOOR_TIMEOUT_S; SO_SNDTIMEO bounds
 * connect() on Linux too): bound when passive (TCP: SO_REUSEADDR,
 * listening), else connected, with TCP_NODELAY when nodelay. -1 after one
 * line on stderr that starts with who.
 */
static inline int floor_socket(const char *who, const char *host, const char *port, int type, int passive,
                               int nodelay)
{
    struct addrinfo hints, *res, *ai;
    int fd = -1, one = 1, rc;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = type;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "%s: %s: %s\n", who, host ? host : "*", gai_strerror(rc));
        return -1;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0)
            continue;
        if (floor_set_timeouts(fd) == 0 && (!nodelay || floor_nodelay(fd) == 0) &&
            (passive ? (type != SOCK_STREAM || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0) &&
                           bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
                           (type != SOCK_STREAM || listen(fd, 8) == 0)
                     : connect(fd, ai->ai_addr, ai->ai_addrlen) == 0))
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        fprintf(stderr, "%s: %s %s:%s: %s\n", who, passive ? "bind" : "connect", host ? host : "*", port,
                floor_errstr(errno));
    return fd;
}

#endif
