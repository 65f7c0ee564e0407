/*
 * The protocol engine's session core and its call order (smr.h): the
 * config, a connection's input dispatched by its phase (the header and
 * auth phase to smr_header.c, control records to smr_control.c, object
 * requests to smr_objects.c; rr and crr requests are counted here), its
 * output (records, payload cut from smr_payload, object bytes) and what
 * was sent, passes and turns, the end of input, the close, timeouts and
 * deadlines. The Rust twin is crates/proto/src/machine/session/. Pure: the backend
 * passes bytes and the time in, takes bytes and actions out. See smr.h
 * for the calling contract, smr_int.h for the other files,
 * docs/protocol.md for the rules.
 */
#include "smr_int.h"

#include <string.h>

const uint8_t smr_payload[SMR_TX_CHUNK] = {0};

/* Compile-time checks of the tunables (a negative array size fails). */
typedef char smr_check_tests[SMR_MAX_TESTS >= 1 && SMR_MAX_TESTS <= 256 ? 1 : -1];
typedef char smr_check_objects[SMR_MAX_OBJECTS >= 1 && SMR_MAX_OBJECTS <= SMR_CATALOGUE_MAX ? 1 : -1];
typedef char smr_check_names[SMR_OBJ_NAME_LEN <= sizeof(((struct smr_conn *)0)->hdr) ? 1 : -1];
typedef char smr_check_gen[SMR_GEN_CHUNK >= 64 ? 1 : -1];

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

size_t smr_conn_want(const struct smr_conn *c) {
    switch (c->phase) {
    case PH_HEADER:
    case PH_AUTH:
        return smr_header_want(c);
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
        return smr_control_want(c);
    case PH_OBJ:
        return smr_obj_want(c);
    case PH_FREE:
        return 0;
    default:
        return SMR_RX_ANY;
    }
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
            smr_status_ok(c);
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
    size_t i = SMR_INDEX(x, c); /* x->turn is 1 + a slot: at most their count */
    return i >= x->turn ? i - x->turn : i + SMR_MAX_CONNS + SMR_SPARE_CONNS - x->turn;
}

/* c moved bytes: the next turn begins after it. */
static void smr_had_turn(struct smr_ctx *x, const struct smr_conn *c) {
    x->turn = (uint32_t)SMR_INDEX(x, c) + 1u;
}

size_t smr_conn_input(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now) {
    size_t done = 0, k;
    if (!SMR_WAITING(c) && c->phase != PH_LINGER) c->deadline = now + x->cfg.idle_timeout_ns;
    while (done < n && !(c->flags & SMR_F_CLOSE)) {
        k = smr_in_one(x, c, p + done, n - done, now);
        if (k == 0) break;
        done += k;
    }
    smr_spend(x, done);
    if (done) smr_had_turn(x, c);
    return done;
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
    if (n && !SMR_WAITING(c) && c->phase != PH_LINGER) c->deadline = now + x->cfg.idle_timeout_ns;
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
    if ((c->flags & F_EVICT) && c->out_off == c->out_len) f |= SMR_F_CLOSE; /* no linger: its slot is wanted */
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
    if (SMR_WAITING(c)) {
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
    if (SMR_COUNTED(c) && x->active) x->active--;
    smr_test_leave(x, c, now);
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

uint64_t smr_next_deadline(const struct smr_ctx *x) {
    uint64_t d = smr_tests_due(x);
    size_t i;
    for (i = 0; i < x->hi; i++)
        if (x->conns[i].phase != PH_FREE && smr_conn_deadline(&x->conns[i]) < d) d = smr_conn_deadline(&x->conns[i]);
    return d;
}
