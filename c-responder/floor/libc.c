/*
 * libc.c - the four string.h functions the bare-metal path floors use
 * (both boards, both builds: polling, interrupts), with no C library
 * (-nostdlib).
 *
 * Why this exists: the floor needs memcpy, memcmp and memset (its own
 * files, and the compiler's copies and clears), and a C library would
 * bring its startup and its word-at-a-time versions with it. The MMU is
 * off, so all memory is strongly ordered and an unaligned word faults:
 * these move bytes, which is all a 64-byte echo needs. Built with
 * -fno-tree-loop-distribute-patterns, so the compiler cannot turn their
 * loops back into calls to themselves.
 */
#include <string.h>

void *memcpy(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    while (n-- > 0) *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d <= s) return memcpy(dst, src, n);
    while (n-- > 0) d[n] = s[n];
    return dst;
}

void *memset(void *dst, int c, size_t n) {
    unsigned char *d = dst;
    while (n-- > 0) *d++ = (unsigned char)c;
    return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (; n > 0; n--, x++, y++) {
        if (*x != *y) return *x - *y;
    }
    return 0;
}
