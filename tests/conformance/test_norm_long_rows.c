/* rms_norm and layer_norm on rows of 2^20 elements, and the OpenCL kernels' vector paths under configs the
 * caller picks (the CPU heuristic of the OpenCL backend moves scalars; a GPU's moves 4 or 8 elements a
 * work-item), against a float64 computation on the host.
 *
 * The long rows sit on a mean of 100 with a spread of 1: sums of x and x^2 that are not shifted lose the
 * variance there; the constant row must give exactly b (docs/ops.md). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_values.h"
#include "test_support.h"

static uint32_t rng = 88172645u;
static float uniform(float lo, float hi) { return host_uniform(&rng, lo, hi); }




typedef enum { ROW_RANDOM, ROW_CONSTANT } row_kind;

typedef struct norm_case {
    int64_t m, n;
    int64_t pitch; /* elements from one row of x and y to the next */
    double mean;   /* the rows' centre */
    int constant_last; /* the last row is constant */
} norm_case;

/* Runs both ops on one case and checks every element: f32 within 1e-5 (|y| + |w| + |b|), halves within their
 * per-element bound (test_norms.c); a constant row's layer_norm output equal to b. */
static void run_case(trr_context *ctx, const char *spec, trr_dtype dt, const norm_case *k) {
    const size_t es = host_dtype_size(dt), elems = (size_t)(k->m * k->pitch);
    const size_t n = (size_t)k->n, pitch = (size_t)k->pitch;
    void *hx = calloc(elems, es), *hw = malloc(n * es), *hb = malloc(n * es), *hy = malloc(elems * es);
    float *fx = malloc((size_t)(k->m * k->n) * sizeof(float)), *fw = malloc(n * sizeof(float)),
          *fb = malloc(n * sizeof(float));
    double *ref = malloc(n * sizeof(double));
    cr_assert(hx && hw && hb && hy && fx && fw && fb && ref);
    for (size_t j = 0; j < n; j++) {
        fw[j] = host_store(hw, j, dt, uniform(0.5f, 1.5f));
        fb[j] = host_store(hb, j, dt, uniform(-0.5f, 0.5f));
    }
    for (int64_t i = 0; i < k->m; i++) {
        const int constant = k->constant_last && i == k->m - 1;
        for (size_t j = 0; j < n; j++)
            fx[i * k->n + j] =
                host_store(hx, i * pitch + j, dt, (float)k->mean + (constant ? 0.25f : uniform(-1.0f, 1.0f)));
    }
    trr_buffer *bx, *bw, *bb, *by;
    cr_assert_eq(trr_buffer_create(ctx, elems * es, &bx), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, n * es, &bw), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, n * es, &bb), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, elems * es, &by), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bx, 0, hx, elems * es), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bw, 0, hw, n * es), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bb, 0, hb, n * es), TRR_OK);
    trr_tensor tx, tw, tb, ty;
    cr_assert_eq(trr_tensor_2d(bx, 0, dt, k->m, k->n, k->pitch, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_2d(by, 0, dt, k->m, k->n, k->pitch, &ty), TRR_OK);
    cr_assert_eq(trr_tensor_1d(bw, 0, dt, k->n, &tw), TRR_OK);
    cr_assert_eq(trr_tensor_1d(bb, 0, dt, k->n, &tb), TRR_OK);
    const char *dn = "?";
    trr_dtype_name(dt, &dn);
    const double rel = dt == TRR_F32 ? 1e-5 : dt == TRR_F16 ? 1e-2 : 4e-2;
    for (int layer = 0; layer <= 1; layer++) {
        const double eps = layer ? 1e-5 : 1e-6;
        const char *op = layer ? "layer_norm" : "rms_norm";
        cr_assert_eq(trr_buffer_fill(ctx, by, 0, elems * es, 0xFF), TRR_OK);
        const trr_status st = layer ? trr_layer_norm(ctx, &tx, &tw, &tb, &ty, (float)eps)
                                    : trr_rms_norm(ctx, &tx, &tw, &ty, (float)eps);
        cr_assert_eq(st, TRR_OK, "%s %s %s [%lld,%lld]: %s", spec, op, dn, (long long)k->m, (long long)k->n,
                     trr_last_error(ctx));
        cr_assert_eq(trr_buffer_read(ctx, by, 0, hy, elems * es), TRR_OK);
        for (int64_t i = 0; i < k->m; i++) {
            const float *x = fx + i * k->n;
            double mean = 0, ss = 0;
            if (layer) {
                for (size_t j = 0; j < n; j++) mean += x[j];
                mean /= (double)n;
            }
            for (size_t j = 0; j < n; j++) ss += ((double)x[j] - mean) * ((double)x[j] - mean);
            const double inv = 1.0 / sqrt(ss / (double)n + eps);
            for (size_t j = 0; j < n; j++) ref[j] = ((double)x[j] - mean) * inv * fw[j] + (layer ? fb[j] : 0.0);
            const int constant = k->constant_last && i == k->m - 1;
            for (size_t j = 0; j < n; j++) {
                const float got = host_load(hy, (size_t)i * pitch + j, dt);
                if (layer && constant) {
                    cr_assert(got == fb[j], "%s %s %s constant row (%lld,%zu): %.9g, want b = %.9g exactly", spec,
                              op, dn, (long long)i, j, (double)got, (double)fb[j]);
                    continue;
                }
                const double bound = rel * (fabs(ref[j]) + fabs((double)fw[j]) + (layer ? fabs((double)fb[j]) : 0));
                cr_assert(isfinite(got) && fabs((double)got - ref[j]) <= bound,
                          "%s %s %s [%lld,%lld] (%lld,%zu): %.9g, want %.9g (bound %.3g)", spec, op, dn,
                          (long long)k->m, (long long)k->n, (long long)i, j, (double)got, ref[j], bound);
            }
        }
    }
    trr_buffer_destroy(bx);
    trr_buffer_destroy(bw);
    trr_buffer_destroy(bb);
    trr_buffer_destroy(by);
    free(hx), free(hw), free(hb), free(hy), free(fx), free(fw), free(fb), free(ref);
}

static void long_rows(const char *spec) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    const norm_case k = {2, 1 << 20, 1 << 20, 100.0, 1};
    run_case(ctx, spec, TRR_F32, &k);
    run_case(ctx, spec, TRR_BF16, &k);
    trr_context_destroy(ctx);
}

Test(norm_long_rows, cpu, .timeout = 300) { long_rows("cpu"); }
Test(norm_long_rows, opencl, .timeout = 300) { long_rows("opencl:0"); }

/* The OpenCL kernels as a GPU runs them: 8 elements a work-item (the row's last vector partly past its end),
 * with the row held in private memory and several rows to a work-group (the last one part padding), and with
 * the row swept twice. */
Test(norm_long_rows, opencl_vectors, .timeout = 300) {
    trr_context *ctx = open_device_or_skip("opencl:0", NULL);
    const norm_case k = {5, 1003, 1008, 3.0, 1};
    const trr_config held = {.threads = 32, .block_n = 32 * 32, .vector_width = 8};
    const trr_config swept = {.threads = 16, .block_n = 16 * 8, .vector_width = 8};
    const trr_dtype dts[3] = {TRR_F32, TRR_F16, TRR_BF16};
    for (int d = 0; d < 3; d++) {
        cr_assert_eq(trr_config_override(ctx, TRR_OP_RMS_NORM, &held), TRR_OK, "%s", trr_last_error(ctx));
        cr_assert_eq(trr_config_override(ctx, TRR_OP_LAYER_NORM, &held), TRR_OK, "%s", trr_last_error(ctx));
        run_case(ctx, "opencl:0 held", dts[d], &k);
    }
    cr_assert_eq(trr_config_override(ctx, TRR_OP_RMS_NORM, &swept), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_config_override(ctx, TRR_OP_LAYER_NORM, &swept), TRR_OK, "%s", trr_last_error(ctx));
    run_case(ctx, "opencl:0 swept", TRR_BF16, &k);
    trr_context_destroy(ctx);
}
