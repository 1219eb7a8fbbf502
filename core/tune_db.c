/* Placeholder until the tuning database lands: no database, so every lookup misses. */
#include "tune.h"

int trr_tune_lookup(trr_context *ctx, const trr_call *call, trr_config *out_config) {
    (void)ctx;
    (void)call;
    (void)out_config;
    return 0;
}
