/* Split-K on the CPU backend (core/matmul_split.h; backend_cpu/matmul.c runs the K slices as a batch of the same
 * product into f32 partials and adds them in slice order with the epilogue and the output's rounding): the whole
 * matmul conformance list passes with 3 slices (its quick subset in the sanitizer run) and the quick subset with
 * 2, 7 and 32 (K's rest in a shorter slice, batches matrix by matrix); the heuristic splits a product whose tiles
 * leave cores idle over a long K, and only such a product; more slices than a call may have, and partials past a
 * quarter of memory, are refused with the reason. */
#include "conformance.h"
#include "forced_conformance.h"
#include "matmul_split.h"
#include "random.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(cpu_matmul_split, forced_slices_pass_conformance, .timeout = 600) {
    trr_context *ctx = open_device_or_skip("cpu", "cpu");
    const int splits[] = {3, 2, 7, TRR_MATMUL_MAX_SPLIT};
    for (int j = 0; j < 4; j++) {
        const trr_config forced = {.split_k = splits[j]};
        char label[32];
        snprintf(label, sizeof label, "split_k %d: ", splits[j]);
        trr_conf_report *rep = run_forced_conformance(ctx, TRR_OP_MATMUL, &forced, j > 0, label);
        cr_expect_gt(rep->passed, 0, "%sno case ran", label);
        cr_expect_eq(rep->unsupported, 0, "%s%d cases refused", label, rep->unsupported);
        trr_conformance_free(rep);
    }
    trr_context_destroy(ctx);
}

/* An f32 matmul of m x n x k (B stored [N,K]) under the backend's heuristic, in a batch of `batch`: the config it
 * ran with, and its result checked against the float64 reference under the f32 bound. */
static trr_config heuristic_run(trr_context *ctx, int64_t m, int64_t n, int64_t k, int64_t batch) {
    const size_t na = (size_t)(batch * m * k), nb = (size_t)(batch * n * k), nc = (size_t)(batch * m * n);
    float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4);
    cr_assert(a && b && c);
    uint64_t rng = 99;
    for (size_t i = 0; i < na; i++) a[i] = trr_rng_unit(&rng);
    for (size_t i = 0; i < nb; i++) b[i] = trr_rng_unit(&rng);
    for (size_t i = 0; i < nc; i++) c[i] = NAN;
    trr_buffer *ba, *bb, *bc;
    cr_assert_eq(trr_buffer_create(ctx, na * 4, &ba), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, nb * 4, &bb), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, nc * 4, &bc), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, ba, 0, a, na * 4), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bb, 0, b, nb * 4), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bc, 0, c, nc * 4), TRR_OK);
    trr_tensor ta, tb, tc;
    const int64_t sa[3] = {batch, m, k}, sb[3] = {batch, k, n}, sc[3] = {batch, m, n};
    const int64_t b_strides[3] = {n * k, 1, k}; /* stored [N,K] */
    cr_assert_eq(trr_tensor_nd(ba, 0, TRR_F32, 3, sa, NULL, &ta), TRR_OK);
    cr_assert_eq(trr_tensor_nd(bb, 0, TRR_F32, 3, sb, b_strides, &tb), TRR_OK);
    cr_assert_eq(trr_tensor_nd(bc, 0, TRR_F32, 3, sc, NULL, &tc), TRR_OK);
    cr_assert_eq(trr_matmul(ctx, &ta, &tb, &tc, TRR_EPI_NONE, 0.0f, 0), TRR_OK, "%s", trr_last_error(ctx));
    trr_config used;
    cr_assert_eq(trr_config_last(ctx, &used), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, bc, 0, c, nc * 4), TRR_OK);
    double err = 0, ref2 = 0;
    for (int64_t e = 0; e < batch; e++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t q = 0; q < k; q++) s += (double)a[(e * m + i) * k + q] * (double)b[(e * n + j) * k + q];
                const double d = (double)c[(e * m + i) * n + j] - s;
                err += d * d, ref2 += s * s;
            }
    cr_expect_leq(sqrt(err / ref2), 1e-5, "%lldx%lldx%lld batch %lld (split_k %d): frobenius %g", (long long)m,
                  (long long)n, (long long)k, (long long)batch, used.split_k, sqrt(err / ref2));
    trr_buffer_destroy(ba), trr_buffer_destroy(bb), trr_buffer_destroy(bc);
    free(a), free(b), free(c);
    return used;
}

Test(cpu_matmul_split, heuristic_splits_few_tiles_of_a_long_k, .timeout = 300) {
    trr_context *ctx = open_device_or_skip("cpu", "cpu");
    trr_device_info info;
    cr_assert_eq(trr_context_device(ctx, &info), TRR_OK);
    /* one output tile (16 rows, 64 columns) over K = 2^16: on several cores, at least two slices, each at most
     * block_k deep; on one core, whole */
    const int64_t k = 1 << 16;
    trr_config c = heuristic_run(ctx, 16, 64, k, 1);
    if (info.compute_units < 2) cr_expect_eq(c.split_k, 1, "one core split K");
    else cr_expect_geq(c.split_k, 2, "one tile of a long K ran whole on %d cores", info.compute_units);
    cr_expect_leq((int64_t)c.block_k * c.split_k, k + 16LL * c.split_k, "block_k %d is deeper than a slice",
                  c.block_k);
    /* a batch whose matrices fill the cores stays whole, and is split where they do not (each matrix then runs
     * alone); K under two slices of the least depth stays whole */
    const int batch = 2;
    c = heuristic_run(ctx, 16, 64, k, batch);
    if (info.compute_units <= batch) cr_expect_eq(c.split_k, 1, "%d matrices on %d cores", batch, info.compute_units);
    else cr_expect_geq(c.split_k, 2, "%d matrices on %d cores", batch, info.compute_units);
    cr_expect_eq(heuristic_run(ctx, 16, 64, 1000, 1).split_k, 1);
    trr_context_destroy(ctx);
}

Test(cpu_matmul_split, more_slices_than_a_call_may_have_are_refused) {
    trr_context *ctx = open_device_or_skip("cpu", "cpu");
    trr_tensor a, b, c;
    trr_buffer *buf = forced_matmul_operands(ctx, TRR_F32, 64, 64, 64, &a, &b, &c);
    const trr_config too_many = {.split_k = TRR_MATMUL_MAX_SPLIT + 1};
    expect_forced_matmul_refused(ctx, &too_many, &a, &b, &c, "split_k must be 1 to 32");
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}

/* A split whose f32 products would take more than a quarter of the machine's memory is refused before anything
 * runs: 32 slices of 16 over an N x N f16 product just past that size (on machines of up to 64 GiB, where the
 * operands stay a few hundred MiB). */
Test(cpu_matmul_split, a_split_past_a_quarter_of_memory_is_refused) {
    trr_context *ctx = open_device_or_skip("cpu", "cpu");
    trr_device_info info;
    cr_assert_eq(trr_context_device(ctx, &info), TRR_OK);
    if (info.global_memory == 0 || info.global_memory > (64ull << 30)) {
        trr_context_destroy(ctx);
        cr_skip_test("%llu bytes of memory: the product that passes a quarter of it is too large for a test",
                     (unsigned long long)info.global_memory);
    }
    const int64_t n = (int64_t)sqrt((double)info.global_memory / 4.0 / (4.0 * TRR_MATMUL_MAX_SPLIT)) + 16;
    trr_tensor a, b, c;
    trr_buffer *buf = forced_matmul_operands(ctx, TRR_F16, n, n, 16 * TRR_MATMUL_MAX_SPLIT, &a, &b, &c);
    const trr_config wide = {.split_k = TRR_MATMUL_MAX_SPLIT, .block_k = 16};
    expect_forced_matmul_refused(ctx, &wide, &a, &b, &c, "past a quarter of the");
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}
