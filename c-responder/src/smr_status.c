/*
 * The bottom of the engine (smr_int.h): what every other part writes
 * with. Big-endian fields at explicit offsets, decimal numbers in reason
 * texts, the status record (docs/protocol.md section 3) and the stamp
 * block (4.3), and the ways a session ends: refused (the record, then a
 * lingering close), or aborted (a log line, closed at once). It calls
 * nothing of the engine, only the backend's log hook.
 */
#include "smr_int.h"

#include <string.h>

static const char *const smr_names[] = {"accepted",      "bad magic",      "unsupported version",
                                        "unknown mode",  "bad header",     "too large",
                                        "busy",          "header timeout", "internal error",
                                        "unknown test",  "not found",      "bad request",
                                        "authentication", "limit"};

void smr_put16(uint8_t *b, uint32_t v) {
    b[0] = (uint8_t)(v >> 8);
    b[1] = (uint8_t)v;
}

void smr_put32(uint8_t *b, uint32_t v) {
    smr_put16(b, v >> 16);
    smr_put16(b + 2, v);
}

void smr_put64(uint8_t *b, uint64_t v) {
    smr_put32(b, (uint32_t)(v >> 32));
    smr_put32(b + 4, (uint32_t)v);
}

uint32_t smr_get16(const uint8_t *b) { return ((uint32_t)b[0] << 8) | b[1]; }

uint32_t smr_get32(const uint8_t *b) { return (smr_get16(b) << 16) | smr_get16(b + 2); }

uint64_t smr_get64(const uint8_t *b) { return ((uint64_t)smr_get32(b) << 32) | smr_get32(b + 4); }

/* Writes v in decimal at p; returns the digits written. */
size_t smr_utoa(char *p, uint32_t v) {
    char t[10];
    size_t n = 0, i;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (i = 0; i < n; i++) p[i] = t[n - 1 - i];
    return n;
}

size_t smr_fmt(char *r, const char *t, uint32_t a, uint32_t b, uint32_t c) {
    const uint32_t v[3] = {a, b, c};
    size_t at = 0, k = 0;
    for (; *t; t++)
        if (*t == '%' && t[1] == 'u' && k < 3)
            at += smr_utoa(r + at, v[k++]), t++;
        else
            r[at++] = *t;
    r[at] = 0;
    return at;
}

const char *smr_refusal_name(unsigned code) {
    return code < sizeof smr_names / sizeof smr_names[0] ? smr_names[code] : "refused";
}

size_t smr_status(uint8_t *out, size_t cap, unsigned code, const char *reason) {
    size_t n = reason ? strlen(reason) : 0;
    if (cap < 8) return 0;
    if (n > 255) n = 255;
    if (n > cap - 8) n = cap - 8;
    memcpy(out, "SMTR", 4);
    out[4] = 1;
    out[5] = (uint8_t)code;
    smr_put16(out + 6, (uint32_t)n);
    if (n) memcpy(out + 8, reason, n);
    return 8 + n;
}

void smr_put_block(uint8_t *b, unsigned f, const uint64_t v[5]) {
    static const uint8_t need[5] = {2, 1, 1, 4, 4};
    int i;
    memcpy(b, "SMTS\0\0\0\0", 8);
    b[4] = (uint8_t)f;
    for (i = 0; i < 5; i++) smr_put64(b + 8 + 8 * i, (f & need[i]) ? v[i] : 0);
}

void smr_event(struct smr_ctx *x, const struct smr_conn *c, const char *what, const char *detail) {
    if (x->log) x->log(x->user, c, what, detail);
}

void smr_status_ok(struct smr_conn *c) {
    c->out_len = (uint16_t)smr_status(c->out, sizeof c->out, 0, NULL);
    c->out_off = 0;
}

/* The lingering close after a refusal (or a bad object request): the record
 * queued in c->out goes, then a half-close; the client's bytes are drained
 * for a while so no reset destroys the record. */
void smr_linger(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    if (SMR_COUNTED(c) && x->active) x->active--;
    c->out_off = 0;
    c->tx_left = 0;
    c->req_got = 0;
    c->phase = PH_LINGER;
    c->flags |= SMR_F_SHUT;
    c->deadline = now + SMR_LINGER_NS;
}

/* Queues a refusal record and moves to the lingering close. */
void smr_refuse(struct smr_ctx *x, struct smr_conn *c, unsigned code, const char *reason, uint64_t now) {
    smr_event(x, c, smr_refusal_name(code), reason);
    c->out_len = (uint16_t)smr_status(c->out, sizeof c->out, code, reason);
    smr_linger(x, c, now);
}

void smr_abort(struct smr_ctx *x, struct smr_conn *c, const char *why) {
    smr_event(x, c, "aborted", why);
    c->flags |= SMR_F_CLOSE;
}
