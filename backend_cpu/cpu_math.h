/*
 * Scalar helpers the CPU kernels share, inline so GCC can vectorise the loops that call them: binary16
 * conversion, gelu, silu, the matmul epilogue, and loading or storing a run of f32 / f16 / u8 elements as f32.
 */
#ifndef TRR_CPU_MATH_H
#define TRR_CPU_MATH_H

#include "half.h"
#include "trireme.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* binary16 -> binary32 is exact. Written out rather than calling trr_half_to_float so the compiler can inline
 * it into the loops; tests/test_cpu_backend.c checks both agree on all 65536 inputs. */
static inline float trr_cpu_h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = h & 0x7fffu;
    uint32_t bits;
    if (em >= 0x7c00u) {
        bits = sign | 0x7f800000u | ((em & 0x3ffu) << 13); /* inf, nan keeps its payload */
    } else if (em >= 0x0400u) {
        bits = sign | ((em << 13) + ((uint32_t)(127 - 15) << 23));
    } else {
        float f = (float)em * 0x1p-24f; /* subnormal or zero: em units of 2^-24, exact in f32 */
        memcpy(&bits, &f, sizeof bits);
        bits |= sign;
    }
    float out;
    memcpy(&out, &bits, sizeof out);
    return out;
}

/* binary32 -> binary16, round to nearest even (docs/ops.md, Element types: half ops round once on store). Normal results round
 * with integer arithmetic; results below 2^-14 let the FPU do the rounding by adding 0.5, whose ulp (2^-24)
 * is exactly the half subnormal step. Assumes the default rounding mode and no flush-to-zero. */
static inline uint16_t trr_cpu_f2h(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {
        if (ax == 0x7f800000u) return (uint16_t)(sign | 0x7c00u);
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* nan stays nan (quiet) */
    }
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
    if (ax < 0x38800000u) {
        float a;
        memcpy(&a, &ax, sizeof a);
        a += 0.5f;
        uint32_t b;
        memcpy(&b, &a, sizeof b);
        return (uint16_t)(sign | (b - 0x3f000000u));
    }
    uint32_t odd = (ax >> 13) & 1u;
    ax += 0xc8000fffu + odd; /* rebias the exponent by -112 and add just under half an ulp, plus the tie bit */
    return (uint16_t)(sign | (ax >> 13));
}

/*
 * gelu, tanh form. 0.5·x·(1 + tanh(u)) equals x / (1 + exp(-2u)) exactly; the second form is what we evaluate
 * because 1 + tanh(u) cancels catastrophically for x below about -3 (a relative error of 1e-4 at x = -3 in
 * f32, total loss by x = -5). The argument is formed in double: exp(-2u) amplifies an error in u by 2|u|
 * (about 70 at x = -9), which in f32 alone reaches the 1e-5 bound of docs/ops.md in the tail. glibc's exp costs about
 * what expf does, so the result is the correctly rounded f32 value for nearly every x at no real price.
 * exp overflowing to inf for very negative x gives -0, the correctly rounded limit.
 */
static inline float trr_cpu_gelu(float x) {
    double xd = x;
    double u = 0.7978845608 * (xd + 0.044715 * xd * xd * xd);
    return (float)(xd / (1.0 + exp(-2.0 * u)));
}

/*
 * silu, x / (1 + exp(-x)). exp's argument is x itself, so nothing amplifies an error in it; the quotient is
 * formed in double all the same, as gelu's is: the result is then the correctly rounded f32 value for nearly
 * every x, and exp(-x) stays finite down to x = -709, so the outputs that are f32 subnormals (x below about
 * -87) come out right rather than as the -0 an f32 exp overflow gives. NaN propagates through exp.
 */
static inline float trr_cpu_silu(float x) {
    double xd = x;
    return (float)(xd / (1.0 + exp(-xd)));
}

static inline float trr_cpu_epilogue(float v, trr_epilogue epi, float alpha) {
    switch (epi) {
    case TRR_EPI_RELU: return v <= 0.0f ? 0.0f : v; /* a NaN stays NaN */
    case TRR_EPI_LEAKY_RELU: return v >= 0.0f ? v : alpha * v;
    case TRR_EPI_GELU: return trr_cpu_gelu(v);
    default: return v;
    }
}

/* bfloat16 -> binary32: the bits are the top half of the f32, so widening is exact. */
static inline float trr_cpu_bf2f(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* binary32 -> bfloat16, round to nearest even on the dropped 16 bits (a carry bumps the exponent, up to inf);
 * a NaN keeps its sign and top payload with the quiet bit set, so it cannot truncate to an infinity. */
static inline uint16_t trr_cpu_f2bf(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* Bytes of one element of dtype as the CPU kernels address it: 4 for f32, 2 for f16 and bf16, 1 for u8 and the
 * 8-bit floats. */
static inline size_t trr_cpu_dtype_bytes(trr_dtype d) {
    return d == TRR_F32 ? 4 : d == TRR_F16 || d == TRR_BF16 ? 2 : 1;
}

/* n elements of dtype starting at element index idx of base, as f32. */
static inline void trr_cpu_load_f32(const void *base, trr_dtype dtype, int64_t idx, float *dst, int64_t n) {
    if (dtype == TRR_F32) {
        memcpy(dst, (const float *)base + idx, (size_t)n * sizeof(float));
    } else if (dtype == TRR_F16) {
        const uint16_t *s = (const uint16_t *)base + idx;
        for (int64_t i = 0; i < n; i++) dst[i] = trr_cpu_h2f(s[i]);
    } else if (dtype == TRR_BF16) {
        const uint16_t *s = (const uint16_t *)base + idx;
        for (int64_t i = 0; i < n; i++) dst[i] = trr_cpu_bf2f(s[i]);
    } else if (dtype == TRR_F8E4M3) {
        const uint8_t *s = (const uint8_t *)base + idx;
        for (int64_t i = 0; i < n; i++) dst[i] = trr_f8e4m3_to_float(s[i]);
    } else if (dtype == TRR_F8E5M2) {
        const uint8_t *s = (const uint8_t *)base + idx;
        for (int64_t i = 0; i < n; i++) dst[i] = trr_cpu_h2f((uint16_t)(s[i] << 8)); /* the top byte of an f16 */
    } else { /* u8 */
        const uint8_t *s = (const uint8_t *)base + idx;
        for (int64_t i = 0; i < n; i++) dst[i] = (float)s[i];
    }
}

/* Stores n f32 values as dtype (f32, f16, bf16 or an 8-bit float: docs/ops.md's rounding and saturation) at
 * element index idx of base. */
static inline void trr_cpu_store_f32(void *base, trr_dtype dtype, int64_t idx, const float *src, int64_t n) {
    if (dtype == TRR_F32) {
        memcpy((float *)base + idx, src, (size_t)n * sizeof(float));
    } else if (dtype == TRR_BF16) {
        uint16_t *d = (uint16_t *)base + idx;
        for (int64_t i = 0; i < n; i++) d[i] = trr_cpu_f2bf(src[i]);
    } else if (dtype == TRR_F8E4M3) {
        uint8_t *d = (uint8_t *)base + idx;
        for (int64_t i = 0; i < n; i++) d[i] = trr_f8e4m3_from_float(src[i]);
    } else if (dtype == TRR_F8E5M2) {
        uint8_t *d = (uint8_t *)base + idx;
        for (int64_t i = 0; i < n; i++) d[i] = trr_f8e5m2_from_float(src[i]);
    } else {
        uint16_t *d = (uint16_t *)base + idx;
        for (int64_t i = 0; i < n; i++) d[i] = trr_cpu_f2h(src[i]);
    }
}

#endif
