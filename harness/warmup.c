/* How long the bench and the tuner keep a device busy before timing it (warmup.h, TRIREME_WARMUP_MS). */
#include "warmup.h"

#include "backend.h" /* TRR_TRY */
#include "clock.h"

#include <stdlib.h>

#define GPU_WARMUP_S 1.0
#define CPU_WARMUP_S 0.05
/* A burst: about this much time queued before one wait, at most this many rounds (a microsecond op's burst is
 * bound by the host's enqueueing, not by its device time). */
#define BURST_MS 20.0
#define MAX_BURST_ROUNDS 4096
#define OVERRUN_S 0.5

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

trr_status trr_warmup_run(trr_context *ctx, trr_warmup_fn fn, void *user, double round_ms, double seconds,
                          int min_rounds) {
    const double t0 = trr_now_s();
    for (int done = 0;;) {
        const double el = trr_now_s() - t0;
        if ((done >= min_rounds && el >= seconds) || el >= seconds + OVERRUN_S) return TRR_OK;
        int rounds = round_ms > 0 ? (int)(BURST_MS / round_ms) : 1;
        if (rounds < 1) rounds = 1;
        if (rounds > MAX_BURST_ROUNDS) rounds = MAX_BURST_ROUNDS;
        const double b0 = trr_now_s();
        for (int i = 0; i < rounds; i++) TRR_TRY(fn(ctx, user));
        TRR_TRY(trr_synchronize(ctx));
        round_ms = (trr_now_s() - b0) * 1e3 / rounds;
        done += rounds;
    }
}
