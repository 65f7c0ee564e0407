/*
 * Throughput tests (docs/protocol.md section 8): a control session opens
 * a test (the Welcome with the operator's limits), sinks and sources join
 * it by its id, Snapshot and Stop records are answered with Reports
 * (TCP bytes, UDP stream counts, CPU time, TCP_INFO), the final Report
 * waits for the data sessions to drain, and sources are paced to the
 * highest rate. The Rust twin is machine/registry.rs with the control
 * part of session.rs.
 */
#include "smr_int.h"

#include <string.h>

struct smr_test *smr_find_test(struct smr_ctx *x, uint32_t id) {
    size_t i;
    for (i = 0; id && i < SMR_MAX_TESTS; i++)
        if (x->tests[i].id == id) return &x->tests[i];
    return NULL;
}

struct smr_test *smr_conn_test(struct smr_ctx *x, const struct smr_conn *c) {
    struct smr_test *t = &x->tests[c->test_ix];
    return (c->test_id && t->id == c->test_id) ? t : NULL;
}

/* With a highest rate, when test t's sources may write again, if that is
 * after x->now: its bytes so far at the rate since the Welcome (5.1). */
uint64_t smr_paced(const struct smr_ctx *x, const struct smr_test *t) {
    uint64_t r = x->cfg.max_rate_bps, b = t->tcp_tx * 8, due;
    if (!r) return 0;
    due = t->start_ns + b / r * 1000000000u + b % r * 1000000000u / r;
    return due > x->now ? due : 0;
}

void smr_start_control(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
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
    smr_status_ok(c);
    /* The Welcome: 24 bytes with the operator's limits, else 8 (8.1). */
    n = (x->cfg.max_test_s | x->cfg.max_tests_per_client | x->cfg.max_rate_bps) ? 24 : 8;
    smr_put16(c->out + 8, T_WELCOME);
    smr_put16(c->out + 10, n);
    smr_put32(c->out + 12, t->id);
    smr_put32(c->out + 16, x->cfg.max_test_s);
    smr_put32(c->out + 20, x->cfg.max_tests_per_client);
    smr_put64(c->out + 24, x->cfg.max_rate_bps);
    c->out_len = (uint16_t)(8 + n);
}

void smr_start_data(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
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
    smr_status_ok(c);
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
    smr_put16(b, T_REPORT);
    smr_put16(b + 2, SMR_REPORT_LEN);
    smr_put32(b + 4, id);
    if (nsrc) {
        flags |= 4;
        smr_put32(b + 88, acc.retrans);
        smr_put32(b + 92, acc.cwnd_bytes);
        smr_put32(b + 96, (uint32_t)(acc.rtt_us / nsrc));
    }
    if (x->cpu && x->cpu(x->user, &u, &s)) {
        flags |= 2;
        smr_put64(b + 104, u - t->cpu_user0);
        smr_put64(b + 112, s - t->cpu_sys0);
    }
    b[8] = flags;
    smr_put32(b + 12, t->sessions);
    for (k = 0; k < 9; k++) smr_put64(b + 16 + 8 * k, v[k]);
    c->out_len = SMR_REPORT_LEN;
    c->out_off = 0;
}

/* Stops a test's sources: they half-close once their output drains. */
void smr_stop_sources(struct smr_ctx *x, const struct smr_test *t) {
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
    uint32_t type = smr_get16(c->in), id = smr_get32(c->in + 4);
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

/* A control session reads one record at a time (its head, then the id),
 * none while a record of its own waits to go or Stop's Report is due. */
size_t smr_control_want(const struct smr_conn *c) {
    if (c->out_off < c->out_len || (c->flags & (SMR_F_CLOSE | F_AWAIT))) return 0;
    if (c->skip) return c->skip;
    return (size_t)(c->in_got < 4 ? 4 : 8) - c->in_got;
}

size_t smr_in_control(struct smr_ctx *x, struct smr_conn *c, const uint8_t *p, size_t n, uint64_t now) {
    size_t want = smr_control_want(c), take = n < want ? n : want;
    uint32_t type, len;
    if (c->skip) {
        c->skip = (uint16_t)(c->skip - take);
        return take;
    }
    memcpy(c->in + c->in_got, p, take);
    c->in_got = (uint16_t)(c->in_got + take);
    if (c->in_got < 4) return take;
    type = smr_get16(c->in);
    len = smr_get16(c->in + 2);
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

void smr_test_leave(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    struct smr_test *t = smr_conn_test(x, c);
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

uint64_t smr_tests_due(const struct smr_ctx *x) {
    uint64_t d = (uint64_t)-1;
    size_t i;
    for (i = 0; i < SMR_MAX_TESTS; i++) {
        const struct smr_test *t = &x->tests[i];
        uint64_t p = t->id && t->started ? smr_paced(x, t) : 0;
        if (t->id && t->awaiting && smr_final_at(t) < d) d = smr_final_at(t);
        if (p && p < d) d = p;
    }
    return d;
}
