/* How long the bench and the tuner keep a device busy before timing it (warmup.h, TRIREME_WARMUP_MS). */
#include "warmup.h"

#include <stdlib.h>

#define GPU_WARMUP_S 1.0
#define CPU_WARMUP_S 0.05

double trr_warmup_seconds(trr_context *ctx) {
    const char *env = getenv("TRIREME_WARMUP_MS");
    if (env && *env) {
        char *end = NULL;
        const double ms = strtod(env, &end);
        if (end && *end == '\0' && ms >= 0) return ms * 1e-3;
    }
    trr_device_info info;
    if (trr_context_device(ctx, &info) != TRR_OK) return GPU_WARMUP_S;
    return info.is_gpu ? GPU_WARMUP_S : CPU_WARMUP_S;
}
