/* f16 conversion edge cases: exact values, subnormals, ties to even, overflow to infinity, NaN. */
#include <criterion/criterion.h>
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
