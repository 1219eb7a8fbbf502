/* Softmax's special values (docs/ops.md, "Special values") in the float64 reference and in the checker: -inf
 * is a masked entry (exactly 0 out), a row of -inf alone is NaN everywhere, a NaN makes its row NaN and no other
 * row. The checker must want NaN where the reference is NaN, and still fail NaN where the reference is finite.
 * That every backend meets them is the conformance suite's part (the special cases in harness/cases.c). */
#include "conf_verdict.h"
#include "conformance_check.h"
#include "reference.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

enum { ROWS = 3, COLS = 5 };

/* softmax f32 or f16 over a 3 x 5 input, the output packed after 2 guard elements in a 20-element buffer */
typedef struct fixture {
    trr_case tc;
    trr_call call;
    float in[ROWS * COLS];
    double ref[ROWS * COLS];
    uint8_t before[80], after[80];
} fixture;

static void store_out(fixture *f, int i, float v) {
    if (f->tc.out_dtype == TRR_F32) {
        memcpy(f->after + 8 + 4 * i, &v, 4);
    } else {
        uint16_t h;
        trr_f32_to_f16(&v, &h, 1);
        memcpy(f->after + 4 + 2 * i, &h, 2);
    }
}

/* in: rows {-inf,-inf,-inf,-inf,-inf}, {1, -inf, 2, 3, -inf}, {0.5, 1, NaN, 2, 3}; after: the right answer */
static void make_fixture(fixture *f, trr_dtype out) {
    memset(f, 0, sizeof *f);
    f->tc = (trr_case){.op = TRR_OP_SOFTMAX, .in_dtype = TRR_F32, .out_dtype = out, .rows = ROWS, .cols = COLS};
    const float ninf = -INFINITY;
    const float in[ROWS * COLS] = {ninf, ninf, ninf, ninf, ninf, 1, ninf, 2, 3, ninf, 0.5f, 1, NAN, 2, 3};
    memcpy(f->in, in, sizeof in);
    f->call.op = TRR_OP_SOFTMAX;
    f->call.rows = ROWS, f->call.cols = COLS;
    f->call.x = (trr_operand){.mem = f->in, .offset = 0, .stride0 = COLS, .dtype = TRR_F32};
    f->call.z = (trr_operand){.offset = 2, .stride0 = COLS, .dtype = out};
    cr_assert_eq(trr_reference_run(&f->call, f->ref), TRR_OK);
    for (int i = 0; i < 80; i++) f->before[i] = (uint8_t)(0x3C ^ (i * 37));
    memcpy(f->after, f->before, sizeof f->after);
    for (int i = 0; i < ROWS * COLS; i++) store_out(f, i, (float)f->ref[i]);
}

static trr_conf_result check(fixture *f) {
    return CONF_VERDICT_OF(f);
}

Test(reference, softmax_special_values) {
    fixture f;
    make_fixture(&f, TRR_F32);
    for (int c = 0; c < COLS; c++) cr_expect(isnan(f.ref[c]), "all -inf row: col %d is %g", c, f.ref[c]);
    const double s = exp(1.0 - 3.0) + exp(2.0 - 3.0) + 1.0;
    cr_expect_eq(f.ref[COLS + 1], 0.0);
    cr_expect_eq(f.ref[COLS + 4], 0.0);
    cr_expect_float_eq(f.ref[COLS + 0], exp(1.0 - 3.0) / s, 1e-15);
    cr_expect_float_eq(f.ref[COLS + 3], 1.0 / s, 1e-15);
    for (int c = 0; c < COLS; c++) cr_expect(isnan(f.ref[2 * COLS + c]), "NaN row: col %d is %g", c, f.ref[2 * COLS + c]);
}

Test(checker, nan_where_the_reference_is_nan_passes) {
    for (int dt = 0; dt < 2; dt++) {
        fixture f;
        make_fixture(&f, dt ? TRR_F16 : TRR_F32);
        trr_conf_result r = check(&f);
        cr_assert_eq(r.outcome, TRR_CONF_PASS, "%s: %s", dt ? "f16" : "f32", r.message);
        cr_assert(isfinite(r.ratio), "%s: ratio %g", dt ? "f16" : "f32", r.ratio);
    }
}

Test(checker, finite_where_the_reference_is_nan_fails) {
    for (int dt = 0; dt < 2; dt++) {
        fixture f;
        make_fixture(&f, dt ? TRR_F16 : TRR_F32);
        store_out(&f, 2 * COLS + 1, 0.25f); /* the NaN row */
        trr_conf_result r = check(&f);
        cr_assert_eq(r.outcome, TRR_CONF_FAIL, "%s", dt ? "f16" : "f32");
        make_fixture(&f, dt ? TRR_F16 : TRR_F32);
        store_out(&f, 3, 0.2f); /* the all -inf row */
        cr_assert_eq(check(&f).outcome, TRR_CONF_FAIL, "%s", dt ? "f16" : "f32");
    }
}

Test(checker, nan_where_the_reference_is_finite_fails) {
    for (int dt = 0; dt < 2; dt++) {
        fixture f;
        make_fixture(&f, dt ? TRR_F16 : TRR_F32);
        store_out(&f, COLS + 3, NAN);
        trr_conf_result r = check(&f);
        cr_assert_eq(r.outcome, TRR_CONF_FAIL, "%s", dt ? "f16" : "f32");
        cr_assert(strstr(r.message, "non-finite"), "%s", r.message);
    }
}

Test(checker, masked_entry_must_be_exactly_zero) {
    for (int dt = 0; dt < 2; dt++) {
        fixture f;
        make_fixture(&f, dt ? TRR_F16 : TRR_F32);
        store_out(&f, COLS + 1, dt ? 6e-8f : 1e-30f); /* tiny, but not 0 */
        cr_assert_eq(check(&f).outcome, TRR_CONF_FAIL, "%s", dt ? "f16" : "f32");
    }
}
