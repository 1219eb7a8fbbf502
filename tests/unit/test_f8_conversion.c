/* The OCP 8-bit floats (core/half.c; docs/ops.md, Element types): every code's value and round trip, round to
 * nearest even against an independent nearest-value search, ties, subnormals, saturation, infinities, NaN, -0. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "half.h"
#include "trireme.h"

static float bits_to_float(uint32_t x) {
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* One format as the test sees it: its conversions and what its codes mean, written out here from the OCP
 * definition rather than taken from the library. */
typedef struct f8_format {
    const char *name;
    int mbits, bias;
    int has_inf;
    uint8_t (*from)(float);
    float (*to)(uint8_t);
} f8_format;

static const f8_format e4m3 = {"e4m3", 3, 7, 0, trr_f8e4m3_from_float, trr_f8e4m3_to_float};
static const f8_format e5m2 = {"e5m2", 2, 15, 1, trr_f8e5m2_from_float, trr_f8e5m2_to_float};

static int is_nan_code(const f8_format *f, unsigned c) {
    const unsigned mag = c & 0x7fu;
    if (!f->has_inf) return mag == 0x7fu;
    return (mag >> f->mbits) == (0x7fu >> f->mbits) && (mag & ((1u << f->mbits) - 1u));
}

static int is_inf_code(const f8_format *f, unsigned c) {
    return f->has_inf && (c & 0x7fu) == (0x7fu >> f->mbits) << f->mbits;
}

/* The value of a finite code from the definition: 2^(e - bias) * (1 + m / 2^mbits), or 2^(1 - bias) * m / 2^mbits. */
static double code_value(const f8_format *f, unsigned c) {
    const int e = (int)((c & 0x7fu) >> f->mbits), m = (int)(c & ((1u << f->mbits) - 1u));
    const double v = e ? ldexp(1.0 + m / (double)(1 << f->mbits), e - f->bias) : ldexp(m / (double)(1 << f->mbits), 1 - f->bias);
    return (c & 0x80u) ? -v : v;
}

/* The expected code for a finite non-NaN x by search: the nearest finite value, ties to the even code, anything
 * at or past the largest finite value saturating to it (the rule for finite inputs in both formats). */
static unsigned oracle(const f8_format *f, float x) {
    const unsigned sign = signbit(x) ? 0x80u : 0u;
    const double a = fabs((double)x);
    unsigned best = 0;
    double best_d = INFINITY;
    for (unsigned c = 0; c < 0x80u; c++) {
        if (is_nan_code(f, c) || is_inf_code(f, c)) continue;
        const double d = fabs(code_value(f, c) - a);
        if (d < best_d || (d == best_d && (c & 1u) == 0)) best = c, best_d = d;
    }
    return sign | best;
}

static void check_every_code(const f8_format *f) {
    for (unsigned c = 0; c < 256; c++) {
        const float v = f->to((uint8_t)c);
        if (is_nan_code(f, c)) {
            cr_assert(isnan(v), "%s 0x%02x should be NaN, is %g", f->name, c, (double)v);
            const uint8_t back = f->from(v);
            cr_assert(is_nan_code(f, back) && (back & 0x80u) == (c & 0x80u), "%s NaN 0x%02x came back 0x%02x",
                      f->name, c, back);
            continue;
        }
        if (is_inf_code(f, c)) {
            cr_assert(isinf(v) && (signbit(v) != 0) == ((c & 0x80u) != 0), "%s 0x%02x should be an infinity", f->name, c);
        } else {
            cr_assert_eq((double)v, code_value(f, c), "%s 0x%02x is %.9g, want %.9g", f->name, c, (double)v,
                         code_value(f, c));
            cr_assert_eq(signbit(v) != 0, (c & 0x80u) != 0, "%s 0x%02x has the wrong sign", f->name, c);
        }
        cr_assert_eq(f->from(v), c, "%s 0x%02x -> %g -> 0x%02x", f->name, c, (double)v, f->from(v));
    }
}

Test(f8, every_code_round_trips) {
    check_every_code(&e4m3);
    check_every_code(&e5m2);
}

/* Every midpoint between neighbouring finite values, the f32 values just either side of it, and each value's
 * own neighbours, against the search: the ties and the boundaries of every rounding interval. */
static void check_boundaries(const f8_format *f) {
    for (unsigned c = 0; c + 1 < 0x80u; c++) {
        if (is_nan_code(f, c) || is_inf_code(f, c) || is_nan_code(f, c + 1) || is_inf_code(f, c + 1)) continue;
        const float lo = (float)code_value(f, c), hi = (float)code_value(f, c + 1);
        const float mid = (float)((code_value(f, c) + code_value(f, c + 1)) / 2); /* exact: a few bits */
        const float probes[] = {lo, nextafterf(lo, INFINITY), mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY),
                                nextafterf(hi, 0.0f)};
        for (unsigned i = 0; i < sizeof probes / sizeof probes[0]; i++) {
            for (int s = 0; s < 2; s++) {
                const float x = s ? -probes[i] : probes[i];
                cr_assert_eq(f->from(x), oracle(f, x), "%s(%.9g) = 0x%02x, want 0x%02x", f->name, (double)x, f->from(x),
                             oracle(f, x));
            }
        }
    }
}

Test(f8, midpoints_and_neighbours) {
    check_boundaries(&e4m3);
    check_boundaries(&e5m2);
}

/* Random f32 bit patterns over the whole range (about a million), against the search. */
Test(f8, random_floats_match_the_search) {
    uint64_t s = 0x243f6a8885a308d3ull;
    for (int i = 0; i < 1 << 20; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        /* exponents spread over the formats' range and past it: 2^-30 .. 2^20 */
        const uint32_t exp = 97u + (uint32_t)((s >> 33) % 51u);
        const uint32_t bits = (uint32_t)(s >> 8) & 0x807fffffu;
        const float x = bits_to_float(bits | (exp << 23));
        cr_assert_eq(e4m3.from(x), oracle(&e4m3, x), "e4m3(%a)", (double)x);
        cr_assert_eq(e5m2.from(x), oracle(&e5m2, x), "e5m2(%a)", (double)x);
    }
}

Test(f8, ties_to_even) {
    /* e4m3 around 1: steps of 1/8. 1 + 1/16 lies halfway between 1 (even) and 1.125: rounds to 1 */
    cr_expect_eq(trr_f8e4m3_from_float(1.0625f), 0x38);
    cr_expect_eq(trr_f8e4m3_from_float(1.1875f), 0x3a); /* between 1.125 (odd) and 1.25 (even): up */
    cr_expect_eq(trr_f8e4m3_from_float(nextafterf(1.0625f, 2.0f)), 0x39);
    /* e5m2 around 1: steps of 1/4 */
    cr_expect_eq(trr_f8e5m2_from_float(1.125f), 0x3c);
    cr_expect_eq(trr_f8e5m2_from_float(1.375f), 0x3e);
    /* subnormal ties: half the smallest subnormal goes to 0, one and a half of it to 2 */
    cr_expect_eq(trr_f8e4m3_from_float(ldexpf(1.0f, -10)), 0x00);
    cr_expect_eq(trr_f8e4m3_from_float(-ldexpf(1.0f, -10)), 0x80);
    cr_expect_eq(trr_f8e4m3_from_float(ldexpf(3.0f, -10)), 0x02);
    cr_expect_eq(trr_f8e4m3_from_float(nextafterf(ldexpf(1.0f, -10), 1.0f)), 0x01);
    cr_expect_eq(trr_f8e5m2_from_float(ldexpf(1.0f, -17)), 0x00);
    cr_expect_eq(trr_f8e5m2_from_float(ldexpf(3.0f, -17)), 0x02);
    /* rounding up out of the subnormals gives the smallest normal (e4m3: 7.5 * 2^-9 -> 2^-6) */
    cr_expect_eq(trr_f8e4m3_from_float(ldexpf(7.5f, -9)), 0x08);
    cr_expect_eq(trr_f8e5m2_from_float(ldexpf(3.5f, -16)), 0x04);
}

Test(f8, known_values) {
    cr_expect_eq(trr_f8e4m3_from_float(1.0f), 0x38);
    cr_expect_eq(trr_f8e4m3_from_float(-2.0f), 0xc0);
    cr_expect_eq(trr_f8e4m3_from_float(448.0f), 0x7e);
    cr_expect_eq(trr_f8e4m3_from_float(ldexpf(1.0f, -9)), 0x01); /* smallest subnormal */
    cr_expect_eq(trr_f8e4m3_from_float(ldexpf(1.0f, -6)), 0x08); /* smallest normal */
    cr_expect_eq(trr_f8e5m2_from_float(1.0f), 0x3c);
    cr_expect_eq(trr_f8e5m2_from_float(57344.0f), 0x7b);
    cr_expect_eq(trr_f8e5m2_from_float(ldexpf(1.0f, -16)), 0x01);
    cr_expect_eq(trr_f8e5m2_from_float(ldexpf(1.0f, -14)), 0x04);
    cr_expect_float_eq(trr_f8e4m3_to_float(0x7e), 448.0f, 0.0f);
    cr_expect_float_eq(trr_f8e5m2_to_float(0x7b), 57344.0f, 0.0f);
}

Test(f8, saturation) {
    /* e4m3: past 448 (464 is the tie with the would-be 480, 1e6, FLT_MAX) and infinity all give 448 */
    const float big[] = {449.0f, 464.0f, 480.0f, 1e6f, FLT_MAX, INFINITY};
    for (unsigned i = 0; i < sizeof big / sizeof big[0]; i++) {
        cr_expect_eq(trr_f8e4m3_from_float(big[i]), 0x7e, "e4m3(%g)", (double)big[i]);
        cr_expect_eq(trr_f8e4m3_from_float(-big[i]), 0xfe, "e4m3(%g)", -(double)big[i]);
    }
    /* e5m2: finite overflow saturates to 57344 (61440 is the tie with the would-be 2^16); infinity stays */
    const float fin[] = {57345.0f, 61440.0f, 65536.0f, 1e10f, FLT_MAX};
    for (unsigned i = 0; i < sizeof fin / sizeof fin[0]; i++) {
        cr_expect_eq(trr_f8e5m2_from_float(fin[i]), 0x7b, "e5m2(%g)", (double)fin[i]);
        cr_expect_eq(trr_f8e5m2_from_float(-fin[i]), 0xfb, "e5m2(%g)", -(double)fin[i]);
    }
    cr_expect_eq(trr_f8e5m2_from_float(INFINITY), 0x7c);
    cr_expect_eq(trr_f8e5m2_from_float(-INFINITY), 0xfc);
    cr_expect(isinf(trr_f8e5m2_to_float(0x7c)));
}

Test(f8, nan_and_zero) {
    cr_expect_eq(trr_f8e4m3_from_float(NAN), 0x7f);
    cr_expect_eq(trr_f8e4m3_from_float(bits_to_float(0xff800001u)), 0xff); /* a negative signalling NaN */
    uint8_t b = trr_f8e5m2_from_float(bits_to_float(0x7f800001u)); /* payload only in the low bits */
    cr_expect(is_nan_code(&e5m2, b) && !(b & 0x80u), "e5m2 NaN became 0x%02x", b);
    b = trr_f8e5m2_from_float(bits_to_float(0xffc00000u));
    cr_expect(is_nan_code(&e5m2, b) && (b & 0x80u), "negative e5m2 NaN became 0x%02x", b);
    cr_expect_eq(trr_f8e4m3_from_float(-0.0f), 0x80);
    cr_expect_eq(trr_f8e5m2_from_float(-0.0f), 0x80);
    cr_expect_eq(trr_f8e4m3_from_float(bits_to_float(0x00000001u)), 0x00); /* an f32 subnormal */
    cr_expect_eq(trr_f8e5m2_from_float(bits_to_float(0x80000001u)), 0x80);
    const float z = trr_f8e4m3_to_float(0x80);
    cr_expect(z == 0.0f && signbit(z));
}

/* e5m2 is the top byte of an f16: widening agrees with the half conversion for every code */
Test(f8, e5m2_is_the_top_byte_of_f16) {
    for (unsigned c = 0; c < 256; c++) {
        const float a = trr_f8e5m2_to_float((uint8_t)c), h = trr_half_to_float((uint16_t)(c << 8));
        cr_assert(memcmp(&a, &h, sizeof a) == 0, "0x%02x", c);
    }
}

Test(f8, public_array_api) {
    const float src[4] = {1.5f, -0.25f, 1000.0f, 1e-9f};
    uint8_t b[4];
    float back[4];
    cr_assert_eq(trr_f32_to_f8e4m3(src, b, 4), TRR_OK);
    cr_assert_eq(trr_f8e4m3_to_f32(b, back, 4), TRR_OK);
    cr_expect_float_eq(back[0], 1.5f, 0.0f);
    cr_expect_float_eq(back[1], -0.25f, 0.0f);
    cr_expect_float_eq(back[2], 448.0f, 0.0f);
    cr_expect_float_eq(back[3], 0.0f, 0.0f);
    cr_assert_eq(trr_f32_to_f8e5m2(src, b, 4), TRR_OK);
    cr_assert_eq(trr_f8e5m2_to_f32(b, back, 4), TRR_OK);
    cr_expect_float_eq(back[2], 1024.0f, 0.0f); /* 1000 between 896 and 1024 (steps of 128): nearer 1024 */
    cr_expect_eq(trr_f32_to_f8e4m3(NULL, b, 1), TRR_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(trr_last_error(NULL), "trr_f32_to_f8e4m3: src is NULL") != NULL, "%s", trr_last_error(NULL));
    cr_expect_eq(trr_f8e5m2_to_f32(b, NULL, 1), TRR_ERR_INVALID_ARGUMENT);
    cr_expect_eq(trr_f32_to_f8e5m2(NULL, NULL, 0), TRR_OK);
}

/* The dtype table: names, sizes, the store/load path every harness fills and reads host copies through. */
Test(f8, dtype_table) {
    const char *name = NULL;
    size_t size = 0;
    cr_assert_eq(trr_dtype_name(TRR_F8E4M3, &name), TRR_OK);
    cr_expect_str_eq(name, "f8e4m3");
    cr_assert_eq(trr_dtype_name(TRR_F8E5M2, &name), TRR_OK);
    cr_expect_str_eq(name, "f8e5m2");
    cr_assert_eq(trr_dtype_size(TRR_F8E4M3, &size), TRR_OK);
    cr_expect_eq(size, 1);
    cr_assert_eq(trr_dtype_size(TRR_F8E5M2, &size), TRR_OK);
    cr_expect_eq(size, 1);
    uint8_t host[2];
    trr_dtype_store_f32(host, TRR_F8E4M3, 0, 3.3f);
    trr_dtype_store_f32(host, TRR_F8E5M2, 1, -3.3f);
    cr_expect_eq(host[0], trr_f8e4m3_from_float(3.3f));
    cr_expect_eq(host[1], trr_f8e5m2_from_float(-3.3f));
    cr_expect_float_eq(trr_dtype_load_f32(host, TRR_F8E4M3, 0), 3.25f, 0.0f);
    cr_expect_float_eq(trr_dtype_load_f32(host, TRR_F8E5M2, 1), -3.5f, 0.0f);
}
