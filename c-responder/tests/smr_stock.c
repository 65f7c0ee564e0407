/*
 * What a stock build of the engine enforces, for smr-test to compare with
 * the limits table of protocol/vectors.json. smr-test itself is compiled
 * with small pools (-DSMR_MAX_CONNS=8 ...); this file is compiled on its own
 * WITHOUT those overrides (Makefile), so the macros below are the defaults
 * smr.h ships. It only reads numbers: no struct of smr.h is used here, as
 * their sizes differ between the two compilations.
 *
 * A limit the table gains must be added here (and to smr.h): smr-test fails
 * on every key one side has and the other lacks.
 */
#include "smr_stock.h"

#include "smr.h"

#include <stddef.h>

#define SMR_MS 1000000u /* ns per ms */

const struct smr_stock_limit smr_stock_limits[] = {
    {"max_sessions", SMR_MAX_CONNS, 1},
    {"max_msg", SMR_DEFAULT_MAX_MSG, 1},
    {"header_timeout_ms", SMR_DEFAULT_HEADER_TIMEOUT_NS, SMR_MS},
    {"idle_timeout_ms", SMR_DEFAULT_IDLE_TIMEOUT_NS, SMR_MS},
    {"max_tests", SMR_MAX_TESTS, 1},
    {"max_udp_streams", SMR_MAX_STREAMS, 1},
    {"dup_window", SMR_DUP_WINDOW, 1},
    {"drain_ms", SMR_DRAIN_NS, SMR_MS},
    {"udp_quiet_ms", SMR_UDP_QUIET_NS, SMR_MS},
    {"linger_ms", SMR_LINGER_NS, SMR_MS},
    {"linger_bytes", SMR_LINGER_BYTES, 1},
    {"max_objects", SMR_CATALOGUE_MAX, 1},
    {"max_name_len", SMR_NAME_MAX, 1},
    {NULL, 0, 0},
};
