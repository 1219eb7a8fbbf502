/* User row ops (trr_op_define_row_op, docs/custom-ops.md, Row ops): an inconsistent row definition is
 * refused with its reason; a row op's vectors, two outputs and named parameter reach its CPU function and the
 * front-end checks their shapes and overlaps; the conformance engine judges both outputs, so a kernel that gets
 * only the second one wrong fails; a copy of the built-in rms_norm defined through the public API gives the
 * built-in's bits on the CPU (its arithmetic) and on OpenCL (its kernel text), and copies of rms_norm and
 * layer_norm give theirs on Vulkan (the SPIR-V). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"
#include "embedded.h"
#include "test_support.h"

/* h = x + r, y = h * s * w with s = 1 / sqrt(mean(h^2) + eps): add_rms_norm's arithmetic, with the second output
 * off by one where *user is non-zero */
static void row_cpu(const trr_op_cpu_row_args *a) {
    const int wrong_h = a->user ? *(const int *)a->user : 0;
    void *const *op = a->operands;
    const int64_t *st = a->strides;
    if (a->n_operands != 5) return; /* (a wrong count leaves the outputs unwritten, which the tests see) */
    const float *w = op[2];
    for (int64_t i = 0; i < a->rows; i++) {
        const float *x = (const float *)op[0] + i * st[0];
        const float *r = (const float *)op[1] + i * st[1];
        float *y = (float *)op[3] + i * st[3];
        float *h = (float *)op[4] + i * st[4];
        double ss = 0.0;
        for (int64_t c = 0; c < a->cols; c++) {
            h[c] = x[c] + r[c];
            ss += (double)h[c] * h[c];
        }
        const float s = (float)(1.0 / sqrt(ss / (double)a->cols + a->params[0]));
        for (int64_t c = 0; c < a->cols; c++) y[c] = h[c] * s * w[c * st[2]];
        if (wrong_h)
            for (int64_t c = 0; c < a->cols; c++) h[c] += 1.0f;
    }
}

static void row_reference(const double *const *in, double *const *out, int64_t n, const double *params, void *user) {
    (void)user;
    double ss = 0.0;
    for (int64_t c = 0; c < n; c++) {
        out[1][c] = in[0][c] + in[1][c];
        ss += out[1][c] * out[1][c];
    }
    const double s = 1.0 / sqrt(ss / (double)n + params[0]);
    for (int64_t c = 0; c < n; c++) out[0][c] = out[1][c] * s * in[2][c];
}

static double point_reference(const double *in, const double *params, void *user) {
    (void)params, (void)user;
    return in[0];
}

static const trr_param_info eps_param[] = {{"eps", TRR_PARAM_F32, 1e-6, NULL, "", 1}};

static trr_op_def row_def(const char *name, const char *operands) {
    trr_op_def d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.operands = operands;
    d.dtypes[0] = TRR_F32;
    d.n_dtypes = 1;
    d.params = eps_param;
    d.n_params = 1;
    d.bound = TRR_BOUND_MAX_REL;
    return d;
}

static void expect_refused(const trr_op_def *d, const char *reason) {
    trr_op op = TRR_OP_COPY;
    const trr_status st = d->reference ? trr_op_define(d, &op) : trr_op_define_row_op(d, row_reference, row_cpu, &op);
    cr_expect_eq(st, TRR_ERR_INVALID_ARGUMENT, "%s: status %s", d->operands, trr_status_name(st));
    cr_expect(strstr(trr_last_error(NULL), reason), "'%s' does not say '%s'", trr_last_error(NULL), reason);
    cr_expect_eq(op, TRR_OP_COPY, "a refused definition wrote its id");
}

Test(user_row_op, inconsistent_row_definitions_are_refused_with_the_reason) {
    trr_op_def d = row_def("bad_row", "x[N], w[N] -> y[N]");
    expect_refused(&d, "a row op's first input is [M,N]");
    d = row_def("bad_row", "x[M,N], w[K] -> y[M,N]");
    expect_refused(&d, "a row op's vector is [N]");
    d = row_def("bad_row", "x[M,N], w[N] -> y[N]");
    expect_refused(&d, "a row op's operands are [M,N]");
    d = row_def("bad_row", "x[M,N], w[N] -> y[M,N], h[M,N], g[M,N]");
    expect_refused(&d, "one to three inputs and one or two outputs");
    /* a row op's reference is its row function: a point reference beside it is refused */
    d = row_def("bad_row", "x[M,N] -> y[M,N]");
    d.reference = point_reference;
    trr_op op = TRR_OP_COPY;
    cr_expect_eq(trr_op_define_row_op(&d, row_reference, row_cpu, &op), TRR_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(trr_last_error(NULL), "def->reference must be NULL"), "%s", trr_last_error(NULL));
    d.reference = NULL;
    cr_expect_eq(trr_op_define_row_op(&d, NULL, row_cpu, &op), TRR_ERR_INVALID_ARGUMENT);
    /* an element-wise definition still takes one output, and four operands at most */
    d = row_def("bad_row", "x[M,N], g[M,N] -> y[M,N], h[M,N]");
    d.reference = point_reference;
    expect_refused(&d, "element-wise user ops take one or two inputs and one output");
}

static void fill(float *v, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) v[i] = scale * (float)((i * 7919 % 201) - 100) / 100.0f;
}

/* Runs the op on x, r [rows, cols] at row stride ld, w [cols] at element stride 2, and checks y and h against the
 * row reference, element by element. */
Test(user_row_op, vectors_two_outputs_and_eps_reach_the_cpu_function) {
    trr_op_def d = row_def("row_cpu_check", "x[M,N], r[M,N], w[N] -> y[M,N], h[M,N]");
    trr_op op;
    cr_assert_eq(trr_op_define_row_op(&d, row_reference, row_cpu, &op), TRR_OK, "%s", trr_last_error(NULL));
    trr_op_info info;
    cr_assert_eq(trr_op_get_info(op, &info), TRR_OK);
    cr_expect_eq(info.n_inputs, 3);
    cr_expect_eq(info.n_outputs, 2);

    trr_context *ctx = open_device_or_skip("cpu", NULL);
    enum { ROWS = 5, COLS = 37, LD = 41 };
    static float x[ROWS * LD], r[ROWS * LD], w[2 * COLS], y[ROWS * LD], h[ROWS * LD];
    fill(x, ROWS * LD, 1.0f), fill(r, ROWS * LD, -0.5f), fill(w, 2 * COLS, 2.0f);
    for (int i = 0; i < 2 * COLS; i++) w[i] += 3.0f; /* no zero weight */
    const float poison = NAN;
    for (int i = 0; i < ROWS * LD; i++) y[i] = h[i] = poison;
    trr_buffer *bx, *br, *bw, *by, *bh;
    cr_assert_eq(trr_buffer_create(ctx, sizeof x, &bx), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, sizeof r, &br), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, sizeof w, &bw), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, sizeof y, &by), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, sizeof h, &bh), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bx, 0, x, sizeof x), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, br, 0, r, sizeof r), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bw, 0, w, sizeof w), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, by, 0, y, sizeof y), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bh, 0, h, sizeof h), TRR_OK);
    trr_tensor tx, tr, tw, ty, th;
    cr_assert_eq(trr_tensor_2d(bx, 0, TRR_F32, ROWS, COLS, LD, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_2d(br, 0, TRR_F32, ROWS, COLS, LD, &tr), TRR_OK);
    const int64_t wshape[1] = {COLS}, wstride[1] = {2};
    cr_assert_eq(trr_tensor_nd(bw, 0, TRR_F32, 1, wshape, wstride, &tw), TRR_OK);
    cr_assert_eq(trr_tensor_2d(by, 0, TRR_F32, ROWS, COLS, LD, &ty), TRR_OK);
    cr_assert_eq(trr_tensor_2d(bh, 0, TRR_F32, ROWS, COLS, LD, &th), TRR_OK);

    trr_op_params params = {0};
    const double eps = 0.25;
    cr_assert_eq(trr_op_params_set(&params, "eps", eps), TRR_OK);
    const trr_tensor *ops[5] = {&tx, &tr, &tw, &ty, &th};
    cr_assert_eq(trr_op_run(ctx, op, ops, &params), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_read(ctx, by, 0, y, sizeof y), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, bh, 0, h, sizeof h), TRR_OK);
    for (int i = 0; i < ROWS; i++) {
        double xs[COLS], rs[COLS], ws[COLS], ys[COLS], hs[COLS];
        for (int c = 0; c < COLS; c++) xs[c] = x[i * LD + c], rs[c] = r[i * LD + c], ws[c] = w[2 * c];
        const double *in[3] = {xs, rs, ws};
        double *out[2] = {ys, hs};
        const double p[1] = {(double)(float)eps};
        row_reference(in, out, COLS, p, NULL);
        for (int c = 0; c < COLS; c++) {
            cr_expect_eq(h[i * LD + c], (float)hs[c], "h at (%d,%d)", i, c);
            cr_expect(fabs(y[i * LD + c] - ys[c]) <= 1e-5 * fabs(ys[c]) + 1e-7, "y at (%d,%d): %g, want %g", i, c,
                      (double)y[i * LD + c], ys[c]);
        }
        for (int c = COLS; c < LD && i + 1 < ROWS; c++) /* the padding between rows stays as it was */
            cr_expect(isnan(y[i * LD + c]) && isnan(h[i * LD + c]), "padding written at (%d,%d)", i, c);
    }

    /* shapes and overlaps: w of the wrong length, h over x */
    const int64_t bad_shape[1] = {COLS - 1};
    trr_tensor tw_bad;
    cr_assert_eq(trr_tensor_nd(bw, 0, TRR_F32, 1, bad_shape, wstride, &tw_bad), TRR_OK);
    const trr_tensor *bad_w[5] = {&tx, &tr, &tw_bad, &ty, &th};
    cr_expect_eq(trr_op_run(ctx, op, bad_w, &params), TRR_ERR_SHAPE);
    cr_expect(strstr(trr_last_error(ctx), "w must be 1-D [N]"), "%s", trr_last_error(ctx));
    const trr_tensor *h_on_x[5] = {&tx, &tr, &tw, &ty, &tx};
    cr_expect_eq(trr_op_run(ctx, op, h_on_x, &params), TRR_ERR_OVERLAP);
    const trr_tensor *h_on_y[5] = {&tx, &tr, &tw, &ty, &ty};
    cr_expect_eq(trr_op_run(ctx, op, h_on_y, &params), TRR_ERR_OVERLAP);
    trr_buffer_destroy(bx), trr_buffer_destroy(br), trr_buffer_destroy(bw), trr_buffer_destroy(by);
    trr_buffer_destroy(bh);
    trr_context_destroy(ctx);
}

/* The conformance engine on the row norms' cases: the right kernel passes every case; one whose first output is
 * right and second output off fails them, naming h. */
Test(user_row_op, conformance_judges_the_second_output) {
    static int wrong = 1;
    trr_op_def good = row_def("row_conf_good", "x[M,N], r[M,N], w[N] -> y[M,N], h[M,N]");
    trr_op_def bad = row_def("row_conf_bad", "x[M,N], r[M,N], w[N] -> y[M,N], h[M,N]");
    bad.user = &wrong;
    trr_op op_good, op_bad;
    cr_assert_eq(trr_op_define_row_op(&good, row_reference, row_cpu, &op_good), TRR_OK, "%s", trr_last_error(NULL));
    cr_assert_eq(trr_op_define_row_op(&bad, row_reference, row_cpu, &op_bad), TRR_OK, "%s", trr_last_error(NULL));
    trr_context *ctx = open_device_or_skip("cpu", NULL);
    trr_conf_options o = {.seed = 7, .quick = 1, .op_mask = (1ull << op_good) | (1ull << op_bad)};
    trr_conf_report *rep = NULL;
    cr_assert_eq(trr_conformance_run(ctx, &o, &rep), TRR_OK, "%s", trr_last_error(ctx));
    int good_pass = 0, bad_fail = 0, named = 0;
    for (int i = 0; i < rep->n_results; i++) {
        const trr_conf_result *res = &rep->results[i];
        if (res->tcase.op == op_good) {
            good_pass += res->outcome == TRR_CONF_PASS;
            cr_expect_eq(res->outcome, TRR_CONF_PASS, "%s: %s", res->name, res->message);
        } else if (res->tcase.op == op_bad && res->tcase.cols > 0) {
            bad_fail += res->outcome == TRR_CONF_FAIL;
            named += strncmp(res->message, "h: ", 3) == 0;
            cr_expect_eq(res->outcome, TRR_CONF_FAIL, "%s passed with a wrong h", res->name);
        }
    }
    cr_expect_gt(good_pass, 5);
    cr_expect_gt(bad_fail, 5);
    cr_expect_eq(named, bad_fail, "a failure that does not name h");
    trr_conformance_free(rep);
    trr_context_destroy(ctx);
}

/* ---- dogfooding: a copy of the built-in rms_norm through the public row-op definition ---- */

/* backend_cpu/norm.c's f32 arithmetic: the sum of squares in tiles of 256, each summed in 8 double lanes then
 * the tail, inv = 1 / sqrt(mean + eps) rounded to f32, y = x * inv * w */
enum { COPY_TILE = 256, COPY_LANES = 8 };
static void rms_norm_copy_cpu(const trr_op_cpu_row_args *a) {
    const float eps = (float)a->params[0];
    const float *w = a->operands[1];
    for (int64_t i = 0; i < a->rows; i++) {
        const float *x = (const float *)a->operands[0] + i * a->strides[0];
        float *y = (float *)a->operands[2] + i * a->strides[2];
        double ss = 0.0;
        for (int64_t c = 0; c < a->cols; c += COPY_TILE) {
            const int64_t m = a->cols - c < COPY_TILE ? a->cols - c : COPY_TILE;
            double acc[COPY_LANES] = {0}, s = 0.0;
            int64_t k = 0;
            for (; k + COPY_LANES <= m; k += COPY_LANES)
                for (int j = 0; j < COPY_LANES; j++) acc[j] += (double)x[c + k + j] * (double)x[c + k + j];
            for (; k < m; k++) s += (double)x[c + k] * (double)x[c + k];
            for (int j = 0; j < COPY_LANES; j++) s += acc[j];
            ss += s;
        }
        const float inv = (float)(1.0 / sqrt(ss / (double)a->cols + (double)eps));
        for (int64_t c = 0; c < a->cols; c++) y[c] = x[c] * inv * w[c * a->strides[1]];
    }
}

static void rms_norm_copy_reference(const double *const *in, double *const *out, int64_t n, const double *params,
                                    void *user) {
    (void)user;
    double ss = 0.0;
    for (int64_t c = 0; c < n; c++) ss += in[0][c] * in[0][c];
    const double inv = 1.0 / sqrt(ss / (double)n + params[0]);
    for (int64_t c = 0; c < n; c++) out[0][c] = in[0][c] * inv * in[1][c];
}

static void layer_norm_copy_reference(const double *const *in, double *const *out, int64_t n, const double *params,
                                      void *user) {
    (void)user;
    double m = 0.0, v = 0.0;
    for (int64_t c = 0; c < n; c++) m += in[0][c];
    m /= (double)n;
    for (int64_t c = 0; c < n; c++) v += (in[0][c] - m) * (in[0][c] - m);
    const double inv = 1.0 / sqrt(v / (double)n + params[0]);
    for (int64_t c = 0; c < n; c++) out[0][c] = (in[0][c] - m) * inv * in[1][c] + in[2][c];
}

/* the built-in (rms_norm, or layer_norm where layer) and the copy on one input: x [rows, cols] at row stride ld,
 * w (and b) at element stride ws */
static void expect_bits(trr_context *ctx, trr_op copy, int layer, int64_t rows, int64_t cols, int64_t ld, int64_t ws,
                        double eps) {
    cr_assert_eq(trr_synchronize(ctx), TRR_OK);
    const size_t nx = (size_t)(rows * ld), nw = (size_t)(cols * ws);
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *b = malloc(nw * sizeof *b),
          *y1 = malloc(nx * sizeof *y1), *y2 = malloc(nx * sizeof *y2);
    cr_assert(x && w && b && y1 && y2);
    uint32_t s = (uint32_t)(rows * 131 + cols);
    for (size_t i = 0; i < nx; i++) s = s * 1664525u + 1013904223u, x[i] = (float)((int)(s >> 8) % 2001 - 1000) / 250.0f;
    for (size_t i = 0; i < nw; i++) s = s * 1664525u + 1013904223u, w[i] = (float)((int)(s >> 8) % 2001 - 1000) / 500.0f;
    for (size_t i = 0; i < nw; i++) s = s * 1664525u + 1013904223u, b[i] = (float)((int)(s >> 8) % 2001 - 1000) / 300.0f;
    trr_buffer *bx, *bw, *bb, *b1, *b2;
    cr_assert_eq(trr_buffer_create(ctx, nx * 4, &bx), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, nw * 4, &bw), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, nw * 4, &bb), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, nx * 4, &b1), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, nx * 4, &b2), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bx, 0, x, nx * 4), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bw, 0, w, nw * 4), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bb, 0, b, nw * 4), TRR_OK);
    cr_assert_eq(trr_buffer_fill(ctx, b1, 0, nx * 4, 0xff), TRR_OK);
    cr_assert_eq(trr_buffer_fill(ctx, b2, 0, nx * 4, 0xff), TRR_OK);
    trr_tensor tx, tw, tb, t1, t2;
    cr_assert_eq(trr_tensor_2d(bx, 0, TRR_F32, rows, cols, ld, &tx), TRR_OK);
    const int64_t shape[1] = {cols}, stride[1] = {ws};
    cr_assert_eq(trr_tensor_nd(bw, 0, TRR_F32, 1, shape, stride, &tw), TRR_OK);
    cr_assert_eq(trr_tensor_nd(bb, 0, TRR_F32, 1, shape, stride, &tb), TRR_OK);
    cr_assert_eq(trr_tensor_2d(b1, 0, TRR_F32, rows, cols, ld, &t1), TRR_OK);
    cr_assert_eq(trr_tensor_2d(b2, 0, TRR_F32, rows, cols, ld, &t2), TRR_OK);
    if (layer) cr_assert_eq(trr_layer_norm(ctx, &tx, &tw, &tb, &t1, (float)eps), TRR_OK, "%s", trr_last_error(ctx));
    else cr_assert_eq(trr_rms_norm(ctx, &tx, &tw, &t1, (float)eps), TRR_OK, "%s", trr_last_error(ctx));
    trr_op_params p = {0};
    cr_assert_eq(trr_op_params_set(&p, "eps", eps), TRR_OK);
    const trr_tensor *rms_ops[3] = {&tx, &tw, &t2}, *layer_ops[4] = {&tx, &tw, &tb, &t2};
    const trr_tensor *const *ops = layer ? layer_ops : rms_ops;
    cr_assert_eq(trr_op_run(ctx, copy, ops, &p), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_read(ctx, b1, 0, y1, nx * 4), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, b2, 0, y2, nx * 4), TRR_OK);
    int written = 1; /* the buffers started as NaN: an output that stayed so is no match */
    for (int64_t r = 0; r < rows; r++) written &= isfinite(y1[r * ld]) && isfinite(y1[r * ld + cols - 1]);
    const char *name = layer ? "layer_norm" : "rms_norm";
    cr_expect(written, "%s left its output unwritten at %lld x %lld", name, (long long)rows, (long long)cols);
    cr_expect_eq(memcmp(y1, y2, nx * 4), 0, "%s and its copy differ at %lld x %lld (ld %lld, w stride %lld)", name,
                 (long long)rows, (long long)cols, (long long)ld, (long long)ws);
    trr_buffer_destroy(bx), trr_buffer_destroy(bw), trr_buffer_destroy(bb), trr_buffer_destroy(b1);
    trr_buffer_destroy(b2);
    free(x), free(w), free(b), free(y1), free(y2);
}

static void expect_norm_bits(trr_context *ctx, trr_op copy, int64_t rows, int64_t cols, int64_t ld, int64_t ws,
                             double eps) {
    expect_bits(ctx, copy, 0, rows, cols, ld, ws, eps);
}

Test(user_row_op, rms_norm_copy_is_bit_identical_on_cpu) {
    static const trr_param_info eps_default[] = {{"eps", TRR_PARAM_F32, 1e-6, NULL, "", 1}};
    trr_op_def d;
    memset(&d, 0, sizeof d);
    d.name = "rms_norm_copy";
    d.operands = "x[M,N], w[N] -> y[M,N]";
    d.dtypes[0] = TRR_F32;
    d.n_dtypes = 1;
    d.params = eps_default;
    d.n_params = 1;
    trr_op copy;
    cr_assert_eq(trr_op_define_row_op(&d, rms_norm_copy_reference, rms_norm_copy_cpu, &copy), TRR_OK, "%s",
                 trr_last_error(NULL));
    trr_context *ctx = open_device_or_skip("cpu", NULL);
    expect_norm_bits(ctx, copy, 1, 1, 1, 1, 1e-6);
    expect_norm_bits(ctx, copy, 3, 17, 17, 1, 1e-6);
    expect_norm_bits(ctx, copy, 17, 781, 786, 2, 0.25);
    expect_norm_bits(ctx, copy, 127, 4099, 4099, 1, 1e-6);
    expect_norm_bits(ctx, copy, 2, 100003, 100010, 3, 1e-5);
    trr_context_destroy(ctx);
}

/* The OpenCL copy: the built-in's own kernel text (kernels/opencl/common.cl and norm.cl, which take the public
 * row-op arguments), its build options as the copy's tile parameters: THREADS (threads), VW (vector_width), PER
 * (vectors a work-item holds, carried in block_k) and ROWS (rows a work-group, carried in group_m). The built-in
 * runs at threads = 256, where a work-group holds one row on CPU and GPU devices alike, with rows held in
 * registers (cols <= block_n), vectors where the layout allows; the copy at the same values. */
static char *read_kernel(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/opencl/%s", TRR_KERNELS_DIR, name);
    return read_text_file(path);
}

Test(user_row_op, rms_norm_copy_of_the_kernel_text_is_bit_identical_on_opencl) {
    trr_context *ctx = open_device_or_skip("opencl:0", "opencl");
    char *common = read_kernel("common.cl"), *norm = read_kernel("norm.cl");
    const char *head = "#define X_DT 0\n#define Z_DT 0\n"; /* f32, as the built-in's -DX_DT, -DZ_DT */
    char *text = malloc(strlen(head) + strlen(common) + strlen(norm) + 2);
    cr_assert(text);
    sprintf(text, "%s%s\n%s", head, common, norm);
    static const trr_param_info eps_default[] = {{"eps", TRR_PARAM_F32, 1e-6, NULL, "", 1}};
    trr_op_def d;
    memset(&d, 0, sizeof d);
    d.name = "rms_norm_cl_copy";
    d.operands = "x[M,N], w[N] -> y[M,N]";
    d.dtypes[0] = TRR_F32;
    d.n_dtypes = 1;
    d.params = eps_default;
    d.n_params = 1;
    d.tiles[0] = (trr_tile_param){"THREADS", "threads", {256}, 1};
    d.tiles[1] = (trr_tile_param){"VW", "vector_width", {4, 1}, 2};
    d.tiles[2] = (trr_tile_param){"PER", "block_k", {1, 2, 8}, 3};
    d.tiles[3] = (trr_tile_param){"ROWS", "group_m", {1}, 1};
    d.n_tiles = 4;
    d.opencl = (trr_kernel_code){.source = text, .entry = "rms_norm"};
    d.launch = (trr_op_launch){{"M/ROWS", NULL, NULL}, "THREADS*ROWS"};
    trr_op copy;
    cr_assert_eq(trr_op_define_row_op(&d, rms_norm_copy_reference, NULL, &copy), TRR_OK, "%s", trr_last_error(NULL));
    free(text), free(common), free(norm);
    /* (vector width, vectors a work-item, cols): rows held in registers of 256 work-items */
    static const int runs[][3] = {{4, 1, 1000}, {4, 2, 2048}, {4, 2, 1027}, {1, 8, 2047}, {1, 1, 3}, {4, 8, 8000}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        const int vw = runs[i][0], per = runs[i][1], cols = runs[i][2];
        const trr_config builtin = {.threads = 256, .vector_width = vw, .block_n = 256 * vw * per};
        const trr_config mine = {.threads = 256, .vector_width = vw, .block_k = per, .group_m = 1};
        cr_assert_eq(trr_config_override(ctx, TRR_OP_RMS_NORM, &builtin), TRR_OK, "%s", trr_last_error(ctx));
        cr_assert_eq(trr_config_override(ctx, copy, &mine), TRR_OK, "%s", trr_last_error(ctx));
        /* vectors need whole vectors a row (the built-in's layout rule): a row stride of a multiple of vw */
        const int64_t ld = (cols + vw - 1) / vw * vw;
        expect_norm_bits(ctx, copy, 17, cols, vw == 4 && cols % 4 ? ld : cols, 1, 1e-6);
        expect_norm_bits(ctx, copy, 3, cols, ld + (vw == 4 ? 4 : 5), 1, 0.25);
    }
    trr_context_destroy(ctx);
}

/* The library's embedded kernels: the SPIR-V words the Vulkan backend was built with (kernels/vulkan/norm.comp for
 * rms_norm in f32). */
#ifdef TRR_TEST_VULKAN_KERNELS
extern const trr_embedded_file trr_vulkan_kernels[];
extern const size_t trr_vulkan_kernels_count;
#endif

static trr_op_def copy_def(const char *name, int layer) {
    static const trr_param_info eps_default[] = {{"eps", TRR_PARAM_F32, 1e-6, NULL, "", 1}};
    trr_op_def d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.operands = layer ? "x[M,N], w[N], b[N] -> y[M,N]" : "x[M,N], w[N] -> y[M,N]";
    d.dtypes[0] = TRR_F32;
    d.n_dtypes = 1;
    d.params = eps_default;
    d.n_params = 1;
    return d;
}

/* The Vulkan copy: the built-in's SPIR-V, its specialization constants as the copy's tile parameters: VPT
 * (constant 1, carried in block_k), PATH (constant 2, in group_m: one of REGS 1 and LOOP 2, then VEC 4, WVEC 8,
 * FULL 16, PREFETCH 32) and THREADS (constant 3, unused by the shader; the launch's threads, constant 0). Each run
 * gives the built-in a config (threads, vector_width, block_n) and the copy the shape backend_vulkan/vk_norm.c
 * derives from it for that layout. */
typedef struct vk_run {
    int threads, vw, block_n, cols, ld, ws;
} vk_run;

static int vk_path(const vk_run *r, int rows, int *out_vpt) {
    const int unit = 4, n4 = (r->cols + unit - 1) / unit;
    const int vec = r->vw == unit && r->cols % unit == 0 && (rows == 1 || r->ld % unit == 0);
    const int wvec = vec && r->ws == 1, loop = r->cols > r->block_n;
    const int vpt = loop ? 1 : (n4 + r->threads - 1) / r->threads;
    const int full = !loop && vec && n4 == vpt * r->threads, prefetch = !loop && wvec && r->threads <= 256;
    *out_vpt = vpt;
    return (loop ? 2 : 1) | vec * 4 | wvec * 8 | full * 16 | prefetch * 32;
}

Test(user_row_op, norm_copies_of_the_spirv_are_bit_identical_on_vulkan) {
#ifndef TRR_TEST_VULKAN_KERNELS
    cr_skip_test("the Vulkan backend is not built");
#else
    trr_context *ctx = open_device_or_skip("vulkan:0", "vulkan");
    /* registers (full rows, partial rows, with and without prefetch), elements, w strided, the looping kernel */
    static const vk_run runs[] = {
        {128, 4, 2048, 2048, 2048, 1}, {128, 4, 1024, 1000, 1000, 1}, {512, 4, 4096, 4096, 4096, 1},
        {128, 1, 1536, 1027, 1030, 2}, {256, 4, 4096, 4096, 4100, 3}, {256, 4, 4096, 20000, 20000, 1},
        {256, 1, 4096, 9999, 10001, 1}, {64, 1, 64, 3, 5, 1},
    };
    for (int layer = 0; layer < 2; layer++) {
        const char *spv = layer ? "norm_layer_norm_f32.spv" : "norm_rms_norm_f32.spv";
        const trr_embedded_file *f = trr_embedded_find(trr_vulkan_kernels, trr_vulkan_kernels_count, spv);
        cr_assert(f && f->size % 4 == 0, "%s is not embedded", spv);
        uint32_t *words = malloc(f->size);
        cr_assert(words);
        memcpy(words, f->data, f->size); /* the embedded bytes need not be 4-byte aligned */
        trr_op_def d = copy_def(layer ? "layer_norm_vk_copy" : "rms_norm_vk_copy", layer);
        d.tiles[0] = (trr_tile_param){"VPT", "block_k", {1, 2, 4, 8}, 4};
        d.tiles[1] = (trr_tile_param){"PATH", "group_m", {1 | 4 | 8 | 32}, 1};
        d.tiles[2] = (trr_tile_param){"THREADS", "threads", {128, 256, 512}, 3};
        d.n_tiles = 3;
        d.vulkan = (trr_kernel_code){.spirv = words, .spirv_words = f->size / 4, .entry = "main"};
        d.launch = (trr_op_launch){{"M", NULL, NULL}, "THREADS"};
        trr_op copy;
        cr_assert_eq(trr_op_define_row_op(&d, layer ? layer_norm_copy_reference : rms_norm_copy_reference, NULL,
                                          &copy), TRR_OK, "%s", trr_last_error(NULL));
        free(words); /* the definition holds its own copy */
        for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
            const vk_run *r = &runs[i];
            for (int rows = 1; rows <= 17; rows += 16) {
                int vpt = 0;
                const int path = vk_path(r, rows, &vpt);
                const trr_config builtin = {.threads = r->threads, .vector_width = r->vw, .block_n = r->block_n};
                const trr_config mine = {.threads = r->threads, .block_k = vpt, .group_m = path};
                cr_assert_eq(trr_config_override(ctx, layer ? TRR_OP_LAYER_NORM : TRR_OP_RMS_NORM, &builtin), TRR_OK,
                             "%s", trr_last_error(ctx));
                cr_assert_eq(trr_config_override(ctx, copy, &mine), TRR_OK, "%s", trr_last_error(ctx));
                expect_bits(ctx, copy, layer, rows, r->cols, r->ld, r->ws, rows == 1 ? 0.25 : 1e-6);
            }
        }
    }
    trr_context_destroy(ctx);
#endif
}

