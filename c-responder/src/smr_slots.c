/*
 * The connection table (smr_ctx.conns): a slot for each new connection,
 * and who may hold how many. Its own file because admission into the
 * table is a concern of its own, as the Rust responder's per-address
 * table (crates/responder/src/peers.rs) is beside its sessions; the
 * operator's rules that come before it (allow list, connect rate) are
 * smr_admit.c's.
 */
#include "smr_int.h"

#include <string.h>

size_t smr_conn_index(const struct smr_ctx *x, const struct smr_conn *c) { return (size_t)(c - x->conns); }

uint32_t smr_client_count(const struct smr_ctx *x, uint32_t client, int waiting) {
    uint32_t i, n = 0;
    for (i = 0; i < x->hi; i++) {
        const struct smr_conn *d = &x->conns[i];
        if (d->client != client || !SMR_COUNTED(d)) continue;
        if (waiting ? SMR_WAITING(d) : d->mode && d->mode != M_SINK && d->mode != M_SOURCE)
            n++;
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
