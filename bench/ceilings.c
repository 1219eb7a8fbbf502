/* The memory ceiling: a large device-to-device copy, counting bytes read plus bytes written, timed like every
 * case. Memory-bound figures are given as a fraction of it. */
#include "bench.h"

#include <stdio.h>

typedef struct copy_job {
    trr_buffer *dst, *src;
    size_t bytes;
} copy_job;

static trr_status run_copy(trr_context *ctx, void *user) {
    const copy_job *j = user;
    return trr_buffer_copy(ctx, j->dst, 0, j->src, 0, j->bytes);
}

static trr_status measure(trr_context *ctx, size_t bytes, double target_s, const trr_bench_flush *flush,
                          trr_bench_clock *clock, trr_bench_copy_ceiling *out) {
    out->gbs = 0;
    out->bytes = bytes;
    out->note[0] = '\0';
    copy_job j = {.bytes = bytes};
    trr_status st = trr_buffer_create(ctx, bytes, &j.src);
    if (st == TRR_OK) st = trr_buffer_create(ctx, bytes, &j.dst);
    /* written once so the copy moves real pages, not lazily mapped zeros */
    if (st == TRR_OK) st = trr_buffer_fill(ctx, j.src, 0, bytes, 0x5A);
    if (st == TRR_OK) st = trr_bench_time(ctx, run_copy, &j, flush, clock, 0, target_s, &out->timing);
    if (st == TRR_OK) out->gbs = 2.0 * (double)bytes / (out->timing.median_ms * 1e-3) * 1e-9;
    else snprintf(out->note, sizeof out->note, "copy ceiling not measured: %s", trr_last_error(ctx));
    if (j.dst) trr_buffer_destroy(j.dst);
    if (j.src) trr_buffer_destroy(j.src);
    return st;
}

trr_status trr_bench_copy_ceiling_measure(trr_context *ctx, const trr_device_info *dev,
                                          const trr_bench_flush *flush, trr_bench_clock *clock,
                                          trr_bench_copy_ceiling *out) {
    /* 1 GiB on GPUs: far past any cache, and long enough (under a millisecond at HBM bandwidth, still
     * far longer than a launch) that launch cost vanishes.
     * CPUs: 64 MiB, past the last-level cache, cheap on 2 cores. */
    size_t bytes = dev->is_gpu ? (size_t)1 << 30 : (size_t)64 << 20;
    if (dev->global_memory && bytes > dev->global_memory / 8) bytes = (size_t)(dev->global_memory / 8);
    out->remeasured = 0;
    trr_status st = measure(ctx, bytes, dev->is_gpu ? 0.5 : 1.0, flush, clock, out);
    out->first_gbs = out->gbs;
    return st;
}

trr_status trr_bench_copy_ceiling_remeasure(trr_context *ctx, const trr_device_info *dev,
                                            const trr_bench_flush *flush, trr_bench_clock *clock,
                                            trr_bench_copy_ceiling *c) {
    size_t bytes = c->bytes ? c->bytes * 2 : (size_t)128 << 20;
    if (dev->global_memory && bytes > dev->global_memory / 4) bytes = (size_t)(dev->global_memory / 4);
    /* under 2 GiB: NVIDIA's OpenCL takes minutes over a 2 GiB copy, while 1 GiB copies take under a
     * millisecond */
    if (bytes > ((size_t)1 << 31) - ((size_t)1 << 20)) bytes = ((size_t)1 << 31) - ((size_t)1 << 20);
    trr_bench_copy_ceiling again = {0};
    trr_status st = measure(ctx, bytes, dev->is_gpu ? 1.0 : 2.5, flush, clock, &again);
    c->remeasured = 1;
    if (st == TRR_OK && again.gbs > c->gbs) {
        c->gbs = again.gbs;
        c->bytes = again.bytes;
        c->timing = again.timing;
        c->note[0] = '\0';
    }
    return st;
}
