/*
 * row_sum: y[r] = sum of row r. docs/ops.md bounds the error by 1e-6 of the sum of magnitudes for rows of 65536,
 * which sequential f32 accumulation misses (its bound grows with n·eps), so each row is summed in double. Eight
 * independent double lanes break the add dependency chain, so the loop runs at memory speed and vectorises.
 */
#include "cpu.h"
#include "cpu_math.h"
#include "vmath.h"

#define LANES 8
#define TILE 256

static double sum_f32(const float *x, int64_t n) {
    double acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += (double)x[i + j];
    double s = 0.0;
    for (; i < n; i++) s += (double)x[i];
    for (int j = 0; j < LANES; j++) s += acc[j];
    return s;
}

static void rowsum_task(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    const trr_call *call = arg;
    const trr_operand *X = &call->x;
    float *y = (float *)call->z.mem;
    for (int64_t r = begin; r < end; r++) {
        int64_t xi = X->offset + r * X->stride0;
        double s = 0.0;
        if (X->dtype == TRR_F32) {
            s = sum_f32((const float *)X->mem + xi, call->cols);
        } else {
            float t[TILE];
            for (int64_t c = 0; c < call->cols; c += TILE) {
                int64_t m = call->cols - c < TILE ? call->cols - c : TILE;
                trr_cpu_widen_at(X->mem, X->dtype, xi + c, t, m);
                s += sum_f32(t, m);
            }
        }
        y[call->z.offset + r * call->z.stride0] = (float)s;
    }
}

trr_status trr_cpu_row_sum(trr_context *ctx, const trr_call *call) {
    int64_t grain = 65536 / call->cols;
    trr_cpu_parallel_for(trr_cpu_ctx_pool(ctx), call->rows, grain < 1 ? 1 : grain, rowsum_task, (void *)call);
    return TRR_OK;
}
