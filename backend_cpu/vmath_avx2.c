/*
 * The AVX2 loops of vmath.h: eight f32 lanes in GCC vector types, this file alone compiled for AVX2, FMA and F16C
 * (CMakeLists.txt), called only where the CPU has them (vmath.c checks at run time), so the library itself still
 * runs on any x86-64. The exponential is SLEEF's Sleef_expf8_u10avx2, documented to stay within 1.0 ULP over the
 * whole f32 range. A run's last n % 8 elements go through the same vector code on a padded copy, so an element's
 * result never depends on where it sits in the run. vmath.c gives the error budget of each function.
 */
#include "vmath.h"

#include "cpu_math.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>
#include <math.h>
#include <sleef.h>
#include <string.h>

#define W 8

typedef float vf __attribute__((vector_size(4 * W)));
typedef int32_t vi __attribute__((vector_size(4 * W)));
/* Doubles in halves of four: a generic vector wider than a register is lowered through the stack. */
typedef double vd __attribute__((vector_size(32)));

/* gelu's argument, t = -2 * 0.7978845608 * (x + 0.044715 x^3) = x (K1 + K3 x^2), in double */
static const double K1 = -2.0 * 0.7978845608, K3 = -2.0 * 0.7978845608 * 0.044715;

static inline vf vload(const float *p) {
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void vstore(float *p, vf v) {
    memcpy(p, &v, sizeof v);
}

static inline vf vsplat(float s) {
    return (vf){s, s, s, s, s, s, s, s};
}

/* lanes of a where m is set (all ones), else lanes of b */
static inline vf vsel(vi m, vf a, vf b) {
    return (vf)(((vi)a & m) | ((vi)b & ~m));
}

static inline vf vabs(vf x) {
    return (vf)((vi)x & 0x7fffffff);
}

static inline int vany(vi m) {
    return _mm256_movemask_ps((__m256)m) != 0;
}

/* the low and high four lanes of x in double, and back */
static inline vd vlo(vf x) {
    return (vd)_mm256_cvtps_pd(_mm256_castps256_ps128((__m256)x));
}

static inline vd vhi(vf x) {
    return (vd)_mm256_cvtps_pd(_mm256_extractf128_ps((__m256)x, 1));
}

static inline vf vfrom(vd lo, vd hi) {
    return (vf)_mm256_set_m128(_mm256_cvtpd_ps((__m256d)hi), _mm256_cvtpd_ps((__m256d)lo));
}

static inline vf vexp(vf x) {
    return (vf)Sleef_expf8_u10avx2((__m256)x);
}

static vf gelu_v(vf x) {
    const vi wide = vabs(x) > vsplat(9.0f);
    const vf xs = vsel(wide, vsplat(0.0f), x); /* keeps t finite on lanes the scalar code redoes */
    const vd xlo = vlo(xs), xhi = vhi(xs);
    const vd tlo = xlo * (K1 + K3 * xlo * xlo), thi = xhi * (K1 + K3 * xhi * xhi);
    const vf th = vfrom(tlo, thi);
    const vf tl = vfrom(tlo - vlo(th), thi - vhi(th));
    vf e = vexp(th);
    e = e + e * tl;
    vf y = xs / (1.0f + e);
    if (vany(wide))
        for (int i = 0; i < W; i++)
            if (wide[i]) y[i] = trr_cpu_gelu(x[i]);
    return y;
}

static vf silu_v(vf x) {
    const vi wide = vabs(x) > vsplat(80.0f);
    const vf xs = vsel(wide, vsplat(0.0f), x);
    vf y = xs / (1.0f + vexp(-xs));
    if (vany(wide))
        for (int i = 0; i < W; i++)
            if (wide[i]) y[i] = trr_cpu_silu(x[i]);
    return y;
}

typedef vf (*vec_fn)(vf);

/* y = f(x) over n elements, the tail through a copy padded with pad */
static void map_v(vec_fn f, const float *x, float *y, int64_t n, float pad) {
    int64_t i = 0;
    for (; i + W <= n; i += W) vstore(y + i, f(vload(x + i)));
    if (i < n) {
        float t[W];
        const int64_t r = n - i;
        for (int j = 0; j < W; j++) t[j] = j < r ? x[i + j] : pad;
        vstore(t, f(vload(t)));
        memcpy(y + i, t, (size_t)r * sizeof(float));
    }
}

void trr_cpu_gelu_avx2(const float *x, float *y, int64_t n) {
    map_v(gelu_v, x, y, n, 0.0f);
}

void trr_cpu_silu_avx2(const float *x, float *y, int64_t n) {
    map_v(silu_v, x, y, n, 0.0f);
}

static vf relu_v(vf v) {
    return vsel(v <= vsplat(0.0f), vsplat(0.0f), v); /* NaN fails the test and stays; -0 becomes +0 */
}

void trr_cpu_epilogue_avx2(float *y, int64_t n, trr_epilogue epi, float alpha) {
    if (epi == TRR_EPI_GELU) {
        map_v(gelu_v, y, y, n, 0.0f);
    } else if (epi == TRR_EPI_RELU) {
        map_v(relu_v, y, y, n, 0.0f);
    } else if (epi == TRR_EPI_LEAKY_RELU) {
        const vf a = vsplat(alpha);
        int64_t i = 0;
        for (; i + W <= n; i += W) {
            const vf v = vload(y + i);
            vstore(y + i, vsel(v >= vsplat(0.0f), v, a * v));
        }
        for (; i < n; i++) y[i] = trr_cpu_epilogue(y[i], epi, alpha);
    }
}

float trr_cpu_max_avx2(const float *x, int64_t n) {
    vf m = vsplat(-INFINITY);
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        const vf v = vload(x + i);
        m = vsel(v > m, v, m);
    }
    float r = -INFINITY;
    for (int j = 0; j < W; j++) r = m[j] > r ? m[j] : r;
    for (; i < n; i++) r = x[i] > r ? x[i] : r;
    return r;
}

double trr_cpu_exp_shift_sum_avx2(const float *x, float shift, float *y, int64_t n) {
    const vf s = vsplat(shift);
    vd acc_lo = {0}, acc_hi = {0};
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        const vf e = vexp(vload(x + i) - s);
        vstore(y + i, e);
        acc_lo += vlo(e);
        acc_hi += vhi(e);
    }
    if (i < n) {
        float t[W];
        const int64_t r = n - i;
        for (int j = 0; j < W; j++) t[j] = j < r ? x[i + j] : -INFINITY; /* e^-inf = 0 adds nothing */
        const vf e = vexp(vload(t) - s);
        vstore(t, e);
        memcpy(y + i, t, (size_t)r * sizeof(float));
        acc_lo += vlo(e);
        acc_hi += vhi(e);
    }
    const vd acc = acc_lo + acc_hi;
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

void trr_cpu_scale_avx2(const float *x, float s, float *y, int64_t n) {
    const vf v = vsplat(s);
    int64_t i = 0;
    for (; i + W <= n; i += W) vstore(y + i, vload(x + i) * v);
    for (; i < n; i++) y[i] = x[i] * s;
}

void trr_cpu_widen_avx2(const void *src, trr_dtype dtype, float *dst, int64_t n) {
    int64_t i = 0;
    if (dtype == TRR_F16) {
        const uint16_t *s = src;
        for (; i + W <= n; i += W)
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(s + i))));
    } else if (dtype == TRR_BF16) {
        const uint16_t *s = src;
        for (; i + W <= n; i += W) {
            const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(s + i)));
            _mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm256_slli_epi32(w, 16));
        }
    }
    if (i < n) trr_cpu_load_f32(src, dtype, i, dst + i, n - i);
}

void trr_cpu_narrow_avx2(const float *src, trr_dtype dtype, void *dst, int64_t n) {
    int64_t i = 0;
    uint16_t *d = dst;
    if (dtype == TRR_F16) {
        /* the instruction rounds to nearest even, keeps a NaN a (quiet) NaN with its top payload, and rounds
         * subnormal results exactly: what trr_cpu_f2h does */
        for (; i + W <= n; i += W)
            _mm_storeu_si128((__m128i *)(void *)(d + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    } else if (dtype == TRR_BF16) {
        for (; i + W <= n; i += W) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
            const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
            const __m256i rounded =
                _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), odd), 16);
            const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
            const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                                                   _mm256_set1_epi32(0x7f800000));
            const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
            /* 32-bit lanes to 16: packus works within each 128-bit half, the permute puts the halves in order */
            const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xd8);
            _mm_storeu_si128((__m128i *)(void *)(d + i), _mm256_castsi256_si128(packed));
        }
    }
    if (i < n) trr_cpu_store_f32(dst, dtype, i, src + i, n - i);
}

#endif
