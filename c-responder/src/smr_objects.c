/*
 * Object mode (docs/protocol.md section 9, session mode 16): the
 * catalogue of synthetic pattern objects, LIST and FETCH requests read
 * one at a time, response heads, and bodies generated as they are sent
 * into the context's scratch buffer (smr_ctx.gen), nothing stored per
 * object. Object sessions reuse connection fields idle after the header
 * (smr.h, struct smr_conn). The Rust twin is machine/objects.rs.
 */
#include "smr_int.h"

#include <string.h>

size_t smr_object_name(const struct smr_config *cfg, size_t i, char *out) {
    uint32_t s = cfg->object_size[i], rep = 1, shift = 0;
    size_t n, j;
    if (s >= (1u << 20) && s % (1u << 20) == 0)
        shift = 20;
    else if (s >= 1024 && s % 1024 == 0)
        shift = 10;
    n = smr_utoa(out, s >> shift);
    if (shift) out[n++] = shift == 20 ? 'M' : 'K';
    for (j = 0; j < i; j++) rep += cfg->object_size[j] == s;
    if (rep > 1) {
        out[n++] = '-';
        n += smr_utoa(out + n, rep);
    }
    return n;
}

/* Word w of pattern object k: a bijection of w for each k (9.5). */
static uint64_t smr_word(uint32_t k, uint64_t w) {
    uint64_t v = (w ^ ((uint64_t)k << 40)) * 0x9E3779B97F4A7C15ull;
    return v ^ (v >> 29);
}

void smr_pattern(uint8_t *out, uint32_t k, uint64_t off, size_t n) {
    uint64_t w = off >> 3;
    size_t skip = (size_t)(off & 7), take;
    uint8_t v[8];
    for (; n; w++, skip = 0) {
        take = 8 - skip < n ? 8 - skip : n;
        smr_put64(v, smr_word(k, w));
        memcpy(out, v + skip, take);
        out += take;
        n -= take;
    }
}

/* Copies the part of a piece at body offset `at` that falls into the
 * window [off, off + n) the output buffer `out` stands for. */
static void smr_clip(uint8_t *out, uint64_t off, size_t n, uint64_t at, const uint8_t *piece, size_t len) {
    uint64_t lo = at > off ? at : off, hi = at + len < off + n ? at + len : off + n;
    if (lo < hi) memcpy(out + (lo - off), piece + (lo - at), (size_t)(hi - lo));
}

/* Bytes [off, off + n) of the LIST body, built entry by entry. */
static void smr_list_body(const struct smr_config *cfg, uint8_t *out, uint64_t off, size_t n) {
    uint8_t e[14 + SMR_OBJ_NAME_LEN];
    uint64_t at = 4;
    size_t i, len;
    smr_put32(e, cfg->nobjects);
    smr_clip(out, off, n, 0, e, 4);
    for (i = 0; i < cfg->nobjects && at < off + n; i++) {
        len = smr_object_name(cfg, i, (char *)e + 14);
        smr_put64(e, cfg->object_size[i]);
        smr_put32(e + 8, 0); /* crc32: 0 for pattern objects */
        e[12] = 1;       /* flags: the content is the pattern */
        e[13] = (uint8_t)len;
        smr_clip(out, off, n, at, e, 14 + len);
        at += 14 + len;
    }
}

/* Queues a response head; an ok answer's body is generated as it is sent. */
static void smr_obj_head(struct smr_conn *c, unsigned code, uint64_t len) {
    memset(c->out, 0, 12);
    c->out[0] = (uint8_t)code;
    smr_put64(c->out + 4, len);
    c->out_len = 12;
    c->out_off = 0;
}

static void smr_obj_ok(struct smr_conn *c, uint32_t len) {
    smr_obj_head(c, 0, len);
    c->resp_size = len;
    c->tx_left = len;
}

/* An error response: the head, then the reason already built at
 * c->out + 12 (at most 60 bytes, SMR_OUT_MAX has room). */
static void smr_obj_error(struct smr_conn *c, unsigned code, size_t reason_len) {
    smr_obj_head(c, code, reason_len);
    c->out_len = (uint16_t)(12 + reason_len);
}

/* Answers BadRequest and closes: the framing is lost, no name is read. */
static void smr_obj_bad(struct smr_ctx *x, struct smr_conn *c, uint32_t op, uint32_t len, uint64_t now) {
    char *r = (char *)c->out + 12;
    size_t at;
    if (op != OP_LIST && op != OP_FETCH) {
        at = smr_fmt(r, "unknown object request op %u", op, 0, 0);
    } else {
        at = smr_fmt(r, "bad name length %u (LIST takes 0, FETCH 1..255)", len, 0, 0);
    }
    smr_event(x, c, smr_refusal_name(SMR_BAD_REQUEST), r);
    smr_obj_error(c, SMR_BAD_REQUEST, at);
    smr_linger(x, c, now);
}

/* NotFound, naming the object (its first 16 bytes, printable). */
static void smr_obj_not_found(struct smr_conn *c) {
    char *r = (char *)c->out + 12;
    size_t at = smr_fmt(r, "no object named '", 0, 0, 0), i;
    for (i = 0; i < c->in_need && i < 16; i++)
        r[at++] = (char)(c->hdr[i] >= 0x20 && c->hdr[i] < 0x7f ? c->hdr[i] : '?');
    at += smr_fmt(r + at, c->in_need > 16 ? "...'" : "'", 0, 0, 0);
    smr_obj_error(c, SMR_NOT_FOUND, at);
}

/* The whole name of a FETCH is in (its first 16 bytes in c->hdr). */
static void smr_obj_fetch(struct smr_ctx *x, struct smr_conn *c) {
    char name[SMR_OBJ_NAME_LEN];
    size_t i;
    c->in_got = 0;
    c->req_got = 0;
    for (i = 0; c->in_need <= SMR_OBJ_NAME_LEN && i < x->cfg.nobjects; i++)
        if (smr_object_name(&x->cfg, i, name) == c->in_need && memcmp(name, c->hdr, c->in_need) == 0) {
            c->obj = (uint16_t)i;
            smr_obj_ok(c, x->cfg.object_size[i]);
            return;
        }
    smr_obj_not_found(c);
}

/* The 4-byte request head is in c->in: LIST, FETCH (name follows), or bad. */
static void smr_obj_request(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    uint32_t op = c->in[0], len = smr_get16(c->in + 2);
    if (op == OP_LIST && len == 0) {
        c->in_got = 0;
        smr_obj_ok(c, x->list_len);
    } else if (op == OP_FETCH && len >= 1 && len <= SMR_NAME_MAX) {
        c->in_need = (uint16_t)len;
        c->req_got = 0;
    } else {
        smr_obj_bad(x, c, op, len, now);
    }
}

/* One request at a time: the next waits for this one's answer. */
size_t smr_obj_want(const struct smr_conn *c) {
    if (c->out_off < c->out_len || c->tx_left || (c->flags & SMR_F_CLOSE)) return 0;
    return c->in_got < 4 ? (size_t)(4 - c->in_got) : (size_t)(c->in_need - c->req_got);
}

size_t smr_in_objects(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now) {
    size_t want = smr_obj_want(c), take = n < want ? n : want, i;
    if (c->in_got < 4) {
        memcpy(c->in + c->in_got, p, take);
        c->in_got = (uint16_t)(c->in_got + take);
        if (c->in_got == 4) smr_obj_request(x, c, now);
        return take;
    }
    for (i = 0; i < take; i++, c->req_got++)
        if (c->req_got < sizeof c->hdr) c->hdr[c->req_got] = p[i];
    if (take && c->req_got == c->in_need) smr_obj_fetch(x, c);
    return take;
}

/* The next piece of the body being sent, generated into x->gen. */
size_t smr_obj_body(struct smr_ctx *x, struct smr_conn *c, const uint8_t **p) {
    uint64_t off = c->resp_size - c->tx_left;
    size_t n = (size_t)(c->tx_left < SMR_GEN_CHUNK ? c->tx_left : SMR_GEN_CHUNK);
    if (!n) return 0;
    if (c->in[0] == OP_LIST)
        smr_list_body(&x->cfg, x->gen, off, n);
    else
        smr_pattern(x->gen, c->obj, off, n);
    *p = x->gen;
    return n;
}

void smr_start_objects(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    if (!x->cfg.nobjects) {
        smr_refuse(x, c, SMR_UNKNOWN_MODE, "object mode is not enabled on this responder", now);
        return;
    }
    c->phase = PH_OBJ;
    c->in_got = 0;
    c->req_got = 0;
    smr_status_ok(c);
}
