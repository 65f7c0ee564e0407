/*
 * The start of every TCP session (docs/protocol.md sections 2 and 10.1):
 * the header read and judged (a refusal as soon as its prefix shows one),
 * the challenge and proof when the responder has a secret, the operator's
 * tests-per-address limit, then the session handed to its mode (rr and
 * crr here, control and data sessions to smr_control.c, objects to
 * smr_objects.c). The Rust twin is machine/header_reader.rs with the
 * header part of session.rs.
 */
#include "smr_int.h"

#include <string.h>

unsigned smr_parse_header(const uint8_t *h, size_t n, uint8_t *mode, uint32_t *req, uint32_t *resp) {
    uint32_t len;
    if (n < 8) return SMR_BAD_HEADER;
    if (memcmp(h, "SMTR", 4) != 0) return SMR_BAD_MAGIC;
    len = smr_get16(h + 6);
    if (len < 8 || len > 256) return SMR_BAD_HEADER;
    if (h[4] != 1) return SMR_UNSUPPORTED_VERSION;
    if ((h[5] < M_RR || h[5] > M_SOURCE) && h[5] != M_OBJECTS) return SMR_UNKNOWN_MODE;
    if (len < 16 || n < 16) return SMR_BAD_HEADER;
    *mode = h[5];
    *req = smr_get32(h + 8);
    *resp = smr_get32(h + 12);
    if (*mode == M_SINK) return *req == 0 ? SMR_BAD_HEADER : 0;
    if (*mode == M_CONTROL || *mode == M_OBJECTS) return 0; /* sizes unused */
    return (*req == 0 || *resp == 0) ? SMR_BAD_HEADER : 0;
}

/* The reason text for a header refusal, like the Rust responder's. */
static void smr_header_reason(char *r, unsigned code, const uint8_t *h) {
    uint32_t len = smr_get16(h + 6);
    const char *t = code == SMR_BAD_MAGIC             ? "not a stackmeter session (bad magic)"
                    : code == SMR_UNSUPPORTED_VERSION ? "protocol version %u not supported (this side speaks 1)"
                    : code == SMR_UNKNOWN_MODE        ? "unknown session mode %u"
                    : len < 16 || len > 256           ? "bad header length %u"
                                                      : "request and response sizes must be at least 1 byte";
    smr_fmt(r, t, code == SMR_UNSUPPORTED_VERSION ? (uint32_t)h[4] : code == SMR_UNKNOWN_MODE ? (uint32_t)h[5] : len, 0, 0);
}

/* TooLarge, naming both numbers; t: the template for what is too large. */
static void smr_too_large(struct smr_ctx *x, struct smr_conn *c, const char *t, uint32_t v, uint64_t now) {
    char r[80];
    smr_fmt(r, t, v, x->cfg.max_msg, 0);
    smr_refuse(x, c, SMR_TOO_LARGE, r, now);
}

#ifndef SMR_NO_AUTH
/* A valid header and a secret: challenge it (or refuse a header that does
 * not ask to authenticate). The challenge is c->out[0..24]; the proof is
 * collected into c->out[24..56]. Returns 1 when the header must wait. */
static int smr_challenge(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    uint8_t in[36], mac[32];
    if (!x->cfg.key_len || (c->flags & F_AUTHED)) return 0;
    if (c->hdr_len < 24 || !(c->hdr[19] & 2)) {
        smr_refuse(x, c, SMR_AUTH, "required: this responder needs the shared secret (client --secret-file)", now);
        return 1;
    }
    memcpy(in, "SMTN", 4);
    memcpy(in + 4, x->seed, 16);
    smr_put64(in + 20, now);
    smr_put32(in + 28, x->challenges++);
    smr_hmac(&x->cfg, in, 32, in, 0, mac);
    memcpy(c->out, "SMTA\1\0\0\0", 8);
    memcpy(c->out + 8, mac, 16);
    c->out_off = 0;
    c->out_len = SMR_CHALLENGE_LEN;
    c->req_got = 0;
    c->phase = PH_AUTH;
    return 1;
}

static void smr_header_done(struct smr_ctx *x, struct smr_conn *c, uint64_t now);

size_t smr_in_auth(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now) {
    size_t take = SMR_PROOF_LEN - c->req_got;
    uint8_t mac[32];
    if (n < take) take = n;
    memcpy(c->out + SMR_CHALLENGE_LEN + c->req_got, p, take);
    c->req_got += (uint32_t)take;
    if (c->req_got < SMR_PROOF_LEN) return take;
    c->req_got = 0;
    smr_hmac(&x->cfg, c->out, SMR_CHALLENGE_LEN, c->hdr, 24, mac);
    if (!smr_mac_ok(mac, c->out + SMR_CHALLENGE_LEN, SMR_PROOF_LEN)) {
        smr_refuse(x, c, SMR_AUTH, "failed: the proof does not match this responder's secret", now);
        return take;
    }
    c->flags |= F_AUTHED;
    c->out_len = c->out_off = 0;
    c->phase = PH_HEADER;
    smr_header_done(x, c, now);
    return take;
}
#else
#define smr_challenge(x, c, now) 0
#endif

/* The whole header is in c->hdr (its first 16 bytes): judge and start. */
static void smr_header_done(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    uint8_t mode = 0;
    char r[64];
    unsigned code = smr_parse_header(c->hdr, c->hdr_got < 16 ? c->hdr_got : 16, &mode, &c->req_size, &c->resp_size);
    if (code) {
        smr_header_reason(r, code, c->hdr);
        smr_refuse(x, c, code, r, now);
        return;
    }
    if (smr_challenge(x, c, now)) return;
    if (x->cfg.max_tests_per_client && mode != M_SINK && mode != M_SOURCE &&
        smr_client_count(x, c->client, 0) >= x->cfg.max_tests_per_client) {
        smr_refuse(x, c, SMR_LIMIT, "limit: the most tests at once from one address; wait for one to end", now);
        return;
    }
    c->mode = mode;
    c->deadline = now + x->cfg.idle_timeout_ns;
    if (x->cfg.max_test_s) c->ends_by = now + (x->cfg.max_test_s + 5ull) * 1000000000u;
    if ((mode == M_RR || mode == M_CRR) && c->req_size > x->cfg.max_msg)
        smr_too_large(x, c, "request size %u exceeds limit %u", c->req_size, now);
    else if ((mode == M_RR || mode == M_CRR || mode == M_SOURCE) && c->resp_size > x->cfg.max_msg)
        smr_too_large(x, c, mode == M_SOURCE ? "write size %u exceeds limit %u" : "response size %u exceeds limit %u",
                      c->resp_size, now);
    else if (mode == M_CONTROL)
        smr_start_control(x, c, now);
    else if (mode == M_SINK || mode == M_SOURCE)
        smr_start_data(x, c, now);
    else if (mode == M_OBJECTS)
        smr_start_objects(x, c, now);
    else {
        c->phase = mode == M_RR ? PH_RR : PH_CRR;
        if (mode == M_RR) smr_status_ok(c);
        /* Stamps asked for (flags word of a 24-byte header), with room. */
        if (mode == M_RR && STAMPS(x) && c->hdr_len >= 24 && (c->hdr[19] & 1) && c->resp_size >= SMR_BLOCK_LEN)
            c->flags |= SMR_F_STAMPS;
    }
}

/* Header bytes still to come (the first 16 until the length is known),
 * or the proof's, once the challenge is out. */
size_t smr_header_want(const struct smr_conn *c) {
    if (c->phase == PH_AUTH) return c->out_off < c->out_len ? 0 : SMR_PROOF_LEN - c->req_got;
    return (size_t)((c->hdr_len ? c->hdr_len : 16) - c->hdr_got);
}

/* Header bytes: copies what fits, judges the prefix as soon as it is in. */
size_t smr_in_header(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now) {
    size_t want = smr_header_want(c), take = n < want ? n : want, i;
    for (i = 0; i < take; i++, c->hdr_got++)
        if (c->hdr_got < sizeof c->hdr) c->hdr[c->hdr_got] = p[i];
    if (c->hdr_got >= 8 && c->hdr_len == 0) {
        uint8_t mode;
        uint32_t a, b;
        unsigned code = smr_parse_header(c->hdr, 16, &mode, &a, &b);
        c->hdr_len = (uint16_t)smr_get16(c->hdr + 6);
        /* Refusals that need only the prefix come at once. */
        if (code && code != SMR_BAD_HEADER) {
            smr_header_done(x, c, now);
            return take;
        }
        if (c->hdr_len < 16 || c->hdr_len > 256) {
            smr_header_done(x, c, now);
            return take;
        }
    }
    if (c->hdr_len && c->hdr_got >= c->hdr_len) smr_header_done(x, c, now);
    return take;
}
