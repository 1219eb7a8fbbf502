/*
 * Vectorised loops the CPU kernels share: the exp-based functions (gelu, silu, softmax's exponentials) on SLEEF's
 * vector exp, the matmul epilogues, and runs of f16 / bf16 widened to f32 or rounded from it.
 *
 * Each function takes a run of n contiguous elements and may be called from any pool thread. On x86-64 CPUs with
 * AVX2 and FMA (F16C for the f16 conversions) the loops run eight lanes at a time, chosen by a run-time CPU check;
 * elsewhere they run the scalar definitions of cpu_math.h. Both give results inside docs/ops.md's bounds: see
 * vmath.c for the error budget of each function.
 */
#ifndef TRR_CPU_VMATH_H
#define TRR_CPU_VMATH_H

#include "trireme.h"

#include <stdint.h>

/* y = gelu(x) and y = silu(x), element by element (docs/ops.md, the tanh form of gelu); y may be x. */
void trr_cpu_gelu_f32(const float *x, float *y, int64_t n);
void trr_cpu_silu_f32(const float *x, float *y, int64_t n);

/* y = epilogue(y) in place (docs/ops.md, matmul: relu, leaky_relu with slope alpha, gelu; none does nothing). */
void trr_cpu_epilogue_f32(float *y, int64_t n, trr_epilogue epi, float alpha);

/* The largest element of x[0..n), NaN elements ignored (-inf when there is no other). */
float trr_cpu_max_f32(const float *x, int64_t n);

/* y = exp(x - shift), element by element, and returns the sum of the y in double; y may be x. */
double trr_cpu_exp_shift_sum(const float *x, float shift, float *y, int64_t n);

/* y = x * s, element by element; y may be x. */
void trr_cpu_scale_f32(const float *x, float s, float *y, int64_t n);

/* n elements of dtype (any trr_cpu_load_f32 takes; f16 and bf16 are the vectorised ones) at src, as f32 in dst:
 * exact (a signalling NaN may come out quiet). */
void trr_cpu_widen(const void *src, trr_dtype dtype, float *dst, int64_t n);

/* n f32 values rounded to dtype (any trr_cpu_store_f32 takes; f16 and bf16 are the vectorised ones) at dst: round
 * to nearest even, NaN stays NaN, as trr_cpu_store_f32. */
void trr_cpu_narrow(const float *src, trr_dtype dtype, void *dst, int64_t n);

/* The same two at element index idx of base, as trr_cpu_load_f32 and trr_cpu_store_f32 address a run: what the
 * row and element-wise kernels call for a run of a row. */
void trr_cpu_widen_at(const void *base, trr_dtype dtype, int64_t idx, float *dst, int64_t n);
void trr_cpu_narrow_at(const float *src, trr_dtype dtype, void *base, int64_t idx, int64_t n);

/* The same loops for CPUs with AVX2, FMA and F16C (vmath_avx2.c); the functions above call them where the CPU has
 * those, so nothing else calls these. */
void trr_cpu_gelu_avx2(const float *x, float *y, int64_t n);
void trr_cpu_silu_avx2(const float *x, float *y, int64_t n);
void trr_cpu_epilogue_avx2(float *y, int64_t n, trr_epilogue epi, float alpha);
float trr_cpu_max_avx2(const float *x, int64_t n);
double trr_cpu_exp_shift_sum_avx2(const float *x, float shift, float *y, int64_t n);
void trr_cpu_scale_avx2(const float *x, float s, float *y, int64_t n);
void trr_cpu_widen_avx2(const void *src, trr_dtype dtype, float *dst, int64_t n);
void trr_cpu_narrow_avx2(const float *src, trr_dtype dtype, void *dst, int64_t n);

#endif
