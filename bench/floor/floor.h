/*
 * floor.h - helpers the floor programs share (the .c files beside it): page-aligned
 * written buffers, socket timeouts, error text, argument parsing, the clock
 * and big-endian fields. Static inline functions in a header: each floor stays one
 * translation unit, built with one cc command, with nothing to link.
 */
#ifndef FLOOR_H
#define FLOOR_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

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

#endif
