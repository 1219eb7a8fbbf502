/* Device timing: warm-up, then many repetitions of one call (or of a few calls in turn), each between
 * trr_timer_start and trr_timer_stop with the cache flushed before it; the median, min and max of each. */
#include "bench.h"
#include "clock.h"

#include "warmup.h"

#include <stdlib.h>
#include <time.h>

#define MIN_REPS 5
#define MAX_REPS 200
/* The shortest warm-up, whatever TRIREME_WARMUP_MS says: compilation and first touches out of the figures. */
#define WARMUP_MIN_S 0.05
/* Warm-up and cache flushing together stay under this per timed case (2 s promised; the rest is margin for the
 * calls themselves): a tiny case's repetitions cost next to nothing, and its time went to flushing 64-256 MiB
 * before every call. A timing target under OVERHEAD_TARGET_S (quick on a CPU device) shrinks it in proportion. */
#define OVERHEAD_BUDGET_S 1.5
#define OVERHEAD_TARGET_S 0.5


static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The flush (trr_cache_flush_run) is queued before the timer starts, so the device timer, whose events sit in
 * the same queue, does not count it. */
static trr_status time_one(trr_context *ctx, trr_bench_fn fn, void *user, double *out_ms) {
    TRR_TRY(trr_timer_start(ctx));
    trr_status st = fn(ctx, user);
    double ms = 0;
    trr_status st_timer = trr_timer_stop(ctx, &ms);
    TRR_TRY(st);
    TRR_TRY(st_timer);
    *out_ms = ms;
    return TRR_OK;
}

/* One flush, timed like a call: what each repetition's flush costs. */
static trr_status flush_ms(trr_context *ctx, const trr_bench_flush *flush, double *out_ms) {
    *out_ms = 0;
    if (!flush || !flush->buf) return TRR_OK;
    TRR_TRY(trr_timer_start(ctx));
    trr_status st = trr_cache_flush_run(ctx, flush, 0);
    double ms = 0;
    trr_status st_timer = trr_timer_stop(ctx, &ms);
    TRR_TRY(st);
    TRR_TRY(st_timer);
    *out_ms = ms;
    return TRR_OK;
}

/* One warm-up round: what a repetition runs, each call after its own flush, without the wait for its timer. */
typedef struct round_job {
    const trr_bench_timed *items;
    int n;
    const trr_bench_flush *flush;
    int flushes;
} round_job;

static trr_status one_round(trr_context *ctx, void *user) {
    round_job *j = user;
    for (int i = 0; i < j->n; i++) {
        TRR_TRY(trr_cache_flush_run(ctx, j->flush, j->flushes++));
        TRR_TRY(j->items[i].fn(ctx, j->items[i].user));
    }
    return TRR_OK;
}

/* The q-quantile of sorted[0..n), interpolated between order statistics. */
static double quantile(const double *sorted, int n, double q) {
    const double at = q * (double)(n - 1);
    const int i = (int)at;
    return i + 1 < n ? sorted[i] + (at - (double)i) * (sorted[i + 1] - sorted[i]) : sorted[n - 1];
}

void trr_bench_timing_of(double *ms, int n, trr_bench_timing *out) {
    if (n < 1) return;
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    out->reps = n;
    out->min_ms = ms[0];
    out->max_ms = ms[n - 1];
    out->median_ms = quantile(ms, n, 0.5);
    out->p25_ms = quantile(ms, n, 0.25);
    out->p75_ms = quantile(ms, n, 0.75);
}

trr_status trr_bench_time_each(trr_context *ctx, const trr_bench_timed *items, int n, const trr_bench_flush *flush,
                               trr_bench_clock *clock, int reps, double target_s, trr_bench_timing *outs) {
    if (n < 1 || n > TRR_BENCH_TIMED_MAX)
        return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "bench: %d calls timed side by side (1 to %d)", n,
                         TRR_BENCH_TIMED_MAX);
    /* warm-up: module loads, compilation and first-touch page faults stay out of the figures, and the clocks
     * come back up after the host-side setup (warmup.h): each call once, timed (its time sizes the first burst),
     * then bursts of what the repetitions run, flushes included, without their waits (trr_warmup_run). The
     * flushes keep the device's power near the repetitions' own: bursts of the bare op can drive a GPU into its
     * power cap before the repetitions begin, and its figures then read low. */
    double est[TRR_BENCH_TIMED_MAX], one_flush_ms = 0, round_ms = 0;
    const double wall_s = trr_warmup_seconds(ctx), t0 = trr_now_s();
    TRR_TRY(flush_ms(ctx, flush, &one_flush_ms));
    for (int j = 0; j < n; j++) {
        TRR_TRY(time_one(ctx, items[j].fn, items[j].user, &est[j]));
        round_ms += one_flush_ms + est[j];
    }
    round_job job = {items, n, flush, 0};
    TRR_TRY(trr_warmup_run(ctx, one_round, &job, round_ms, wall_s > WARMUP_MIN_S ? wall_s : WARMUP_MIN_S, 1));
    /* each call timed once more, warm: its time sizes the repetitions */
    for (int j = 0; j < n; j++) TRR_TRY(time_one(ctx, items[j].fn, items[j].user, &est[j]));
    if (reps <= 0) {
        double timed_round_ms = 0;
        for (int j = 0; j < n; j++) timed_round_ms += est[j];
        double r = timed_round_ms > 0 ? target_s * 1e3 / timed_round_ms : MAX_REPS;
        /* the flushes share the case's overhead budget with the warm-up */
        const double overhead_s = OVERHEAD_BUDGET_S * (target_s < OVERHEAD_TARGET_S ? target_s / OVERHEAD_TARGET_S : 1.0);
        const double left_ms = (overhead_s - (trr_now_s() - t0)) * 1e3;
        if (one_flush_ms > 0 && r * n * one_flush_ms > left_ms) r = left_ms / (n * one_flush_ms);
        reps = r < MIN_REPS ? MIN_REPS : r > MAX_REPS ? MAX_REPS : (int)r;
    }
    double *t = malloc((size_t)reps * (size_t)n * sizeof *t);
    if (!t) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "bench: %d timings", reps * n);
    /* repetition by repetition, each call after its own flush, so that every call sees the same clocks and power
     * state as the others (on a power-capped GPU they drift over a case's second) */
    trr_bench_clock_begin(clock);
    for (int i = 0; i < reps; i++) {
        for (int j = 0; j < n; j++) {
            trr_status st = trr_cache_flush_run(ctx, flush, i * n + j);
            if (st == TRR_OK) st = time_one(ctx, items[j].fn, items[j].user, &t[j * reps + i]);
            if (st != TRR_OK) {
                trr_bench_clock_stats ignored;
                trr_bench_clock_end(clock, &ignored);
                free(t);
                return st;
            }
        }
    }
    trr_bench_clock_stats clock_stats;
    trr_bench_clock_end(clock, &clock_stats);
    for (int j = 0; j < n; j++) {
        trr_bench_timing_of(t + (size_t)j * (size_t)reps, reps, &outs[j]);
        outs[j].clock = clock_stats;
    }
    free(t);
    return TRR_OK;
}

trr_status trr_bench_time(trr_context *ctx, trr_bench_fn fn, void *user, const trr_bench_flush *flush,
                          trr_bench_clock *clock, int reps, double target_s, trr_bench_timing *out) {
    const trr_bench_timed one = {fn, user};
    return trr_bench_time_each(ctx, &one, 1, flush, clock, reps, target_s, out);
}
