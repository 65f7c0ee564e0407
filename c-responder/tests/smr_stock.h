/*
 * The limits of a stock build of the engine, by the names protocol/vectors.json
 * gives them under "limits" (docs/protocol.md section 5). Defined in
 * smr_stock.c, which is compiled without the -D overrides of the test build.
 */
#ifndef SMR_STOCK_H
#define SMR_STOCK_H

#include <stdint.h>

struct smr_stock_limit {
    const char *key; /* NULL ends the table */
    uint64_t value;  /* in the engine's unit */
    uint64_t unit;   /* engine units per unit of the vectors (1e6: ns per ms) */
};

extern const struct smr_stock_limit smr_stock_limits[];

#endif
