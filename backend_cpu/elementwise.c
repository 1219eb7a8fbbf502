/*
 * copy, add and the unary ops (gelu, silu) over the normalised rows x cols form. The work is cut into segments
 * of at most block_n elements of one row, so one long vector (rows == 1, the packed case) and many short rows
 * both spread over the pool. f32 operands are used in place; other dtypes go through a small f32 tile so each
 * element is rounded exactly once, on store.
 */
#include "cpu.h"
#include "cpu_math.h"
#include "vmath.h"

#include <string.h>

#define TILE 256 /* f32 staging tile for f16 operands: 1 KiB, stays in L1 */
#define VEC 16   /* the fixed trip count GCC -O2 (very-cheap cost model) will vectorise */

typedef struct ew_job {
    const trr_call *call;
    int64_t seg;     /* elements per segment */
    int64_t per_row; /* segments per row */
} ew_job;

/* z = x + y on f32. Each block reads its inputs before it writes, so z may alias x or y exactly. */
static void add_f32(const float *x, const float *y, float *z, int64_t n) {
    int64_t i = 0;
    for (; i + VEC <= n; i += VEC) {
        float t[VEC];
        for (int j = 0; j < VEC; j++) t[j] = x[i + j] + y[i + j];
        for (int j = 0; j < VEC; j++) z[i + j] = t[j];
    }
    for (; i < n; i++) z[i] = x[i] + y[i];
}

/* z = f(x) on f32 for the unary ops, vectorised (vmath.h); z may alias x exactly. */
static void unary_f32(trr_op op, const float *x, float *z, int64_t n) {
    if (op == TRR_OP_SILU) trr_cpu_silu_f32(x, z, n);
    else trr_cpu_gelu_f32(x, z, n);
}

static size_t dtype_bytes(trr_dtype d) {
    return d == TRR_F32 ? 4 : d == TRR_U8 ? 1 : 2;
}

/* One segment: n elements starting at column c of row r. */
static void segment(const trr_call *call, int64_t r, int64_t c, int64_t n) {
    const trr_operand *X = &call->x, *Y = &call->y, *Z = &call->z;
    int64_t xi = X->offset + r * X->stride0 + c;
    int64_t zi = Z->offset + r * Z->stride0 + c;
    if (call->op == TRR_OP_COPY) {
        size_t es = dtype_bytes(Z->dtype);
        unsigned char *d = (unsigned char *)Z->mem + (size_t)zi * es;
        const unsigned char *s = (const unsigned char *)X->mem + (size_t)xi * es;
        if (d != s) memmove(d, s, (size_t)n * es); /* memmove: exact aliasing is allowed */
        return;
    }
    int64_t yi = call->op == TRR_OP_ADD ? Y->offset + r * Y->stride0 + c : 0;
    int all_f32 = X->dtype == TRR_F32 && Z->dtype == TRR_F32 && (call->op != TRR_OP_ADD || Y->dtype == TRR_F32);
    if (all_f32) {
        const float *x = (const float *)X->mem + xi;
        float *z = (float *)Z->mem + zi;
        if (call->op == TRR_OP_ADD) add_f32(x, (const float *)Y->mem + yi, z, n);
        else unary_f32(call->op, x, z, n);
        return;
    }
    float a[TILE], b[TILE];
    for (int64_t done = 0; done < n; done += TILE) {
        int64_t m = n - done < TILE ? n - done : TILE;
        trr_cpu_load_f32(X->mem, X->dtype, xi + done, a, m);
        if (call->op == TRR_OP_ADD) {
            trr_cpu_load_f32(Y->mem, Y->dtype, yi + done, b, m);
            add_f32(a, b, a, m);
        } else {
            unary_f32(call->op, a, a, m);
        }
        trr_cpu_store_f32(Z->mem, Z->dtype, zi + done, a, m);
    }
}

static void ew_task(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    const ew_job *job = arg;
    const trr_call *call = job->call;
    for (int64_t u = begin; u < end; u++) {
        int64_t r = u / job->per_row;
        int64_t c = (u % job->per_row) * job->seg;
        int64_t n = call->cols - c < job->seg ? call->cols - c : job->seg;
        segment(call, r, c, n);
    }
}

trr_status trr_cpu_elementwise(trr_context *ctx, const trr_call *call) {
    ew_job job;
    job.call = call;
    job.seg = call->config.block_n > 0 ? call->config.block_n : 16384;
    if (job.seg > call->cols) job.seg = call->cols;
    job.per_row = (call->cols + job.seg - 1) / job.seg;
    /* gelu and silu each take an exp and a divide an element, so it pays to split them finer than a pure memory
     * op. */
    int unary = call->op == TRR_OP_GELU || call->op == TRR_OP_SILU;
    int64_t want = unary ? 4096 : 65536; /* elements worth waking a thread for */
    int64_t grain = want / job.seg;
    if (grain < 1) grain = 1;
    trr_cpu_parallel_for(trr_cpu_ctx_pool(ctx), call->rows * job.per_row, grain, ew_task, &job);
    return TRR_OK;
}
