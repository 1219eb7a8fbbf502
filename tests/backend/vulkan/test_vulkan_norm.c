/* The Vulkan row norms on the paths tests/test_norms.c does not reach: the register kernel over rows of whole
 * 4-element vectors (vector loads of x and y; w and b contiguous or strided; rows that fill the registers
 * exactly and rows that do not), the looping kernel under a config whose block_n keeps rows out of registers,
 * and rows of 2^20 elements, which take the looping kernel and must stay inside lavapipe's loop budget (65535
 * iterations per invocation). Each case is checked against a float64 computation on the host with the bounds of
 * docs/ops.md, and the config it ran with says which kernel took it. And the norms' own four-binding layout
 * recorded in one batch between the backend's other ops, pushed and from descriptor sets. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_values.h"
#include "test_support.h"

typedef struct norm_case {
    int layer;
    trr_dtype dt;
    int64_t m, n;
    int64_t w_stride;
    int64_t x_offset;  /* elements before x's first row */
    int block_n;       /* the config's block_n (0: the backend's choice) */
    int expect_loop;   /* 1: the config must keep rows out of registers (block_n < n); 0: in registers */
} norm_case;

static uint32_t rng = 88172645u;
static float uniform(float lo, float hi) { return host_uniform(&rng, lo, hi); }




static void run(trr_context *ctx, const norm_case *k) {
    const size_t es = host_dtype_size(k->dt), xe = (size_t)(k->x_offset + k->m * k->n), ye = (size_t)(k->m * k->n),
                 we = (size_t)(k->n * k->w_stride);
    void *hx = calloc(xe, es), *hw = calloc(we, es), *hb = calloc(we, es), *hy = malloc(ye * es);
    float *fx = malloc(sizeof(float) * ye), *fw = malloc(sizeof(float) * (size_t)k->n),
          *fb = malloc(sizeof(float) * (size_t)k->n);
    cr_assert(hx && hw && hb && hy && fx && fw && fb);
    for (int64_t j = 0; j < k->n; j++) {
        fw[j] = host_store(hw, (size_t)(j * k->w_stride), k->dt, uniform(0.5f, 1.5f));
        fb[j] = host_store(hb, (size_t)(j * k->w_stride), k->dt, uniform(-0.5f, 0.5f));
    }
    for (int64_t i = 0; i < k->m; i++) {
        /* a mean far from 0 against the spread in the second row: what a shifted sum must get right */
        const float c = i % 2 ? 40.0f : uniform(-1.0f, 1.0f);
        for (int64_t j = 0; j < k->n; j++)
            fx[i * k->n + j] = host_store(hx, (size_t)(k->x_offset + i * k->n + j), k->dt, c + uniform(-2.0f, 2.0f));
    }
    trr_buffer *bx, *bw, *bb, *by;
    cr_assert_eq(trr_buffer_create(ctx, xe * es, &bx), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, we * es, &bw), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, we * es, &bb), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, ye * es, &by), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bx, 0, hx, xe * es), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bw, 0, hw, we * es), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bb, 0, hb, we * es), TRR_OK);
    trr_tensor tx, tw, tb, ty;
    const int64_t shape[2] = {k->m, k->n}, wshape[1] = {k->n}, wstr[1] = {k->w_stride};
    cr_assert_eq(trr_tensor_nd(bx, (size_t)k->x_offset * es, k->dt, 2, shape, NULL, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_nd(by, 0, k->dt, 2, shape, NULL, &ty), TRR_OK);
    cr_assert_eq(trr_tensor_nd(bw, 0, k->dt, 1, wshape, wstr, &tw), TRR_OK);
    cr_assert_eq(trr_tensor_nd(bb, 0, k->dt, 1, wshape, wstr, &tb), TRR_OK);
    const trr_op op = k->layer ? TRR_OP_LAYER_NORM : TRR_OP_RMS_NORM;
    const trr_config cfg = {.block_n = k->block_n, .threads = 64};
    cr_assert_eq(trr_config_override(ctx, op, k->block_n ? &cfg : NULL), TRR_OK);
    const double eps = k->layer ? 1e-5 : 1e-6;
    const trr_status st = k->layer ? trr_layer_norm(ctx, &tx, &tw, &tb, &ty, (float)eps)
                                   : trr_rms_norm(ctx, &tx, &tw, &ty, (float)eps);
    const char *dn = "?";
    trr_dtype_name(k->dt, &dn);
    const char *on = k->layer ? "layer_norm" : "rms_norm";
    cr_assert_eq(st, TRR_OK, "%s %s [%lld,%lld]: %s", on, dn, (long long)k->m, (long long)k->n, trr_last_error(ctx));
    trr_config ran;
    cr_assert_eq(trr_config_last(ctx, &ran), TRR_OK);
    cr_expect_eq(ran.block_n < k->n, k->expect_loop, "%s %s [%lld,%lld]: block_n %d over %d threads: %s kernel", on,
                 dn, (long long)k->m, (long long)k->n, ran.block_n, ran.threads,
                 ran.block_n < k->n ? "looping" : "register");
    cr_assert_eq(trr_buffer_read(ctx, by, 0, hy, ye * es), TRR_OK);
    const double rel = k->dt == TRR_F32 ? 1e-5 : k->dt == TRR_F16 ? 1e-2 : 4e-2;
    for (int64_t i = 0; i < k->m; i++) {
        const float *xr = fx + i * k->n;
        double mean = 0, ss = 0;
        if (k->layer) {
            for (int64_t j = 0; j < k->n; j++) mean += xr[j];
            mean /= (double)k->n;
        }
        for (int64_t j = 0; j < k->n; j++) ss += (xr[j] - mean) * (xr[j] - mean);
        const double inv = 1.0 / sqrt(ss / (double)k->n + eps);
        for (int64_t j = 0; j < k->n; j++) {
            const double want = (xr[j] - mean) * inv * fw[j] + (k->layer ? fb[j] : 0.0);
            const double got = host_load(hy, (size_t)(i * k->n + j), k->dt);
            const double bound = rel * (fabs(want) + fabs((double)fw[j]) + (k->layer ? fabs((double)fb[j]) : 0.0));
            if (!(fabs(got - want) <= bound))
                cr_assert_fail("%s %s [%lld,%lld] w stride %lld block_n %d (%lld,%lld): %.9g, want %.9g (bound %.3g)",
                               on, dn, (long long)k->m, (long long)k->n, (long long)k->w_stride, ran.block_n,
                               (long long)i, (long long)j, got, want, bound);
        }
    }
    cr_assert_eq(trr_config_override(ctx, op, NULL), TRR_OK);
    trr_buffer_destroy(bx);
    trr_buffer_destroy(bw);
    trr_buffer_destroy(bb);
    trr_buffer_destroy(by);
    free(hx), free(hw), free(hb), free(hy), free(fx), free(fw), free(fb);
}

/* The register kernel over vectors: rows from one vector per invocation to past the default's, contiguous and
 * strided weights, x starting off a 16-byte boundary's first element (scalar loads), in every dtype. */
Test(vulkan_norm, registers, .timeout = 300) {
    trr_context *ctx = open_device_or_skip("vulkan:0", NULL);
    static const int64_t ns[] = {8, 264, 4096, 16384};
    const trr_dtype dts[3] = {TRR_F32, TRR_F16, TRR_BF16};
    for (int layer = 0; layer <= 1; layer++)
        for (int d = 0; d < 3; d++)
            for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
                norm_case k = {layer, dts[d], 3, ns[i], 1, 0, 0, 0};
                run(ctx, &k);
                k.w_stride = 3;
                run(ctx, &k);
                k.w_stride = 1;
                k.x_offset = 1; /* x rows off vector boundaries */
                run(ctx, &k);
            }
    trr_context_destroy(ctx);
}

/* The looping kernel where it is not the default: block_n below the row, vector and scalar layouts. */
Test(vulkan_norm, loops, .timeout = 300) {
    trr_context *ctx = open_device_or_skip("vulkan:0", NULL);
    const trr_dtype dts[3] = {TRR_F32, TRR_F16, TRR_BF16};
    for (int layer = 0; layer <= 1; layer++)
        for (int d = 0; d < 3; d++) {
            norm_case k = {layer, dts[d], 3, 5000, 1, 0, 256, 1};
            run(ctx, &k);
            k.n = 4099;
            k.w_stride = 2;
            run(ctx, &k);
            k.n = 8192;
            k.x_offset = 2;
            run(ctx, &k);
        }
    trr_context_destroy(ctx);
}

/* Rows of 2^20 (and 2^20 + 3: the scalar layout) under the default config: the looping kernel, inside lavapipe's
 * loop budget. */
Test(vulkan_norm, long_rows, .timeout = 300) {
    trr_context *ctx = open_device_or_skip("vulkan:0", NULL);
    for (int layer = 0; layer <= 1; layer++) {
        norm_case k = {layer, TRR_F32, 2, (int64_t)1 << 20, 1, 0, 0, 1};
        run(ctx, &k);
        k.dt = TRR_BF16;
        k.n += 3;
        run(ctx, &k);
    }
    trr_context_destroy(ctx);
}

/* Norms recorded in one batch between ops of the backend's own three-binding layout: each op binds its own
 * pipeline and operands again (pushed, and with TRIREME_VK_PUSH_DESCRIPTORS=0 from descriptor sets). y = rms(x),
 * z = y + y, y2 = layer(x), z2 = y2 + y2, read back once: z is exactly 2 y, z2 exactly 2 y2, and y2 what layer_norm
 * gives on its own. */
static void interleave(const char *push) {
    if (push) setenv("TRIREME_VK_PUSH_DESCRIPTORS", push, 1);
    else unsetenv("TRIREME_VK_PUSH_DESCRIPTORS");
    trr_context *ctx = open_device_or_skip("vulkan:0", NULL);
    enum { M = 5, N = 96 };
    float hx[M * N], hw[N], hb[N], y[M * N], z[M * N], y2[M * N], z2[M * N], alone[M * N];
    for (int i = 0; i < M * N; i++) hx[i] = uniform(-2.0f, 2.0f);
    for (int j = 0; j < N; j++) hw[j] = uniform(0.5f, 1.5f), hb[j] = uniform(-0.5f, 0.5f);
    trr_buffer *b;
    cr_assert_eq(trr_buffer_create(ctx, 8 * sizeof hx, &b), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, b, 0, hx, sizeof hx), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, b, sizeof hx, hw, sizeof hw), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, b, sizeof hx + sizeof hw, hb, sizeof hb), TRR_OK);
    trr_tensor tx, tw, tb, ty, tz, ty2, tz2, talone;
    cr_assert_eq(trr_tensor_2d(b, 0, TRR_F32, M, N, 0, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_1d(b, sizeof hx, TRR_F32, N, &tw), TRR_OK);
    cr_assert_eq(trr_tensor_1d(b, sizeof hx + sizeof hw, TRR_F32, N, &tb), TRR_OK);
    cr_assert_eq(trr_tensor_2d(b, 2 * sizeof hx, TRR_F32, M, N, 0, &ty), TRR_OK);
    cr_assert_eq(trr_tensor_2d(b, 3 * sizeof hx, TRR_F32, M, N, 0, &tz), TRR_OK);
    cr_assert_eq(trr_tensor_2d(b, 4 * sizeof hx, TRR_F32, M, N, 0, &ty2), TRR_OK);
    cr_assert_eq(trr_tensor_2d(b, 5 * sizeof hx, TRR_F32, M, N, 0, &tz2), TRR_OK);
    cr_assert_eq(trr_tensor_2d(b, 6 * sizeof hx, TRR_F32, M, N, 0, &talone), TRR_OK);
    cr_assert_eq(trr_layer_norm(ctx, &tx, &tw, &tb, &talone, 1e-5f), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_synchronize(ctx), TRR_OK);
    cr_assert_eq(trr_rms_norm(ctx, &tx, &tw, &ty, 1e-6f), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_add(ctx, &ty, &ty, &tz), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_layer_norm(ctx, &tx, &tw, &tb, &ty2, 1e-5f), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_add(ctx, &ty2, &ty2, &tz2), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_read(ctx, b, 2 * sizeof hx, y, sizeof y), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, b, 3 * sizeof hx, z, sizeof z), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, b, 4 * sizeof hx, y2, sizeof y2), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, b, 5 * sizeof hx, z2, sizeof z2), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, b, 6 * sizeof hx, alone, sizeof alone), TRR_OK);
    for (int i = 0; i < M * N; i++) {
        cr_assert(isfinite(y[i]) && z[i] == 2.0f * y[i], "push %s: %d: z %g, y %g", push ? push : "default", i,
                  (double)z[i], (double)y[i]);
        cr_assert(y2[i] == alone[i] && z2[i] == 2.0f * y2[i], "push %s: %d: y2 %g (alone %g), z2 %g",
                  push ? push : "default", i, (double)y2[i], (double)alone[i], (double)z2[i]);
    }
    trr_buffer_destroy(b);
    trr_context_destroy(ctx);
}

Test(vulkan_norm, interleaved, .timeout = 300) {
    interleave(NULL);
    interleave("0");
}
