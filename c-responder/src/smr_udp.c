/*
 * UDP (docs/protocol.md section 4, 8.4 and 10.2): the echo rule (the
 * reply rewritten in place, never larger than the request), stream
 * datagrams counted into their test, the count block of a client's echo
 * requests, and with a secret the MAC trailer and each client's replay
 * window. Per-client tables are small and keyed by address, the least
 * recently used forgotten first. The Rust twin is proto's udp.rs and
 * stream.rs.
 */
#include "smr_int.h"

#include <string.h>

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
    struct smr_test *t = smr_find_test(x, smr_get32(b + 24));
    uint32_t ix = smr_get16(b + 28);
    if (!t || ix >= SMR_MAX_STREAMS) return;
    smr_stream_record(&t->streams[ix], smr_get64(b + 8), len, smr_get64(b + 16), rx_ns);
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
    uint64_t seq = smr_get64(b + 8), back;
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
        smr_put64(b + count + 8, smr_count(x, peer, plen, smr_get32(b + count + 4)));
        b[7] |= 8;
    }
    smr_put64(b + 24, rx_ns);
    smr_put64(b + 32, rx_ns);
    return len;
}

void smr_udp_stamp_tx(uint8_t *b, uint64_t tx_ns) {
    if (b[5] == 2) smr_put64(b + 32, tx_ns);
}
