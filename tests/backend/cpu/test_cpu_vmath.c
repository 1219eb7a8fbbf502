/* The CPU backend's vector loops (backend_cpu/vmath.h) against the scalar definitions and float64: the half
 * conversions bit for bit (every f16 and bf16 pattern, f32 patterns across the range, ties, specials), gelu and
 * silu within docs/ops.md's 1e-5 across the range where the vector path hands over to the scalar one, softmax's
 * exponentials and sum, the max and the epilogues. Runs of every length 1 to 19 at odd offsets reach the
 * padded tails; on a CPU without AVX2 the same checks hold the scalar path. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../backend_cpu/cpu_math.h"
#include "../backend_cpu/vmath.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint32_t next_u32(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

static double uniform(double lo, double hi) {
    return lo + (hi - lo) * (double)next_u32() * 0x1p-32;
}

static uint32_t bits_of(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static float float_of(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

Test(cpu_vmath, widen_every_half_pattern) {
    uint16_t *h = malloc(0x10000 * sizeof *h);
    float *f = malloc(0x10001 * sizeof *f);
    cr_assert(h && f);
    for (uint32_t i = 0; i < 0x10000u; i++) h[i] = (uint16_t)i;
    const trr_dtype dts[] = {TRR_F16, TRR_BF16};
    for (int d = 0; d < 2; d++) {
        for (int64_t start = 0; start < 3; start++) { /* odd starts: unaligned vector loads */
            trr_cpu_widen(h + start, dts[d], f, 0x10000 - start);
            for (uint32_t i = (uint32_t)start; i < 0x10000u; i++) {
                const float want = dts[d] == TRR_F16 ? trr_cpu_h2f((uint16_t)i) : trr_cpu_bf2f((uint16_t)i);
                if (isnan(want)) { /* a NaN stays a NaN of its sign; a signalling one may come out quiet */
                    cr_assert(isnan(f[i - start]) && signbit(f[i - start]) == signbit(want), "0x%04x", i);
                    continue;
                }
                cr_assert_eq(bits_of(f[i - start]), bits_of(want), "%s 0x%04x: 0x%08x, want 0x%08x",
                             d ? "bf16" : "f16", i, bits_of(f[i - start]), bits_of(want));
            }
        }
    }
    free(h);
    free(f);
}

/* f32 values that stress the rounding: random bit patterns, every tie between adjacent halves and bf16s with
 * its neighbours, the overflow edge, subnormals, infinities and NaNs with payloads. */
static int64_t narrow_inputs(float *x, int64_t cap) {
    int64_t n = 0;
    while (n < cap / 2) x[n++] = float_of(next_u32());
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, float_of(0x7f800001u), float_of(0xffc12345u),
                              65504.0f, 65519.99f, 65520.0f, -65520.0f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-14f,
                              FLT_MIN, FLT_MAX, -FLT_MAX, 0x1p-149f, float_of(0x7f7f8000u), float_of(0x3f808000u)};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0] && n < cap; i++) x[n++] = specials[i];
    for (uint32_t h = 0; h < 0x7bffu && n + 3 <= cap; h += 7) {
        const float mid = (float)(0.5 * ((double)trr_cpu_h2f((uint16_t)h) + (double)trr_cpu_h2f((uint16_t)(h + 1))));
        x[n++] = nextafterf(mid, 0.0f), x[n++] = mid, x[n++] = nextafterf(mid, INFINITY);
    }
    while (n < cap) x[n++] = float_of((next_u32() & 0xffff0000u) | 0x8000u); /* bf16 ties */
    return n;
}

Test(cpu_vmath, narrow_matches_scalar_rounding) {
    enum { N = 40000 };
    float *x = malloc(N * sizeof *x);
    uint16_t *got = malloc((N + 1) * sizeof *got);
    cr_assert(x && got);
    const int64_t n = narrow_inputs(x, N);
    const trr_dtype dts[] = {TRR_F16, TRR_BF16};
    for (int d = 0; d < 2; d++)
        for (int64_t start = 0; start < 2; start++) {
            trr_cpu_narrow(x + start, dts[d], got, n - start);
            for (int64_t i = start; i < n; i++) {
                const uint16_t want = dts[d] == TRR_F16 ? trr_cpu_f2h(x[i]) : trr_cpu_f2bf(x[i]);
                cr_assert_eq(got[i - start], want, "%s of 0x%08x (%a): 0x%04x, want 0x%04x", d ? "bf16" : "f16",
                             bits_of(x[i]), (double)x[i], got[i - start], want);
            }
        }
    free(x);
    free(got);
}

static double gelu_ref(double x) {
    return x / (1.0 + exp(-2.0 * 0.7978845608 * (x + 0.044715 * x * x * x)));
}

static double silu_ref(double x) {
    return x / (1.0 + exp(-x));
}

/* docs/ops.md: relative error <= 1e-5 with the smallest normal f32 as the floor; NaN where the formula gives NaN */
static void check_unary(const char *name, double (*ref)(double), void (*fn)(const float *, float *, int64_t),
                        const float *x, int64_t n) {
    float *y = malloc((size_t)(n + 1) * sizeof *y);
    cr_assert(y);
    for (int64_t len = 1; len < 20; len++) /* every tail length, at odd offsets */
        for (int64_t at = 0; at + len <= n; at += 131) fn(x + at, y + at, len);
    fn(x, y, n);
    for (int64_t i = 0; i < n; i++) {
        const double w = ref((double)x[i]);
        if (!isfinite(w)) {
            cr_assert(isnan(w) ? isnan(y[i]) : (double)y[i] == w, "%s(%a) = %a, want %a", name, (double)x[i],
                      (double)y[i], w);
            continue;
        }
        const double rel = fabs((double)y[i] - w) / fmax(fabs(w), FLT_MIN);
        cr_assert(rel <= 1e-5, "%s(%a) = %.9g, ref %.9g: relative error %g", name, (double)x[i], (double)y[i], w, rel);
    }
    free(y);
}

/* across the range, densely around the points where the vector path hands lanes to the scalar one (|x| = 9 for
 * gelu, 80 for silu) and where exp leaves the normal range; infinities and NaN in between */
static int64_t unary_inputs(float *x, int64_t cap) {
    int64_t n = 0;
    const float edges[] = {9.0f, 80.0f, 87.3f, 88.7f, 91.8f, 103.9f};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++)
        for (int s = -1; s <= 1; s += 2) {
            float v = (float)s * edges[e];
            for (int k = 0; k < 40; k++) x[n++] = v, v = nextafterf(v, 0.0f);
        }
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MIN, -FLT_MIN, 0x1p-149f, -0x1p-149f, 1e30f,
                              -1e30f};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) x[n++] = specials[i];
    for (; n < cap; n++) x[n] = (float)(n % 3 ? uniform(-12, 12) : uniform(-110, 110));
    return n;
}

Test(cpu_vmath, gelu_and_silu_within_the_bound) {
    enum { N = 60000 };
    float *x = malloc(N * sizeof *x);
    cr_assert(x);
    const int64_t n = unary_inputs(x, N);
    check_unary("gelu", gelu_ref, trr_cpu_gelu_f32, x, n);
    check_unary("silu", silu_ref, trr_cpu_silu_f32, x, n);
    free(x);
}

Test(cpu_vmath, epilogues) {
    enum { N = 1003 };
    float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = (float)uniform(-12, 12);
    x[0] = NAN, x[1] = -0.0f, x[2] = INFINITY, x[3] = -INFINITY;
    const trr_epilogue epis[] = {TRR_EPI_NONE, TRR_EPI_RELU, TRR_EPI_LEAKY_RELU, TRR_EPI_GELU};
    for (size_t e = 0; e < sizeof epis / sizeof epis[0]; e++) {
        memcpy(y, x, sizeof y);
        trr_cpu_epilogue_f32(y, N, epis[e], 0.25f);
        for (int i = 0; i < N; i++) {
            const float want = trr_cpu_epilogue(x[i], epis[e], 0.25f);
            if (epis[e] == TRR_EPI_GELU && isfinite(want))
                cr_assert(fabs((double)y[i] - want) <= 1e-5 * fmax(fabs(want), FLT_MIN), "gelu(%a)", (double)x[i]);
            else
                cr_assert_eq(bits_of(y[i]), bits_of(want), "epilogue %d of %a: %a, want %a", (int)epis[e],
                             (double)x[i], (double)y[i], (double)want);
        }
    }
}

Test(cpu_vmath, softmax_exponentials_max_and_scale) {
    enum { N = 4099 };
    float x[N], y[N + 1];
    for (int i = 0; i < N; i++) x[i] = (float)uniform(-100, 100);
    x[77] = -INFINITY;
    for (int64_t len = 1; len <= N; len += len < 20 ? 1 : 997) {
        const float mx = trr_cpu_max_f32(x, len);
        float want_mx = -INFINITY;
        for (int64_t i = 0; i < len; i++) want_mx = fmaxf(want_mx, x[i]);
        cr_assert_eq(mx, want_mx, "max of %lld", (long long)len);
        y[len] = 12345.0f;
        const double sum = trr_cpu_exp_shift_sum(x, mx, y, len);
        cr_assert_eq(y[len], 12345.0f, "wrote past the run");
        double want_sum = 0.0;
        for (int64_t i = 0; i < len; i++) {
            const double w = exp((double)x[i] - (double)mx);
            want_sum += w;
            /* the subtraction's rounding (x - max within 200 here) and exp's ULP; below the floor, absolute */
            cr_assert(fabs(y[i] - w) <= 2e-5 * fmax(w, FLT_MIN), "exp(%a - %a) = %a, want %a", (double)x[i],
                      (double)mx, (double)y[i], w);
        }
        cr_assert(fabs(sum - want_sum) <= 2e-5 * want_sum, "sum %.17g, want %.17g", sum, want_sum);
        trr_cpu_scale_f32(y, 0.5f, y, len);
        for (int64_t i = 0; i < len; i++) cr_assert(y[i] <= 1.0f && y[i] >= 0.0f);
    }
    /* a NaN is ignored by the max and comes out of the exponential */
    x[5] = NAN;
    cr_assert(!isnan(trr_cpu_max_f32(x, 20)));
    trr_cpu_exp_shift_sum(x, trr_cpu_max_f32(x, 20), y, 20);
    cr_assert(isnan(y[5]));
    const float all_inf[9] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                              -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    cr_assert_eq(trr_cpu_max_f32(all_inf, 9), -INFINITY);
}
