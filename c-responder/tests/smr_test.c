/*
 * Engine unit tests: every fixture in protocol/vectors.json (the limits
 * table against a stock build's defaults, from smr_stock.c; object mode),
 * then malformed input, limits, object sessions, the throughput-test life
 * cycle, bounded work per pass and queued rr requests, fair slots
 * (smr_slots.c: giving way, the share of one address, the limits line),
 * and admission (smr_admit.c: allow lists, connect rate, sessions per
 * address). Built
 * with ASan+UBSan (make test).
 * Usage: smr-test vectors.json
 *
 * The JSON reader below handles what that file uses (objects, arrays,
 * strings without escapes other than \" and \\, numbers, true/false/null).
 */
#include "smr.h"
#include "smr_admit.h"
#include "smr_stock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a tiny JSON reader: tokens with child counts, like a flat tree ---- */

enum { J_OBJ, J_ARR, J_STR, J_PRIM };
struct tjtok {
    int type, start, end, size, next; /* next: index after this subtree */
};
static struct tjtok tj[8192];
static int tjn;
static const char *js;

static int tj_skip_ws(int p) {
    while (js[p] == ' ' || js[p] == '\n' || js[p] == '\r' || js[p] == '\t') p++;
    return p;
}

static int tj_parse(int p, int *out);

static int tj_container(int p, int self, int close) {
    p = tj_skip_ws(p + 1);
    while (js[p] != close) {
        int child;
        p = tj_parse(p, &child);
        if (p < 0) return -1;
        tj[self].size++;
        p = tj_skip_ws(p);
        if (close == '}' && js[p] == ':') {
            p = tj_parse(tj_skip_ws(p + 1), &child);
            if (p < 0) return -1;
            p = tj_skip_ws(p);
        }
        if (js[p] == ',') p = tj_skip_ws(p + 1);
        else if (js[p] != close) return -1;
    }
    return p + 1;
}

static int tj_parse(int p, int *out) {
    int self = tjn++;
    if (self >= (int)(sizeof tj / sizeof tj[0])) return -1;
    *out = self;
    p = tj_skip_ws(p);
    memset(&tj[self], 0, sizeof tj[self]);
    tj[self].start = p;
    if (js[p] == '{' || js[p] == '[') {
        tj[self].type = js[p] == '{' ? J_OBJ : J_ARR;
        p = tj_container(p, self, js[p] == '{' ? '}' : ']');
    } else if (js[p] == '"') {
        tj[self].type = J_STR;
        tj[self].start = ++p;
        while (js[p] && js[p] != '"') p += js[p] == '\\' ? 2 : 1;
        tj[self].end = p;
        p = js[p] ? p + 1 : -1;
    } else {
        tj[self].type = J_PRIM;
        while (js[p] && !strchr(",]} \n\r\t", js[p])) p++;
    }
    if (p < 0) return -1;
    if (tj[self].type != J_STR) tj[self].end = p;
    tj[self].next = tjn;
    return p;
}

/* Value of key k in object o, or -1. */
static int tj_get(int o, const char *k) {
    int i = o + 1, n;
    if (o < 0 || tj[o].type != J_OBJ) return -1;
    for (n = 0; n < tj[o].size; n++) {
        int key = i, val = tj[i].next;
        if ((int)strlen(k) == tj[key].end - tj[key].start && strncmp(js + tj[key].start, k, strlen(k)) == 0)
            return val;
        i = tj[val].next;
    }
    return -1;
}

/* Item i of array a, or -1. */
static int tj_item(int a, int i) {
    int t = a + 1;
    if (a < 0 || tj[a].type != J_ARR || i >= tj[a].size) return -1;
    while (i--) t = tj[t].next;
    return t;
}

static int tj_is(int t, const char *s) {
    return t >= 0 && (int)strlen(s) == tj[t].end - tj[t].start && strncmp(js + tj[t].start, s, strlen(s)) == 0;
}

static unsigned long long tj_num(int t) { return t < 0 ? 0 : strtoull(js + tj[t].start, NULL, 10); }

/* Decodes the hex string token t into b; returns the length. */
static size_t tj_hex(int t, uint8_t *b, size_t cap) {
    size_t n = 0;
    int p;
    for (p = tj[t].start; p + 1 < tj[t].end && n < cap; p += 2) {
        unsigned v;
        sscanf(js + p, "%2x", &v);
        b[n++] = (uint8_t)v;
    }
    return n;
}

static void tj_str(int t, char *out, size_t cap) {
    size_t n = (size_t)(tj[t].end - tj[t].start);
    if (n >= cap) n = cap - 1;
    memcpy(out, js + tj[t].start, n);
    out[n] = 0;
}

/* ---- test helpers ---- */

static int passed, failed;
static struct smr_ctx X;
static char lastlog[256];

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (cond) {                                                                                                    \
            passed++;                                                                                                  \
        } else {                                                                                                       \
            failed++;                                                                                                  \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                                \
            printf(__VA_ARGS__);                                                                                       \
            printf("\n");                                                                                              \
        }                                                                                                              \
    } while (0)

static void test_log(void *u, const struct smr_conn *c, const char *what, const char *detail) {
    (void)u;
    (void)c;
    snprintf(lastlog, sizeof lastlog, "%s: %s", what, detail);
}

static uint64_t cpu_u, cpu_s;
static int test_cpu(void *u, uint64_t *us, uint64_t *ss) {
    (void)u;
    *us = cpu_u;
    *ss = cpu_s;
    return 1;
}

static int test_tcpinfo(void *u, const struct smr_conn *c, struct smr_tcpinfo *ti) {
    (void)u;
    (void)c;
    ti->retrans = 7;
    ti->cwnd_bytes = 65536;
    ti->rtt_us = 40;
    return 1;
}

/* A backend's stamps: kernel receive 900 + the response number, app
 * receive 1000, app send 2000, the previous response's send stamp. */
static unsigned test_stamps(void *u, const struct smr_conn *c, uint64_t v[5]) {
    (void)u;
    v[0] = 900 + c->served;
    v[1] = 1000;
    v[2] = 2000;
    v[3] = c->served ? c->served - 1 : 0;
    v[4] = 700;
    return c->served ? 7u : 3u;
}

static void fresh(uint32_t max_sessions) {
    struct smr_config cfg;
    smr_default_config(&cfg);
    cfg.max_sessions = max_sessions;
    smr_init(&X, &cfg);
    X.log = test_log;
    X.stamps = test_stamps;
}

/* A new connection from client tag `tag`, started as a backend starts it
 * (the one smr_conn_start gave up, if any, in *gone). */
static struct smr_conn *open_from(uint32_t tag, uint64_t now, struct smr_conn **gone) {
    struct smr_conn *c = smr_conn_open(&X, now), *v = NULL;
    if (c) {
        c->client = tag;
        v = smr_conn_start(&X, c, now);
    }
    if (gone) *gone = v;
    return c;
}

/* A new connection from an address of its own (a tag no other has). */
static struct smr_conn *open_conn(uint64_t now) {
    static uint32_t next_tag = 1000;
    return open_from(next_tag++, now, NULL);
}

/* Takes everything the connection has to send (as if the stack took it),
 * one pass per piece. */
static size_t drain(struct smr_conn *c, uint8_t *out, size_t cap, uint64_t now) {
    size_t got = 0, n;
    const uint8_t *p;
    while ((smr_pass_begin(&X), n = smr_conn_output(&X, c, &p)) > 0 && got < cap) {
        if (n > cap - got) n = cap - got;
        memcpy(out + got, p, n);
        smr_conn_sent(&X, c, n, now);
        got += n;
    }
    return got;
}

static size_t feed(struct smr_conn *c, const uint8_t *b, size_t n, int bytewise, uint64_t now) {
    size_t i, k = 0;
    if (!bytewise) return smr_conn_input(&X, c, b, n, now);
    for (i = 0; i < n; i++) k += smr_conn_input(&X, c, b + i, 1, now);
    return k;
}

/* ---- vectors ---- */

static void vec_session_header(int v, int bytewise) {
    uint8_t b[300], out[512];
    char name[128];
    size_t n = tj_hex(tj_get(v, "hex"), b, sizeof b), got;
    int valid = tj_is(tj_get(v, "valid"), "true"), refusal = (int)tj_num(tj_get(v, "refusal"));
    struct smr_conn *c;
    uint8_t mode = 0;
    uint32_t req = 0, resp = 0;
    tj_str(tj_get(v, "name"), name, sizeof name);
    fresh(4);
    c = open_conn(0);
    feed(c, b, n, bytewise, 1);
    got = drain(c, out, sizeof out, 2);
    if (valid) {
        int f = tj_get(v, "fields");
        const char *m = tj_is(tj_get(f, "mode"), "rr")        ? "\1"
                        : tj_is(tj_get(f, "mode"), "crr")     ? "\2"
                        : tj_is(tj_get(f, "mode"), "control") ? "\3"
                        : tj_is(tj_get(f, "mode"), "sink")    ? "\4"
                                                              : "\5";
        CHECK(smr_parse_header(b, n, &mode, &req, &resp) == 0, "%s: parses", name);
        CHECK(mode == (uint8_t)m[0] && req == tj_num(tj_get(f, "req_size")) && resp == tj_num(tj_get(f, "resp_size")),
              "%s: fields %u %u %u", name, mode, req, resp);
        if (mode == 1) CHECK(got == 8 && memcmp(out, "SMTR\1\0\0\0", 8) == 0, "%s: accepted at once", name);
        CHECK(!!(c->flags & SMR_F_STAMPS) == (int)(tj_num(tj_get(f, "flags")) & 1), "%s: stamps flag", name);
        if (mode == 2) CHECK(got == 0, "%s: crr answers only after the request", name);
        if (mode == 3) CHECK(got == 16 && out[9] == 16 && out[15] == 1, "%s: status + Welcome(1)", name);
        if (mode >= 4) CHECK(got >= 8 && out[5] == SMR_UNKNOWN_TEST, "%s: no such test -> UnknownTest", name);
    } else if (refusal) {
        CHECK(got >= 8 && out[5] == refusal, "%s: refusal %d, got %d (%zu bytes)", name, refusal, got ? out[5] : -1,
              got);
        CHECK(smr_conn_flags(c) & SMR_F_SHUT, "%s: half-closes after refusing", name);
        CHECK(strstr(lastlog, smr_refusal_name((unsigned)refusal)) != NULL, "%s: logged '%s'", name, lastlog);
    } else {
        CHECK(got == 0 && smr_conn_want(c) == 16 - n, "%s: waits for more", name);
        smr_conn_timeout(&X, c, smr_conn_deadline(c));
        got = drain(c, out, sizeof out, 3);
        CHECK(got > 8 && out[5] == SMR_HEADER_TIMEOUT, "%s: header timeout refusal", name);
    }
}

static void vec_status(int v) {
    uint8_t want[400], out[400];
    char reason[300], name[128];
    size_t n = tj_hex(tj_get(v, "hex"), want, sizeof want), got;
    int f = tj_get(v, "fields");
    tj_str(tj_get(v, "name"), name, sizeof name);
    if (!tj_is(tj_get(v, "valid"), "true")) return;
    tj_str(tj_get(f, "reason"), reason, sizeof reason);
    got = smr_status(out, sizeof out, (unsigned)tj_num(tj_get(f, "code")), reason);
    CHECK(got == n && memcmp(out, want, n) == 0, "%s: status record bytes", name);
}

static void vec_datagram(int v) {
    uint8_t b[2048], want[2048];
    char name[128];
    int a = tj_get(v, "answer");
    size_t n, r;
    if (a < 0) return;
    tj_str(tj_get(v, "name"), name, sizeof name);
    n = tj_hex(tj_get(v, "hex"), b, sizeof b);
    fresh(4);
    if (tj_is(tj_get(a, "stamps"), "false")) X.stamps = NULL; /* a backend without stamps */
    /* A counted request: the responder has received count_received of
     * them, this one the last (docs/protocol.md 4.4). */
    if (tj_get(a, "count_received") >= 0 && !tj_is(tj_get(a, "count_received"), "null")) {
        uint8_t copy[2048];
        unsigned k, times = (unsigned)tj_num(tj_get(a, "count_received"));
        for (k = 1; k < times; k++) {
            memcpy(copy, b, n);
            smr_udp_input(&X, copy, n, 1);
        }
    }
    r = smr_udp_input(&X, b, n, tj_num(tj_get(a, "rx_ns")));
    if (tj_is(tj_get(a, "action"), "drop")) {
        CHECK(r == 0, "%s: dropped", name);
    } else {
        size_t wn = tj_hex(tj_get(a, "reply_hex"), want, sizeof want);
        CHECK(r == wn && memcmp(b, want, wn) == 0, "%s: reply bytes (len %zu vs %zu)", name, r, wn);
        CHECK(r <= n, "%s: never larger than the request", name);
    }
}

static void vec_stamp_block(int v) {
    uint8_t want[64], got[64];
    uint64_t f[5];
    char name[128];
    static const char *const keys[5] = {"rx_kernel", "app_rx", "app_tx", "prev_id", "prev_tx_kernel"};
    int i, fl = tj_get(v, "fields");
    size_t n = tj_hex(tj_get(v, "hex"), want, sizeof want);
    tj_str(tj_get(v, "name"), name, sizeof name);
    if (!tj_is(tj_get(v, "valid"), "true")) return;
    for (i = 0; i < 5; i++) f[i] = tj_num(tj_get(fl, keys[i]));
    smr_put_block(got, want[4], f);
    CHECK(n == SMR_BLOCK_LEN && memcmp(got, want, n) == 0, "%s: block bytes", name);
}

/* docs/protocol.md section 10 against the "auth" vectors: HMAC-SHA256, the
 * proof, a sealed echo and its sealed reply, a replay and a tampered
 * trailer (no reply), and the TCP challenge: no flag, a wrong proof, the
 * right one. */
static void vec_auth(int a) {
    uint8_t k[256], m[256], want[64], got[32], b[128], rep[128], hdr[24], ch[24], out[512];
    struct smr_config cfg;
    struct smr_conn *c;
    int hm = tj_get(a, "hmac"), pr = tj_get(a, "proof"), dg = tj_get(a, "datagram"), i;
    size_t kn, mn, n, rn;
    for (i = 0; i < tj[hm].size; i++) {
        int v = tj_item(hm, i);
        kn = tj_hex(tj_get(v, "key_hex"), k, sizeof k);
        mn = tj_hex(tj_get(v, "data_hex"), m, sizeof m);
        tj_hex(tj_get(v, "mac_hex"), want, sizeof want);
        smr_auth_key(&cfg, k, kn);
        smr_hmac(&cfg, m, mn, m, 0, got);
        CHECK(memcmp(got, want, 32) == 0, "auth: hmac vector %d", i);
    }
    kn = tj_hex(tj_get(pr, "secret_hex"), k, sizeof k);
    tj_hex(tj_get(pr, "challenge_hex"), ch, sizeof ch);
    tj_hex(tj_get(pr, "header_hex"), hdr, sizeof hdr);
    tj_hex(tj_get(pr, "proof_hex"), want, sizeof want);
    smr_auth_key(&cfg, k, kn);
    smr_hmac(&cfg, ch, 24, hdr, 24, got);
    CHECK(memcmp(got, want, 32) == 0, "auth: proof vector");

    fresh(4);
    smr_auth_key(&X.cfg, k, kn);
    n = tj_hex(tj_get(dg, "request_hex"), b, sizeof b);
    rn = tj_hex(tj_get(dg, "reply_hex"), rep, sizeof rep);
    memcpy(m, b, n);
    {
        size_t r = smr_udp_input_from(&X, b, n, tj_num(tj_get(dg, "rx_ns")), "peer", 4);
        smr_udp_stamp_tx(b, tj_num(tj_get(dg, "tx_ns")));
        r = smr_udp_seal(&X, b, r);
        CHECK(r == rn && r == n && memcmp(b, rep, rn) == 0, "auth: sealed reply bytes (len %zu)", r);
    }
    CHECK(smr_udp_input_from(&X, m, n, 1, "peer", 4) == 0, "auth: a replayed request gets no reply");
    n = tj_hex(tj_get(dg, "tampered_hex"), b, sizeof b);
    CHECK(smr_udp_input_from(&X, b, n, 1, "other", 5) == 0, "auth: a wrong trailer gets no reply");
    b[7] = 0;
    CHECK(smr_udp_input_from(&X, b, n - 16, 1, "other", 5) == 0, "auth: no trailer, no reply");

    /* TCP: a header without the auth flag is refused with code 12. */
    c = open_conn(0);
    memcpy(m, hdr, 16);
    m[7] = 16;
    smr_conn_input(&X, c, m, 16, 1);
    n = drain(c, out, sizeof out, 1);
    CHECK(n > 8 && out[5] == SMR_AUTH, "auth: a header without the flag is refused Auth (code %u)", out[5]);
    smr_conn_free(&X, c, 2);
    /* The right proof gets the session; a wrong one the refusal. */
    for (i = 0; i < 2; i++) {
        c = open_conn(0);
        smr_conn_input(&X, c, hdr, 24, 1);
        n = drain(c, out, sizeof out, 1);
        CHECK(n == 24 && memcmp(out, "SMTA\1", 5) == 0, "auth: challenge");
        CHECK(smr_conn_deadline(c) == SMR_DEFAULT_HEADER_TIMEOUT_NS,
              "auth: the proof is due within the header timeout, the challenge sent or not");
        smr_hmac(&X.cfg, out, 24, hdr, 24, got);
        got[0] ^= (uint8_t)i;
        smr_conn_input(&X, c, got, 32, 2);
        n = drain(c, out, sizeof out, 2);
        CHECK(n >= 8 && out[5] == (i ? SMR_AUTH : 0), "auth: proof %d answered code %u", i, out[5]);
        smr_conn_free(&X, c, 3);
    }
}

/* rr asking for stamps: each response starts with the block, built when it
 * goes out, carrying the previous response's send stamp once one is sent. */
static void rr_stamps(void) {
    uint8_t h[24] = {'S', 'M', 'T', 'R', 1, 1, 0, 24, 0, 0, 0, 1, 0, 0, 0, 100, 0, 0, 0, 1, 0, 0, 0, 0};
    uint8_t out[256];
    struct smr_conn *c;
    int i;
    fresh(2);
    c = open_conn(0);
    smr_conn_input(&X, c, h, 24, 0);
    CHECK((c->flags & SMR_F_STAMPS) && drain(c, out, sizeof out, 0) == 8, "stamped rr accepted");
    for (i = 0; i < 2; i++) {
        smr_conn_input(&X, c, (const uint8_t *)"x", 1, 1);
        CHECK(drain(c, out, sizeof out, 1) == 100 && memcmp(out, "SMTS", 4) == 0, "response %d: 100 bytes, block first",
              i);
        CHECK(out[4] == (i ? 7 : 3) && out[15] == (uint8_t)(900 + i) && out[23] == 1000 % 256 && out[31] == 2000 % 256 &&
                  out[39] == (i ? 0 : 0) && out[47] == (i ? 700 % 256 : 0),
              "response %d: block fields", i);
        CHECK(c->served == (uint32_t)i + 1 && out[48] == 0 && out[99] == 0, "response %d counted, payload after", i);
    }
    CHECK(smr_conn_want(c) == 1, "stamped: one request per read (one kernel stamp each)");
    smr_conn_input(&X, c, (const uint8_t *)"x", 1, 1);
    CHECK(smr_conn_want(c) == 0, "and none while a response is owed");
    smr_conn_free(&X, c, 2);
    h[15] = 47; /* no room for the block: the flag is ignored */
    c = open_conn(0);
    smr_conn_input(&X, c, h, 24, 0);
    CHECK(!(c->flags & SMR_F_STAMPS), "47-byte responses: no stamps");
    smr_conn_free(&X, c, 2);
}

/* Opens a control session; returns it with its Welcome consumed. */
static struct smr_conn *control(uint32_t *id, uint64_t now) {
    static const uint8_t h[16] = {'S', 'M', 'T', 'R', 1, 3, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0};
    uint8_t out[64];
    struct smr_conn *c = open_conn(now);
    smr_conn_input(&X, c, h, 16, now);
    drain(c, out, sizeof out, now);
    *id = ((uint32_t)out[12] << 24) | ((uint32_t)out[13] << 16) | ((uint32_t)out[14] << 8) | out[15];
    return c;
}

static struct smr_conn *data(int mode, uint32_t id, uint32_t wsize, uint64_t now) {
    uint8_t h[16] = {'S', 'M', 'T', 'R', 1, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0}, out[64];
    struct smr_conn *c = open_conn(now);
    const uint8_t *p[2];
    size_t n[2];
    h[5] = (uint8_t)mode;
    h[8] = (uint8_t)(id >> 24), h[9] = (uint8_t)(id >> 16), h[10] = (uint8_t)(id >> 8), h[11] = (uint8_t)id;
    h[14] = (uint8_t)(wsize >> 8), h[15] = (uint8_t)wsize;
    smr_conn_input(&X, c, h, 16, now);
    /* A source's status goes alone: no payload before the first Snapshot. */
    CHECK(smr_conn_iov(&X, c, p, n) == 1 && n[0] == 8, "data session status alone");
    drain(c, out, 8, now);
    CHECK(memcmp(out, "SMTR\1\0\0\0", 8) == 0, "data session accepted");
    return c;
}

static void vec_control(int v) {
    uint8_t b[256], out[256], want[256];
    char name[128];
    size_t n = tj_hex(tj_get(v, "hex"), b, sizeof b), got;
    uint32_t id;
    struct smr_conn *c;
    tj_str(tj_get(v, "name"), name, sizeof name);
    fresh(8);
    if (tj_is(tj_get(v, "direction"), "client")) {
        c = control(&id, 10);
        smr_conn_input(&X, c, b, n, 20);
        got = drain(c, out, sizeof out, 20);
        if (tj_get(v, "error") >= 0)
            CHECK(smr_conn_flags(c) & SMR_F_CLOSE, "%s: closes the session", name);
        else if (tj_is(tj_get(tj_get(v, "fields"), "type"), "unknown"))
            CHECK(got == 0 && smr_conn_want(c) == 4 && !(smr_conn_flags(c) & SMR_F_CLOSE), "%s: skipped", name);
        else
            CHECK(got == SMR_REPORT_LEN && out[1] == 17 && out[7] == b[7], "%s: answered with Report(%u)", name, b[7]);
        return;
    }
    memcpy(want, b, n);
    if (tj_is(tj_get(tj_get(v, "fields"), "type"), "welcome")) {
        X.next_test = 4;
        c = control(&id, 0);
        CHECK(id == 5, "%s: Welcome id", name);
        return;
    }
    /* The Report fixture, reproduced from real counters (flags: CPU and
     * TCP_INFO; the final bit comes from Stop, tested in life_cycle). */
    X.cpu = test_cpu;
    X.tcpinfo = test_tcpinfo;
    cpu_u = cpu_s = 1000;
    c = control(&id, 0);
    {
        struct smr_test *t = &X.tests[0];
        struct smr_conn *src = data(5, id, 64, 0);
        struct smr_conn *snk = data(4, id, 0, 0);
        static const uint8_t snap[8] = {0, 1, 0, 8, 0, 0, 0, 3};
        (void)src;
        smr_conn_input(&X, snk, b, 0, 0);
        t->tcp_rx = 123456789;
        t->streams[0].received = 1000;
        t->streams[0].bytes = 64000;
        t->streams[0].expected = 1010;
        t->streams[0].duplicates = 2;
        t->streams[0].reordered = 3;
        t->streams[0].jitter16 = 4500 * 16;
        cpu_u = 1000 + 150000000;
        cpu_s = 1000 + 420000000;
        smr_conn_input(&X, c, snap, 8, 2000000000);
        got = drain(c, out, sizeof out, 2000000000);
        want[8] = 6;
        CHECK(got == n && memcmp(out, want, n) == 0, "%s: Report bytes", name);
    }
}

static void vec_udp_rx(int v) {
    struct smr_stream s;
    char name[128];
    int ev = tj_get(v, "events"), ex = tj_get(v, "expect"), i;
    memset(&s, 0, sizeof s);
    tj_str(tj_get(v, "name"), name, sizeof name);
    for (i = 0; i < tj[ev].size; i++) {
        int e = tj_item(ev, i);
        smr_stream_record(&s, tj_num(tj_item(e, 0)), (size_t)tj_num(tj_item(e, 1)), tj_num(tj_item(e, 2)),
                          tj_num(tj_item(e, 3)));
    }
    CHECK(s.received == tj_num(tj_get(ex, "received")), "%s: received %llu", name, (unsigned long long)s.received);
    CHECK(s.bytes == tj_num(tj_get(ex, "bytes")), "%s: bytes", name);
    CHECK(s.expected == tj_num(tj_get(ex, "expected")), "%s: expected", name);
    CHECK(s.expected - s.received == tj_num(tj_get(ex, "lost")), "%s: lost", name);
    CHECK(s.duplicates == tj_num(tj_get(ex, "duplicates")), "%s: duplicates", name);
    CHECK(s.reordered == tj_num(tj_get(ex, "reordered")), "%s: reordered", name);
    CHECK((s.jitter16 >> 4) == tj_num(tj_get(ex, "jitter_ns")), "%s: jitter %llu", name,
          (unsigned long long)(s.jitter16 >> 4));
}

/* ---- behaviour beyond the fixtures ---- */

static void rr_and_limits(void) {
    static const uint8_t h[16] = {'S', 'M', 'T', 'R', 1, 1, 0, 16, 0, 0, 0, 3, 0, 0, 2, 0};
    static const uint8_t big[16] = {'S', 'M', 'T', 'R', 1, 1, 0, 16, 5, 0xf5, 0xe1, 0, 0, 0, 0, 1};
    uint8_t out[1100];
    struct smr_conn *a, *b, *c;
    fresh(2);
    a = open_conn(0);
    smr_conn_input(&X, a, h, 16, 0);
    CHECK(drain(a, out, sizeof out, 0) == 8, "rr accepted");
    CHECK(smr_conn_input(&X, a, (const uint8_t *)"ab", 2, 1) == 2 && drain(a, out, sizeof out, 1) == 0,
          "partial request: no answer yet");
    CHECK(smr_conn_input(&X, a, (const uint8_t *)"c", 1, 1) == 1 && smr_conn_has_output(&X, a) &&
              drain(a, out, sizeof out, 1) == 512 && !smr_conn_has_output(&X, a),
          "whole request: 512-byte response");
    smr_conn_input(&X, a, (const uint8_t *)"abcabc", 6, 2); /* two pipelined requests */
    CHECK(drain(a, out, 1024, 2) == 1024 && drain(a, out, sizeof out, 2) == 0, "pipelined requests answered");
    smr_conn_eof(&X, a, 3);
    CHECK(smr_conn_flags(a) & SMR_F_CLOSE, "close between transactions ends the session");
    /* Limits: two sessions past their header, the third is Busy; a 100 MB
     * request TooLarge. */
    b = open_conn(0);
    smr_conn_input(&X, b, h, 16, 0);
    CHECK(drain(b, out, sizeof out, 0) == 8 && out[5] == 0, "second session accepted");
    c = open_conn(0);
    drain(c, out, sizeof out, 0);
    CHECK(out[5] == SMR_BUSY && strstr(lastlog, "busy: 2 sessions running, the limit"), "third session busy (%s)",
          lastlog);
    smr_conn_free(&X, c, 0);
    smr_conn_free(&X, b, 0);
    b = open_conn(0);
    smr_conn_input(&X, b, big, 16, 0);
    CHECK(drain(b, out, sizeof out, 0) > 8 && out[5] == SMR_TOO_LARGE &&
              memcmp(out + 8, "request size 100000000 exceeds limit 67108864", 45) == 0,
          "too large names both numbers");
    smr_conn_free(&X, a, 4);
    smr_conn_free(&X, b, 4);
    CHECK(X.active == 0 && X.hi == 0, "all slots free again (active %u hi %u)", X.active, X.hi);
    /* Mid-request close and idle timeout are aborts, logged. */
    a = open_conn(0);
    smr_conn_input(&X, a, h, 16, 0);
    smr_conn_input(&X, a, (const uint8_t *)"x", 1, 0);
    smr_conn_eof(&X, a, 1);
    CHECK((smr_conn_flags(a) & SMR_F_CLOSE) && strstr(lastlog, "mid-request (1 of 3"), "mid-request close: %s",
          lastlog);
    smr_conn_free(&X, a, 1);
    a = open_conn(0);
    smr_conn_input(&X, a, h, 16, 0);
    smr_conn_timeout(&X, a, smr_conn_deadline(a));
    CHECK((smr_conn_flags(a) & SMR_F_CLOSE) && strstr(lastlog, "idle"), "idle timeout: %s", lastlog);
    CHECK(smr_conn_deadline(a) == 60000000000ull, "idle deadline from the last input");
}

/* The operator's limits (docs/protocol.md 5.1): advertised in a 24-byte
 * Welcome, tests at once per client tag refused Limit, sessions ended at
 * the longest test, and sources paced to the highest rate. */
static void operator_limits(void) {
    static const uint8_t rr[16] = {'S', 'M', 'T', 'R', 1, 1, 0, 16, 0, 0, 0, 1, 0, 0, 0, 1};
    static const uint8_t ctl[16] = {'S', 'M', 'T', 'R', 1, 3, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t snap[8] = {0, 1, 0, 8, 0, 0, 0, 1};
    const uint64_t s = 1000000000ull;
    struct smr_config cfg;
    uint8_t out[256];
    struct smr_conn *a, *b, *c, *src;
    const uint8_t *p;
    uint32_t id;
    smr_default_config(&cfg);
    cfg.max_test_s = 3;
    cfg.max_tests_per_client = 1;
    cfg.max_rate_bps = 8000000; /* 1 MB/s */
    smr_init(&X, &cfg);
    X.log = test_log;
    /* One test per client tag: a second rr from tag 7 is refused 13, one
     * from tag 8 runs; data sessions of a test are not counted. */
    a = open_from(7, 0, NULL);
    smr_conn_input(&X, a, rr, 16, 0);
    CHECK(drain(a, out, sizeof out, 0) == 8 && out[5] == 0, "first rr of tag 7 accepted");
    CHECK(smr_client_count(&X, 7, 0) == 1 && smr_client_count(&X, 7, 1) == 0, "one test, none waiting");
    b = open_from(7, 0, NULL);
    CHECK(smr_client_count(&X, 7, 1) == 1, "a session sending its header is waiting");
    smr_conn_input(&X, b, rr, 16, 0);
    CHECK(drain(b, out, sizeof out, 0) > 8 && out[5] == SMR_LIMIT && strstr(lastlog, "tests at once"),
          "second rr of tag 7 refused Limit (%u, %s)", out[5], lastlog);
    c = open_from(8, 0, NULL);
    smr_conn_input(&X, c, ctl, 16, 0);
    CHECK(drain(c, out, sizeof out, 0) == 32 && out[5] == 0 && out[11] == 24, "control of tag 8: Welcome of 24");
    id = ((uint32_t)out[14] << 8) | out[15];
    CHECK(out[19] == 3 && out[23] == 1 && out[29] == 0x7a && out[30] == 0x12 && out[31] == 0,
          "Welcome advertises 3 s, 1 test, 8000000 bit/s");
    src = data(5, id, 1000, 0);
    src->client = 8;
    CHECK(smr_client_count(&X, 8, 0) == 1, "data sessions are not tests");
    /* Pacing: 1 MB/s from the Welcome at 0. */
    smr_conn_input(&X, c, snap, 8, 0);
    drain(c, out, sizeof out, 0);
    smr_tick(&X, s / 1000); /* 1 ms: 1000 bytes allowed */
    CHECK(smr_conn_output(&X, src, &p) == 1000, "a write is due");
    smr_conn_sent(&X, src, 1000, s / 1000);
    smr_conn_sent(&X, src, 1000, s / 1000);
    CHECK(!smr_conn_has_output(&X, src) && smr_conn_output(&X, src, &p) == 0, "2000 bytes at 1 ms: paced");
    CHECK(smr_next_deadline(&X) == 2 * s / 1000, "the next write is due at 2 ms (%llu)",
          (unsigned long long)smr_next_deadline(&X));
    smr_tick(&X, 2 * s / 1000);
    CHECK(smr_conn_has_output(&X, src), "due again at 2 ms");
    /* The longest test: 3 s + 5 s after accept, the rr is aborted and the
     * source stops as after Stop. */
    CHECK(smr_conn_deadline(a) == 8 * s && smr_conn_deadline(src) == 8 * s, "sessions end by 8 s");
    smr_conn_timeout(&X, a, 8 * s);
    CHECK((smr_conn_flags(a) & SMR_F_CLOSE) && strstr(lastlog, "longest test"), "rr aborted: %s", lastlog);
    smr_conn_timeout(&X, src, 8 * s);
    CHECK((smr_conn_flags(src) & SMR_F_SHUT) && !(smr_conn_flags(src) & SMR_F_CLOSE), "source half-closes");
    smr_conn_free(&X, a, 8 * s);
    smr_conn_free(&X, b, 8 * s);
    smr_conn_free(&X, src, 8 * s);
    smr_conn_free(&X, c, 8 * s);
    CHECK(X.active == 0 && X.hi == 0, "all freed");
    /* No limits: the Welcome stays 8 bytes. */
    fresh(8);
    c = open_conn(0);
    smr_conn_input(&X, c, ctl, 16, 0);
    CHECK(drain(c, out, sizeof out, 0) == 16 && out[11] == 8, "no limits: Welcome of 8");
    smr_conn_free(&X, c, 0);
}

static void crr_once(void) {
    static const uint8_t h[20] = {'S', 'M', 'T', 'R', 1, 2, 0, 16, 0, 0, 0, 4, 0, 0, 0, 64, 'a', 'b', 'c', 'd'};
    const uint8_t *p[2];
    size_t n[2];
    struct smr_conn *c;
    fresh(2);
    c = open_conn(0);
    CHECK(smr_conn_input(&X, c, h, 20, 0) == 20, "crr header and request in one piece");
    CHECK(smr_conn_iov(&X, c, p, n) == 2 && n[0] == 8 && n[1] == 64, "status and response in one write");
    smr_conn_sent(&X, c, 72, 0);
    CHECK(smr_conn_output(&X, c, p) == 0, "nothing more after the response");
    smr_conn_input(&X, c, h, 1, 0);
    CHECK(smr_conn_flags(c) & SMR_F_CLOSE, "data after the transaction aborts");
}

static void life_cycle(void) {
    static const uint8_t stop[8] = {0, 2, 0, 8, 0, 0, 0, 9};
    static const uint8_t snap[8] = {0, 1, 0, 8, 0, 0, 0, 1};
    uint8_t out[256], dg[100];
    struct smr_conn *c, *src, *snk;
    uint32_t id, k;
    const uint8_t *p;
    fresh(8);
    c = control(&id, 0);
    src = data(5, id, 1000, 0);
    snk = data(4, id, 0, 0);
    CHECK(smr_conn_output(&X, src, &p) == 0 && !smr_conn_has_output(&X, src),
          "source waits for the test's first Snapshot");
    smr_conn_input(&X, c, snap, 8, 0);
    CHECK(drain(c, out, sizeof out, 0) == 128 && out[31] == 0, "first snapshot: nothing counted yet");
    CHECK(smr_conn_output(&X, src, &p) == 1000 && p == smr_payload && smr_conn_has_output(&X, src),
          "source offers write-size pieces");
    smr_conn_sent(&X, src, 700, 1);
    smr_conn_input(&X, snk, out, 100, 1);
    for (k = 0; k < 5; k++) {
        memset(dg, 0, sizeof dg);
        memcpy(dg, "SMTU\1\4", 6);
        dg[15] = (uint8_t)(k == 3 ? 1 : k);
        dg[27] = (uint8_t)id;
        CHECK(smr_udp_input(&X, dg, sizeof dg, 5) == 0, "stream datagram never answered");
    }
    smr_conn_input(&X, c, snap, 8, 10);
    CHECK(drain(c, out, sizeof out, 10) == 128, "snapshot report");
    CHECK(out[8] == 0 && out[15] == 2 && out[31] == 100 && out[38] == 2 && out[39] == 0xbc, "counts: flags %u", out[8]);
    CHECK(out[47] == 4 && out[55] == 400 % 256 && out[63] == 5 && out[71] == 1, "udp counts");
    /* Stop: the source half-closes, the final report waits for both. */
    smr_conn_input(&X, c, stop, 8, 20);
    CHECK(smr_conn_output(&X, c, &p) == 0, "final report waits for the data sessions");
    CHECK(smr_conn_flags(src) & SMR_F_SHUT, "source half-closes after Stop");
    CHECK(smr_conn_want(c) == 0, "no more control input until the final report");
    smr_conn_eof(&X, snk, 21);
    smr_conn_free(&X, snk, 21);
    CHECK(smr_conn_output(&X, c, &p) == 0, "still one session open");
    smr_tick(&X, 20 + 2000000000ull);
    CHECK(drain(c, out, sizeof out, 30) == 128 && out[7] == 9 && out[8] == (1 | 8), "final at drain deadline (%u)",
          out[8]);
    smr_conn_free(&X, src, 40);
    /* Unknown test, and the test ends with its control session. */
    smr_conn_free(&X, c, 50);
    {
        uint8_t h[16] = {'S', 'M', 'T', 'R', 1, 4, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0};
        struct smr_conn *d = open_conn(60);
        h[11] = (uint8_t)id;
        smr_conn_input(&X, d, h, 16, 60);
        CHECK(drain(d, out, sizeof out, 60) > 8 && out[5] == SMR_UNKNOWN_TEST, "test gone with its control session");
        smr_conn_free(&X, d, 60);
    }
    CHECK(X.active == 0 && X.hi == 0, "all freed");
    /* Stop with nothing open answers at once with the final flag. */
    c = control(&id, 100);
    smr_conn_input(&X, c, stop, 8, 101);
    CHECK(drain(c, out, sizeof out, 101) == 128 && out[8] == 1, "immediate final report");
}

/* ---- bounded work per pass (smr.h) ---- */

static const uint8_t probe_dg[64] = {'S', 'M', 'T', 'U', 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};

/* A backend's loop as smr.h describes it, against bulk data: a 1 MiB rr
 * response and two sources writing 60,000 bytes a call. Each pass begins,
 * answers the datagrams that have come, then takes what the connections
 * offer in the order of their turns (smr_turn), as a stack that takes
 * everything (so only the engine's bound stops a pass). A probe arrives
 * after the first chunk of pass 3. Asserted: no pass moves more than
 * SMR_PASS_BYTES, the probe is answered at the start of the next pass
 * (after at most one pass of bulk data), no busy connection waits more
 * passes for its turn than there are connections, and every byte of the
 * response goes out. */
static void passes_bound_bulk(void) {
    static const uint8_t snap[8] = {0, 1, 0, 8, 0, 0, 0, 1};
    static const uint8_t rr[16] = {'S', 'M', 'T', 'R', 1, 1, 0, 16, 0, 0, 0, 1, 0, 0x10, 0, 0};
    uint8_t out[256], dg[64];
    struct smr_conn *conn[3], *ctl;
    uint64_t rr_sent = 0, after_probe = 0;
    size_t most = 0, got[3] = {0, 0, 0};
    int pass, i, j, pending = 0, answered = -1, arrived = -1, last[3] = {0, 0, 0}, gap = 0, order[3];
    uint32_t id;
    fresh(8);
    ctl = control(&id, 0);
    conn[1] = data(5, id, 60000, 0);
    conn[2] = data(5, id, 60000, 0);
    smr_conn_input(&X, ctl, snap, 8, 0);
    drain(ctl, out, sizeof out, 0);
    conn[0] = open_conn(0);
    smr_conn_input(&X, conn[0], rr, 16, 0);
    drain(conn[0], out, 8, 0);
    smr_conn_input(&X, conn[0], (const uint8_t *)"x", 1, 0);
    for (pass = 0; pass < 60; pass++) {
        size_t moved = 0;
        smr_pass_begin(&X);
        if (pending) {
            memcpy(dg, probe_dg, sizeof dg);
            CHECK(smr_udp_input(&X, dg, sizeof dg, 1) == sizeof dg && dg[5] == 2, "probe answered");
            pending = 0;
            answered = pass;
        }
        /* The order of turns. */
        for (i = 0; i < 3; i++) {
            for (j = i; j > 0 && smr_turn(&X, conn[order[j - 1]]) > smr_turn(&X, conn[i]); j--) order[j] = order[j - 1];
            order[j] = i;
        }
        for (i = 0; i < 3; i++) {
            struct smr_conn *c = conn[order[i]];
            const uint8_t *p[2];
            size_t n[2], k, calls = 0;
            /* (bounded here, so an engine without the bound fails, not hangs) */
            while (calls++ < 64 && (k = smr_conn_iov(&X, c, p, n)) > 0) {
                size_t w = n[0] + (k > 1 ? n[1] : 0);
                moved += w;
                got[order[i]] += w;
                if (c != conn[0] || rr_sent < 1u << 20) { /* busy: how long since its last turn */
                    if (pass - last[order[i]] > gap) gap = pass - last[order[i]];
                    last[order[i]] = pass;
                }
                if (c == conn[0]) rr_sent += w;
                if (arrived >= 0 && answered < 0) after_probe += w;
                smr_conn_sent(&X, c, w, 1);
                if (pass == 3 && arrived < 0) {
                    arrived = pass; /* the probe comes in while this chunk is written */
                    pending = 1;
                }
            }
        }
        if (moved > most) most = moved;
    }
    CHECK(most > 0 && most <= SMR_PASS_BYTES, "no pass moves more than %u bytes of bulk (most: %zu)", SMR_PASS_BYTES,
          most);
    CHECK(answered == arrived + 1, "the probe is answered at the next pass (came in pass %d, answered in %d)",
          arrived, answered);
    CHECK(after_probe <= SMR_PASS_BYTES, "the probe waits behind %llu bytes of bulk, one pass at most",
          (unsigned long long)after_probe);
    CHECK(got[0] && got[1] && got[2] && gap <= 3,
          "every connection gets its turn, none waits more than 3 passes (%zu, %zu, %zu; longest wait %d)", got[0],
          got[1], got[2], gap);
    CHECK(rr_sent == 1u << 20 && !smr_conn_has_output(&X, conn[0]), "the whole 1 MiB response went (%llu)",
          (unsigned long long)rr_sent);
    /* Turns begin after the last connection that moved bytes. */
    smr_conn_input(&X, conn[1], out, 1, 2);
    CHECK(smr_turn(&X, conn[1]) == SMR_MAX_CONNS + SMR_SPARE_CONNS - 1 &&
              smr_turn(&X, &X.conns[smr_conn_index(&X, conn[1]) + 1]) == 0,
          "after a read, that connection's turn comes last, the next slot's first");
    /* Reads count too: what a pass read leaves less to write. A spent pass
     * offers nothing, and still answers UDP. */
    smr_pass_begin(&X);
    CHECK(smr_conn_read_max(&X, conn[1]) == SMR_PASS_BYTES, "a fresh pass may read SMR_PASS_BYTES");
    smr_conn_input(&X, conn[1], out, 200, 2);
    CHECK(X.pass_left == SMR_PASS_BYTES - 200 && smr_conn_read_max(&X, conn[1]) == SMR_PASS_BYTES - 200,
          "200 bytes read: less left to read");
    {
        const uint8_t *p;
        size_t n, written = 0, calls = 0;
        while (calls++ < 1000 && (n = smr_conn_output(&X, conn[2], &p)) > 0) {
            written += n;
            smr_conn_sent(&X, conn[2], n, 2);
        }
        CHECK(written == SMR_PASS_BYTES - 200, "and less to write (%zu)", written);
        CHECK(smr_conn_output(&X, conn[2], &p) == 0 && smr_conn_has_output(&X, conn[2]) &&
                  smr_conn_read_max(&X, conn[1]) == 0,
              "spent: nothing offered, nothing to read, output still due");
    }
    memcpy(dg, probe_dg, sizeof dg);
    CHECK(smr_udp_input(&X, dg, sizeof dg, 3) == sizeof dg, "a spent pass still answers a probe");
    /* A record is never cut: a Report due when the pass has 10 bytes left
     * goes whole (a client reads it as one piece), then the pass is spent. */
    {
        static const uint8_t snap2[8] = {0, 1, 0, 8, 0, 0, 0, 2};
        const uint8_t *p[2];
        size_t n[2];
        smr_pass_begin(&X);
        smr_conn_input(&X, ctl, snap2, 8, 3);
        while (X.pass_left > 10 && smr_conn_output(&X, conn[1], p) > 0)
            smr_conn_sent(&X, conn[1], X.pass_left - 10 < 60000 ? X.pass_left - 10 : 60000, 3);
        CHECK(X.pass_left == 10 && smr_conn_iov(&X, ctl, p, n) == 1 && n[0] == SMR_REPORT_LEN,
              "10 bytes left: the 128-byte Report is offered whole (%zu)", n[0]);
        smr_conn_sent(&X, ctl, n[0], 3);
        CHECK(X.pass_left == 0 && smr_conn_output(&X, ctl, p) == 0 && smr_conn_output(&X, conn[1], p) == 0,
              "and the pass is spent");
    }
    for (i = 0; i < 3; i++) smr_conn_free(&X, conn[i], 4);
    smr_conn_free(&X, ctl, 4);
}

/* rr without stamps reads every queued request at once and answers them
 * back to back in one piece (at most SMR_TX_CHUNK), reading no further
 * while it owes SMR_RR_QUEUE bytes; with stamps, one request at a time. */
static void rr_queued_requests(void) {
    static const uint8_t rr[16] = {'S', 'M', 'T', 'R', 1, 1, 0, 16, 0, 0, 0, 64, 0, 0, 0, 64};
    static const uint8_t big[16] = {'S', 'M', 'T', 'R', 1, 1, 0, 16, 0, 0, 0, 1, 0, 0x10, 0, 0};
    static uint8_t req[SMR_RR_QUEUE + 64];
    uint8_t out[256];
    const uint8_t *p[2];
    size_t n[2];
    struct smr_conn *c;
    fresh(2);
    c = open_conn(0);
    smr_conn_input(&X, c, rr, 16, 0);
    drain(c, out, 8, 0);
    CHECK(smr_conn_want(c) == SMR_RX_ANY, "rr reads whatever has come");
    smr_pass_begin(&X);
    CHECK(smr_conn_input(&X, c, req, 10 * 64 + 30, 1) == 670, "ten requests and part of one taken in one call");
    CHECK(smr_conn_iov(&X, c, p, n) == 1 && n[0] == 640 && p[0] == smr_payload, "ten responses in one write");
    smr_conn_sent(&X, c, 100, 1);
    CHECK(smr_conn_output(&X, c, p) == 540, "a short write: the rest of them next");
    smr_conn_sent(&X, c, 540, 1);
    CHECK(!smr_conn_has_output(&X, c), "all ten answered");
    smr_conn_input(&X, c, req, 34, 1);
    CHECK(smr_conn_has_output(&X, c) && drain(c, out, sizeof out, 1) == 64, "the eleventh completed");
    smr_pass_begin(&X);
    smr_conn_input(&X, c, req, SMR_RR_QUEUE, 2);
    CHECK(smr_conn_want(c) == 0, "owing %u bytes: no more reads", SMR_RR_QUEUE);
    smr_conn_sent(&X, c, 64, 2);
    CHECK(smr_conn_want(c) == SMR_RX_ANY, "one response out: reads again");
    smr_conn_free(&X, c, 3);
    /* Large responses: one SMR_TX_CHUNK at a time, every byte. */
    c = open_conn(0);
    smr_conn_input(&X, c, big, 16, 0);
    drain(c, out, 8, 0);
    smr_conn_input(&X, c, (const uint8_t *)"xyz", 3, 1);
    {
        uint64_t total = 0;
        size_t k, most = 0;
        for (;;) {
            smr_pass_begin(&X);
            if (!(k = smr_conn_output(&X, c, p))) break;
            most = k > most ? k : most;
            total += k;
            smr_conn_sent(&X, c, k, 1);
        }
        CHECK(total == 3u << 20 && most <= SMR_TX_CHUNK, "three 1 MiB responses, %zu bytes a call at most", most);
    }
    smr_conn_free(&X, c, 3);
}

/* ---- limits: the C defaults of a stock build against the table ---- */

/* Key n of object o (a string token), or -1. */
static int tj_key(int o, int n) {
    int i = o + 1;
    if (o < 0 || tj[o].type != J_OBJ || n >= tj[o].size) return -1;
    while (n--) i = tj[tj[i].next].next;
    return i;
}

static void vec_limits(int lim) {
    const struct smr_stock_limit *l;
    char key[64];
    int i, seen = 0;
    CHECK(lim >= 0 && tj[lim].type == J_OBJ, "vectors.json has a limits object");
    for (i = 0; lim >= 0 && i < tj[lim].size; i++) {
        int k = tj_key(lim, i);
        tj_str(k, key, sizeof key);
        if (strcmp(key, "about") == 0) continue;
        for (l = smr_stock_limits; l->key && strcmp(l->key, key) != 0; l++) continue;
        CHECK(l->key != NULL, "limit '%s' of vectors.json is unknown to the C responder (tests/smr_stock.c)", key);
        if (!l->key) continue;
        seen++;
        CHECK(tj_num(tj[k].next) * l->unit == l->value, "limit %s: vectors %llu, C default %llu (x%llu)", key,
              tj_num(tj[k].next), (unsigned long long)l->value, (unsigned long long)l->unit);
    }
    for (l = smr_stock_limits; l->key; l++) CHECK(tj_get(lim, l->key) >= 0, "C limit %s not in vectors.json", l->key);
    CHECK(seen == (int)(l - smr_stock_limits), "every C limit compared (%d)", seen);
}

/* The runtime defaults come from the same constants; behaviour at the
 * limits that fit a test build: tests open at once (Busy), name length. */
static void limits_behaviour(void) {
    struct smr_config cfg;
    struct smr_conn *c;
    uint8_t out[256];
    uint32_t id;
    size_t i;
    smr_default_config(&cfg);
    CHECK(cfg.max_sessions == SMR_MAX_CONNS && cfg.max_msg == SMR_DEFAULT_MAX_MSG &&
              cfg.header_timeout_ns == SMR_DEFAULT_HEADER_TIMEOUT_NS &&
              cfg.idle_timeout_ns == SMR_DEFAULT_IDLE_TIMEOUT_NS,
          "smr_default_config uses the SMR_DEFAULT_ constants");
    fresh(8);
    control(&id, 0);
    for (i = 1; i < SMR_MAX_TESTS; i++) X.tests[i].id = (uint32_t)(1000 + i); /* slots taken */
    c = open_conn(0);
    smr_conn_input(&X, c, (const uint8_t *)"SMTR\1\3\0\20\0\0\0\0\0\0\0\0", 16, 0);
    CHECK(drain(c, out, sizeof out, 0) > 8 && out[5] == SMR_BUSY, "control session %d is Busy, got code %u",
          SMR_MAX_TESTS + 1, out[5]);
    snprintf((char *)out, sizeof out, "%d throughput tests open, the limit", SMR_MAX_TESTS);
    CHECK(strstr(lastlog, (char *)out) != NULL, "Busy names the limit: %s", lastlog);
}

/* ---- object mode ---- */

/* The pattern, written again from docs/protocol.md 9.5 for the checks. */
static uint8_t tst_byte(uint64_t k, uint64_t off) {
    uint64_t x = ((off / 8) ^ (k << 40)) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return (uint8_t)(x >> (56 - 8 * (off % 8)));
}

static const uint8_t obj_hdr[16] = {'S', 'M', 'T', 'R', 1, 16, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0};

/* A fresh engine with these objects and one object session, accepted. */
static struct smr_conn *obj_session(const uint32_t *sizes, uint32_t n) {
    struct smr_config cfg;
    struct smr_conn *c;
    uint8_t out[16];
    smr_default_config(&cfg);
    cfg.max_sessions = 4;
    if (sizes) {
        cfg.nobjects = n;
        memcpy(cfg.object_size, sizes, n * sizeof *sizes);
    }
    smr_init(&X, &cfg);
    X.log = test_log;
    lastlog[0] = 0;
    c = open_conn(0);
    smr_conn_input(&X, c, obj_hdr, 16, 0);
    CHECK(drain(c, out, 8, 0) == 8 && memcmp(out, "SMTR\1\0\0\0", 8) == 0, "object session accepted");
    return c;
}

static void obj_pattern_vectors(int pat) {
    int s = tj_get(pat, "samples"), i;
    uint64_t off;
    uint8_t want[64], got[64];
    for (i = 0; i < tj[s].size; i++) {
        int v = tj_item(s, i);
        size_t n = tj_hex(tj_get(v, "hex"), want, sizeof want), j;
        uint32_t k = (uint32_t)tj_num(tj_get(v, "k"));
        off = tj_num(tj_get(v, "offset"));
        smr_pattern(got, k, off, n);
        CHECK(memcmp(got, want, n) == 0, "pattern sample k %u offset %llu", k, (unsigned long long)off);
        for (j = 0; j < n; j++) got[j] = tst_byte(k, off + j);
        CHECK(memcmp(got, want, n) == 0, "the test's own pattern, sample k %u", k);
    }
    for (off = 0; off < 24; off++) {
        size_t n, j, bad = 0;
        for (n = 0; n < 30; n++) {
            smr_pattern(got, 7, off, n);
            for (j = 0; j < n; j++) bad += got[j] != tst_byte(7, off + j);
        }
        CHECK(bad == 0, "pattern pieces from offset %llu", (unsigned long long)off);
    }
}

static void obj_names(void) {
    static const uint32_t sizes[] = {64, 64, 4096, 100, 1u << 20, 8800u << 10, 3221225472u, 3072, 64};
    static const char *const names[] = {"64", "64-2", "4K", "100", "1M", "8800K", "3072M", "3K", "64-3"};
    struct smr_config cfg;
    char b[SMR_OBJ_NAME_LEN];
    uint32_t i, list = 4;
    smr_default_config(&cfg);
    CHECK(cfg.nobjects == 4, "default catalogue: 4 objects");
    for (i = 0; i < 4; i++) {
        static const char *const def[] = {"4K", "64K", "1M", "8800K"};
        size_t n = smr_object_name(&cfg, i, b);
        CHECK(n == strlen(def[i]) && memcmp(b, def[i], n) == 0, "default object %u is %s", i, def[i]);
    }
    cfg.nobjects = sizeof sizes / sizeof sizes[0];
    memcpy(cfg.object_size, sizes, sizeof sizes);
    for (i = 0; i < cfg.nobjects; i++) {
        size_t n = smr_object_name(&cfg, i, b);
        CHECK(n == strlen(names[i]) && memcmp(b, names[i], n) == 0, "object %u named %s", i, names[i]);
        list += (uint32_t)(14 + n);
    }
    smr_init(&X, &cfg);
    CHECK(X.list_len == list, "LIST body length %u", X.list_len);
    cfg.object_size[0] = 4294967295u;
    cfg.object_size[1] = 4294967295u;
    CHECK(smr_object_name(&cfg, 1, b) == 12, "longest name fits SMR_OBJ_NAME_LEN");
}

/* Each request vector: valid ones answered 0, bad ones with their code and
 * a close, the bytes after a bad head left unread (drained by the linger). */
static void obj_request_vector(int v, int bytewise) {
    uint8_t req[300], in[600], out[8192];
    char name[128];
    size_t n = tj_hex(tj_get(v, "hex"), req, sizeof req), got;
    struct smr_conn *c = obj_session(NULL, 0);
    tj_str(tj_get(v, "name"), name, sizeof name);
    memcpy(in, req, n);
    memset(in + n, 'A', 300); /* a name the client sent anyway, or more requests */
    if (tj_is(tj_get(v, "valid"), "true")) {
        feed(c, in, n, bytewise, 1);
        got = drain(c, out, sizeof out, 1);
        CHECK(got >= 12 && out[0] == 0, "%s: answered ok", name);
        if (tj_is(tj_get(v, "op"), "list"))
            CHECK(got == 12 + X.list_len && out[15] == 4, "%s: the catalogue, 4 objects", name);
        else
            CHECK(got == 12 + 4096 && out[12] == tst_byte(0, 0) && out[12 + 4095] == tst_byte(0, 4095),
                  "%s: object 0's 4096 bytes", name);
        CHECK(smr_conn_want(c) == 4 && !smr_conn_flags(c), "%s: waits for the next request", name);
        return;
    }
    feed(c, in, n + 300, bytewise, 1);
    got = drain(c, out, sizeof out, 1);
    CHECK(got > 12 && out[0] == tj_num(tj_get(v, "code")) && got == 12 + (size_t)out[11],
          "%s: answered %llu, got %u (%zu bytes)", name, tj_num(tj_get(v, "code")), out[0], got);
    CHECK((smr_conn_flags(c) & SMR_F_SHUT) && smr_conn_want(c) == SMR_RX_ANY, "%s: closes, draining", name);
    CHECK(strstr(lastlog, "bad request") != NULL, "%s: logged (%s)", name, lastlog);
    if (req[0] == 9) CHECK(memcmp(out + 12, "unknown object request op 9", 27) == 0, "%s: reason", name);
    if (req[3] == 0 && req[2] == 1)
        CHECK(memcmp(out + 12, "bad name length 256 (LIST takes 0, FETCH 1..255)", 48) == 0, "%s: reason", name);
}

static void obj_response_vectors(int rs) {
    uint8_t want[256], out[256];
    int i;
    for (i = 0; i < tj[rs].size; i++) {
        int v = tj_item(rs, i);
        size_t n = tj_hex(tj_get(v, "hex"), want, sizeof want), got;
        struct smr_conn *c;
        if (tj_num(tj_get(v, "code")) == SMR_NOT_FOUND) {
            c = obj_session(NULL, 0);
            smr_conn_input(&X, c, (const uint8_t *)"\2\0\0\1x", 5, 1);
            got = drain(c, out, sizeof out, 1);
            CHECK(got == n && memcmp(out, want, n) == 0, "not found response bytes");
            CHECK(smr_conn_want(c) == 4, "the session goes on after NotFound");
        } else {
            /* The fixture's first entry is pattern object "4K": a catalogue
             * of that one object is the same entry bytes. */
            static const uint32_t one = 4096;
            c = obj_session(&one, 1);
            smr_conn_input(&X, c, (const uint8_t *)"\1\0\0\0", 4, 1);
            got = drain(c, out, sizeof out, 1);
            CHECK(got == 12 + 4 + 16 && out[11] == 20 && out[15] == 1, "catalogue of one object");
            CHECK(memcmp(out + 16, want + 16, 16) == 0, "the entry of pattern object 4K, byte for byte");
        }
    }
}

static void obj_header_and_off(const char *hex) {
    uint8_t h[16], out[128];
    struct smr_config cfg;
    struct smr_conn *c;
    uint8_t mode = 0;
    uint32_t a, b;
    int i;
    for (i = 0; i < 16; i++) sscanf(hex + 2 * i, "%2hhx", &h[i]);
    CHECK(memcmp(h, obj_hdr, 16) == 0, "objects.header_hex is the 16-byte mode-16 header");
    CHECK(smr_parse_header(h, 16, &mode, &a, &b) == 0 && mode == 16, "mode 16 header parses");
    h[7] = 12;
    CHECK(smr_parse_header(h, 16, &mode, &a, &b) == SMR_BAD_HEADER, "mode 16 header of 12 bytes: BadHeader");
    smr_default_config(&cfg);
    cfg.nobjects = 0;
    smr_init(&X, &cfg);
    X.log = test_log;
    c = open_conn(0);
    smr_conn_input(&X, c, obj_hdr, 16, 0);
    CHECK(drain(c, out, sizeof out, 0) > 8 && out[5] == SMR_UNKNOWN_MODE &&
              memcmp(out + 8, "object mode is not enabled", 26) == 0,
          "object mode off: UnknownMode");
}

/* What a client reads: responses one after another, each body checked
 * as it streams (pattern objects) or kept (catalogue, reasons). */
struct obj_reader {
    uint8_t head[12], body[512];
    size_t head_got, body_len, done;
    uint64_t left, off, bad;
    int k[16];         /* per response: pattern object expected, or -1 */
    unsigned code[16]; /* per response, as read */
    uint64_t len[16];
    char kept[16][64];
};

static void obj_read(struct obj_reader *r, const uint8_t *p, size_t n) {
    while (n) {
        size_t take;
        if (r->head_got < 12) {
            r->head[r->head_got++] = *p++;
            n--;
            if (r->head_got < 12) continue;
            r->code[r->done] = r->head[0];
            for (r->left = 0, take = 4; take < 12; take++) r->left = r->left << 8 | r->head[take];
            r->len[r->done] = r->left;
            r->off = r->body_len = 0;
        } else {
            size_t i;
            take = n < r->left ? n : (size_t)r->left;
            for (i = 0; i < take; i++, r->off++)
                if (r->k[r->done] >= 0)
                    r->bad += p[i] != tst_byte((uint64_t)r->k[r->done], r->off);
                else if (r->body_len < sizeof r->body)
                    r->body[r->body_len++] = p[i];
            p += take;
            n -= take;
            r->left -= take;
        }
        if (r->head_got == 12 && r->left == 0) {
            if (r->k[r->done] < 0) memcpy(r->kept[r->done], r->body, r->body_len < 63 ? r->body_len : 63);
            r->done++;
            r->head_got = 0;
        }
    }
}

/* Pipelined requests in one buffer, fed in small pieces, output taken in
 * odd-sized pieces (one and two at a time): every answer in order. */
static void obj_session_pipelined(void) {
    static struct obj_reader r;
    uint8_t in[1024];
    size_t len = 0, off = 0, step = 0, i, consumed;
    struct smr_conn *c = obj_session(NULL, 0);
    static const char *const fetch[] = {"1M", "nope", NULL, "4K", "8800K", "64K"};
    static const int ks[] = {-1, 2, -1, -1, 0, 3, 1};
    memset(&r, 0, sizeof r);
    memcpy(r.k, ks, sizeof ks);
    memcpy(in, "\1\0\0\0", 4), len = 4;
    for (i = 0; i < 6; i++) {
        size_t n = fetch[i] ? strlen(fetch[i]) : 255;
        in[len] = 2, in[len + 1] = 0, in[len + 2] = 0, in[len + 3] = (uint8_t)n;
        if (fetch[i]) memcpy(in + len + 4, fetch[i], n);
        else memset(in + len + 4, 'a', n);
        len += 4 + n;
    }
    consumed = smr_conn_input(&X, c, in, len, 1);
    CHECK(consumed == 4, "one request at a time: the rest waits (%zu)", consumed);
    off = consumed;
    for (step = 0; step < 100000; step++) {
        const uint8_t *p[2];
        size_t n[2], k, take;
        int due;
        if (off < len) off += smr_conn_input(&X, c, in + off, 1 + step % 37 < len - off ? 1 + step % 37 : len - off, 2);
        due = smr_conn_has_output(&X, c);
        smr_pass_begin(&X);
        k = step % 3 ? smr_conn_iov(&X, c, p, n) : (n[0] = smr_conn_output(&X, c, &p[0])) > 0;
        r.bad += !due != !k; /* has_output agrees with what is offered */
        if (!k && off == len) break;
        take = 1 + (step * 7919) % 20000;
        if (take > n[0]) take = n[0];
        obj_read(&r, p[0], take);
        if (k == 2 && take == n[0]) {
            size_t t2 = (step * 131) % (n[1] + 1);
            obj_read(&r, p[1], t2);
            take += t2;
        }
        smr_conn_sent(&X, c, take, 2);
    }
    CHECK(r.done == 7, "seven answers (%zu)", r.done);
    CHECK(r.code[0] == 0 && r.len[0] == X.list_len && r.kept[0][3] == 4, "LIST first");
    CHECK(r.code[1] == 0 && r.len[1] == 1u << 20, "then 1M");
    CHECK(r.code[2] == SMR_NOT_FOUND && strcmp(r.kept[2], "no object named 'nope'") == 0, "then NotFound: %s",
          r.kept[2]);
    CHECK(r.code[3] == SMR_NOT_FOUND && strcmp(r.kept[3], "no object named 'aaaaaaaaaaaaaaaa...'") == 0,
          "a 255-byte name: NotFound, read whole (%s)", r.kept[3]);
    CHECK(r.code[4] == 0 && r.len[4] == 4096 && r.code[5] == 0 && r.len[5] == 8800u << 10 && r.code[6] == 0 &&
              r.len[6] == 65536,
          "then 4K, 8800K, 64K");
    CHECK(r.bad == 0, "every object byte is the pattern (%llu wrong)", (unsigned long long)r.bad);
    CHECK(smr_conn_want(c) == 4 && !smr_conn_flags(c), "waits for the next request");
    lastlog[0] = 0;
    smr_conn_eof(&X, c, 3);
    CHECK((smr_conn_flags(c) & SMR_F_CLOSE) && lastlog[0] == 0, "close between requests: a normal end");
    smr_conn_free(&X, c, 3);
    CHECK(X.active == 0 && X.hi == 0, "object session freed");
}

/* The catalogue as a client parses it; a close inside a request. */
static void obj_list_and_abort(void) {
    static const uint32_t sizes[] = {64, 64, 4096};
    static const char want[] = "\0\0\0\3"
                               "\0\0\0\0\0\0\0\100\0\0\0\0\1\2" "64"
                               "\0\0\0\0\0\0\0\100\0\0\0\0\1\4" "64-2"
                               "\0\0\0\0\0\0\20\0\0\0\0\0\1\2" "4K";
    uint8_t out[256];
    struct smr_conn *c = obj_session(sizes, 3);
    size_t got;
    smr_conn_input(&X, c, (const uint8_t *)"\1\0\0\0", 4, 1);
    got = drain(c, out, sizeof out, 1);
    CHECK(got == 12 + sizeof want - 1 && memcmp(out + 12, want, sizeof want - 1) == 0, "catalogue bytes");
    smr_conn_input(&X, c, (const uint8_t *)"\2\0\0\4" "64-2", 8, 2);
    got = drain(c, out, sizeof out, 2);
    CHECK(got == 12 + 64 && out[12] == tst_byte(1, 0) && out[75] == tst_byte(1, 63), "64-2 is object 1");
    smr_conn_input(&X, c, (const uint8_t *)"\2\0\0\4" "64", 6, 3);
    smr_conn_eof(&X, c, 4);
    CHECK((smr_conn_flags(c) & SMR_F_CLOSE) && strstr(lastlog, "mid-request (6 of 8 bytes)"), "close mid-name: %s",
          lastlog);
    c = obj_session(NULL, 0);
    smr_conn_input(&X, c, (const uint8_t *)"\2\0\0\2" "4K", 6, 0);
    smr_conn_timeout(&X, c, smr_conn_deadline(c));
    CHECK((smr_conn_flags(c) & SMR_F_CLOSE) && strstr(lastlog, "idle"), "idle mid-response: %s", lastlog);
}

static void objects(int o) {
    int rq = tj_get(o, "requests"), i;
    char hex[40];
    tj_str(tj_get(o, "header_hex"), hex, sizeof hex);
    obj_header_and_off(hex);
    for (i = 0; i < tj[rq].size; i++) {
        obj_request_vector(tj_item(rq, i), 0);
        obj_request_vector(tj_item(rq, i), 1);
    }
    CHECK(tj[rq].size >= 6, "object request vectors (%d)", tj[rq].size);
    obj_response_vectors(tj_get(o, "responses"));
    obj_pattern_vectors(tj_get(o, "pattern"));
    obj_names();
    obj_list_and_abort();
    obj_session_pipelined();
}

/* Random bytes into every state must not crash, overrun or hang. */
static void garbage(void) {
    uint8_t b[64], out[4096];
    unsigned seed = 12345, i, j;
    for (i = 0; i < 20000; i++) {
        struct smr_conn *c;
        size_t n = 1 + (seed % 63);
        fresh(2);
        c = open_conn(0);
        for (j = 0; j < n; j++) b[j] = (uint8_t)((seed = seed * 1103515245u + 12345u) >> 16);
        if (i % 3 == 0) memcpy(b, "SMTR\1", 5);
        if (i % 6 == 0) b[5] = (uint8_t)((i / 6) % 6 == 5 ? 16 : 1 + (i / 6) % 6), b[6] = 0, b[7] = 16;
        smr_conn_input(&X, c, b, n, 0);
        drain(c, out, sizeof out, 0);
        smr_conn_input(&X, c, b, n, 1);
        drain(c, out, sizeof out, 1);
        smr_conn_free(&X, c, 2);
        smr_udp_input(&X, b, n, 1);
    }
    CHECK(X.hi == 0, "garbage leaves no slot behind");
}

/* ---- fair slots (smr_slots.c) ---- */

/* What a backend does with a connection given up for a new one: takes its
 * record, closes it as it asks, frees the slot. Returns the record. */
static size_t give_up(struct smr_conn *v, uint8_t *out, size_t cap, uint64_t now) {
    size_t n = drain(v, out, cap, now);
    CHECK((smr_conn_flags(v) & (SMR_F_SHUT | SMR_F_CLOSE)) == (SMR_F_SHUT | SMR_F_CLOSE),
          "given up: half-closed and closed once its record is out (flags %u)", smr_conn_flags(v));
    smr_conn_free(&X, v, now);
    return n;
}

/* The share of one address: max_sessions less half of it, at most
 * SMR_CLIENT_RESERVE kept for others; at least 1. This build holds at
 * most SMR_MAX_CONNS (8) sessions, whatever the config says. */
static void fair_share(void) {
    static const uint32_t want[9] = {1, 1, 1, 2, 2, 3, 3, 4, 4};
    struct smr_config cfg;
    char line[SMR_LIMITS_LINE];
    uint32_t n;
    smr_default_config(&cfg);
    for (n = 0; n <= 8; n++) {
        cfg.max_sessions = n;
        CHECK(smr_client_share(&cfg) == want[n], "share of %u sessions: %u, got %u", n, want[n],
              smr_client_share(&cfg));
    }
    cfg.max_sessions = 1024;
    CHECK(smr_client_share(&cfg) == 4, "capped at this build's SMR_MAX_CONNS");
    cfg.max_sessions = 6;
    smr_limits_line(&cfg, line);
    CHECK(strcmp(line, "limits: 6 sessions, 3 from one address at most; header within 5000 ms; a connection still "
                       "sending it gives way to a new one when all are taken") == 0,
          "limits line: %s", line);
    cfg.max_sessions = 4000000000u;
    cfg.header_timeout_ns = 4000000000000000ull;
    CHECK(smr_limits_line(&cfg, line) < SMR_LIMITS_LINE, "the longest limits line fits");
}

/* An idle flood from one address (tag 2) never sends a byte: past its
 * share each new connection takes the place of its own oldest one, so it
 * never holds more than 3 of 6 sessions; when the table is full, the
 * oldest connection still sending its header gives way to anyone's. */
static void fair_idle_flood(void) {
    static const uint8_t rr[16] = {'S', 'M', 'T', 'R', 1, 1, 0, 16, 0, 0, 0, 1, 0, 0, 0, 1};
    struct smr_conn *flood[3], *c, *v, *mine[3];
    uint8_t out[256];
    int i;
    fresh(6);
    for (i = 0; i < 3; i++) {
        flood[i] = open_from(2, (uint64_t)i, &v);
        CHECK(flood[i] && !v && flood[i]->phase != 0, "flood connection %d taken, none given up", i);
    }
    for (i = 3; i < 40; i++) {
        c = open_from(2, (uint64_t)i, &v);
        CHECK(v == flood[i % 3], "flood connection %d takes the place of its own oldest", i);
        CHECK(give_up(v, out, sizeof out, (uint64_t)i) > 8 && out[5] == SMR_BUSY &&
                  memcmp(out + 8, "evicted: this connection had not finished its header", 52) == 0,
              "the one given up gets Busy, saying why");
        CHECK(strstr(lastlog, "busy: evicted:") != NULL, "and it is logged: %s", lastlog);
        flood[i % 3] = c;
    }
    CHECK(X.active == 3 && smr_client_count(&X, 2, -1) == 3, "the flood holds 3 (active %u)", X.active);
    /* Three others are served beside it: rr sessions past their header. */
    for (i = 0; i < 3; i++) {
        mine[i] = open_from((uint32_t)(10 + i), 50, &v);
        smr_conn_input(&X, mine[i], rr, 16, 50);
        CHECK(!v && drain(mine[i], out, sizeof out, 50) == 8 && out[5] == 0, "session %d of another accepted", i);
    }
    /* Full: the next newcomer takes the place of the oldest header (the
     * flood's, opened at 37: flood[37 % 3]). */
    c = open_from(20, 60, &v);
    CHECK(v == flood[1] && c->phase != 0 && X.active == 6, "a full table gives up the flood's oldest");
    give_up(v, out, sizeof out, 60);
    smr_conn_input(&X, c, rr, 16, 60);
    CHECK(drain(c, out, sizeof out, 60) == 8 && out[5] == 0, "and serves the newcomer");
    /* Full again, and only the flood still sends a header: its next
     * takes the place of its oldest (opened at 38). */
    c = open_from(2, 70, &v);
    CHECK(v == flood[2] && smr_client_count(&X, 2, -1) == 2, "the flood still rotates through its own");
    give_up(v, out, sizeof out, 70);
    for (i = (int)X.hi - 1; i >= 0; i--)
        if (X.conns[i].phase) smr_conn_free(&X, &X.conns[i], 80);
    CHECK(X.active == 0 && X.hi == 0, "all freed");
}

/* Sessions past their header are never given up: a full table of them
 * refuses Busy naming the limit, and an address at its share is refused
 * Busy naming the share while others still get in. */
static void fair_busy(void) {
    static const uint8_t rr[16] = {'S', 'M', 'T', 'R', 1, 1, 0, 16, 0, 0, 0, 1, 0, 0, 0, 1};
    struct smr_conn *s[4], *c, *v;
    uint8_t out[256];
    int i;
    fresh(4); /* one address holds 2 at most */
    for (i = 0; i < 2; i++) {
        s[i] = open_from(9, 0, &v);
        smr_conn_input(&X, s[i], rr, 16, 0);
        CHECK(drain(s[i], out, sizeof out, 0) == 8 && out[5] == 0, "tag 9 session %d accepted", i);
    }
    c = open_from(9, 1, &v);
    CHECK(!v && drain(c, out, sizeof out, 1) > 8 && out[5] == SMR_BUSY &&
              strstr(lastlog, "2 sessions from this address, the most one address may hold"),
          "at its share: Busy naming it (%s)", lastlog);
    CHECK(!(smr_conn_flags(c) & SMR_F_CLOSE) && X.active == 2, "a refusal lingers, uncounted");
    smr_conn_free(&X, c, 1);
    for (i = 2; i < 4; i++) {
        s[i] = open_from((uint32_t)(30 + i), 2, &v);
        smr_conn_input(&X, s[i], rr, 16, 2);
        CHECK(!v && drain(s[i], out, sizeof out, 2) == 8 && out[5] == 0, "another address gets session %d", i);
    }
    c = open_from(40, 3, &v);
    CHECK(!v && drain(c, out, sizeof out, 3) > 8 && out[5] == SMR_BUSY &&
              strstr(lastlog, "busy: 4 sessions running, the limit"),
          "full of sessions: Busy naming the limit (%s)", lastlog);
    smr_conn_free(&X, c, 3);
    for (i = 0; i < 4; i++) smr_conn_free(&X, s[i], 4);
    CHECK(X.active == 0 && X.hi == 0, "all freed");
}

/* With a secret, a connection that sent its header but no proof gives way
 * too; the challenge going out does not move its deadline (the proof is
 * due within the header timeout, as the Rust responder has it); one whose
 * challenge is only half out is passed over. */
static void fair_auth(void) {
    static const uint8_t h[24] = {'S', 'M', 'T', 'R', 1, 1, 0, 24, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0};
    const uint64_t t0 = 1000, ht = SMR_DEFAULT_HEADER_TIMEOUT_NS;
    struct smr_conn *a, *b, *c, *v;
    const uint8_t *p;
    uint8_t out[256];
    fresh(2);
    smr_auth_key(&X.cfg, (const uint8_t *)"s3cret", 6);
    a = open_from(50, t0, &v);
    smr_conn_input(&X, a, h, 24, t0);
    CHECK(drain(a, out, sizeof out, t0 + 5) == 24 && memcmp(out, "SMTA\1", 5) == 0, "challenged");
    CHECK(smr_conn_deadline(a) == t0 + ht, "the challenge does not move the deadline");
    b = open_from(51, t0 + 1, &v);
    smr_conn_input(&X, b, h, 24, t0 + 1);
    smr_pass_begin(&X);
    CHECK(smr_conn_output(&X, b, &p) == 24, "b's challenge due");
    smr_conn_sent(&X, b, 10, t0 + 1); /* 10 of its 24 bytes out */
    c = open_from(52, t0 + 2, &v);
    CHECK(v == a, "the oldest without a proof gives way");
    give_up(v, out, sizeof out, t0 + 2);
    open_from(53, t0 + 3, &v);
    CHECK(v == c, "one with its challenge half out is passed over: the next oldest gives way");
    give_up(v, out, sizeof out, t0 + 3);
    CHECK(smr_conn_deadline(b) == t0 + 1 + ht, "a part of the challenge out does not move it either");
    smr_conn_timeout(&X, b, t0 + 1 + ht);
    CHECK(strstr(lastlog, "no proof within the header timeout") != NULL, "no proof: Auth at the header timeout");
    smr_conn_free(&X, b, t0 + ht + 1);
    CHECK(X.active == 1, "one left (active %u)", X.active);
    for (v = X.conns + X.hi; v-- > X.conns;)
        if (v->phase) smr_conn_free(&X, v, t0 + ht + 2);
}

/* ---- admission (smr_admit.c) ---- */

static int allowed(const struct smr_admit *m, uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    const uint8_t v4[4] = {a, b, c, d};
    return smr_admit_allowed(m, v4, 4);
}

/* --allow: networks of both families, prefixes on and off byte edges. */
static void admit_allow(void) {
    static const uint8_t ten[4] = {10, 0, 0, 0}, lan[4] = {192, 168, 4, 0}, one[4] = {198, 18, 0, 7};
    static const uint8_t fd[16] = {0xfd}, fd12[16] = {0xfd, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
                         fe[16] = {0xfe, 0x12};
    struct smr_admit m;
    int k;
    memset(&m, 0, sizeof m);
    CHECK(allowed(&m, 1, 2, 3, 4) && smr_admit_allowed(&m, fe, 16), "no --allow: every address may connect");
    CHECK(smr_admit_add(&m, ten, 4, 8) == 0 && allowed(&m, 10, 200, 3, 4) && !allowed(&m, 11, 0, 0, 1),
          "10.0.0.0/8 takes 10.200.3.4, not 11.0.0.1");
    CHECK(!smr_admit_allowed(&m, fd12, 16), "an IPv4 list refuses IPv6 addresses");
    CHECK(smr_admit_add(&m, lan, 4, 22) == 0 && allowed(&m, 192, 168, 7, 255) && allowed(&m, 192, 168, 4, 0) &&
              !allowed(&m, 192, 168, 8, 0) && !allowed(&m, 192, 168, 3, 255),
          "192.168.4.0/22: 4.0 to 7.255 only");
    CHECK(smr_admit_add(&m, one, 4, 32) == 0 && allowed(&m, 198, 18, 0, 7) && !allowed(&m, 198, 18, 0, 6),
          "a /32 is one address");
    CHECK(smr_admit_add(&m, fd, 16, 8) == 0 && smr_admit_allowed(&m, fd12, 16) && !smr_admit_allowed(&m, fe, 16),
          "fd00::/8 takes fd12::1, not fe12::");
    CHECK(smr_admit_add(&m, ten, 4, 33) == -1 && smr_admit_add(&m, fd, 16, 129) == -1 &&
              smr_admit_add(&m, ten, 5, 8) == -1,
          "a prefix longer than the address, or a length of 5, is refused");
    for (k = (int)m.nallow; k < SMR_MAX_ALLOW; k++) smr_admit_add(&m, ten, 4, 0);
    CHECK(smr_admit_add(&m, ten, 4, 8) == -1 && m.nallow == SMR_MAX_ALLOW, "a full list takes no more");
    CHECK(allowed(&m, 11, 0, 0, 1), "0.0.0.0/0 takes every IPv4 address");
}

/* Tags are FNV-1a (the published 32-bit vectors), buckets refill at the
 * rate, a second or more refills them whole, and two tags on one slot
 * start it again. */
static void admit_rate(void) {
    const uint64_t s = 1000000000ull;
    struct smr_admit m;
    uint32_t a = 7, b = 7 + SMR_BUCKETS, i, ok = 0;
    memset(&m, 0, sizeof m);
    CHECK(smr_admit_tag((const uint8_t *)"", 0) == 0x811c9dc5u &&
              smr_admit_tag((const uint8_t *)"a", 1) == 0xe40c292cu &&
              smr_admit_tag((const uint8_t *)"foobar", 6) == 0xbf9cf968u,
          "tags are FNV-1a");
    for (i = 0; i < 1000; i++) ok += (uint32_t)smr_admit_rate(&m, a, i);
    CHECK(ok == 1000, "no --max-connects-per-second: no limit (%u of 1000)", ok);
    m.max_cps = 2;
    CHECK(smr_admit_rate(&m, a, 1 * s) && smr_admit_rate(&m, a, 1 * s) && !smr_admit_rate(&m, a, 1 * s),
          "2 per second: the third at once is refused");
    CHECK(!smr_admit_rate(&m, a, 1 * s + s / 4), "a quarter second: half a token");
    CHECK(smr_admit_rate(&m, a, 1 * s + s / 2) && !smr_admit_rate(&m, a, 1 * s + s / 2), "half a second: one token");
    CHECK(smr_admit_rate(&m, a + 1, 1 * s + s / 2), "another address has its own bucket");
    CHECK(smr_admit_rate(&m, a, 100 * s) && smr_admit_rate(&m, a, 100 * s) && !smr_admit_rate(&m, a, 100 * s),
          "after a long pause: full, never more than 2");
    CHECK(smr_admit_rate(&m, a, ~(uint64_t)0 / 2) && smr_admit_rate(&m, a, ~(uint64_t)0 / 2) &&
              !smr_admit_rate(&m, a, ~(uint64_t)0 / 2),
          "centuries later: still 2 (no overflow)");
    CHECK(smr_admit_rate(&m, b, 200 * s), "a tag on a used slot starts it full");
    CHECK(smr_admit_rate(&m, a, 200 * s) && smr_admit_rate(&m, a, 200 * s), "and the slot's old tag starts again");
}

/* The whole decision for a connection, with the engine counting sessions
 * of an address that are still sending their header. */
static void admit_tcp(void) {
    static const uint8_t lo[4] = {127, 0, 0, 1}, lo2[4] = {127, 0, 0, 2}, ten[4] = {10, 0, 0, 9};
    static const uint8_t rr[16] = {'S', 'M', 'T', 'R', 1, 1, 0, 16, 0, 0, 0, 1, 0, 0, 0, 1};
    struct smr_admit m;
    struct smr_conn *c, *d;
    uint32_t tag, tag2;
    uint8_t out[64];
    memset(&m, 0, sizeof m);
    fresh(8);
    m.max_idle = 1;
    smr_admit_add(&m, lo, 4, 8);
    CHECK(!smr_admit_tcp(&m, &X, ten, 4, 0, &tag), "not on the allow list: refused");
    CHECK(smr_admit_tcp(&m, &X, lo, 4, 0, &tag) && tag == smr_admit_tag(lo, 4), "127.0.0.1 admitted, tagged");
    c = open_from(tag, 0, NULL);
    CHECK(!smr_admit_tcp(&m, &X, lo, 4, 0, &tag), "one session still sending its header: the next is refused");
    CHECK(smr_admit_tcp(&m, &X, lo2, 4, 0, &tag2) && tag2 != tag, "another address is not");
    smr_conn_input(&X, c, rr, 16, 0);
    drain(c, out, sizeof out, 0);
    CHECK(smr_admit_tcp(&m, &X, lo, 4, 0, &tag), "once its header is in, the address may connect again");
    d = open_from(tag, 0, NULL);
    m.max_idle = 0;
    m.max_cps = 1;
    CHECK(smr_admit_tcp(&m, &X, lo, 4, 1, &tag) && !smr_admit_tcp(&m, &X, lo, 4, 2, &tag),
          "no idle limit; one connect per second");
    smr_conn_free(&X, c, 3);
    smr_conn_free(&X, d, 3);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    static char buf[1 << 20];
    size_t n;
    if (!f) return NULL;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

int main(int argc, char **argv) {
    int root, vs, i, counted = 0;
    js = argc > 1 ? slurp(argv[1]) : NULL;
    if (!js || tj_parse(0, &root) < 0) {
        printf("smr-test: error: cannot read vectors (%s)\n", argc > 1 ? argv[1] : "no path given");
        return 2;
    }
    vs = tj_get(root, "vectors");
    for (i = 0; i < tj[vs].size; i++) {
        int v = tj_item(vs, i), k = tj_get(v, "kind");
        counted++;
        if (tj_is(k, "session_header")) {
            vec_session_header(v, 0);
            vec_session_header(v, 1);
        } else if (tj_is(k, "status")) {
            vec_status(v);
        } else if (tj_is(k, "datagram")) {
            vec_datagram(v);
        } else if (tj_is(k, "stamp_block")) {
            vec_stamp_block(v);
        } else {
            counted--;
            CHECK(0, "unknown vector kind");
        }
    }
    for (i = 0; i < tj[tj_get(root, "control_records")].size; i++, counted++)
        vec_control(tj_item(tj_get(root, "control_records"), i));
    for (i = 0; i < tj[tj_get(root, "udp_rx")].size; i++, counted++) vec_udp_rx(tj_item(tj_get(root, "udp_rx"), i));
    counted += tj[tj_get(tj_get(root, "objects"), "requests")].size;
    CHECK(counted > 30, "vectors found: %d", counted);
    vec_limits(tj_get(root, "limits"));
    objects(tj_get(root, "objects"));
    vec_auth(tj_get(root, "auth"));
    limits_behaviour();
    rr_and_limits();
    operator_limits();
    rr_stamps();
    passes_bound_bulk();
    rr_queued_requests();
    crr_once();
    life_cycle();
    garbage();
    fair_share();
    fair_idle_flood();
    fair_busy();
    fair_auth();
    admit_allow();
    admit_rate();
    admit_tcp();
    printf("smr-test: %d vectors; checks: %d passed, %d failed\n", counted, passed, failed);
    printf("smr-test: sizeof(struct smr_conn) = %zu, sizeof(struct smr_test) = %zu\n", sizeof(struct smr_conn),
           sizeof(struct smr_test));
    return failed ? 1 : 0;
}
