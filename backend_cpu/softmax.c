/*
 * softmax, one row per task item, in three passes over the row: the max; exp(x - max) with its sum in double
 * (so rows of any length keep the bound of 1e-5 relative, docs/ops.md); then the scale. Each pass is vectorised
 * (vmath.h; vmath.c gives the exponential's error budget). For f32 output the exponentials are stored in y and
 * scaled in place; f16 output recomputes them in the last pass instead, since storing them as f16 first would
 * round twice. Whole rows per core: the row lives in L2 between passes.
 */
#include "cpu.h"
#include "cpu_math.h"
#include "vmath.h"

#include <math.h>

#define TILE 256

/* x[0..n) of row as f32: points into the buffer for f32 input, else widens into tile. */
static const float *row_tile(const trr_operand *X, int64_t xi, int64_t c, int64_t m, float *tile) {
    if (X->dtype == TRR_F32) return (const float *)X->mem + xi + c;
    trr_cpu_widen_at(X->mem, X->dtype, xi + c, tile, m);
    return tile;
}

static void softmax_row(const trr_call *call, int64_t r) {
    const trr_operand *X = &call->x, *Z = &call->z;
    int64_t n = call->cols;
    int64_t xi = X->offset + r * X->stride0, zi = Z->offset + r * Z->stride0;
    float tile[TILE], e[TILE];

    float mx = -INFINITY;
    for (int64_t c = 0; c < n; c += TILE) {
        int64_t m = n - c < TILE ? n - c : TILE;
        const float *x = row_tile(X, xi, c, m, tile);
        const float tmx = trr_cpu_max_f32(x, m);
        mx = tmx > mx ? tmx : mx;
    }
    /* A row of -inf has no finite max; subtracting it would give nan for every element. */
    if (isinf(mx) && mx < 0) mx = 0.0f;

    double sum = 0.0;
    for (int64_t c = 0; c < n; c += TILE) {
        int64_t m = n - c < TILE ? n - c : TILE;
        const float *x = row_tile(X, xi, c, m, tile);
        sum += trr_cpu_exp_shift_sum(x, mx, Z->dtype == TRR_F32 ? (float *)Z->mem + zi + c : e, m);
    }

    float inv = (float)(1.0 / sum);
    if (Z->dtype == TRR_F32) {
        float *z = (float *)Z->mem + zi;
        trr_cpu_scale_f32(z, inv, z, n);
        return;
    }
    for (int64_t c = 0; c < n; c += TILE) {
        int64_t m = n - c < TILE ? n - c : TILE;
        const float *x = row_tile(X, xi, c, m, tile);
        trr_cpu_exp_shift_sum(x, mx, e, m);
        trr_cpu_scale_f32(e, inv, e, m);
        trr_cpu_narrow_at(e, Z->dtype, Z->mem, zi + c, m);
    }
}

static void softmax_task(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    for (int64_t r = begin; r < end; r++) softmax_row(arg, r);
}

trr_status trr_cpu_softmax(trr_context *ctx, const trr_call *call) {
    int64_t grain = 8192 / call->cols; /* exp dominates, so even short rows are worth splitting */
    trr_cpu_parallel_for(trr_cpu_ctx_pool(ctx), call->rows, grain < 1 ? 1 : grain, softmax_task, (void *)call);
    return TRR_OK;
}
