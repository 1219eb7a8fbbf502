/* f16 and bf16 conversion edge cases: exact values, subnormals, ties to even, overflow to infinity, NaN, -0. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "half.h"
#include "trireme.h"

static float bits_to_float(uint32_t x) {
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

Test(half, exact_values_round_trip) {
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) continue; /* NaNs: checked below */
        float f = trr_half_to_float((uint16_t)h);
        cr_assert_eq(trr_half_from_float(f), h, "half 0x%04x -> %g -> 0x%04x", h, (double)f, trr_half_from_float(f));
    }
}

Test(half, known_values) {
    cr_expect_eq(trr_half_from_float(1.0f), 0x3c00);
    cr_expect_eq(trr_half_from_float(-2.0f), 0xc000);
    cr_expect_eq(trr_half_from_float(65504.0f), 0x7bff);
    cr_expect_eq(trr_half_from_float(0.0f), 0x0000);
    cr_expect_eq(trr_half_from_float(-0.0f), 0x8000);
    cr_expect_float_eq(trr_half_to_float(0x0001), ldexpf(1.0f, -24), 0.0f); /* smallest subnormal */
    cr_expect_float_eq(trr_half_to_float(0x03ff), ldexpf(1023.0f, -24), 0.0f); /* largest subnormal */
    cr_expect_float_eq(trr_half_to_float(0x0400), ldexpf(1.0f, -14), 0.0f); /* smallest normal */
}

Test(half, ties_to_even) {
    /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even mantissa (1.0) wins */
    cr_expect_eq(trr_half_from_float(1.0f + ldexpf(1.0f, -11)), 0x3c00);
    /* 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even): rounds up */
    cr_expect_eq(trr_half_from_float(1.0f + 3.0f * ldexpf(1.0f, -11)), 0x3c02);
    /* just above the tie rounds up */
    cr_expect_eq(trr_half_from_float(nextafterf(1.0f + ldexpf(1.0f, -11), 2.0f)), 0x3c01);
    /* subnormal ties: 2^-25 is half the smallest subnormal -> 0 (even); 3*2^-25 -> 2*2^-24 */
    cr_expect_eq(trr_half_from_float(ldexpf(1.0f, -25)), 0x0000);
    cr_expect_eq(trr_half_from_float(3.0f * ldexpf(1.0f, -25)), 0x0002);
    cr_expect_eq(trr_half_from_float(nextafterf(ldexpf(1.0f, -25), 1.0f)), 0x0001);
    /* rounding up out of the subnormal range gives the smallest normal */
    cr_expect_eq(trr_half_from_float(ldexpf(1023.5f, -24)), 0x0400);
}

Test(half, overflow_to_infinity) {
    cr_expect_eq(trr_half_from_float(65520.0f), 0x7c00); /* the first value that rounds past 65504 */
    cr_expect_eq(trr_half_from_float(nextafterf(65520.0f, 0.0f)), 0x7bff);
    cr_expect_eq(trr_half_from_float(1e10f), 0x7c00);
    cr_expect_eq(trr_half_from_float(-1e10f), 0xfc00);
    cr_expect_eq(trr_half_from_float(INFINITY), 0x7c00);
    cr_expect(isinf(trr_half_to_float(0x7c00)));
}

Test(half, nan_stays_nan) {
    uint16_t h = trr_half_from_float(NAN);
    cr_expect((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0, "NaN became 0x%04x", h);
    /* a NaN whose payload lives only in the low float bits must not become infinity */
    h = trr_half_from_float(bits_to_float(0x7f800001u));
    cr_expect((h & 0x3ffu) != 0, "signalling NaN became 0x%04x", h);
    cr_expect(isnan(trr_half_to_float(0x7e00)));
}

Test(half, public_array_api) {
    float src[4] = {1.5f, -0.25f, 1e-8f, 70000.0f};
    uint16_t h[4];
    float back[4];
    cr_assert_eq(trr_f32_to_f16(src, h, 4), TRR_OK);
    cr_assert_eq(trr_f16_to_f32(h, back, 4), TRR_OK);
    cr_expect_float_eq(back[0], 1.5f, 0.0f);
    cr_expect_float_eq(back[1], -0.25f, 0.0f);
    cr_expect_float_eq(back[2], 0.0f, 0.0f); /* 1e-8 is below half the smallest subnormal */
    cr_expect(isinf(back[3]));
    cr_expect_eq(trr_f32_to_f16(NULL, h, 1), TRR_ERR_INVALID_ARGUMENT);
}

/* NULL arrays are rejected with a message that says which one (the thread's last error: there is no context). */
Test(half, null_arrays_leave_a_message) {
    float f[4] = {1, 2, 3, 4};
    uint16_t h[4] = {0};
    cr_assert_eq(trr_f32_to_f16(NULL, h, 4), TRR_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(trr_last_error(NULL), "TRR_ERR_INVALID_ARGUMENT: trr_f32_to_f16: src is NULL") != NULL, "%s",
              trr_last_error(NULL));
    cr_assert_eq(trr_f16_to_f32(h, NULL, 4), TRR_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(trr_last_error(NULL), "TRR_ERR_INVALID_ARGUMENT: trr_f16_to_f32: dst is NULL") != NULL, "%s",
              trr_last_error(NULL));
    cr_assert_eq(trr_f32_to_f16(NULL, NULL, 0), TRR_OK); /* nothing to convert */
    cr_assert_eq(trr_f32_to_f16(f, h, 4), TRR_OK);
    cr_assert_eq(h[3], 0x4400);
}

/* bf16: every non-NaN bf16 survives the round trip through f32 */
Test(bf16, exact_values_round_trip) {
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7f80u) == 0x7f80u && (h & 0x7fu)) continue; /* NaNs: checked below */
        float f = trr_bf16_to_float((uint16_t)h);
        cr_assert_eq(trr_bf16_from_float(f), h, "bf16 0x%04x -> %g -> 0x%04x", h, (double)f, trr_bf16_from_float(f));
    }
}

Test(bf16, ties_to_even) {
    /* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: the even mantissa (1.0) wins */
    cr_expect_eq(trr_bf16_from_float(1.0f + ldexpf(1.0f, -8)), 0x3f80);
    /* 1 + 3*2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): rounds up */
    cr_expect_eq(trr_bf16_from_float(1.0f + 3.0f * ldexpf(1.0f, -8)), 0x3f82);
    cr_expect_eq(trr_bf16_from_float(nextafterf(1.0f + ldexpf(1.0f, -8), 2.0f)), 0x3f81);
    cr_expect_eq(trr_bf16_from_float(nextafterf(1.0f + ldexpf(1.0f, -8), 0.0f)), 0x3f80);
    cr_expect_eq(trr_bf16_from_float(-(1.0f + 3.0f * ldexpf(1.0f, -8))), 0xbf82);
    /* a mantissa carry bumps the exponent: 2 - 2^-9 rounds to 2 */
    cr_expect_eq(trr_bf16_from_float(2.0f - ldexpf(1.0f, -9)), 0x4000);
}

Test(bf16, subnormals) {
    /* bf16 has f32's exponent range: f32 subnormals keep their top 7 mantissa bits */
    cr_expect_eq(trr_bf16_from_float(bits_to_float(0x00010000u)), 0x0001); /* smallest bf16 subnormal */
    cr_expect_float_eq(trr_bf16_to_float(0x0001), ldexpf(1.0f, -133), 0.0f);
    cr_expect_eq(trr_bf16_from_float(bits_to_float(0x00008000u)), 0x0000); /* tie with 0: even */
    cr_expect_eq(trr_bf16_from_float(bits_to_float(0x00018000u)), 0x0002); /* tie between 1 and 2: even */
    cr_expect_eq(trr_bf16_from_float(bits_to_float(0x00008001u)), 0x0001);
    cr_expect_eq(trr_bf16_from_float(bits_to_float(0x007fffffu)), 0x0080); /* rounds up to the smallest normal */
    cr_expect_eq(trr_bf16_from_float(bits_to_float(0x807f0000u)), 0x807f); /* negative subnormal */
}

Test(bf16, overflow_to_infinity) {
    cr_expect_eq(trr_bf16_from_float(bits_to_float(0x7f7f0000u)), 0x7f7f); /* largest finite bf16 */
    cr_expect_eq(trr_bf16_from_float(bits_to_float(0x7f7f8000u)), 0x7f80); /* the tie past it: to infinity */
    cr_expect_eq(trr_bf16_from_float(bits_to_float(0x7f7f7fffu)), 0x7f7f);
    cr_expect_eq(trr_bf16_from_float(FLT_MAX), 0x7f80);
    cr_expect_eq(trr_bf16_from_float(-FLT_MAX), 0xff80);
    cr_expect_eq(trr_bf16_from_float(INFINITY), 0x7f80);
    cr_expect_eq(trr_bf16_from_float(-INFINITY), 0xff80);
    cr_expect(isinf(trr_bf16_to_float(0x7f80)));
}

Test(bf16, nan_stays_quiet_nan) {
    uint16_t h = trr_bf16_from_float(NAN);
    cr_expect((h & 0x7f80u) == 0x7f80u && (h & 0x0040u), "NaN became 0x%04x", h);
    /* payload only in the dropped low bits: must stay NaN (quiet), not become infinity or round into the sign */
    h = trr_bf16_from_float(bits_to_float(0x7f800001u));
    cr_expect_eq(h, 0x7fc0, "signalling NaN became 0x%04x", h);
    h = trr_bf16_from_float(bits_to_float(0xffffffffu));
    cr_expect_eq(h, 0xffff, "all-ones NaN became 0x%04x", h);
    h = trr_bf16_from_float(bits_to_float(0x7fbfffffu)); /* signalling NaN whose rounding would carry */
    cr_expect((h & 0x7f80u) == 0x7f80u && (h & 0x0040u) && !(h & 0x8000u), "NaN became 0x%04x", h);
    cr_expect(isnan(trr_bf16_to_float(0x7fc0)));
    cr_expect(isnan(trr_bf16_to_float(0x7f81)));
}

Test(bf16, negative_zero) {
    cr_expect_eq(trr_bf16_from_float(-0.0f), 0x8000);
    cr_expect_eq(trr_bf16_from_float(0.0f), 0x0000);
    float z = trr_bf16_to_float(0x8000);
    cr_expect(z == 0.0f && signbit(z));
    cr_expect_eq(trr_bf16_from_float(bits_to_float(0x80008000u)), 0x8000); /* tiny negative rounds to -0 */
}

Test(bf16, public_array_api) {
    float src[4] = {1.5f, -0.25f, 3.0e38f, 1.0f + 1.0f / 256.0f};
    uint16_t h[4];
    float back[4];
    cr_assert_eq(trr_f32_to_bf16(src, h, 4), TRR_OK);
    cr_assert_eq(trr_bf16_to_f32(h, back, 4), TRR_OK);
    cr_expect_float_eq(back[0], 1.5f, 0.0f);
    cr_expect_float_eq(back[1], -0.25f, 0.0f);
    cr_expect_float_eq(back[2], trr_bf16_to_float(0x7f62), 0.0f);
    cr_expect_float_eq(back[3], 1.0f, 0.0f);
    cr_expect_eq(trr_f32_to_bf16(NULL, h, 1), TRR_ERR_INVALID_ARGUMENT);
    cr_expect_eq(trr_bf16_to_f32(h, NULL, 1), TRR_ERR_INVALID_ARGUMENT);
    cr_expect_eq(trr_f32_to_bf16(NULL, NULL, 0), TRR_OK);
}
