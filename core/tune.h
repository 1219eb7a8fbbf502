/* The tuning database: the fastest checked config per (backend, device, driver, op, dtype, layout, shape
 * bucket), written by `trireme tune` and read by every call. */
#ifndef TRR_TUNE_H
#define TRR_TUNE_H

#include "backend.h"

/* On a database hit for call on ctx's device, fills *out_config and returns 1; else 0. Never fails the call:
 * a missing, stale (other driver version) or corrupt database is ignored with a warning. */
int trr_tune_lookup(trr_context *ctx, const trr_call *call, trr_config *out_config);

#endif
