/* The harness around rms_norm and layer_norm: the float64 reference (their definitions' row functions in
 * core/op_table.c), the checker's f32 bound |err| <= 1e-5 (|y_ref| + |w| + |b|), the case list, the four-slot
 * layout and the normalised call the engine builds. Backends are tested against the same definitions by
 * test_norms.c and the conformance suite. */
#define _POSIX_C_SOURCE 200809L /* cli_child.h: mkstemp, setenv */
#include "cases.h"
#include "cli_child.h"
#include "conformance.h"
#include "conf_verdict.h"
#include "conformance_check.h"
#include "layout.h"
#include "op_table.h"
#include "reference.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A norm call over host arrays: x [rows, cols] at row stride xs, w and b at element strides ws and bs. */
static trr_call norm_call(trr_op op, const float *x, int64_t rows, int64_t cols, int64_t xs, const float *w,
                          int64_t ws, const float *b, int64_t bs, double eps) {
    trr_call c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.rows = rows, c.cols = cols;
    c.x = (trr_operand){.mem = (void *)x, .stride0 = xs, .dtype = TRR_F32};
    c.y = (trr_operand){.mem = (void *)w, .stride0 = ws, .dtype = TRR_F32};
    if (b) c.u = (trr_operand){.mem = (void *)b, .stride0 = bs, .dtype = TRR_F32};
    c.z = (trr_operand){.stride0 = cols, .dtype = TRR_F32};
    c.params[TRR_NORM_PARAM_EPS] = eps;
    return c;
}

static void expect_close(double got, double want, const char *what, int j) {
    cr_assert(fabs(got - want) <= 1e-14 * fmax(1.0, fabs(want)), "%s[%d]: %.17g, want %.17g", what, j, got, want);
}

Test(norm_reference, definitions_by_hand) {
    const float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 2, 0.5f}, b[4] = {0.5f, 0, 0, -1};
    double y[4];
    trr_call c = norm_call(TRR_OP_RMS_NORM, x, 1, 4, 4, w, 1, NULL, 0, 0.0);
    cr_assert_eq(trr_reference_run(&c, y), TRR_OK);
    for (int j = 0; j < 4; j++) expect_close(y[j], x[j] / sqrt(7.5) * w[j], "rms_norm", j); /* mean(x^2) = 7.5 */
    c = norm_call(TRR_OP_RMS_NORM, x, 1, 4, 4, w, 1, NULL, 0, 0.5);
    cr_assert_eq(trr_reference_run(&c, y), TRR_OK);
    for (int j = 0; j < 4; j++) expect_close(y[j], x[j] / sqrt(8.0) * w[j], "rms_norm eps", j);
    c = norm_call(TRR_OP_LAYER_NORM, x, 1, 4, 4, w, 1, b, 1, 0.0);
    cr_assert_eq(trr_reference_run(&c, y), TRR_OK);
    for (int j = 0; j < 4; j++) /* mean 2.5, biased variance 1.25 */
        expect_close(y[j], (x[j] - 2.5) / sqrt(1.25) * w[j] + b[j], "layer_norm", j);
    c = norm_call(TRR_OP_LAYER_NORM, x, 1, 4, 4, w, 1, b, 1, 0.75);
    cr_assert_eq(trr_reference_run(&c, y), TRR_OK);
    for (int j = 0; j < 4; j++) expect_close(y[j], (x[j] - 2.5) / sqrt(2.0) * w[j] + b[j], "layer_norm eps", j);
}

/* Padded rows of x and w, b at element strides 3 and 2 (and offsets) give what the packed operands give. */
Test(norm_reference, strides_and_offsets) {
    enum { M = 2, N = 5, XS = 7 };
    float xp[M * N], xs[2 + M * XS], wp[N], ws[1 + 3 * N], bp[N], bs[4 + 2 * N];
    for (int i = 0; i < (int)(sizeof xs / sizeof xs[0]); i++) xs[i] = NAN;
    for (int i = 0; i < (int)(sizeof ws / sizeof ws[0]); i++) ws[i] = NAN;
    for (int i = 0; i < (int)(sizeof bs / sizeof bs[0]); i++) bs[i] = NAN;
    for (int r = 0; r < M; r++)
        for (int j = 0; j < N; j++) xp[r * N + j] = xs[2 + r * XS + j] = 0.25f * (float)(r * N + j) - 1.1f;
    for (int j = 0; j < N; j++) {
        wp[j] = ws[1 + 3 * j] = 0.5f + (float)j;
        bp[j] = bs[4 + 2 * j] = 0.125f * (float)j - 0.3f;
    }
    for (int op = 0; op < 2; op++) {
        const trr_op o = op ? TRR_OP_LAYER_NORM : TRR_OP_RMS_NORM;
        double a[M * N], s[M * N];
        trr_call c = norm_call(o, xp, M, N, N, wp, 1, bp, 1, 1e-5);
        cr_assert_eq(trr_reference_run(&c, a), TRR_OK);
        c = norm_call(o, xs, M, N, XS, ws, 3, bs, 2, 1e-5);
        c.x.offset = 2, c.y.offset = 1, c.u.offset = 4;
        cr_assert_eq(trr_reference_run(&c, s), TRR_OK);
        for (int i = 0; i < M * N; i++) {
            cr_assert(isfinite(a[i]), "op %d element %d: %g", op, i, a[i]);
            cr_assert_eq(a[i], s[i], "op %d element %d: %.17g strided, %.17g packed", op, i, s[i], a[i]);
        }
    }
}

/* A constant row: x - mean is exactly 0, so layer_norm gives exactly b (docs/ops.md, Special values: the
 * contract the kernels meet by subtracting the row's first element before summing in f32, where 0.1f summed
 * 1000 times is not 100 exactly); an all-zero row too; eps = 0 makes both 0/0. */
Test(norm_reference, special_rows) {
    enum { N = 1000 };
    float *x = malloc(3 * N * sizeof *x), *w = malloc(N * sizeof *w), *b = malloc(N * sizeof *b);
    double *y = malloc(3 * N * sizeof *y);
    cr_assert(x && w && b && y);
    for (int j = 0; j < N; j++) {
        x[j] = 0.1f;                                /* constant */
        x[N + j] = (float)((j * 37) % 101) - 50.0f; /* random-ish */
        x[2 * N + j] = 0.0f;                        /* zero */
        w[j] = 1.5f + 0.001f * (float)j;
        b[j] = -0.75f + 0.002f * (float)j;
    }
    trr_call c = norm_call(TRR_OP_LAYER_NORM, x, 3, N, N, w, 1, b, 1, 1e-5);
    cr_assert_eq(trr_reference_run(&c, y), TRR_OK);
    for (int j = 0; j < N; j++) {
        cr_assert_eq(y[j], (double)b[j], "constant row, column %d: %.17g, want b = %.17g", j, y[j], (double)b[j]);
        cr_assert_eq(y[2 * N + j], (double)b[j], "zero row, column %d", j);
        cr_assert(isfinite(y[N + j]));
    }
    /* eps = 0: the constant and zero rows are 0/0, NaN across; the other row finite */
    c.params[TRR_NORM_PARAM_EPS] = 0.0;
    cr_assert_eq(trr_reference_run(&c, y), TRR_OK);
    for (int j = 0; j < N; j++) {
        cr_assert(isnan(y[j]) && isnan(y[2 * N + j]), "column %d: %g, %g", j, y[j], y[2 * N + j]);
        cr_assert(isfinite(y[N + j]), "column %d: %g", j, y[N + j]);
    }
    /* rms_norm: a zero row is 0 with eps > 0 and NaN with eps = 0; a constant row is sign(x) w / sqrt(1 + eps/x^2) */
    c = norm_call(TRR_OP_RMS_NORM, x, 3, N, N, w, 1, NULL, 0, 1e-6);
    cr_assert_eq(trr_reference_run(&c, y), TRR_OK);
    for (int j = 0; j < N; j++) {
        cr_assert_eq(y[2 * N + j], 0.0);
        expect_close(y[j], (double)w[j] / sqrt(1.0 + 1e-6 / ((double)x[j] * (double)x[j])), "constant", j);
    }
    c.params[TRR_NORM_PARAM_EPS] = 0.0;
    cr_assert_eq(trr_reference_run(&c, y), TRR_OK);
    for (int j = 0; j < N; j++) cr_assert(isnan(y[2 * N + j]) && isfinite(y[j]) && isfinite(y[N + j]));
    /* N = 1: layer_norm gives b, rms_norm x / sqrt(x^2 + eps) w */
    const float x1[3] = {3.0f, -0.5f, 7.0f}, w1 = 2.0f, b1 = 0.25f;
    double y1[3];
    c = norm_call(TRR_OP_LAYER_NORM, x1, 3, 1, 1, &w1, 1, &b1, 1, 1e-5);
    cr_assert_eq(trr_reference_run(&c, y1), TRR_OK);
    for (int r = 0; r < 3; r++) cr_assert_eq(y1[r], 0.25, "row %d: %.17g", r, y1[r]);
    c = norm_call(TRR_OP_RMS_NORM, x1, 3, 1, 1, &w1, 1, NULL, 0, 0.5);
    cr_assert_eq(trr_reference_run(&c, y1), TRR_OK);
    for (int r = 0; r < 3; r++)
        expect_close(y1[r], (double)x1[r] / sqrt((double)x1[r] * x1[r] + 0.5) * 2.0, "N = 1", r);
    free(x), free(w), free(b), free(y);
}

/* ---- the checker ---- */

enum { CN = 4, CPAD = 2 };

typedef struct norm_fixture {
    trr_case tc;
    trr_call call;
    float x[CN], w[CN], b[CN];
    double ref[CN];
    uint8_t before[(CN + 2 * CPAD) * 4], after[(CN + 2 * CPAD) * 4];
} norm_fixture;

/* layer_norm f32 of one row x = 1, 2, 3, 4 (mean 2.5) with w = 100, 0.01, 1, 1 and b = 0, 0, 0.5, -3; the output
 * view at element CPAD of a poisoned, guarded buffer, written with the reference rounded to f32. */
static void make_norm_fixture(norm_fixture *f, double eps) {
    memset(f, 0, sizeof *f);
    const float x[CN] = {1, 2, 3, 4}, w[CN] = {100, 0.01f, 1, 1}, b[CN] = {0, 0, 0.5f, -3};
    memcpy(f->x, x, sizeof x), memcpy(f->w, w, sizeof w), memcpy(f->b, b, sizeof b);
    f->tc = (trr_case){.op = TRR_OP_LAYER_NORM, .in_dtype = TRR_F32, .out_dtype = TRR_F32, .rows = 1, .cols = CN};
    f->call = norm_call(TRR_OP_LAYER_NORM, f->x, 1, CN, CN, f->w, 1, f->b, 1, eps);
    f->call.z.offset = CPAD;
    cr_assert_eq(trr_reference_run(&f->call, f->ref), TRR_OK);
    for (size_t i = 0; i < sizeof f->before; i++) f->before[i] = (uint8_t)(0x3C ^ (i * 37));
    const uint32_t poison = TRR_CONF_POISON_F32;
    for (int j = 0; j < CN; j++) memcpy(f->before + 4 * (CPAD + j), &poison, 4);
    memcpy(f->after, f->before, sizeof f->after);
    for (int j = 0; j < CN; j++) {
        const float v = (float)f->ref[j];
        memcpy(f->after + 4 * (CPAD + j), &v, 4);
    }
    f->call.z.mem = f->after;
}

static void set_out(norm_fixture *f, int j, double v) {
    const float g = (float)v;
    memcpy(f->after + 4 * (CPAD + j), &g, 4);
}

static trr_conf_result check_norm(norm_fixture *f) {
    return CONF_VERDICT_OF(f);
}

Test(norm_checker, f32_bound_is_per_element_with_the_columns_weight_and_bias) {
    norm_fixture f;
    make_norm_fixture(&f, 1e-5);
    cr_assert_eq(trr_conf_mode_of(&f.tc), TRR_CONF_MODE_NORM);
    trr_conf_result r = check_norm(&f);
    cr_assert_eq(r.outcome, TRR_CONF_PASS, "%s", r.message);
    cr_assert_str_eq(r.metric, "norm_rel");
    /* column 0: |y| + |w| is about 234, so an error of 1e-3 is within 1e-5 of it */
    set_out(&f, 0, f.ref[0] + 1e-3);
    r = check_norm(&f);
    cr_assert_eq(r.outcome, TRR_CONF_PASS, "%s", r.message);
    /* the same error in column 1, whose |y| + |w| is about 0.0145, is far over */
    make_norm_fixture(&f, 1e-5);
    set_out(&f, 1, f.ref[1] + 1e-3);
    r = check_norm(&f);
    cr_assert_eq(r.outcome, TRR_CONF_FAIL);
    cr_assert(strstr(r.message, "norm_rel") && strstr(r.message, "(0,1)"), "%s", r.message);
    /* column 3: |y| + |w| + |b| = |y| + 4; 0.9 and 1.1 times the bound */
    const double scale = fabs(f.ref[3]) + 1.0 + 3.0;
    make_norm_fixture(&f, 1e-5);
    set_out(&f, 3, f.ref[3] + 0.9e-5 * scale);
    r = check_norm(&f);
    cr_assert_eq(r.outcome, TRR_CONF_PASS, "%s", r.message);
    set_out(&f, 3, f.ref[3] + 1.1e-5 * scale);
    r = check_norm(&f);
    cr_assert_eq(r.outcome, TRR_CONF_FAIL, "%s", r.message);
    cr_assert_eq(trr_conf_norm_scale(&f.call, 3), 4.0);
    cr_assert_eq(trr_conf_norm_scale(&f.call, 0), 100.0);
    /* rms_norm has no b: the term is |w| alone */
    f.call.op = TRR_OP_RMS_NORM;
    cr_assert_eq(trr_conf_norm_scale(&f.call, 3), 1.0);
}

Test(norm_checker, half_outputs_use_the_half_rules) {
    trr_case c = {.op = TRR_OP_RMS_NORM, .in_dtype = TRR_F16, .out_dtype = TRR_F16};
    cr_assert_eq(trr_conf_mode_of(&c), TRR_CONF_MODE_F16);
    c.in_dtype = c.out_dtype = TRR_BF16;
    c.op = TRR_OP_LAYER_NORM;
    cr_assert_eq(trr_conf_mode_of(&c), TRR_CONF_MODE_BF16);
}

/* A constant row gives exactly b: an output within the f32 bound but one step off b fails; rms_norm has no such
 * rule (its constant row is not exact). */
Test(norm_checker, constant_row_must_be_exactly_b) {
    norm_fixture f;
    make_norm_fixture(&f, 1e-5);
    for (int j = 0; j < CN; j++) f.x[j] = 0.1f;
    cr_assert_eq(trr_reference_run(&f.call, f.ref), TRR_OK);
    for (int j = 0; j < CN; j++) {
        cr_assert_eq(f.ref[j], (double)f.b[j]);
        set_out(&f, j, f.b[j]);
    }
    trr_conf_result r = check_norm(&f);
    cr_assert_eq(r.outcome, TRR_CONF_PASS, "%s", r.message);
    set_out(&f, 3, nextafterf(f.b[3], 0.0f)); /* |err| ~ 2.4e-7, far within 1e-5 (|b| + |w| + |b|) */
    r = check_norm(&f);
    cr_assert_eq(r.outcome, TRR_CONF_FAIL);
    cr_assert(strstr(r.message, "constant row's b") && strstr(r.message, "at 0,3:"), "%s", r.message);
    /* a row that is not constant is judged by the bound: the same step passes */
    make_norm_fixture(&f, 1e-5);
    set_out(&f, 3, nextafterf((float)f.ref[3], 0.0f));
    r = check_norm(&f);
    cr_assert_eq(r.outcome, TRR_CONF_PASS, "%s", r.message);
}

/* eps = 0 and a constant row: the reference is NaN there, and a finite output (b, say) fails */
Test(norm_checker, nan_reference_wants_nan) {
    norm_fixture f;
    memset(&f, 0, sizeof f);
    make_norm_fixture(&f, 0.0);
    for (int j = 0; j < CN; j++) f.x[j] = 2.0f;
    cr_assert_eq(trr_reference_run(&f.call, f.ref), TRR_OK);
    for (int j = 0; j < CN; j++) {
        cr_assert(isnan(f.ref[j]));
        set_out(&f, j, NAN);
    }
    trr_conf_result r = check_norm(&f);
    cr_assert_eq(r.outcome, TRR_CONF_PASS, "%s", r.message);
    set_out(&f, 2, f.b[2]);
    r = check_norm(&f);
    cr_assert_eq(r.outcome, TRR_CONF_FAIL);
    cr_assert(strstr(r.message, "NaN"), "%s", r.message);
}

/* ---- cases and layout ---- */

static int has_eps(const trr_case *c, double *out) {
    for (int i = 0; i < c->params.count; i++)
        if (!strcmp(c->params.values[i].name, "eps")) {
            *out = c->params.values[i].value;
            return 1;
        }
    return 0;
}

Test(norm_cases, both_ops_every_dtype_layout_and_special_row) {
    const trr_case *cases;
    int n;
    cr_assert_eq(trr_cases_get(0, &cases, &n), TRR_OK);
    const trr_op ops[2] = {TRR_OP_RMS_NORM, TRR_OP_LAYER_NORM};
    const trr_dtype dts[3] = {TRR_F32, TRR_F16, TRR_BF16};
    for (int o = 0; o < 2; o++) {
        for (int d = 0; d < 3; d++) {
            int count = 0, layouts[TRR_LAYOUT_COUNT] = {0}, n1 = 0, long_row = 0, const_rows = 0, eps0 = 0,
                eps_set = 0, m_seen[4] = {0};
            for (int i = 0; i < n; i++) {
                const trr_case *c = &cases[i];
                if (c->op != ops[o] || c->in_dtype != dts[d]) continue;
                cr_assert_eq(c->out_dtype, dts[d]);
                count++;
                layouts[c->layout]++;
                n1 += c->cols == 1;
                long_row += c->cols >= (1 << 20);
                const_rows += c->special == TRR_SPECIAL_CONST_ROWS;
                double eps = -1;
                if (has_eps(c, &eps)) {
                    eps_set++;
                    eps0 += eps == 0.0 && c->special;
                }
                const int64_t ms[4] = {1, 3, 17, 127};
                for (int k = 0; k < 4; k++) m_seen[k] |= c->rows == ms[k];
            }
            cr_assert_geq(count, 15, "op %d dtype %d: %d cases", ops[o], dts[d], count);
            for (int l = 0; l < TRR_LAYOUT_COUNT; l++) cr_assert_gt(layouts[l], 0, "layout %d missing", l);
            cr_assert(n1 >= 2 && long_row >= 1 && const_rows >= 2 && eps0 >= 1 && eps_set >= 2);
            for (int k = 0; k < 4; k++) cr_assert(m_seen[k], "op %d dtype %d: M index %d missing", ops[o], dts[d], k);
        }
    }
    /* quick has both ops in every dtype; names (the inputs' seeds) are unique */
    const trr_case *quick;
    int nq;
    cr_assert_eq(trr_cases_get(1, &quick, &nq), TRR_OK);
    for (int o = 0; o < 2; o++)
        for (int d = 0; d < 3; d++) {
            int found = 0;
            for (int i = 0; i < nq; i++) found += quick[i].op == ops[o] && quick[i].in_dtype == dts[d];
            cr_assert_gt(found, 2);
        }
    for (int i = 0; i < n; i++) {
        if (cases[i].op != TRR_OP_RMS_NORM && cases[i].op != TRR_OP_LAYER_NORM) continue;
        char a[160], b[160];
        trr_case_describe(&cases[i], a, sizeof a);
        for (int j = i + 1; j < n; j++) {
            if (cases[j].op != cases[i].op) continue;
            trr_case_describe(&cases[j], b, sizeof b);
            cr_assert_str_neq(a, b, "two cases named %s", a);
        }
    }
}

Test(norm_cases, describe_names_the_parameters) {
    trr_case c = {.op = TRR_OP_LAYER_NORM, .in_dtype = TRR_F16, .out_dtype = TRR_F16, .rows = 4, .cols = 1000,
                  .special = TRR_SPECIAL_CONST_ROWS};
    cr_assert_eq(trr_op_params_set(&c.params, "eps", 0.0), TRR_OK);
    char name[128];
    trr_case_describe(&c, name, sizeof name);
    cr_assert_str_eq(name, "layer_norm f16->f16 4x1000 packed const-rows eps=0");
}

Test(norm_layout, four_slots_with_vectors) {
    trr_case c = {.op = TRR_OP_LAYER_NORM, .in_dtype = TRR_F32, .out_dtype = TRR_F32, .rows = 3, .cols = 17,
                  .layout = TRR_LAYOUT_STRIDED};
    trr_case_views v;
    cr_assert_eq(trr_case_views_make(&c, &v), TRR_OK);
    cr_assert_eq(v.n_inputs, 3);
    for (int i = 0; i < TRR_W; i++) cr_assert(v.has[i], "slot %d", i);
    cr_assert(!v.has[TRR_W], "no second output");
    cr_assert(v.v[0].row_stride > 17 && v.v[TRR_OUT].row_stride > 17, "padded rows");
    for (int i = 1; i < TRR_CASE_SLOTS; i += 2) { /* w (slot 1) and b (slot 3): vectors at element stride 1 */
        cr_assert_eq(v.v[i].ndim, 1);
        cr_assert_eq(v.v[i].rows, 1);
        cr_assert_eq(v.v[i].cols, 17);
        cr_assert_eq(v.v[i].offset % 2, 1, "odd offset");
    }
    cr_assert_neq(v.v[TRR_U].offset, v.v[1].offset);
    /* bytes: x and y 3x17, w and b 17, f32 */
    cr_assert_eq(trr_case_bytes(&c), (2.0 * 3 * 17 + 2.0 * 17) * 4);
    c.op = TRR_OP_RMS_NORM;
    cr_assert_eq(trr_case_views_make(&c, &v), TRR_OK);
    cr_assert(v.has[0] && v.has[1] && v.has[TRR_OUT] && !v.has[TRR_U]);
    cr_assert_eq(trr_case_bytes(&c), (2.0 * 3 * 17 + 17) * 4);
}

/* The call the engine checks against: built over all four slots with the case's eps resolved (or the op's
 * default), w and b at their element strides; the op runs with operands in the public order (a wrong order puts
 * a [3,17] tensor where a vector belongs: a shape error). */
Test(norm_layout, call_build_resolves_eps_and_runs_in_public_order) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    for (int with_eps = 0; with_eps < 2; with_eps++) {
        trr_case c = {.op = TRR_OP_LAYER_NORM, .in_dtype = TRR_F32, .out_dtype = TRR_F32, .rows = 3, .cols = 17,
                      .layout = TRR_LAYOUT_STRIDED};
        if (with_eps) cr_assert_eq(trr_op_params_set(&c.params, "eps", 0.25), TRR_OK);
        trr_case_views v;
        cr_assert_eq(trr_case_views_make(&c, &v), TRR_OK);
        trr_buffer *buf[TRR_CASE_SLOTS];
        trr_tensor t[TRR_CASE_SLOTS];
        for (int i = 0; i < TRR_CASE_SLOTS; i++) {
            cr_assert_eq(trr_buffer_create(ctx, (size_t)(trr_stored_extent(&v.v[i]) + 16) * 4, &buf[i]), TRR_OK);
            cr_assert_eq(trr_stored_tensor(&v.v[i], buf[i], &t[i]), TRR_OK);
        }
        trr_call call;
        int empty = -1;
        cr_assert_eq(trr_case_call_build(ctx, &c, t, 0, &call, &empty), TRR_OK, "%s", trr_last_error(ctx));
        cr_assert_eq(empty, 0);
        cr_assert_eq(call.rows, 3);
        cr_assert_eq(call.cols, 17);
        cr_assert_eq(call.u.offset, v.v[TRR_U].offset);
        cr_assert_eq(call.u.stride0, 1);
        cr_assert_eq(call.y.offset, v.v[1].offset);
        cr_assert_eq(call.x.stride0, v.v[0].row_stride);
        trr_param_info info;
        cr_assert_eq(trr_op_get_param(TRR_OP_LAYER_NORM, TRR_NORM_PARAM_EPS, &info), TRR_OK);
        cr_assert_eq(call.params[TRR_NORM_PARAM_EPS], with_eps ? 0.25 : info.default_value, "%g",
                     call.params[TRR_NORM_PARAM_EPS]);
        cr_assert(fabs(call.params[TRR_NORM_PARAM_EPS] - (with_eps ? 0.25 : 1e-5)) < 1e-12);
        void *hosts[TRR_CASE_SLOTS] = {(void *)1, (void *)2, (void *)3, (void *)4};
        trr_case_call_host(&call, hosts);
        cr_assert(call.x.mem == hosts[0] && call.y.mem == hosts[1] && call.z.mem == hosts[2] && call.u.mem == hosts[3]);
        /* the packed call the heuristics see carries the resolved eps too */
        trr_call packed;
        cr_assert_eq(trr_case_packed_call(&c, &packed), TRR_OK);
        cr_assert_eq(packed.params[TRR_NORM_PARAM_EPS], call.params[TRR_NORM_PARAM_EPS]);
        cr_assert_eq(packed.u.stride0, 1);
        const trr_status st = trr_case_call(ctx, &c, t, 0);
        cr_assert(st == TRR_OK || st == TRR_ERR_UNSUPPORTED, "%s", trr_last_error(ctx));
        for (int i = 0; i < TRR_CASE_SLOTS; i++) trr_buffer_destroy(buf[i]);
    }
    trr_context_destroy(ctx);
}

/* `trireme run` passes a norm's eps through the case (into the op and into the reference's call), and says what
 * is wrong with a bad one. Whether the CPU backend runs the op is its own business: a usage error it must not be. */
Test(norm_cli, run_passes_eps) {
    const char *ok[] = {"run", "rms_norm", "--shape", "3x17", "--dtype", "f16", "--device", "cpu", "--param",
                        "eps=0.5", NULL};
    cli_child *r = cli_child_run(ok);
    cr_assert_neq(r->status, 2, "stdout: %s\nstderr: %s", r->out, r->err);
    cr_assert(strstr(r->out, "op: rms_norm f16->f16 3x17 packed eps=0.5\n") != NULL, "%s", r->out);
    if (r->status == 0) cr_assert(strstr(r->out, "check: passed") != NULL, "%s", r->out);
    const char *negative[] = {"run", "layer_norm", "--shape", "3x17", "--device", "cpu", "--param", "eps=-1", NULL};
    r = cli_child_run(negative);
    cr_assert_eq(r->status, 2, "stdout: %s\nstderr: %s", r->out, r->err);
    cr_assert(strstr(r->err, "layer_norm: eps = -1 must be >= 0") != NULL, "%s", r->err);
    const char *unknown[] = {"run", "layer_norm", "--device", "cpu", "--param", "epilogue=relu", NULL};
    r = cli_child_run(unknown);
    cr_assert_eq(r->status, 2, "stdout: %s\nstderr: %s", r->out, r->err);
    cr_assert(strstr(r->err, "layer_norm has no parameter 'epilogue' (its parameters: eps)") != NULL, "%s", r->err);
}

/* `trireme tune` has default shapes for the norms (the benchmark's M = 4096 rows): its shape table is indexed by
 * the op's shape rule, which had no row-norm entry. */
Test(norm_cli, tune_lists_the_norms_at_benchmark_shapes) {
    const char *list[] = {"tune", "rms_norm", "layer_norm", "--list", "--device", "cpu", NULL};
    cli_child *r = cli_child_run(list);
    cr_assert_eq(r->status, 0, "stdout: %s\nstderr: %s", r->out, r->err);
    cr_assert(strstr(r->err, ": 24 jobs") != NULL || strstr(r->out, ": 24 jobs") != NULL, "%s%s", r->err, r->out);
    cr_assert(strstr(r->out, "rms_norm f16->f16 4096x1024:") != NULL, "%s", r->out);
    cr_assert(strstr(r->out, "layer_norm bf16->bf16 4096x16384:") != NULL, "%s", r->out);
}

/* The engine runs the norms' quick cases on the CPU with four slots: every case counted, one summary row per
 * (op, dtype), none failing (a CPU backend without the norms reports them unsupported). */
Test(norm_engine, quick_norm_cases_on_the_cpu) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_conf_options opt = {.seed = 5, .quick = 1,
                            .op_mask = (1u << TRR_OP_RMS_NORM) | (1u << TRR_OP_LAYER_NORM)};
    trr_conf_report *rep = NULL;
    cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
    const trr_case *quick;
    int nq, want = 0;
    cr_assert_eq(trr_cases_get(1, &quick, &nq), TRR_OK);
    for (int i = 0; i < nq; i++) want += quick[i].op == TRR_OP_RMS_NORM || quick[i].op == TRR_OP_LAYER_NORM;
    cr_assert_eq(rep->n_results, want);
    cr_assert_eq(rep->passed + rep->failed + rep->unsupported, want);
    cr_assert_eq(rep->n_summary, 6);
    for (int i = 0; i < rep->n_results; i++)
        cr_assert_neq(rep->results[i].outcome, TRR_CONF_FAIL, "%s: %s", rep->results[i].name, rep->results[i].message);
    /* the JSON report gives each case's parameters: eps = 0 where the case sets it, nothing where it is default */
    char *text = NULL;
    const trr_conf_report *reps[1] = {rep};
    cr_assert_eq(trr_conformance_json(reps, 1, &text), TRR_OK);
    cJSON *doc = cJSON_Parse(text);
    cr_assert(doc);
    const cJSON *cases = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "reports"), 0), "cases");
    int with_eps0 = 0, without = 0;
    for (int i = 0; i < cJSON_GetArraySize(cases); i++) {
        const cJSON *c = cJSON_GetArrayItem(cases, i);
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(c, "name"));
        const cJSON *params = cJSON_GetObjectItem(c, "params");
        const size_t len = strlen(name);
        if (len > 6 && !strcmp(name + len - 6, " eps=0")) {
            cr_assert(params && cJSON_GetObjectItem(params, "eps"), "%s", name);
            cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(params, "eps")), 0.0, "%s", name);
            with_eps0++;
        } else if (!strstr(name, "eps=")) {
            cr_assert_null(params, "%s", name);
            without++;
        }
    }
    cr_assert(with_eps0 > 0 && without > 0);
    cJSON_Delete(doc);
    free(text);
    trr_conformance_free(rep);
    trr_context_destroy(ctx);
}

/* With the norms the op table has 32 (op, signature) pairs: a whole-suite report has a summary row for each. */
Test(norm_engine, summary_holds_every_signature) {
    int pairs = 0;
    for (int o = 0; o < TRR_OP_COUNT; o++) pairs += trr_op_desc_get((trr_op)o)->n_signatures;
    trr_conf_report rep;
    cr_assert_geq((int)(sizeof rep.summary / sizeof rep.summary[0]), pairs);
}
