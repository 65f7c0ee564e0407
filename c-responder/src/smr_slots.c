/*
 * The connection table (smr_ctx.conns): a slot for each new connection,
 * and fair shares of it. Its own file because admission into the table is
 * a concern of its own, as the Rust responder's per-address table
 * (crates/responder/src/peers.rs) is beside its sessions; the operator's
 * rules that come before it (allow list, connect rate) are smr_admit.c's.
 *
 * Two rules keep one client from locking out the others, on every
 * backend alike (docs/protocol.md 5.2):
 *   - a connection that has not finished its header (or its proof) never
 *     keeps out a new one: when the table is full, the oldest such is
 *     given up (a Busy record naming why, then closed at once) and the
 *     newcomer takes its place;
 *   - one client address holds at most its share of the sessions
 *     (smr_client_share): at its share, its own oldest connection still
 *     sending a header gives way, or else the newcomer is refused Busy
 *     with a reason naming the limit.
 */
#include "smr_int.h"

#include <string.h>

size_t smr_conn_index(const struct smr_ctx *x, const struct smr_conn *c) { return SMR_INDEX(x, c); }

uint32_t smr_client_share(const struct smr_config *cfg) {
    uint32_t n = cfg->max_sessions < SMR_MAX_CONNS ? cfg->max_sessions : SMR_MAX_CONNS;
    uint32_t keep = n / 2 < SMR_CLIENT_RESERVE ? n / 2 : SMR_CLIENT_RESERVE;
    return n - keep > 1 ? n - keep : 1;
}

uint32_t smr_client_count(const struct smr_ctx *x, uint32_t client, int waiting) {
    uint32_t i, n = 0;
    for (i = 0; i < x->hi; i++) {
        const struct smr_conn *d = &x->conns[i];
        if (d->client != client || !SMR_COUNTED(d)) continue;
        if (waiting < 0 || (waiting ? SMR_WAITING(d) : d->mode && d->mode != M_SINK && d->mode != M_SOURCE)) n++;
    }
    return n;
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

/* The connection a newcomer c may take the place of: the oldest one still
 * sending its header or proof (of c's own address only, when own), none
 * with a record half sent. Oldest: the earliest header deadline, which is
 * its acceptance plus the header timeout. */
static struct smr_conn *smr_oldest_waiting(struct smr_ctx *x, const struct smr_conn *c, int own) {
    struct smr_conn *v = NULL;
    uint32_t i;
    for (i = 0; i < x->hi; i++) {
        struct smr_conn *d = &x->conns[i];
        if (d == c || !SMR_WAITING(d) || d->out_off || (own && d->client != c->client)) continue;
        if (!v || d->deadline < v->deadline) v = d;
    }
    return v;
}

/* Gives v up for a newcomer: a Busy record saying why, then closed as
 * soon as the record is out (smr_conn_flags), with no lingering (a
 * backend that does not serve it at once closes it at the end of the
 * linger all the same). */
static void smr_evict(struct smr_ctx *x, struct smr_conn *v, uint64_t now) {
    smr_refuse(x, v, SMR_BUSY, "evicted: this connection had not finished its header when a new one needed its slot",
               now);
    v->flags |= F_EVICT;
}

/* Refuses newcomer c: its address holds its share (own), or every
 * session runs past its header. */
static void smr_busy(struct smr_ctx *x, struct smr_conn *c, int own, uint32_t share, uint64_t now) {
    char r[80];
    smr_fmt(r, own ? "%u sessions from this address, the most one address may hold" : "%u sessions running, the limit",
            own ? share : x->cfg.max_sessions, 0, 0);
    smr_refuse(x, c, SMR_BUSY, r, now);
}

struct smr_conn *smr_conn_start(struct smr_ctx *x, struct smr_conn *c, uint64_t now) {
    uint32_t share = smr_client_share(&x->cfg);
    int own = smr_client_count(x, c->client, -1) >= share;
    struct smr_conn *v = NULL;
    if (own || x->active >= x->cfg.max_sessions) {
        v = smr_oldest_waiting(x, c, own);
        if (!v) {
            smr_busy(x, c, own, share, now);
            return NULL;
        }
        smr_evict(x, v, now);
    }
    c->phase = PH_HEADER;
    x->active++;
    return v;
}

size_t smr_limits_line(const struct smr_config *cfg, char *out) {
    return smr_fmt(out,
                   "limits: %u sessions, %u from one address at most; header within %u ms; a connection still "
                   "sending it gives way to a new one when all are taken",
                   cfg->max_sessions, smr_client_share(cfg), (uint32_t)(cfg->header_timeout_ns / 1000000u));
}
