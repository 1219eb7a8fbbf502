/* Device timing: warm-up, then many repetitions of one call (or of a few calls in turn), each between
 * trr_timer_start and trr_timer_stop with the cache flushed before it; the median, min and max of each. */
#include "bench.h"
#include "clock.h"

#include "warmup.h"

#include <stdlib.h>
#include <time.h>

#define MIN_REPS 5
#define MAX_REPS 200
#define WARMUP_DEVICE_S 0.05
/* A warm-up burst: about this much device time queued before one wait, and at most this many rounds (a
 * microsecond op's burst is bound by the host's enqueueing, not by its device time). */
#define WARMUP_BURST_MS 20.0
#define MAX_BURST_ROUNDS 4096
#define MAX_WARMUP_BURSTS 100000
/* Warm-up and cache flushing together stay under this per timed case (2 s promised; the rest is margin for the
 * calls themselves): a tiny case's repetitions cost next to nothing, and its time went to flushing 64-256 MiB
 * before every call. */
#define OVERHEAD_BUDGET_S 1.5
/* The warm-up may run this long past its wall-clock minimum to reach its device-time minimum. */
#define WARMUP_OVERRUN_S 0.5


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

/* Queues rounds of the calls back to back, untimed, then waits once: the device stays busy, where a timed call
 * leaves it idle while the host waits for each result, and the driver's clock governor may take that for an idle
 * GPU. *round_ms: the host's time per round so far (enqueueing or the device, whichever is slower), sizing the
 * burst to about WARMUP_BURST_MS; updated from this burst. */
static trr_status burst(trr_context *ctx, const trr_bench_timed *items, int n, double *round_ms) {
    int rounds = *round_ms > 0 ? (int)(WARMUP_BURST_MS / *round_ms) : 1;
    if (rounds < 1) rounds = 1;
    if (rounds > MAX_BURST_ROUNDS) rounds = MAX_BURST_ROUNDS;
    const double t0 = trr_now_s();
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < n; j++) TRR_TRY(items[j].fn(ctx, items[j].user));
    TRR_TRY(trr_synchronize(ctx));
    *round_ms = (trr_now_s() - t0) * 1e3 / rounds;
    return TRR_OK;
}

trr_status trr_bench_time_each(trr_context *ctx, const trr_bench_timed *items, int n, const trr_bench_flush *flush,
                               trr_bench_clock *clock, int reps, double target_s, trr_bench_timing *outs) {
    if (n < 1 || n > TRR_BENCH_TIMED_MAX)
        return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "bench: %d calls timed side by side (1 to %d)", n,
                         TRR_BENCH_TIMED_MAX);
    /* warm-up: module loads, compilation and first-touch page faults stay out of the figures, and the clocks
     * come back up after the host-side setup (warmup.h): each call once, timed (its time sizes the bursts), then
     * bursts of untimed calls until both the device time and the wall-clock time of the warm-up reach their
     * minimums. No flush between warm-up calls: they are not timed, and flushing is what made a tiny case's
     * warm-up take tens of seconds. */
    double est[TRR_BENCH_TIMED_MAX], one_flush_ms = 0, round_ms = 0, warm_ms = 0;
    const double wall_s = trr_warmup_seconds(ctx), t0 = trr_now_s();
    for (int j = 0; j < n; j++) {
        TRR_TRY(time_one(ctx, items[j].fn, items[j].user, &est[j]));
        round_ms += est[j];
        warm_ms += est[j];
    }
    for (int i = 0; i < MAX_WARMUP_BURSTS; i++) {
        const double el = trr_now_s() - t0;
        if ((warm_ms >= WARMUP_DEVICE_S * 1e3 && el >= wall_s) || el >= wall_s + WARMUP_OVERRUN_S) break;
        const double b0 = trr_now_s();
        TRR_TRY(burst(ctx, items, n, &round_ms));
        warm_ms += (trr_now_s() - b0) * 1e3;
    }
    /* each call timed once more, warm: its time sizes the repetitions */
    for (int j = 0; j < n; j++) TRR_TRY(time_one(ctx, items[j].fn, items[j].user, &est[j]));
    TRR_TRY(flush_ms(ctx, flush, &one_flush_ms));
    if (reps <= 0) {
        double timed_round_ms = 0;
        for (int j = 0; j < n; j++) timed_round_ms += est[j];
        double r = timed_round_ms > 0 ? target_s * 1e3 / timed_round_ms : MAX_REPS;
        /* the flushes share the case's overhead budget with the warm-up */
        const double left_ms = (OVERHEAD_BUDGET_S - (trr_now_s() - t0)) * 1e3;
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
        double *tj = t + (size_t)j * (size_t)reps;
        qsort(tj, (size_t)reps, sizeof *tj, cmp_double);
        outs[j].reps = reps;
        outs[j].min_ms = tj[0];
        outs[j].max_ms = tj[reps - 1];
        outs[j].median_ms = reps % 2 ? tj[reps / 2] : 0.5 * (tj[reps / 2 - 1] + tj[reps / 2]);
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
