/*
 * The vectorised loops of vmath.h. Each picks the AVX2 loop (vmath_avx2.c, on SLEEF's 1.0-ULP vector exp) where
 * the CPU has AVX2, FMA and F16C, else the scalar definitions in cpu_math.h, which evaluate exp in double and are
 * correctly rounded for nearly every input.
 *
 * Error budget against docs/ops.md's 1e-5 relative bound for f32 (an ULP of f32 is at most 2^-23 relative,
 * 1.2e-7):
 * - silu = x / (1 + e^-x) for |x| <= 80: exp 1 ULP, the sum and the quotient half an ULP each, at most 2 ULP
 *   (2.4e-7). Past |x| > 80 e^-x would leave the normal range, where its relative error grows; those lanes take
 *   the scalar double definition, as do infinities.
 * - gelu = x / (1 + e^t), t = -2u (docs/ops.md), for |x| <= 9 (|t| <= 67). An error in t becomes a relative
 *   error |t| times larger in e^t, so t is formed in double and split into an f32 head th and tail tl, and
 *   e^t = e^th * (1 + tl) (tl is below half an ULP of th, its square negligible): exp 1 ULP, the correction, the
 *   sum and the quotient half an ULP each, at most 2.5 ULP (3e-7). Lanes with |x| > 9 (and infinities) take the
 *   scalar double definition.
 * - softmax's e^(x - max): the subtraction rounds to half an ULP of |x - max| and the exponential turns that
 *   into a relative error of up to |x - max| * 2^-24; below x - max = -87.3 the exponential leaves the normal
 *   range, and an output of that size is under the bound's floor. So at most 87.3 * 2^-24 (5.2e-6) plus exp's
 *   1 ULP, the reciprocal's and the product's half ULP each: under 5.5e-6. The sum is kept in double.
 * NaN propagates through each (a NaN lane stays on the vector path and gives NaN); the max ignores NaN lanes, a
 * NaN row still comes out NaN through its exponentials.
 */
#include "vmath.h"

#include "cpu_math.h"

#include <math.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define TRR_VMATH_AVX2 1
static int use_avx2(void) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}
#endif

void trr_cpu_gelu_f32(const float *x, float *y, int64_t n) {
#ifdef TRR_VMATH_AVX2
    if (use_avx2()) {
        trr_cpu_gelu_avx2(x, y, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = trr_cpu_gelu(x[i]);
}

void trr_cpu_silu_f32(const float *x, float *y, int64_t n) {
#ifdef TRR_VMATH_AVX2
    if (use_avx2()) {
        trr_cpu_silu_avx2(x, y, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = trr_cpu_silu(x[i]);
}

void trr_cpu_epilogue_f32(float *y, int64_t n, trr_epilogue epi, float alpha) {
    if (epi == TRR_EPI_NONE) return;
#ifdef TRR_VMATH_AVX2
    if (use_avx2()) {
        trr_cpu_epilogue_avx2(y, n, epi, alpha);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = trr_cpu_epilogue(y[i], epi, alpha);
}

float trr_cpu_max_f32(const float *x, int64_t n) {
#ifdef TRR_VMATH_AVX2
    if (use_avx2()) return trr_cpu_max_avx2(x, n);
#endif
    float r = -INFINITY;
    for (int64_t i = 0; i < n; i++) r = x[i] > r ? x[i] : r;
    return r;
}

double trr_cpu_exp_shift_sum(const float *x, float shift, float *y, int64_t n) {
#ifdef TRR_VMATH_AVX2
    if (use_avx2()) return trr_cpu_exp_shift_sum_avx2(x, shift, y, n);
#endif
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        y[i] = expf(x[i] - shift);
        sum += (double)y[i];
    }
    return sum;
}

void trr_cpu_scale_f32(const float *x, float s, float *y, int64_t n) {
#ifdef TRR_VMATH_AVX2
    if (use_avx2()) {
        trr_cpu_scale_avx2(x, s, y, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * s;
}

void trr_cpu_widen(const void *src, trr_dtype dtype, float *dst, int64_t n) {
#ifdef TRR_VMATH_AVX2
    if (use_avx2()) {
        trr_cpu_widen_avx2(src, dtype, dst, n);
        return;
    }
#endif
    trr_cpu_load_f32(src, dtype, 0, dst, n);
}

void trr_cpu_narrow(const float *src, trr_dtype dtype, void *dst, int64_t n) {
#ifdef TRR_VMATH_AVX2
    if (use_avx2()) {
        trr_cpu_narrow_avx2(src, dtype, dst, n);
        return;
    }
#endif
    trr_cpu_store_f32(dst, dtype, 0, src, n);
}

void trr_cpu_widen_at(const void *base, trr_dtype dtype, int64_t idx, float *dst, int64_t n) {
    trr_cpu_widen((const unsigned char *)base + (size_t)idx * trr_cpu_dtype_bytes(dtype), dtype, dst, n);
}

void trr_cpu_narrow_at(const float *src, trr_dtype dtype, void *base, int64_t idx, int64_t n) {
    trr_cpu_narrow(src, dtype, (unsigned char *)base + (size_t)idx * trr_cpu_dtype_bytes(dtype), n);
}
