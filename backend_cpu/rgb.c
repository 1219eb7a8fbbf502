/*
 * rgb_to_grey: planar u8 [3,H,W] to grey [H,W], one row per task item. The weighted sum is computed in f32
 * exactly as docs/ops.md writes it (no fused multiply-add: C11 mode does not contract), so every backend that
 * follows the same order produces the same f32 value before rounding.
 */
#include "cpu.h"

#define VEC 16

/* Round to nearest, ties to even. A grey value of u8 inputs lies in [0, 254.98] (the weights sum to 0.9999), so
 * no clamp is needed and the result fits a u8. Written with integer steps rather than lrintf so the loop
 * vectorises and does not depend on the FPU rounding mode; v - trunc(v) is exact for v < 2^23. */
static inline uint8_t round_u8(float v) {
    int t = (int)v;
    const float frac = v - (float)t;
    const int up = frac > 0.5f, tie = frac == 0.5f;
    t += up | (tie & t & 1);
    return (uint8_t)t;
}

static inline float grey(uint8_t r, uint8_t g, uint8_t b) {
    return 0.2989f * (float)r + 0.5870f * (float)g + 0.1140f * (float)b;
}

static void rgb_task(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    const trr_call *call = arg;
    const uint8_t *img = (const uint8_t *)call->x.mem;
    int64_t plane = call->x.stride0, rs = call->x.stride1, w = call->cols;
    for (int64_t r = begin; r < end; r++) {
        const uint8_t *R = img + call->x.offset + r * rs;
        const uint8_t *G = R + plane, *B = R + 2 * plane;
        int64_t zi = call->z.offset + r * call->z.stride0;
        if (call->z.dtype == TRR_F32) {
            float *z = (float *)call->z.mem + zi;
            for (int64_t c = 0; c < w; c++) z[c] = grey(R[c], G[c], B[c]);
        } else {
            uint8_t *z = (uint8_t *)call->z.mem + zi;
            int64_t c = 0;
            for (; c + VEC <= w; c += VEC) {
                uint8_t t[VEC];
                for (int j = 0; j < VEC; j++) t[j] = round_u8(grey(R[c + j], G[c + j], B[c + j]));
                for (int j = 0; j < VEC; j++) z[c + j] = t[j];
            }
            for (; c < w; c++) z[c] = round_u8(grey(R[c], G[c], B[c]));
        }
    }
}

trr_status trr_cpu_rgb_to_grey(trr_context *ctx, const trr_call *call) {
    int64_t grain = 32768 / call->cols; /* rows worth waking a thread for */
    trr_cpu_parallel_for(trr_cpu_ctx_pool(ctx), call->rows, grain < 1 ? 1 : grain, rgb_task, (void *)call);
    return TRR_OK;
}
