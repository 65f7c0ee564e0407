/*
 * Who may connect (smr_admit.h): the allow list of networks, the connect
 * rate per address as token buckets, and the limit on sessions per address
 * still sending their header. Pure code with times passed in, so a board's
 * backend reuses it unchanged and smr-test checks every rule.
 */
#include "smr_admit.h"

#include <string.h>

int smr_admit_add(struct smr_admit *m, const uint8_t *a, size_t len, unsigned bits) {
    struct smr_net *w;
    if (m->nallow == SMR_MAX_ALLOW || (len != 4 && len != 16) || bits > len * 8u) return -1;
    w = &m->allow[m->nallow++];
    w->len = (uint8_t)len;
    w->bits = (uint8_t)bits;
    memcpy(w->a, a, len);
    return 0;
}

int smr_admit_allowed(const struct smr_admit *m, const uint8_t *a, size_t len) {
    uint32_t k;
    for (k = 0; k < m->nallow; k++) {
        const struct smr_net *w = &m->allow[k];
        unsigned bits = w->bits;
        size_t i;
        if (w->len != len) continue;
        for (i = 0; bits >= 8 && a[i] == w->a[i]; i++) bits -= 8;
        if (!bits || (bits < 8 && !((a[i] ^ w->a[i]) & (0xff00u >> bits) & 0xffu))) return 1;
    }
    return !m->nallow;
}

uint32_t smr_admit_tag(const uint8_t *a, size_t len) {
    uint32_t h = 2166136261u;
    size_t i;
    for (i = 0; i < len; i++) h = (h ^ a[i]) * 16777619u;
    return h;
}

/* A bucket holds max_cps tokens and refills at max_cps per second, kept in
 * micro-tokens so a rate of 1 per second refills in whole steps. */
int smr_admit_rate(struct smr_admit *m, uint32_t tag, uint64_t now) {
    uint64_t cap = (uint64_t)m->max_cps * 1000000u, gone;
    struct smr_bucket *b = &m->bucket[tag % SMR_BUCKETS];
    if (!m->max_cps) return 1;
    if (!b->used || b->client != tag) {
        b->used = 1;
        b->client = tag;
        b->micro = cap;
        b->last = now;
    }
    gone = now > b->last ? now - b->last : 0;
    /* A second or more refills the bucket (and keeps the sum in range). */
    b->micro = gone >= 1000000000u ? cap : b->micro + gone / 1000u * m->max_cps;
    if (b->micro > cap) b->micro = cap;
    b->last = now;
    if (b->micro < 1000000u) return 0;
    b->micro -= 1000000u;
    return 1;
}

int smr_admit_tcp(struct smr_admit *m, const struct smr_ctx *x, const uint8_t *a, size_t len, uint64_t now,
                  uint32_t *tag) {
    *tag = smr_admit_tag(a, len);
    return smr_admit_allowed(m, a, len) && smr_admit_rate(m, *tag, now) &&
           !(m->max_idle && smr_client_count(x, *tag, 1) >= m->max_idle);
}
