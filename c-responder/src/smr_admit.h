/*
 * Who may connect: the operator's admission rules of docs/protocol.md 5.1
 * that a backend applies before the engine sees a connection (--allow,
 * --max-connects-per-second, --max-idle-per-client). Pure: addresses come
 * in as bytes (4 for IPv4, 16 for IPv6), times as nanoseconds, and the
 * answer goes out; no sockets, no clock. Any backend (POSIX, lwIP, a
 * board's own) uses it the same way, and tests/smr_test.c checks it.
 *
 * RAM: SMR_MAX_ALLOW networks of 18 bytes and SMR_BUCKETS token buckets of
 * 24 bytes (struct smr_admit, about 1.7 KiB with the defaults).
 */
#ifndef SMR_ADMIT_H
#define SMR_ADMIT_H

#include "smr.h"

/* Networks an --allow list holds. */
#ifndef SMR_MAX_ALLOW
#define SMR_MAX_ALLOW 8
#endif
/* Token buckets for the connect rate, one per slot of a table indexed by
 * the address's tag: an address that lands on another's slot starts it
 * again, full (the least recently seen address is forgotten first). */
#ifndef SMR_BUCKETS
#define SMR_BUCKETS 64
#endif

struct smr_admit {
    uint32_t max_idle; /* sessions still sending their header per address, 0: no limit */
    uint32_t max_cps;  /* connections per second per address, 0: no limit */
    uint32_t nallow;   /* 0: every address may connect */
    struct smr_net {
        uint8_t len, bits, a[16];
    } allow[SMR_MAX_ALLOW];
    struct smr_bucket {
        uint32_t client;
        uint8_t used;
        uint64_t last, micro; /* refilled at; micro-tokens */
    } bucket[SMR_BUCKETS];
};

/* Adds network a/bits (len 4 or 16 bytes) to the allow list: 0, or -1
 * when the list is full or bits is more than the address has. */
int smr_admit_add(struct smr_admit *m, const uint8_t *a, size_t len, unsigned bits);
/* Whether an address is on the allow list (an empty list allows all). */
int smr_admit_allowed(const struct smr_admit *m, const uint8_t *a, size_t len);
/* An address as the engine's client tag (smr_conn.client): FNV-1a of its
 * bytes. Two addresses with one tag share their per-address limits. */
uint32_t smr_admit_tag(const uint8_t *a, size_t len);
/* One connection of client tag at time now under --max-connects-per-second:
 * 1 and a token taken, or 0 (the bucket is empty). */
int smr_admit_rate(struct smr_admit *m, uint32_t tag, uint64_t now);
/* The whole decision for a new TCP connection from address a at time now:
 * allowed, within its connect rate, and fewer than max_idle of its
 * sessions still sending their header (counted by the engine). 1 and
 * *tag set (store it in smr_conn.client), or 0: close it at once, nothing
 * read or written. */
int smr_admit_tcp(struct smr_admit *m, const struct smr_ctx *x, const uint8_t *a, size_t len, uint64_t now,
                  uint32_t *tag);

#endif
