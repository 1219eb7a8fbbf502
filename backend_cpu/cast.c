/*
 * cast (docs/ops.md, cast): x converted to y's dtype, element by element, over the element-wise rule's rows x cols.
 * Each segment of a row is widened to f32 (exact for every input dtype) and rounded once into the output dtype by
 * cpu_math.h's stores, the host's own conversions (core/half.c): round to nearest even, saturation in the 8-bit
 * floats, NaN kept. A cast to the same dtype moves the bits.
 */
#include "cpu.h"
#include "cpu_math.h"

#include <string.h>

#define TILE 256 /* the f32 staging tile: 1 KiB, stays in L1 */

typedef struct cast_job {
    const trr_call *call;
    int64_t seg, per_row;
} cast_job;

static size_t dtype_bytes(trr_dtype d) {
    size_t es = 1;
    trr_dtype_size(d, &es);
    return es;
}

static void cast_segment(const trr_call *call, int64_t r, int64_t c, int64_t n) {
    const trr_operand *X = &call->x, *Z = &call->z;
    const int64_t xi = X->offset + r * X->stride0 + c, zi = Z->offset + r * Z->stride0 + c;
    if (X->dtype == Z->dtype) {
        const size_t es = dtype_bytes(X->dtype);
        memcpy((unsigned char *)Z->mem + (size_t)zi * es, (const unsigned char *)X->mem + (size_t)xi * es, (size_t)n * es);
        return;
    }
    float t[TILE];
    for (int64_t done = 0; done < n; done += TILE) {
        const int64_t m = n - done < TILE ? n - done : TILE;
        trr_cpu_load_f32(X->mem, X->dtype, xi + done, t, m);
        trr_cpu_store_f32(Z->mem, Z->dtype, zi + done, t, m);
    }
}

static void cast_task(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    const cast_job *job = arg;
    for (int64_t u = begin; u < end; u++) {
        const int64_t r = u / job->per_row, c = (u % job->per_row) * job->seg;
        cast_segment(job->call, r, c, job->call->cols - c < job->seg ? job->call->cols - c : job->seg);
    }
}

static trr_status cpu_cast(trr_context *ctx, const trr_call *call) {
    cast_job job = {.call = call};
    job.seg = call->config.block_n > 0 ? call->config.block_n : 16384;
    if (job.seg > call->cols) job.seg = call->cols;
    job.per_row = (call->cols + job.seg - 1) / job.seg;
    int64_t grain = 16384 / job.seg; /* the 8-bit conversions are a few dozen operations an element */
    trr_cpu_parallel_for(trr_cpu_ctx_pool(ctx), call->rows * job.per_row, grain < 1 ? 1 : grain, cast_task, &job);
    return TRR_OK;
}

/* The element-wise C "kernels" the op table names: a stem and an entry point, and the function that is that entry
 * point. */
static const struct {
    const char *stem, *entry;
    trr_cpu_elementwise_fn fn;
} elementwise_kernels[] = {
    {"cast", "cast", cpu_cast},
};

trr_cpu_elementwise_fn trr_cpu_elementwise_kernel(const trr_op_desc *d) {
    for (size_t i = 0; i < sizeof elementwise_kernels / sizeof elementwise_kernels[0]; i++)
        if (!strcmp(elementwise_kernels[i].stem, d->kernel) && !strcmp(elementwise_kernels[i].entry, d->name))
            return elementwise_kernels[i].fn;
    return NULL;
}
