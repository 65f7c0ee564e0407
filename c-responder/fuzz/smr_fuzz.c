/*
 * libFuzzer target for the engine's parsers: the input is split into a
 * UDP datagram and a TCP byte stream fed to one connection in pieces
 * (header, data phase, control records, object requests), with the output
 * drained between pieces. The catalogue is 4K, 100, 100-2 (object mode is
 * off when bit 1 of the input length is set). Each drain is one pass and
 * may move no more than SMR_PASS_BYTES (and a record). Build and run:
 * make -C c-responder fuzz-run (clang).
 */
#include "smr.h"

#include <string.h>

static struct smr_ctx smr_fz;

/* One pass of output: what the engine offers, never more than the pass
 * allows in all (smr.h, bounded work per pass). */
static void smr_fz_drain(struct smr_conn *c, uint64_t now) {
    const uint8_t *p;
    size_t n, k, moved = 0;
    smr_pass_begin(&smr_fz);
    for (k = 0; k < 64 && (n = smr_conn_output(&smr_fz, c, &p)) > 0; k++) {
        if (p + n > smr_payload && p < smr_payload) __builtin_trap();
        n = n > 1000 ? n / 2 : n;
        moved += n;
        smr_conn_sent(&smr_fz, c, n, now);
    }
    if (moved > SMR_PASS_BYTES + SMR_OUT_MAX) __builtin_trap(); /* a record goes whole */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct smr_config cfg;
    struct smr_conn *c, *d;
    uint8_t dg[2048];
    size_t off = 0, step;
    uint64_t now = 1;
    smr_default_config(&cfg);
    cfg.max_sessions = 3;
    cfg.max_msg = 1u << 20;
    cfg.nobjects = (size & 2) ? 0 : 3;
    cfg.object_size[0] = 4096;
    cfg.object_size[1] = cfg.object_size[2] = 100;
    if (size & 4) { /* the operator's limits: one test per tag, 1 s, 1 Mbit/s */
        cfg.max_test_s = 1;
        cfg.max_tests_per_client = 1;
        cfg.max_rate_bps = 1000000;
    }
    smr_init(&smr_fz, &cfg);
    if (size == 0) return 0;
    /* First byte: how much of the input is a datagram. */
    step = data[0] < size - 1 ? data[0] : size - 1;
    memcpy(dg, data + 1, step);
    smr_udp_input(&smr_fz, dg, step, now);
    off = 1 + step;
    /* A control session is open, so sink/source headers can name test 1. */
    d = smr_conn_open(&smr_fz, now);
    smr_conn_start(&smr_fz, d, now);
    smr_conn_input(&smr_fz, d, (const uint8_t *)"SMTR\1\3\0\20\0\0\0\0\0\0\0\0", 16, now);
    smr_fz_drain(d, now);
    c = smr_conn_open(&smr_fz, now);
    smr_conn_start(&smr_fz, c, now);
    while (off < size) {
        step = 1 + data[off] % 23;
        off++;
        if (step > size - off) step = size - off;
        smr_conn_input(&smr_fz, c, data + off, step, now);
        smr_conn_input(&smr_fz, d, data + off, step, now);
        smr_fz_drain(c, now);
        smr_fz_drain(d, now);
        now += 100000000u;
        smr_tick(&smr_fz, now);
        if (smr_conn_deadline(c) <= now) smr_conn_timeout(&smr_fz, c, now);
        if (smr_conn_deadline(d) <= now) smr_conn_timeout(&smr_fz, d, now);
        if (smr_conn_flags(c) & SMR_F_CLOSE) break;
        off += step;
    }
    if (size & 1) smr_conn_eof(&smr_fz, c, now);
    smr_conn_timeout(&smr_fz, c, now);
    smr_conn_free(&smr_fz, c, now);
    smr_conn_free(&smr_fz, d, now);
    if (smr_fz.active != 0 || smr_fz.hi != 0) __builtin_trap();
    return 0;
}
