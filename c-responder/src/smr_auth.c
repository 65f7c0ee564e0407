/*
 * smr_auth: the shared secret of docs/protocol.md section 10 in C99:
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), small rather than fast
 * (one block at a time, no tables but the round constants). Pure: no I/O,
 * no clock, no dynamic memory. The engine calls it for the TCP challenge,
 * the proof and the MAC trailer of UDP datagrams; the tests check it
 * against protocol/vectors.json. Compiled out with -DSMR_NO_AUTH.
 */
#include "smr_int.h"

#ifndef SMR_NO_AUTH
#include <string.h>

static const uint32_t smr_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(v, n) ((v) >> (n) | (v) << (32 - (n)))

static void smr_sha_block(uint32_t *h, const uint8_t *p) {
    uint32_t w[64], s[8], t1, t2;
    int i;
    for (i = 0; i < 64; i++) {
        if (i < 16)
            w[i] = smr_get32(p + 4 * i);
        else
            w[i] = w[i - 16] + (ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ w[i - 15] >> 3) + w[i - 7] +
                   (ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ w[i - 2] >> 10);
    }
    memcpy(s, h, sizeof s);
    for (i = 0; i < 64; i++) {
        t1 = s[7] + (ROR(s[4], 6) ^ ROR(s[4], 11) ^ ROR(s[4], 25)) + ((s[4] & s[5]) ^ (~s[4] & s[6])) + smr_k[i] + w[i];
        t2 = (ROR(s[0], 2) ^ ROR(s[0], 13) ^ ROR(s[0], 22)) + ((s[0] & s[1]) ^ (s[0] & s[2]) ^ (s[1] & s[2]));
        memmove(s + 1, s, 7 * sizeof *s);
        s[4] += t1;
        s[0] = t1 + t2;
    }
    for (i = 0; i < 8; i++) h[i] += s[i];
}

struct smr_sha {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
};

static void smr_sha_init(struct smr_sha *c) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, h0, sizeof h0);
    c->len = 0;
}

static void smr_sha_add(struct smr_sha *c, const uint8_t *p, size_t n) {
    while (n--) {
        c->buf[c->len++ % 64] = *p++;
        if (c->len % 64 == 0) smr_sha_block(c->h, c->buf);
    }
}

static void smr_sha_end(struct smr_sha *c, uint8_t out[32]) {
    uint8_t b = 0x80, bits[8];
    int i;
    smr_put64(bits, c->len * 8);
    smr_sha_add(c, &b, 1);
    b = 0;
    while (c->len % 64 != 56) smr_sha_add(c, &b, 1);
    smr_sha_add(c, bits, 8);
    for (i = 0; i < 8; i++) smr_put32(out + 4 * i, c->h[i]);
}

void smr_auth_key(struct smr_config *cfg, const uint8_t *secret, size_t n) {
    memset(cfg->key, 0, sizeof cfg->key);
    if (n > sizeof cfg->key) {
        struct smr_sha c;
        smr_sha_init(&c);
        smr_sha_add(&c, secret, n);
        smr_sha_end(&c, cfg->key);
        n = 32;
    } else {
        memcpy(cfg->key, secret, n);
    }
    cfg->key_len = (uint8_t)n;
}

void smr_hmac(const struct smr_config *cfg, const uint8_t *a, size_t an, const uint8_t *b, size_t bn, uint8_t out[32]) {
    struct smr_sha c;
    uint8_t pad[64];
    int i, pass;
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < 64; i++) pad[i] = cfg->key[i] ^ (pass ? 0x5c : 0x36);
        smr_sha_init(&c);
        smr_sha_add(&c, pad, 64);
        if (pass) {
            smr_sha_add(&c, out, 32);
        } else {
            smr_sha_add(&c, a, an);
            smr_sha_add(&c, b, bn);
        }
        smr_sha_end(&c, out);
    }
}

int smr_mac_ok(const uint8_t *want, const uint8_t *got, size_t n) {
    uint8_t d = 0;
    while (n--) d |= (uint8_t)(*want++ ^ *got++);
    return d == 0;
}
#else
typedef int smr_auth_empty; /* ISO C wants a translation unit to declare something */
#endif
