/*
 * The protocol engine: session headers, the rr/crr/control/sink/source and
 * object (LIST/FETCH) data phases, control records, the UDP echo rule and
 * UDP stream counters.
 * Pure: the backend passes bytes and the time in, takes bytes and actions
 * out. See smr.h for the calling contract, docs/protocol.md for the rules.
 */
#include "smr.h"

#include <string.h>

enum { PH_FREE, PH_HEADER, PH_RR, PH_CRR, PH_CRR_WAIT, PH_CONTROL, PH_SINK, PH_SOURCE, PH_LINGER, PH_DRAIN, PH_OBJ, PH_AUTH };
enum { M_RR = 1, M_CRR = 2, M_CONTROL = 3, M_SINK = 4, M_SOURCE = 5, M_OBJECTS = 16 };
enum { OP_LIST = 1, OP_FETCH = 2 };
#define F_AWAIT 8u /* control: Stop received, final Report not yet queued */
#define F_OPEN 32u /* stamped rr: a response is being sent */
#define F_AUTHED 64u /* the proof was right: judge the header itself */
enum { T_SNAPSHOT = 1, T_STOP = 2, T_WELCOME = 16, T_REPORT = 17 };
/* Stamp blocks need the backend's stamps hook; a build that has none
 * (-DSMR_NO_TS) compiles no stamp code, and answers a request for stamps
 * as one with a NULL hook does: as if the flag were unknown. */
#ifdef SMR_NO_TS
#define STAMPS(x) 0
#define STAMPED(c) 0
#else
#define STAMPS(x) ((x)->stamps != NULL)
#define STAMPED(c) ((c)->flags & SMR_F_STAMPS)
#endif

const uint8_t smr_payload[SMR_TX_CHUNK] = {0};

/* Compile-time checks of the tunables (a negative array size fails). */
typedef char smr_check_tests[SMR_MAX_TESTS >= 1 && SMR_MAX_TESTS <= 256 ? 1 : -1];
typedef char smr_check_objects[SMR_MAX_OBJECTS >= 1 && SMR_MAX_OBJECTS <= SMR_CATALOGUE_MAX ? 1 : -1];
typedef char smr_check_names[SMR_OBJ_NAME_LEN <= sizeof(((struct smr_conn *)0)->hdr) ? 1 : -1];
typedef char smr_check_gen[SMR_GEN_CHUNK >= 64 ? 1 : -1];

static const char *const smr_names[] = {"accepted",      "bad magic",      "unsupported version",
                                        "unknown mode",  "bad header",     "too large",
                                        "busy",          "header timeout", "internal error",
                                        "unknown test",  "not found",      "bad request",
                                        "authentication", "limit"};

static void put16(uint8_t *b, uint32_t v) {
    b[0] = (uint8_t)(v >> 8);
    b[1] = (uint8_t)v;
}

static void put32(uint8_t *b, uint32_t v) {
    put16(b, v >> 16);
    put16(b + 2, v);
}

static void put64(uint8_t *b, uint64_t v) {
    put32(b, (uint32_t)(v >> 32));
    put32(b + 4, (uint32_t)v);
}

static uint32_t get16(const uint8_t *b) { return ((uint32_t)b[0] << 8) | b[1]; }

static uint32_t get32(const uint8_t *b) { return (get16(b) << 16) | get16(b + 2); }

static uint64_t get64(const uint8_t *b) { return ((uint64_t)get32(b) << 32) | get32(b + 4); }

/* Writes v in decimal at p; returns the digits written. */
static size_t smr_utoa(char *p, uint32_t v) {
    char t[10];
    size_t n = 0, i;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (i = 0; i < n; i++) p[i] = t[n - 1 - i];
    return n;
}

/* Writes template t into r, NUL-terminated, with its %u replaced by a, b
 * and c in turn, in decimal; returns the length. The reason texts are
 * short, their buffers sized for them. */
static size_t smr_fmt(char *r, const char *t, uint32_t a, uint32_t b, uint32_t c) {
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
    put16(out + 6, (uint32_t)n);
    if (n) memcpy(out + 8, reason, n);
    return 8 + n;
}

void smr_default_config(struct smr_config *cfg) {
    static const uint32_t sizes[] = {4u << 10, 64u << 10, 1u << 20, 8800u << 10};
    size_t i;
    memset(cfg, 0, sizeof *cfg);
    cfg->max_sessions = SMR_MAX_CONNS;
    cfg->max_msg = SMR_DEFAULT_MAX_MSG;
    cfg->header_timeout_ns = SMR_DEFAULT_HEADER_TIMEOUT_NS;
    cfg->idle_timeout_ns = SMR_DEFAULT_IDLE_TIMEOUT_NS;
    for (i = 0; i < 4 && i < SMR_MAX_OBJECTS; i++) cfg->object_size[i] = sizes[i];
    cfg->nobjects = (uint32_t)i;
}

void smr_init(struct smr_ctx *x, const struct smr_config *cfg) {
    char name[SMR_OBJ_NAME_LEN];
    size_t i;
    memset(x, 0, sizeof *x);
    x->cfg = *cfg;
    x->pass_left = SMR_PASS_BYTES; /* the first pass */
    if (x->cfg.max_sessions > SMR_MAX_CONNS) x->cfg.max_sessions = SMR_MAX_CONNS;
    if (x->cfg.nobjects > SMR_MAX_OBJECTS) x->cfg.nobjects = SMR_MAX_OBJECTS;
    x->list_len = 4;
    for (i = 0; i < x->cfg.nobjects; i++) x->list_len += (uint32_t)(14 + smr_object_name(&x->cfg, i, name));
}

size_t smr_conn_index(const struct smr_ctx *x, const struct smr_conn *c) { return (size_t)(c - x->conns); }

static void smr_log(struct smr_ctx *x, const struct smr_conn *c, const char *what, const char *detail) {
    if (x->log) x->log(x->user, c, what, detail);
}

static int smr_counted(const struct smr_conn *c) { return c->phase != PH_FREE && c->phase != PH_LINGER; }

uint32_t smr_client_count(const struct smr_ctx *x, uint32_t client, int waiting) {
    uint32_t i, n = 0;
    for (i = 0; i < x->hi; i++) {
        const struct smr_conn *d = &x->conns[i];
        if (d->client != client || !smr_counted(d)) continue;
        if (waiting ? d->phase == PH_HEADER || d->phase == PH_AUTH
                    : d->mode && d->mode != M_SINK && d->mode != M_SOURCE)
            n++;
    }
    return n;
}

/* The lingering close after a refusal (or a bad object request): the record
 * queued in c->out goes, then a half-close; the client's bytes are drained
 * for a while so no reset destroys the record. */
static void smr_linger(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    if (smr_counted(c) && x->active) x->active--;
    c->out_off = 0;
    c->tx_left = 0;
    c->req_got = 0;
    c->phase = PH_LINGER;
    c->flags |= SMR_F_SHUT;
    c->deadline = now + SMR_LINGER_NS;
}

/* Queues a refusal record and moves to the lingering close. */
static void smr_refuse(struct smr_ctx *x, struct smr_conn *c, unsigned code, const char *reason, uint64_t now) {
    smr_log(x, c, smr_refusal_name(code), reason);
    c->out_len = (uint16_t)smr_status(c->out, sizeof c->out, code, reason);
    smr_linger(x, c, now);
}

static void smr_abort(struct smr_ctx *x, struct smr_conn *c, const char *why) {
    smr_log(x, c, "aborted", why);
    c->flags |= SMR_F_CLOSE;
}

struct smr_conn *smr_conn_open(struct smr_ctx *x, uint64_t now) {
    size_t i;
    struct smr_conn *c = NULL;
    for (i = 0; i < SMR_MAX_CONNS + SMR_SPARE_CONNS; i++)
        if (x->conns[i].phase == PH_FREE) {
            c = &x->conns[i];
            break;
        }
    if (!c) return NULL;
    memset(c, 0, sizeof *c);
    c->phase = PH_LINGER; /* not counted until smr_conn_start() */
    c->deadline = now + x->cfg.header_timeout_ns;
    if (i + 1 > x->hi) x->hi = (uint32_t)(i + 1);
    return c;
}

void smr_conn_start(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    if (x->active >= x->cfg.max_sessions) {
        char r[48];
        smr_fmt(r, "%u sessions running, the limit", x->cfg.max_sessions, 0, 0);
        smr_refuse(x, c, SMR_BUSY, r, now);
        return;
    }
    c->phase = PH_HEADER;
    x->active++;
}

static void smr_emit_status_ok(struct smr_conn *c) {
    c->out_len = (uint16_t)smr_status(c->out, sizeof c->out, 0, NULL);
    c->out_off = 0;
}

unsigned smr_parse_header(const uint8_t *h, size_t n, uint8_t *mode, uint32_t *req, uint32_t *resp) {
    uint32_t len;
    if (n < 8) return SMR_BAD_HEADER;
    if (memcmp(h, "SMTR", 4) != 0) return SMR_BAD_MAGIC;
    len = get16(h + 6);
    if (len < 8 || len > 256) return SMR_BAD_HEADER;
    if (h[4] != 1) return SMR_UNSUPPORTED_VERSION;
    if ((h[5] < M_RR || h[5] > M_SOURCE) && h[5] != M_OBJECTS) return SMR_UNKNOWN_MODE;
    if (len < 16 || n < 16) return SMR_BAD_HEADER;
    *mode = h[5];
    *req = get32(h + 8);
    *resp = get32(h + 12);
    if (*mode == M_SINK) return *req == 0 ? SMR_BAD_HEADER : 0;
    if (*mode == M_CONTROL || *mode == M_OBJECTS) return 0; /* sizes unused */
    return (*req == 0 || *resp == 0) ? SMR_BAD_HEADER : 0;
}

/* The reason text for a header refusal, like the Rust responder's. */
static void smr_header_reason(char *r, unsigned code, const uint8_t *h) {
    uint32_t len = get16(h + 6);
    const char *t = code == SMR_BAD_MAGIC             ? "not a stackmeter session (bad magic)"
                    : code == SMR_UNSUPPORTED_VERSION ? "protocol version %u not supported (this side speaks 1)"
                    : code == SMR_UNKNOWN_MODE        ? "unknown session mode %u"
                    : len < 16 || len > 256           ? "bad header length %u"
                                                      : "request and response sizes must be at least 1 byte";
    smr_fmt(r, t, code == SMR_UNSUPPORTED_VERSION ? (uint32_t)h[4] : code == SMR_UNKNOWN_MODE ? (uint32_t)h[5] : len, 0, 0);
}

static struct smr_test *smr_find_test(struct smr_ctx *x, uint32_t id) {
    size_t i;
    for (i = 0; id && i < SMR_MAX_TESTS; i++)
        if (x->tests[i].id == id) return &x->tests[i];
    return NULL;
}

static struct smr_test *smr_conn_test(struct smr_ctx *x, const struct smr_conn *c) {
    struct smr_test *t = &x->tests[c->test_ix];
    return (c->test_id && t->id == c->test_id) ? t : NULL;
}

/* TooLarge, naming both numbers; t: the template for what is too large. */
static void smr_too_large(struct smr_ctx *x, struct smr_conn *c, const char *t, uint32_t v, uint64_t now) {
    char r[80];
    smr_fmt(r, t, v, x->cfg.max_msg, 0);
    smr_refuse(x, c, SMR_TOO_LARGE, r, now);
}

static void smr_start_control(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    size_t i, n;
    struct smr_test *t = NULL;
    for (i = 0; i < SMR_MAX_TESTS && !t; i++)
        if (x->tests[i].id == 0 && x->tests[i].open == 0) t = &x->tests[i];
    if (!t) {
        char r[48];
        smr_fmt(r, "%u throughput tests open, the limit", (uint32_t)SMR_MAX_TESTS, 0, 0);
        smr_refuse(x, c, SMR_BUSY, r, now);
        return;
    }
    memset(t, 0, sizeof *t);
    do x->next_test++;
    while (x->next_test == 0 || smr_find_test(x, x->next_test));
    t->id = x->next_test;
    t->start_ns = now;
    t->control = c;
    if (x->cpu) x->cpu(x->user, &t->cpu_user0, &t->cpu_sys0);
    c->test_id = t->id;
    c->test_ix = (uint8_t)(t - x->tests);
    c->phase = PH_CONTROL;
    smr_emit_status_ok(c);
    /* The Welcome: 24 bytes with the operator's limits, else 8 (8.1). */
    n = (x->cfg.max_test_s | x->cfg.max_tests_per_client | x->cfg.max_rate_bps) ? 24 : 8;
    put16(c->out + 8, T_WELCOME);
    put16(c->out + 10, n);
    put32(c->out + 12, t->id);
    put32(c->out + 16, x->cfg.max_test_s);
    put32(c->out + 20, x->cfg.max_tests_per_client);
    put64(c->out + 24, x->cfg.max_rate_bps);
    c->out_len = (uint16_t)(8 + n);
}

static void smr_start_data(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    struct smr_test *t = smr_find_test(x, c->req_size);
    if (!t || t->stopping) {
        char r[40];
        smr_fmt(r, "no open test %u", c->req_size, 0, 0);
        smr_refuse(x, c, SMR_UNKNOWN_TEST, r, now);
        return;
    }
    t->sessions++;
    t->open++;
    c->test_id = t->id;
    c->test_ix = (uint8_t)(t - x->tests);
    c->phase = c->mode == M_SINK ? PH_SINK : PH_SOURCE;
    smr_emit_status_ok(c);
}

/* ---- object mode (docs/protocol.md section 9) ---- */

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
        put64(v, smr_word(k, w));
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
    put32(e, cfg->nobjects);
    smr_clip(out, off, n, 0, e, 4);
    for (i = 0; i < cfg->nobjects && at < off + n; i++) {
        len = smr_object_name(cfg, i, (char *)e + 14);
        put64(e, cfg->object_size[i]);
        put32(e + 8, 0); /* crc32: 0 for pattern objects */
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
    put64(c->out + 4, len);
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
    smr_log(x, c, smr_refusal_name(SMR_BAD_REQUEST), r);
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
    uint32_t op = c->in[0], len = get16(c->in + 2);
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

static size_t smr_in_objects(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now) {
    size_t want = smr_conn_want(c), take = n < want ? n : want, i;
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
static size_t smr_obj_body(struct smr_ctx *x, struct smr_conn *c, const uint8_t **p) {
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

static void smr_start_objects(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    if (!x->cfg.nobjects) {
        smr_refuse(x, c, SMR_UNKNOWN_MODE, "object mode is not enabled on this responder", now);
        return;
    }
    c->phase = PH_OBJ;
    c->in_got = 0;
    c->req_got = 0;
    smr_emit_status_ok(c);
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
    put64(in + 20, now);
    put32(in + 28, x->challenges++);
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

static size_t smr_in_auth(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now) {
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
        if (mode == M_RR) smr_emit_status_ok(c);
        /* Stamps asked for (flags word of a 24-byte header), with room. */
        if (mode == M_RR && STAMPS(x) && c->hdr_len >= 24 && (c->hdr[19] & 1) && c->resp_size >= SMR_BLOCK_LEN)
            c->flags |= SMR_F_STAMPS;
    }
}

/* Header bytes: copies what fits, judges the prefix as soon as it is in. */
static size_t smr_in_header(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now) {
    size_t want = smr_conn_want(c), take = n < want ? n : want, i;
    for (i = 0; i < take; i++, c->hdr_got++)
        if (c->hdr_got < sizeof c->hdr) c->hdr[c->hdr_got] = p[i];
    if (c->hdr_got >= 8 && c->hdr_len == 0) {
        uint8_t mode;
        uint32_t a, b;
        unsigned code = smr_parse_header(c->hdr, 16, &mode, &a, &b);
        c->hdr_len = (uint16_t)get16(c->hdr + 6);
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

static size_t smr_in_request(struct smr_ctx *x, struct smr_conn *c, size_t n, uint64_t now) {
    uint32_t left = c->req_size - c->req_got;
    size_t take = n < left ? n : left;
    (void)x;
    (void)now;
    c->req_got += (uint32_t)take;
    if (c->req_got == c->req_size) {
        c->req_got = 0;
        if (c->phase == PH_CRR) {
            smr_emit_status_ok(c);
            c->tx_left = c->resp_size;
            c->phase = PH_CRR_WAIT;
        } else if (STAMPED(c)) {
            c->pending++; /* one response at a time, each with its block */
        } else {
            c->tx_left += c->resp_size; /* owed: sent back to back */
        }
    }
    return take;
}

static void smr_report(struct smr_ctx *x, struct smr_conn *c, struct smr_test *t, uint32_t id, uint8_t flags,
                       uint64_t now) {
    uint8_t *b = c->out;
    /* Offsets 16 to 88, eight bytes each: elapsed, TCP bytes in and out,
     * the streams' received, bytes, expected, duplicates, reordered (sums)
     * and the largest jitter. */
    uint64_t v[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, u = 0, s = 0;
    struct smr_tcpinfo ti, acc = {0, 0, 0};
    size_t i, k, nsrc = 0;
    v[0] = now - t->start_ns;
    v[1] = t->tcp_rx;
    v[2] = t->tcp_tx;
    for (i = 0; i < SMR_MAX_STREAMS; i++) {
        const struct smr_stream *st = &t->streams[i];
        const uint64_t f[5] = {st->received, st->bytes, st->expected, st->duplicates, st->reordered};
        for (k = 0; k < 5; k++) v[3 + k] += f[k];
        if ((st->jitter16 >> 4) > v[8]) v[8] = st->jitter16 >> 4;
    }
    for (i = 0; x->tcpinfo && i < x->hi; i++) {
        const struct smr_conn *d = &x->conns[i];
        if (d->phase == PH_SOURCE && d->test_id == t->id && x->tcpinfo(x->user, d, &ti)) {
            acc.retrans += ti.retrans;
            acc.cwnd_bytes += ti.cwnd_bytes;
            acc.rtt_us += ti.rtt_us;
            nsrc++;
        }
    }
    memset(b, 0, SMR_REPORT_LEN);
    put16(b, T_REPORT);
    put16(b + 2, SMR_REPORT_LEN);
    put32(b + 4, id);
    if (nsrc) {
        flags |= 4;
        put32(b + 88, acc.retrans);
        put32(b + 92, acc.cwnd_bytes);
        put32(b + 96, (uint32_t)(acc.rtt_us / nsrc));
    }
    if (x->cpu && x->cpu(x->user, &u, &s)) {
        flags |= 2;
        put64(b + 104, u - t->cpu_user0);
        put64(b + 112, s - t->cpu_sys0);
    }
    b[8] = flags;
    put32(b + 12, t->sessions);
    for (k = 0; k < 9; k++) put64(b + 16 + 8 * k, v[k]);
    c->out_len = SMR_REPORT_LEN;
    c->out_off = 0;
}

/* Stops a test's sources: they half-close once their output drains. */
static void smr_stop_sources(struct smr_ctx *x, const struct smr_test *t) {
    size_t i;
    for (i = 0; i < x->hi; i++) {
        struct smr_conn *d = &x->conns[i];
        if (d->phase == PH_SOURCE && d->test_id == t->id) {
            d->phase = PH_DRAIN;
            d->tx_left = 0;
            d->flags |= SMR_F_SHUT;
        }
    }
}

/* When the final Report may go: every data session ended and the UDP
 * counts quiet, or the drain deadline. */
static uint64_t smr_final_at(const struct smr_test *t) {
    uint64_t quiet = t->udp_last_ns ? t->udp_last_ns + SMR_UDP_QUIET_NS : 0;
    if (t->open) return t->drain_deadline;
    return quiet < t->drain_deadline ? quiet : t->drain_deadline;
}

static void smr_final_if_drained(struct smr_ctx *x, struct smr_test *t, uint64_t now) {
    if (!t->awaiting || !t->control) return;
    if (now < smr_final_at(t)) return;
    smr_report(x, t->control, t, t->stop_id, (uint8_t)(1 | (t->open ? 8 : 0)), now);
    t->control->flags &= (uint8_t)~F_AWAIT;
    t->awaiting = 0;
}

static void smr_control_record(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    struct smr_test *t = smr_conn_test(x, c);
    uint32_t type = get16(c->in), id = get32(c->in + 4);
    if (!t) return;
    if (type == T_SNAPSHOT) {
        t->started = 1;
        smr_report(x, c, t, id, 0, now);
    } else if (type == T_STOP) {
        t->stopping = 1;
        t->awaiting = 1;
        t->stop_id = id;
        t->drain_deadline = now + SMR_DRAIN_NS;
        c->flags |= F_AWAIT;
        smr_stop_sources(x, t);
        smr_final_if_drained(x, t, now);
    }
}

static size_t smr_in_control(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now) {
    size_t want = smr_conn_want(c), take = n < want ? n : want;
    uint32_t type, len;
    if (c->skip) {
        c->skip = (uint16_t)(c->skip - take);
        return take;
    }
    memcpy(c->in + c->in_got, p, take);
    c->in_got = (uint16_t)(c->in_got + take);
    if (c->in_got < 4) return take;
    type = get16(c->in);
    len = get16(c->in + 2);
    if (len < 4 || ((type == T_SNAPSHOT || type == T_STOP) && len < 8)) {
        smr_abort(x, c, "bad control record length");
        return take;
    }
    if (type != T_SNAPSHOT && type != T_STOP) {
        c->skip = (uint16_t)(len - 4);
        c->in_got = 0;
        return take;
    }
    if (c->in_got < 8) return take;
    c->skip = (uint16_t)(len - 8);
    c->in_got = 0;
    smr_control_record(x, c, now);
    return take;
}

size_t smr_conn_want(const struct smr_conn *c) {
    switch (c->phase) {
    case PH_HEADER:
        return (size_t)((c->hdr_len ? c->hdr_len : 16) - c->hdr_got);
    case PH_RR:
        /* Stamped: one request per read (one kernel stamp each), once the
         * response before it is out. Else every request that has come, at
         * once, while the responses owed come to less than SMR_RR_QUEUE:
         * requests are only counted, so queued ones cost no memory. */
        if (STAMPED(c))
            return c->pending || c->tx_left || c->out_off < c->out_len ? 0 : c->req_size - c->req_got;
        return c->tx_left < SMR_RR_QUEUE ? SMR_RX_ANY : 0;
    case PH_CRR:
        return c->req_size - c->req_got;
    case PH_CONTROL:
        if (c->out_off < c->out_len || (c->flags & (SMR_F_CLOSE | F_AWAIT))) return 0;
        if (c->skip) return c->skip;
        return (size_t)(c->in_got < 4 ? 4 : 8) - c->in_got;
    case PH_OBJ: /* one request at a time: the next waits for this answer */
        if (c->out_off < c->out_len || c->tx_left || (c->flags & SMR_F_CLOSE)) return 0;
        return c->in_got < 4 ? (size_t)(4 - c->in_got) : (size_t)(c->in_need - c->req_got);
    case PH_AUTH:
        return c->out_off < c->out_len ? 0 : SMR_PROOF_LEN - c->req_got;
    case PH_FREE:
        return 0;
    default:
        return SMR_RX_ANY;
    }
}

static size_t smr_in_one(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now) {
    switch (c->phase) {
    case PH_HEADER:
        return smr_in_header(x, c, p, n, now);
    case PH_RR:
    case PH_CRR:
        return smr_in_request(x, c, n, now);
    case PH_CONTROL:
        return smr_in_control(x, c, p, n, now);
    case PH_OBJ:
        return smr_in_objects(x, c, p, n, now);
    case PH_SINK: {
        struct smr_test *t = smr_conn_test(x, c);
        if (t) t->tcp_rx += n;
        return n;
    }
    case PH_CRR_WAIT:
        smr_abort(x, c, "data after the crr transaction");
        return n;
    case PH_LINGER:
        c->req_got += (uint32_t)n;
        if (c->req_got >= SMR_LINGER_BYTES) c->flags |= SMR_F_CLOSE;
        return n;
    case PH_SOURCE:
    case PH_DRAIN:
        return n; /* nothing is expected from the client: discard */
#ifndef SMR_NO_AUTH
    case PH_AUTH:
        return smr_conn_want(c) ? smr_in_auth(x, c, p, n, now) : 0;
#endif
    default:
        return 0;
    }
}

/* n bytes moved over TCP count against the pass. */
static void smr_spend(struct smr_ctx *x, size_t n) { x->pass_left -= n < x->pass_left ? n : x->pass_left; }

void smr_pass_begin(struct smr_ctx *x) { x->pass_left = SMR_PASS_BYTES; }

size_t smr_conn_read_max(const struct smr_ctx *x, const struct smr_conn *c) {
    size_t w = smr_conn_want(c);
    return w < x->pass_left ? w : x->pass_left;
}

size_t smr_turn(const struct smr_ctx *x, const struct smr_conn *c) {
    size_t i = smr_conn_index(x, c); /* x->turn is 1 + a slot: at most their count */
    return i >= x->turn ? i - x->turn : i + SMR_MAX_CONNS + SMR_SPARE_CONNS - x->turn;
}

/* c moved bytes: the next turn begins after it. */
static void smr_had_turn(struct smr_ctx *x, const struct smr_conn *c) {
    x->turn = (uint32_t)smr_conn_index(x, c) + 1u;
}

size_t smr_conn_input(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now) {
    size_t done = 0, k;
    if (c->phase != PH_HEADER && c->phase != PH_LINGER && c->phase != PH_AUTH) c->deadline = now + x->cfg.idle_timeout_ns;
    while (done < n && !(c->flags & SMR_F_CLOSE)) {
        k = smr_in_one(x, c, p + done, n - done, now);
        if (k == 0) break;
        done += k;
    }
    smr_spend(x, done);
    if (done) smr_had_turn(x, c);
    return done;
}

/* With a highest rate, when test t's sources may write again, if that is
 * after x->now: its bytes so far at the rate since the Welcome (5.1). */
static uint64_t smr_paced(const struct smr_ctx *x, const struct smr_test *t) {
    uint64_t r = x->cfg.max_rate_bps, b = t->tcp_tx * 8, due;
    if (!r) return 0;
    due = t->start_ns + b / r * 1000000000u + b % r * 1000000000u / r;
    return due > x->now ? due : 0;
}

/* The body piece due after any queued record: payload from smr_payload,
 * or object bytes generated into x->gen. */
static size_t smr_body(struct smr_ctx *x, struct smr_conn *c, const uint8_t **p) {
    if (c->phase == PH_OBJ) return smr_obj_body(x, c, p);
    *p = smr_payload;
    if (c->phase == PH_SOURCE) {
        /* A source writes from its test's first Snapshot on: the client's
         * first mark is that Snapshot, so no byte predates the window. */
        const struct smr_test *t = smr_conn_test(x, c);
        if (!t || !t->started || smr_paced(x, t)) return 0;
        return c->resp_size < SMR_TX_CHUNK ? c->resp_size : SMR_TX_CHUNK;
    }
    /* rr without stamps: every response owed, back to back. */
    return (size_t)(c->tx_left < SMR_TX_CHUNK ? c->tx_left : SMR_TX_CHUNK);
}

void smr_put_block(uint8_t *b, unsigned f, const uint64_t v[5]) {
    static const uint8_t need[5] = {2, 1, 1, 4, 4};
    int i;
    memcpy(b, "SMTS\0\0\0\0", 8);
    b[4] = (uint8_t)f;
    for (i = 0; i < 5; i++) put64(b + 8 + 8 * i, (f & need[i]) ? v[i] : 0);
}

/* rr: the next answered request's response, once the last one is out; a
 * stamped one starts with the block, its times taken now. */
static void smr_next_response(struct smr_ctx *x, struct smr_conn *c) {
    uint64_t v[5] = {0, 0, 0, 0, 0};
    if (c->phase != PH_RR || c->tx_left || c->out_off < c->out_len || !c->pending) return;
    c->pending--;
    c->tx_left = c->resp_size;
    if (!STAMPED(c)) return;
    c->tx_left -= SMR_BLOCK_LEN;
    c->flags |= F_OPEN;
    smr_put_block(c->out, x->stamps(x->user, c, v), v);
    c->out_off = 0;
    c->out_len = SMR_BLOCK_LEN;
}

size_t smr_conn_output(struct smr_ctx *x, struct smr_conn *c, const uint8_t **p) {
    size_t n;
    if ((c->flags & SMR_F_CLOSE) || !x->pass_left) return 0;
    smr_next_response(x, c);
    /* A record goes whole (at most SMR_OUT_MAX bytes past the bound): it is
     * not bulk data, and a client reads it as one piece. */
    if (c->out_off < c->out_len) {
        *p = c->out + c->out_off;
        return (size_t)(c->out_len - c->out_off);
    }
    n = smr_body(x, c, p);
    return n < x->pass_left ? n : x->pass_left;
}

int smr_conn_has_output(const struct smr_ctx *x, const struct smr_conn *c) {
    const struct smr_test *t = &x->tests[c->test_ix];
    if (c->flags & SMR_F_CLOSE) return 0;
    if (c->out_off < c->out_len || c->tx_left || (c->phase == PH_RR && c->pending)) return 1;
    return c->phase == PH_SOURCE && c->test_id && t->id == c->test_id && t->started && !smr_paced(x, t);
}

size_t smr_conn_iov(struct smr_ctx *x, struct smr_conn *c, const uint8_t **p, size_t *n) {
    n[0] = smr_conn_output(x, c, &p[0]);
    if (!n[0]) return 0;
    if (p[0] != c->out + c->out_off) return 1; /* no record queued */
    n[1] = smr_body(x, c, &p[1]);
    if (n[0] >= x->pass_left) return 1; /* the record spends the pass */
    if (n[1] > x->pass_left - n[0]) n[1] = x->pass_left - n[0];
    return n[1] ? 2 : 1;
}

void smr_conn_sent(struct smr_ctx *x, struct smr_conn *c, size_t n, uint64_t now) {
    size_t o = (size_t)(c->out_len - c->out_off);
    x->now = now;
    smr_spend(x, n);
    if (n) smr_had_turn(x, c);
    if (n && c->phase != PH_LINGER) c->deadline = now + x->cfg.idle_timeout_ns;
    if (o) {
        o = n < o ? n : o;
        c->out_off = (uint16_t)(c->out_off + o);
        n -= o;
        if (c->out_off == c->out_len) c->out_off = c->out_len = 0;
    }
    if (c->phase == PH_SOURCE) {
        struct smr_test *t = smr_conn_test(x, c);
        if (t) t->tcp_tx += n;
    } else {
        c->tx_left -= n < c->tx_left ? n : c->tx_left;
        if (STAMPED(c) && (c->flags & F_OPEN) && !c->tx_left && !c->out_len) {
            c->flags &= (uint8_t)~F_OPEN;
            c->served++;
        }
    }
}

unsigned smr_conn_flags(const struct smr_conn *c) {
    unsigned f = c->flags & SMR_F_CLOSE;
    if ((c->flags & (SMR_F_SHUT | SMR_F_SHUT_DONE)) == SMR_F_SHUT && c->out_off == c->out_len && c->tx_left == 0)
        f |= SMR_F_SHUT;
    return f;
}

void smr_conn_shut_done(struct smr_conn *c) { c->flags |= SMR_F_SHUT_DONE; }

static void smr_vanished(struct smr_ctx *x, struct smr_conn *c, uint32_t got, uint32_t of) {
    char r[64];
    smr_fmt(r, "client vanished mid-request (%u of %u bytes)", got, of, 0);
    smr_abort(x, c, r);
}

void smr_conn_eof(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    char r[64];
    (void)now;
    if (c->phase == PH_HEADER || c->phase == PH_AUTH) {
        smr_fmt(r, "client closed after %u header bytes", (uint32_t)c->hdr_got, 0, 0);
        smr_abort(x, c, r);
    } else if ((c->phase == PH_RR && c->req_got) || c->phase == PH_CRR) {
        smr_vanished(x, c, c->req_got, c->req_size);
    } else if (c->phase == PH_OBJ && c->in_got) {
        /* A close between requests is the normal end; inside one is not. */
        if (c->in_got < 4)
            smr_vanished(x, c, c->in_got, 4);
        else
            smr_vanished(x, c, 4 + c->req_got, 4u + c->in_need);
    } else {
        c->flags |= SMR_F_CLOSE;
    }
}

void smr_conn_free(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    struct smr_test *t = smr_conn_test(x, c);
    if (smr_counted(c) && x->active) x->active--;
    if (t && t->control == c) {
        /* The control session ended: the test ends with it. */
        t->control = NULL;
        t->stopping = 1;
        t->awaiting = 0;
        smr_stop_sources(x, t);
        t->id = 0;
    } else if (t && c->mode != M_CONTROL) {
        if (t->open) t->open--;
        smr_final_if_drained(x, t, now);
    } else if (c->mode == M_SINK || c->mode == M_SOURCE) {
        /* Its test is gone; free the slot's count once it is empty. */
        struct smr_test *old = &x->tests[c->test_ix];
        if (c->test_id && old->id == 0 && old->open) old->open--;
    }
    memset(c, 0, sizeof *c);
    while (x->hi && x->conns[x->hi - 1].phase == PH_FREE) x->hi--;
}

uint64_t smr_conn_deadline(const struct smr_conn *c) {
    return c->ends_by && c->ends_by < c->deadline ? c->ends_by : c->deadline;
}

void smr_conn_timeout(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    if (c->ends_by && now >= c->ends_by) {
        /* The longest test has passed: a source stops as after Stop (its
         * client reads to the FIN), any other session is aborted. */
        struct smr_test *t = smr_conn_test(x, c);
        c->ends_by = 0;
        if (c->phase == PH_SOURCE && t)
            smr_stop_sources(x, t);
        else if (c->phase != PH_LINGER && c->phase != PH_DRAIN)
            smr_abort(x, c, "the longest test the responder allows has passed");
    } else if (c->phase == PH_HEADER)
        smr_refuse(x, c, SMR_HEADER_TIMEOUT, "session header not complete in time", now);
    else if (c->phase == PH_AUTH)
        smr_refuse(x, c, SMR_AUTH, "failed: no proof within the header timeout", now);
    else if (c->phase == PH_LINGER)
        c->flags |= SMR_F_CLOSE;
    else
        smr_abort(x, c, "idle timeout");
}

unsigned smr_tick(struct smr_ctx *x, uint64_t now) {
    unsigned i, open = 0;
    x->now = now;
    for (i = 0; i < SMR_MAX_TESTS; i++)
        if (x->tests[i].id) {
            open++;
            smr_final_if_drained(x, &x->tests[i], now);
        }
    return open;
}

uint64_t smr_next_deadline(const struct smr_ctx *x) {
    uint64_t d = (uint64_t)-1;
    size_t i;
    for (i = 0; i < SMR_MAX_TESTS; i++) {
        const struct smr_test *t = &x->tests[i];
        uint64_t p = t->id && t->started ? smr_paced(x, t) : 0;
        if (t->id && t->awaiting && smr_final_at(t) < d) d = smr_final_at(t);
        if (p && p < d) d = p;
    }
    for (i = 0; i < x->hi; i++)
        if (x->conns[i].phase != PH_FREE && smr_conn_deadline(&x->conns[i]) < d) d = smr_conn_deadline(&x->conns[i]);
    return d;
}

/* ---- UDP ---- */

static int smr_seen(const struct smr_stream *s, uint64_t q) {
    return (int)((s->seen[(q % SMR_DUP_WINDOW) / 64] >> (q % 64)) & 1u);
}

static void smr_mark(struct smr_stream *s, uint64_t q, int on) {
    uint64_t bit = (uint64_t)1 << (q % 64);
    if (on)
        s->seen[(q % SMR_DUP_WINDOW) / 64] |= bit;
    else
        s->seen[(q % SMR_DUP_WINDOW) / 64] &= ~bit;
}

void smr_stream_record(struct smr_stream *s, uint64_t seq, size_t len, uint64_t sent_ns, uint64_t arrival_ns) {
    uint64_t q, d, transit;
    if (seq >= s->expected) {
        if (seq + 1 - s->expected >= SMR_DUP_WINDOW)
            memset(s->seen, 0, sizeof s->seen);
        else
            for (q = s->expected; q <= seq; q++) smr_mark(s, q, 0);
        s->expected = seq + 1;
    } else if (s->expected - seq <= SMR_DUP_WINDOW) {
        if (smr_seen(s, seq)) {
            s->duplicates++;
            return;
        }
        s->reordered++;
    } else {
        s->reordered++;
    }
    smr_mark(s, seq, 1);
    s->received++;
    s->bytes += len;
    transit = arrival_ns - sent_ns; /* two's complement, wraps */
    if (s->have_transit) {
        d = transit - s->last_transit;
        if (d >> 63) d = (uint64_t)0 - d;
        s->jitter16 = s->jitter16 + d - ((s->jitter16 + 8) >> 4);
    }
    s->last_transit = transit;
    s->have_transit = 1;
}

static void smr_udp_stream(struct smr_ctx *x, const uint8_t *b, size_t len, uint64_t rx_ns) {
    struct smr_test *t = smr_find_test(x, get32(b + 24));
    uint32_t ix = get16(b + 28);
    if (!t || ix >= SMR_MAX_STREAMS) return;
    smr_stream_record(&t->streams[ix], get64(b + 8), len, get64(b + 16), rx_ns);
    t->udp_last_ns = rx_ns;
}

/* The entry of (peer, id) among n entries of `size` bytes from `first`,
 * each starting with a struct smr_slot: found, or else the least recently
 * used taken over and zeroed beyond its slot (*fresh = 1). */
static void *smr_lookup(struct smr_ctx *x, void *first, size_t n, size_t size, const void *peer, size_t plen,
                        uint32_t id, int *fresh) {
    uint8_t k[SMR_PEER_KEY] = {0}, *e = first, *old = first;
    struct smr_slot *s;
    size_t i;
    memcpy(k, peer, plen < SMR_PEER_KEY ? plen : SMR_PEER_KEY);
    for (i = 0; i < n; i++, e += size) {
        s = (struct smr_slot *)(void *)e;
        if (s->used && s->id == id && memcmp(s->key, k, SMR_PEER_KEY) == 0) break;
        if (s->used < ((struct smr_slot *)(void *)old)->used) old = e;
    }
    *fresh = i == n;
    if (*fresh) {
        e = old;
        memset(e, 0, size);
        s = (struct smr_slot *)(void *)e;
        memcpy(s->key, k, SMR_PEER_KEY);
        s->id = id;
    }
    ((struct smr_slot *)(void *)e)->used = ++x->slot_uses;
    return e;
}

#ifndef SMR_NO_AUTH
/* The replay window of peer (docs/protocol.md 10.2): 1 if seq is new. */
static int smr_replay_ok(struct smr_ctx *x, const uint8_t *b, const void *peer, size_t plen) {
    uint64_t seq = get64(b + 8), back;
    int fresh;
    struct smr_peer *p = smr_lookup(x, x->peers, SMR_AUTH_PEERS, sizeof *p, peer, plen, 0, &fresh);
    if (fresh) {
        p->highest = seq;
        p->seen = 1;
        return 1;
    }
    if (seq > p->highest) {
        back = seq - p->highest;
        p->seen = back >= 64 ? 1 : p->seen << back | 1;
        p->highest = seq;
        return 1;
    }
    back = p->highest - seq;
    if (back >= 64 || (p->seen >> back & 1)) return 0;
    p->seen |= (uint64_t)1 << back;
    return 1;
}
#endif

/* The count of requests with count id `id` from `peer`, this one included
 * (docs/protocol.md 4.4): a new (address, id) starts at 1. */
static uint64_t smr_count(struct smr_ctx *x, const void *peer, size_t plen, uint32_t id) {
    int fresh;
    struct smr_count *c = smr_lookup(x, x->counts, SMR_COUNT_PEERS, sizeof *c, peer, plen, id, &fresh);
    return ++c->received;
}

size_t smr_udp_seal(const struct smr_ctx *x, uint8_t *b, size_t len) {
#ifndef SMR_NO_AUTH
    uint8_t mac[32];
    if (x->cfg.key_len && len) {
        b[7] |= 4;
        smr_hmac(&x->cfg, b, len, b, 0, mac);
        memcpy(b + len, mac, SMR_MAC_LEN);
        return len + SMR_MAC_LEN;
    }
#endif
    (void)x;
    (void)b;
    return len;
}

size_t smr_udp_input(struct smr_ctx *x, uint8_t *b, size_t len, uint64_t rx_ns) {
    return smr_udp_input_from(x, b, len, rx_ns, "", 0);
}

size_t smr_udp_input_from(struct smr_ctx *x, uint8_t *b, size_t len, uint64_t rx_ns, const void *peer, size_t plen) {
    size_t count;
    if (len < SMR_UDP_HDR || memcmp(b, "SMTU", 4) != 0) return 0;
#ifndef SMR_NO_AUTH
    if (x->cfg.key_len) {
        uint8_t mac[32];
        if (len < SMR_UDP_HDR + SMR_MAC_LEN || !(b[7] & 4)) return 0;
        len -= SMR_MAC_LEN;
        smr_hmac(&x->cfg, b, len, b, 0, mac);
        if (!smr_mac_ok(mac, b + len, SMR_MAC_LEN) || b[4] != 1) return 0;
        if (b[5] == 1 && !smr_replay_ok(x, b, peer, plen)) return 0;
    }
#endif
    if (b[5] == 4 && b[4] == 1) {
        smr_udp_stream(x, b, len, rx_ns);
        return 0;
    }
    if (b[5] != 1) return 0;
    if (b[4] != 1) {
        b[4] = 1;
        b[5] = 3;
        b[6] = SMR_UNSUPPORTED_VERSION;
        b[7] = 0;
        return SMR_UDP_HDR;
    }
    /* A count block: after the stamp block's place when stamps are asked. */
    count = (b[7] & 2) ? SMR_UDP_HDR + SMR_BLOCK_LEN : SMR_UDP_HDR;
    if (!(b[7] & 8) || len < count + 16 || memcmp(b + count, "SMTC", 4) != 0) count = 0;
    b[5] = 2;
    b[6] = 0;
    b[7] = (b[7] & 2) && STAMPS(x) && len >= SMR_UDP_HDR + SMR_BLOCK_LEN ? 3 : 1;
    if (count) {
        put64(b + count + 8, smr_count(x, peer, plen, get32(b + count + 4)));
        b[7] |= 8;
    }
    put64(b + 24, rx_ns);
    put64(b + 32, rx_ns);
    return len;
}

void smr_udp_stamp_tx(uint8_t *b, uint64_t tx_ns) {
    if (b[5] == 2) put64(b + 32, tx_ns);
}
