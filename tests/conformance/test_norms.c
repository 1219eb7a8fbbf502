/* rms_norm and layer_norm on every backend against a float64 computation on the host: f32, f16 and bf16; rows
 * of 1 to past a tile; padded rows and strided weights; the output's surroundings poisoned and checked untouched;
 * the special rows docs/ops.md names (constant rows, N = 1, eps = 0 with a constant row); and the bad calls. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_values.h"
#include "test_support.h"

typedef struct shape {
    int64_t m, n;
    int64_t x_pad, y_pad; /* extra elements per row */
    int64_t w_stride;     /* element stride of w and b */
} shape;

static const shape shapes[] = {
    {1, 1, 0, 0, 1},    {3, 17, 0, 0, 1},    {17, 127, 5, 3, 2},  {5, 781, 0, 0, 1},
    {2, 1000, 3, 0, 1}, {4, 1823, 0, 5, 3},  {3, 4099, 1, 1, 1},  {2, 12289, 0, 0, 1},
    /* whole 16-byte vectors in every dtype (rows, padding and the output's offset multiples of 8 elements): the
     * GPU kernels' vector paths for short rows, rows held in registers, and rows past that */
    {9, 256, 0, 0, 1},  {5, 1024, 8, 8, 1},  {3, 2048, 0, 0, 1},  {3, 8192, 8, 0, 1},
    {2, 16384, 0, 0, 1}, {2, 20480, 0, 0, 1}, {2, 40960, 0, 0, 1},
};

static uint32_t rng = 2463534242u;
static float uniform(float lo, float hi) { return host_uniform(&rng, lo, hi); }




/* The float64 row: y = (x - mean) / sqrt(var + eps) * w + b (layer), or x / sqrt(mean(x^2) + eps) * w (rms). */
static void reference_row(int layer, const float *x, const float *w, const float *b, int64_t n, double eps, double *y) {
    double mean = 0, ss = 0;
    if (layer) {
        for (int64_t j = 0; j < n; j++) mean += x[j];
        mean /= (double)n;
    }
    for (int64_t j = 0; j < n; j++) ss += ((double)x[j] - mean) * ((double)x[j] - mean);
    const double inv = 1.0 / sqrt(ss / (double)n + eps);
    for (int64_t j = 0; j < n; j++) y[j] = ((double)x[j] - mean) * inv * w[j] + (layer ? b[j] : 0.0);
}

typedef enum { ROWS_RANDOM, ROWS_CONSTANT } row_kind;

/* Runs one case and checks every element against the bound of docs/ops.md: f32 |err| <= 1e-5 (|y| + |w| + |b|);
 * half outputs within the half bound per element (relative 1e-2 f16, 4e-2 bf16, floored at the row's scale). */
static void run_case(trr_context *ctx, const char *spec, int layer, trr_dtype dt, const shape *s, row_kind kind,
                     double eps) {
    const size_t es = host_dtype_size(dt);
    const int64_t xs = s->n + s->x_pad, ys = s->n + s->y_pad;
    const size_t x_elems = (size_t)(s->m * xs), y_elems = (size_t)(s->m * ys) + 12;
    const size_t w_elems = (size_t)(s->n * s->w_stride);
    void *hx = calloc(x_elems, es), *hw = calloc(w_elems, es), *hb = calloc(w_elems, es), *hy = malloc(y_elems * es);
    float *fx = calloc((size_t)(s->m * s->n), sizeof(float)), *fw = calloc((size_t)s->n, sizeof(float)),
          *fb = calloc((size_t)s->n, sizeof(float));
    double *ref = calloc((size_t)s->n, sizeof(double));
    cr_assert(hx && hw && hb && hy && fx && fw && fb && ref);
    for (int64_t j = 0; j < s->n; j++) {
        fw[j] = host_store(hw, (size_t)(j * s->w_stride), dt, uniform(0.5f, 1.5f));
        fb[j] = host_store(hb, (size_t)(j * s->w_stride), dt, uniform(-0.5f, 0.5f));
    }
    for (int64_t i = 0; i < s->m; i++) {
        const float c = uniform(-3.0f, 3.0f);
        for (int64_t j = 0; j < s->n; j++)
            fx[i * s->n + j] =
                host_store(hx, (size_t)(i * xs + j), dt, kind == ROWS_CONSTANT ? c : uniform(-2.0f, 2.0f) + c);
    }
    trr_buffer *bx, *bw, *bb, *by;
    cr_assert_eq(trr_buffer_create(ctx, x_elems * es, &bx), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, w_elems * es, &bw), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, w_elems * es, &bb), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, y_elems * es, &by), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bx, 0, hx, x_elems * es), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bw, 0, hw, w_elems * es), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bb, 0, hb, w_elems * es), TRR_OK);
    cr_assert_eq(trr_buffer_fill(ctx, by, 0, y_elems * es, 0xFF), TRR_OK); /* NaN in every float dtype */
    const int64_t y_off = 8; /* the output view starts inside its buffer, 16-byte aligned in every dtype */
    trr_tensor tx, tw, tb, ty;
    const int64_t xshape[2] = {s->m, s->n}, xstr[2] = {xs, 1}, ystr[2] = {ys, 1}, wshape[1] = {s->n},
                  wstr[1] = {s->w_stride};
    cr_assert_eq(trr_tensor_nd(bx, 0, dt, 2, xshape, xstr, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_nd(by, (size_t)y_off * es, dt, 2, xshape, ystr, &ty), TRR_OK);
    cr_assert_eq(trr_tensor_nd(bw, 0, dt, 1, wshape, wstr, &tw), TRR_OK);
    cr_assert_eq(trr_tensor_nd(bb, 0, dt, 1, wshape, wstr, &tb), TRR_OK);
    const trr_status st = layer ? trr_layer_norm(ctx, &tx, &tw, &tb, &ty, (float)eps)
                                : trr_rms_norm(ctx, &tx, &tw, &ty, (float)eps);
    const char *dn = "?";
    trr_dtype_name(dt, &dn);
    cr_assert_eq(st, TRR_OK, "%s %s %s [%lld,%lld]: %s", spec, layer ? "layer_norm" : "rms_norm", dn,
                 (long long)s->m, (long long)s->n, trr_last_error(ctx));
    cr_assert_eq(trr_buffer_read(ctx, by, 0, hy, y_elems * es), TRR_OK);
    const double rel = dt == TRR_F32 ? 1e-5 : dt == TRR_F16 ? 1e-2 : 4e-2;
    for (int64_t i = 0; i < s->m; i++) {
        reference_row(layer, fx + i * s->n, fw, fb, s->n, eps, ref);
        for (int64_t j = 0; j < s->n; j++) {
            const float got = host_load(hy, (size_t)(y_off + i * ys + j), dt);
            const double want = ref[j];
            if (isnan(want)) {
                cr_assert(isnan(got), "%s %s %s [%lld,%lld] (%lld,%lld): %g where the reference is NaN", spec,
                          layer ? "layer_norm" : "rms_norm", dn, (long long)s->m, (long long)s->n, (long long)i,
                          (long long)j, (double)got);
                continue;
            }
            const double scale = fabs(want) + fabs((double)fw[j]) + (layer ? fabs((double)fb[j]) : 0.0);
            const double bound = rel * scale;
            cr_assert(isfinite(got) && fabs((double)got - want) <= bound,
                      "%s %s %s [%lld,%lld] kind %d eps %g (%lld,%lld): %.9g, want %.9g (bound %.3g)", spec,
                      layer ? "layer_norm" : "rms_norm", dn, (long long)s->m, (long long)s->n, (int)kind, eps,
                      (long long)i, (long long)j, (double)got, want, bound);
        }
    }
    /* every element outside the view keeps the poison */
    for (size_t e = 0; e < y_elems; e++) {
        const int64_t r = ((int64_t)e - y_off) / ys, c = ((int64_t)e - y_off) % ys;
        const int inside = (int64_t)e >= y_off && r < s->m && c < s->n;
        if (!inside)
            cr_assert(isnan(host_load(hy, e, dt)), "%s: element %zu outside the output view was written", spec, e);
    }
    trr_buffer_destroy(bx);
    trr_buffer_destroy(bw);
    trr_buffer_destroy(bb);
    trr_buffer_destroy(by);
    free(hx), free(hw), free(hb), free(hy), free(fx), free(fw), free(fb), free(ref);
}

static void check_device(const char *spec) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    const trr_dtype dts[3] = {TRR_F32, TRR_F16, TRR_BF16};
    for (int layer = 0; layer <= 1; layer++)
        for (int d = 0; d < 3; d++)
            for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
                run_case(ctx, spec, layer, dts[d], &shapes[i], ROWS_RANDOM, layer ? 1e-5 : 1e-6);
                run_case(ctx, spec, layer, dts[d], &shapes[i], ROWS_CONSTANT, layer ? 1e-5 : 1e-6);
            }
    /* eps = 0 with constant rows: rms_norm gives sign(x) * w, layer_norm 0 / 0 = NaN (the reference's value) */
    const shape cst = {3, 33, 0, 0, 1};
    for (int layer = 0; layer <= 1; layer++) run_case(ctx, spec, layer, TRR_F32, &cst, ROWS_CONSTANT, 0.0);
    trr_context_destroy(ctx);
}

Test(norms, cpu, .timeout = 300) { check_device("cpu"); }
Test(norms, opencl, .timeout = 300) { check_device("opencl:0"); }
Test(norms, vulkan, .timeout = 300) { check_device("vulkan:0"); }
Test(norms, cuda, .timeout = 300) { check_device("cuda:0"); }

/* Each bad class is refused with its own status before a device sees the call. */
Test(norms, bad_calls) {
    trr_context *ctx = open_device_or_skip("cpu", NULL);
    trr_buffer *buf;
    cr_assert_eq(trr_buffer_create(ctx, 1 << 16, &buf), TRR_OK);
    trr_tensor x, y, w, b, w_short, w16, x3;
    cr_assert_eq(trr_tensor_2d(buf, 0, TRR_F32, 4, 8, 0, &x), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 4096, TRR_F32, 4, 8, 0, &y), TRR_OK);
    cr_assert_eq(trr_tensor_1d(buf, 8192, TRR_F32, 8, &w), TRR_OK);
    cr_assert_eq(trr_tensor_1d(buf, 9000, TRR_F32, 8, &b), TRR_OK);
    cr_assert_eq(trr_tensor_1d(buf, 8192, TRR_F32, 7, &w_short), TRR_OK);
    cr_assert_eq(trr_tensor_1d(buf, 8192, TRR_F16, 8, &w16), TRR_OK);
    const int64_t s3[3] = {2, 2, 8};
    cr_assert_eq(trr_tensor_nd(buf, 0, TRR_F32, 3, s3, NULL, &x3), TRR_OK);
    cr_expect_eq(trr_rms_norm(ctx, &x, &w_short, &y, 1e-6f), TRR_ERR_SHAPE);
    cr_expect(strstr(trr_last_error(ctx), "w must be 1-D [N] = [8]") != NULL, "%s", trr_last_error(ctx));
    cr_expect_eq(trr_layer_norm(ctx, &x, &w, &w_short, &y, 1e-5f), TRR_ERR_SHAPE);
    cr_expect(strstr(trr_last_error(ctx), "b must be 1-D [N] = [8]") != NULL, "%s", trr_last_error(ctx));
    cr_expect_eq(trr_rms_norm(ctx, &x3, &w, &y, 1e-6f), TRR_ERR_SHAPE);
    cr_expect_eq(trr_rms_norm(ctx, &x, &w16, &y, 1e-6f), TRR_ERR_DTYPE);
    cr_expect_eq(trr_layer_norm(ctx, &x, &w, NULL, &y, 1e-5f), TRR_ERR_INVALID_ARGUMENT);
    cr_expect_eq(trr_rms_norm(ctx, &x, &w, &y, -1.0f), TRR_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(trr_last_error(ctx), "eps = -1 must be >= 0") != NULL, "%s", trr_last_error(ctx));
    cr_expect_eq(trr_rms_norm(ctx, &x, &w, &y, NAN), TRR_ERR_INVALID_ARGUMENT);
    trr_tensor over = y;
    over.offset = 16 * sizeof(float); /* the output overlapping x's rows */
    cr_expect_eq(trr_rms_norm(ctx, &x, &w, &over, 1e-6f), TRR_ERR_OVERLAP);
    trr_tensor wz = w;
    wz.strides[0] = 0;
    cr_expect_eq(trr_rms_norm(ctx, &x, &wz, &y, 1e-6f), TRR_ERR_STRIDE);
    /* the public operand order through trr_op_run: inputs, then the output */
    trr_op_info info;
    cr_assert_eq(trr_op_get_info(TRR_OP_LAYER_NORM, &info), TRR_OK);
    cr_expect_eq(info.n_inputs, 3);
    cr_expect_str_eq(info.operands, "x[M,N], w[N], b[N] -> y[M,N]");
    const trr_tensor *ops[] = {&x, &w, &b, &y};
    trr_op_params p;
    cr_assert_eq(trr_op_params_parse(TRR_OP_LAYER_NORM, "eps=0.001", &p), TRR_OK);
    cr_expect_eq(trr_op_run(ctx, TRR_OP_LAYER_NORM, ops, &p), TRR_OK, "%s", trr_last_error(ctx));
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}
