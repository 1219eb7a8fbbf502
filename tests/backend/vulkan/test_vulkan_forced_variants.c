/* Kernel variants on Vulkan forced through trr_config_override, checked by the conformance engine (random
 * inputs, poisoned outputs, guard bytes, the float64 reference): the subgroup softmax, which the heuristic does
 * not pick by itself, must pass every case it accepts and reject the rest with UNSUPPORTED and its reason; the
 * cooperative-matrix matmuls must pass where the device has them and be rejected cleanly where it does not
 * (lavapipe, and the validation layer for the KHR and cooperative_matrix2 builds). Runs on vulkan:0 under
 * TRIREME_VK_VALIDATION=1 as every test does; skipped without a Vulkan device unless TRIREME_REQUIRE_BACKENDS
 * names vulkan. */
#include "conformance.h"
#include "forced_conformance.h"
#include "matmul_split.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static trr_context *open_vulkan(void) { return open_device_or_skip("vulkan:0", "vulkan"); }

/* Runs op's conformance cases with the config forced (what a failure's message names it by: label) and expects
 * none to fail; returns the report. */
static trr_conf_report *run_forced_config(trr_context *ctx, trr_op op, const trr_config *forced, const char *label) {
    return run_forced_conformance(ctx, op, forced, 0, label);
}

/* The same with only the variant forced. */
static trr_conf_report *run_forced(trr_context *ctx, trr_op op, trr_variant v) {
    const trr_config forced = {.variant = (int)v};
    return run_forced_config(ctx, op, &forced, "");
}

Test(vulkan_variants, softmax_subgroup) {
    trr_context *ctx = open_vulkan();
    trr_conf_report *rep = run_forced(ctx, TRR_OP_SOFTMAX, TRR_VARIANT_SUBGROUP);
    cr_assert_eq(rep->failed, 0);
    cr_assert_gt(rep->passed, 0, "no softmax case ran on the subgroup kernel");
    for (int i = 0; i < rep->n_results; i++)
        if (rep->results[i].outcome == TRR_CONF_UNSUPPORTED)
            cr_assert(strstr(rep->results[i].message, "subgroup") != NULL, "%s: %s", rep->results[i].name,
                      rep->results[i].message);
    trr_conformance_free(rep);

    /* the call that ran says which kernel family it was */
    trr_buffer *buf = NULL;
    cr_assert_eq(trr_buffer_create(ctx, 2 * 8 * 64 * 4, &buf), TRR_OK);
    float in[8 * 64];
    for (int i = 0; i < 8 * 64; i++) in[i] = (float)((i * 37) % 101) / 17.0f - 3.0f;
    cr_assert_eq(trr_buffer_write(ctx, buf, 0, in, sizeof in), TRR_OK);
    trr_tensor x, y;
    trr_tensor_2d(buf, 0, TRR_F32, 8, 64, 0, &x);
    trr_tensor_2d(buf, sizeof in, TRR_F32, 8, 64, 0, &y);
    const trr_config forced = {.variant = TRR_VARIANT_SUBGROUP};
    cr_assert_eq(trr_config_override(ctx, TRR_OP_SOFTMAX, &forced), TRR_OK);
    cr_assert_eq(trr_softmax(ctx, &x, &y), TRR_OK, "%s", trr_last_error(ctx));
    trr_config last;
    trr_config_last(ctx, &last);
    cr_assert_eq(last.variant, TRR_VARIANT_SUBGROUP);
    cr_assert_eq(trr_config_override(ctx, TRR_OP_SOFTMAX, NULL), TRR_OK);
    cr_assert_eq(trr_softmax(ctx, &x, &y), TRR_OK, "%s", trr_last_error(ctx));
    trr_config_last(ctx, &last);
    cr_assert_neq(last.variant, TRR_VARIANT_AUTO, "the heuristic left the variant unresolved");
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}

/* softmax_rows.comp takes any whole number of subgroups (the heuristic's thread counts on GPUs are no powers of
 * two): forced to 3 and 7 subgroups' worth of threads, every case passes or is refused with the reason; then rows that fill the
 * registers exactly (no bounds checks) and rows that do not, against softmax in double on the host. */
Test(vulkan_variants, softmax_rows_whole_subgroups) {
    trr_context *ctx = open_vulkan();
    trr_device_info info;
    cr_assert_eq(trr_context_device(ctx, &info), TRR_OK);
    const int sg = info.subgroup_width > 1 ? info.subgroup_width : 32; /* 3 and 7 subgroups: no power of two */
    const int counts[] = {3 * sg, 7 * sg};
    for (int k = 0; k < 2; k++) {
        const trr_config forced = {.variant = TRR_VARIANT_SIMT, .threads = counts[k]};
        char label[32];
        snprintf(label, sizeof label, "threads %d, ", counts[k]);
        trr_conf_report *rep = run_forced_config(ctx, TRR_OP_SOFTMAX, &forced, label);
        for (int i = 0; i < rep->n_results; i++)
            if (rep->results[i].outcome == TRR_CONF_UNSUPPORTED)
                cr_expect(strstr(rep->results[i].message, "power of two") || strstr(rep->results[i].message, "subgroups"),
                          "%s: %s", rep->results[i].name, rep->results[i].message);
        cr_expect_gt(rep->passed, 0, "no softmax case ran over %d threads", counts[k]);
        trr_conformance_free(rep);
    }
    enum { ROWS = 5 };
    const int THREADS = counts[0];
    const int64_t cols_list[] = {4 * 3 * THREADS, 4 * 3 * THREADS + 8}; /* exactly 3 vectors an invocation; not */
    for (int k = 0; k < 2; k++) {
        const int64_t cols = cols_list[k], n = ROWS * cols;
        float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
        cr_assert(x && y);
        uint64_t st = 0x2545f4914f6cdd1dull + (uint64_t)k;
        for (int64_t i = 0; i < n; i++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = (float)((st >> 40) & 0xffffff) / (float)(1 << 24) * 20.0f - 10.0f;
        }
        trr_buffer *bx = NULL, *by = NULL;
        cr_assert_eq(trr_buffer_create(ctx, (size_t)n * 4, &bx), TRR_OK);
        cr_assert_eq(trr_buffer_create(ctx, (size_t)n * 4, &by), TRR_OK);
        cr_assert_eq(trr_buffer_write(ctx, bx, 0, x, (size_t)n * 4), TRR_OK);
        cr_assert_eq(trr_buffer_fill(ctx, by, 0, (size_t)n * 4, 0xff), TRR_OK); /* NaN: a skipped write shows */
        trr_tensor tx, ty;
        trr_tensor_2d(bx, 0, TRR_F32, ROWS, cols, 0, &tx);
        trr_tensor_2d(by, 0, TRR_F32, ROWS, cols, 0, &ty);
        const trr_config forced = {.variant = TRR_VARIANT_SIMT, .threads = THREADS};
        cr_assert_eq(trr_config_override(ctx, TRR_OP_SOFTMAX, &forced), TRR_OK);
        cr_assert_eq(trr_softmax(ctx, &tx, &ty), TRR_OK, "%s", trr_last_error(ctx));
        trr_config last;
        trr_config_last(ctx, &last);
        cr_assert_eq(last.threads, THREADS);
        cr_assert_eq(trr_buffer_read(ctx, by, 0, y, (size_t)n * 4), TRR_OK);
        for (int r = 0; r < ROWS; r++) {
            const float *xr = x + r * cols, *yr = y + r * cols;
            double m = xr[0], s = 0;
            for (int64_t c = 1; c < cols; c++) m = xr[c] > m ? xr[c] : m;
            for (int64_t c = 0; c < cols; c++) s += exp((double)xr[c] - m);
            for (int64_t c = 0; c < cols; c++) {
                const double want = exp((double)xr[c] - m) / s;
                cr_assert(fabs(yr[c] - want) <= 1e-5 * want, "cols %lld row %d col %lld: %.9g, want %.9g",
                          (long long)cols, r, (long long)c, (double)yr[c], want);
            }
        }
        cr_assert_eq(trr_config_override(ctx, TRR_OP_SOFTMAX, NULL), TRR_OK);
        trr_buffer_destroy(bx);
        trr_buffer_destroy(by);
        free(x);
        free(y);
    }
    trr_context_destroy(ctx);
}

/* row_sum's subgroup kernel (row_sum_sg.comp; the heuristic's choice): every case passes, with 4-element
 * vectors (the variant's default) and with single elements, and with 1, 8 and 16 loads in flight per
 * invocation, or is refused for its workgroup size with the reason. */
Test(vulkan_variants, row_sum_subgroup) {
    trr_context *ctx = open_vulkan();
    const int loads[] = {0, 1, 16}; /* 0: the heuristic's */
    for (int run = 0; run < 6; run++) {
        const int vec = run < 3 ? 1 : 4, ld = loads[run % 3];
        const trr_config forced = {.variant = TRR_VARIANT_SUBGROUP, .vector_width = vec, .threads = ld ? 64 : 0,
                                   .block_n = 64 * vec * ld};
        char label[48];
        snprintf(label, sizeof label, "vector_width %d, loads %d, ", vec, ld);
        trr_conf_report *rep = run_forced_config(ctx, TRR_OP_ROW_SUM, &forced, label);
        for (int i = 0; i < rep->n_results; i++) {
            const trr_conf_result *r = &rep->results[i];
            if (r->outcome == TRR_CONF_UNSUPPORTED)
                cr_expect(strstr(r->message, "subgroup") || strstr(r->message, "loop iterations"), "%s: %s",
                          r->name, r->message);
        }
        cr_expect_gt(rep->passed, 0, "no row_sum case ran on the subgroup kernel (vector_width %d, loads %d)", vec,
                     ld);
        trr_conformance_free(rep);
    }
    trr_config last;
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ROW_SUM, NULL), TRR_OK);
    trr_buffer *buf = NULL;
    cr_assert_eq(trr_buffer_create(ctx, 64 * 4 + 4 * 4, &buf), TRR_OK);
    trr_tensor x, y;
    trr_tensor_2d(buf, 0, TRR_F32, 4, 16, 0, &x);
    trr_tensor_1d(buf, 64 * 4, TRR_F32, 4, &y);
    cr_assert_eq(trr_row_sum(ctx, &x, &y), TRR_OK, "%s", trr_last_error(ctx));
    trr_config_last(ctx, &last);
    trr_device_info info;
    cr_assert_eq(trr_context_device(ctx, &info), TRR_OK);
    /* measured faster on lavapipe and on an H200 alike: the heuristic takes the subgroup kernel wherever it
     * runs (it did above) */
    cr_expect_eq(last.variant, TRR_VARIANT_SUBGROUP, "the heuristic chose %d on %s", last.variant, info.name);
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}

/* Each cooperative-matrix variant: passes where the device runs it, else every matmul case is UNSUPPORTED with
 * a reason (f32 ones too: those kernels take f16, bf16 on coop_khr and cm2 only, and 8-bit floats on coop_khr
 * and coop_nv only, which cm2 says). */
Test(vulkan_variants, matmul_cooperative_variants) {
    trr_context *ctx = open_vulkan();
    const trr_variant vs[] = {TRR_VARIANT_COOP_KHR, TRR_VARIANT_COOP_NV, TRR_VARIANT_CM2};
    for (int i = 0; i < 3; i++) {
        trr_conf_report *rep = run_forced(ctx, TRR_OP_MATMUL, vs[i]);
        const char *name = "?";
        trr_variant_name(vs[i], &name);
        cr_assert_eq(rep->failed, 0, "%s", name);
        for (int j = 0; j < rep->n_results; j++) {
            const trr_conf_result *r = &rep->results[j];
            if (r->outcome == TRR_CONF_UNSUPPORTED) cr_assert_str_neq(r->message, "", "%s: %s", name, r->name);
            /* empty products never reach a backend, so they pass on any variant */
            const int empty = r->tcase.m == 0 || r->tcase.n == 0 || r->tcase.k == 0;
            const int bf16_runs = r->tcase.in_dtype == TRR_BF16 && vs[i] != TRR_VARIANT_COOP_NV;
            const int f8 = r->tcase.in_dtype == TRR_F8E4M3 || r->tcase.in_dtype == TRR_F8E5M2;
            const int f8_runs = f8 && vs[i] != TRR_VARIANT_CM2;
            if (r->tcase.in_dtype != TRR_F16 && !bf16_runs && !f8_runs && !empty)
                cr_assert_eq(r->outcome, TRR_CONF_UNSUPPORTED, "%s ran %s", name, r->name);
            if (f8 && !f8_runs && !empty)
                cr_assert(strstr(r->message, "8-bit float inputs run on coop_khr, coop_nv") != NULL, "%s: %s: %s",
                          name, r->name, r->message);
        }
        trr_conformance_free(rep);
    }
    trr_context_destroy(ctx);
}

/* A SIMT matmul tile that would unroll thousands of loads and multiply-adds per invocation (here one
 * invocation computing a 4x16 patch over 128-deep slices) is refused with UNSUPPORTED and its reason before
 * any pipeline is built (lavapipe spends minutes compiling such a shader). A tile of the same block over enough
 * threads runs. */
Test(vulkan_variants, matmul_oversized_unroll_is_refused, .timeout = 120) {
    trr_context *ctx = open_vulkan();
    trr_tensor a, b, c;
    trr_buffer *buf = forced_matmul_operands(ctx, TRR_F32, 64, 64, 300, &a, &b, &c);
    const trr_config big = {.block_m = 4, .block_n = 16, .block_k = 128, .threads = 1, .variant = TRR_VARIANT_SIMT};
    cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, &big), TRR_OK);
    const time_t t0 = time(NULL);
    cr_assert_eq(trr_matmul(ctx, &a, &b, &c, TRR_EPI_NONE, 0.0f, 0), TRR_ERR_UNSUPPORTED);
    cr_expect(strstr(trr_last_error(ctx), "unrolls"), "reason: %s", trr_last_error(ctx));
    cr_expect_leq(time(NULL) - t0, 5, "the refusal took %lld s", (long long)(time(NULL) - t0));
    const trr_config fits = {.block_m = 4, .block_n = 16, .block_k = 16, .threads = 16, .variant = TRR_VARIANT_SIMT};
    cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, &fits), TRR_OK);
    cr_expect_eq(trr_matmul(ctx, &a, &b, &c, TRR_EPI_NONE, 0.0f, 0), TRR_OK, "%s", trr_last_error(ctx));
    cr_expect_eq(trr_synchronize(ctx), TRR_OK, "%s", trr_last_error(ctx));
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}

/* Split-K forced (core/matmul_split.h: the K slices as a batch of the call's kernel, their f32 products in the
 * device's scratch, matmul_split.comp adding them with the epilogue and the output's rounding): every case of the
 * quick subset passes with 2, 3 and 7 slices (K's rest in a shorter slice of its own, batches matrix by matrix) on
 * the SIMT kernel, and on the cooperative-matrix kernels where the device runs them (else refused with a reason).
 * More slices than a call may have, and slices whose products pass one binding: refused with the reason. */
Test(vulkan_variants, matmul_split_k, .timeout = 300) {
    trr_context *ctx = open_vulkan();
    const trr_variant vs[] = {TRR_VARIANT_SIMT, TRR_VARIANT_COOP_KHR, TRR_VARIANT_COOP_NV};
    run_forced_splits(ctx, vs, 3);

    trr_tensor a, b, c;
    trr_buffer *buf = forced_matmul_operands(ctx, TRR_F16, 8192, 8192, 1024, &a, &b, &c);
    const trr_config too_many = {.variant = TRR_VARIANT_SIMT, .split_k = TRR_MATMUL_MAX_SPLIT + 1};
    expect_forced_matmul_refused(ctx, &too_many, &a, &b, &c, "split_k = 33; 1 to 32 slices");
    /* 32 slices of 8192 x 8192 f32 products: 8 GiB, past any binding (its range is 32 bits) */
    const trr_config wide = {.variant = TRR_VARIANT_SIMT, .split_k = TRR_MATMUL_MAX_SPLIT};
    expect_forced_matmul_refused(ctx, &wide, &a, &b, &c,
                                 "the 32 slices' f32 products of 8192x8192 take 8589934592 bytes");
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}

/* The cooperative kernel's read pipelines forced (stages 1 to 7 over 16- and 32-deep slices; stages 4 to 6 add
 * two groups of 1, 2 or 4 producer subgroups that read and stage the slices, 7 pipelines the fragments): every
 * case of the quick subset passes where the device runs coop_khr, or is refused with a reason. Producers past
 * the device's workgroup size, and a stages value past 7: refused. */
Test(vulkan_variants, matmul_coop_stages, .timeout = 600) {
    trr_context *ctx = open_vulkan();
    for (int stages = 1; stages <= 7; stages++)
        for (int bk = 16; bk <= 32; bk += 16) {
            const trr_config forced = {.variant = TRR_VARIANT_COOP_KHR, .stages = stages, .block_k = bk};
            cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, &forced), TRR_OK);
            trr_conf_options opt = {.seed = (uint64_t)time(NULL), .quick = 1, .op_mask = 1u << TRR_OP_MATMUL};
            trr_conf_report *rep = NULL;
            cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
            for (int i = 0; i < rep->n_results; i++) {
                const trr_conf_result *r = &rep->results[i];
                cr_expect_neq(r->outcome, TRR_CONF_FAIL, "stages %d, block_k %d, %s (seed %llu): %s", stages, bk,
                              r->name, (unsigned long long)opt.seed, r->message);
                if (r->outcome == TRR_CONF_UNSUPPORTED)
                    cr_expect_str_neq(r->message, "", "stages %d, block_k %d: %s", stages, bk, r->name);
            }
            trr_conformance_free(rep);
        }

    trr_tensor a, b, c;
    trr_buffer *buf = forced_matmul_operands(ctx, TRR_F16, 48, 64, 64, &a, &b, &c);
    /* as many threads that multiply as a workgroup takes: no room for the eight producer subgroups of stages 6 */
    trr_device_info info;
    cr_assert_eq(trr_context_device(ctx, &info), TRR_OK);
    const trr_config full = {.variant = TRR_VARIANT_COOP_KHR, .stages = 6, .block_m = 64, .block_n = 64,
                             .block_k = 16, .threads = info.max_threads_per_block};
    expect_forced_matmul_refused(ctx, &full, &a, &b, &c, NULL);
    const trr_config past = {.variant = TRR_VARIANT_COOP_KHR, .stages = 8, .block_m = 64, .block_n = 64,
                             .block_k = 16, .threads = 128};
    expect_forced_matmul_refused(ctx, &past, &a, &b, &c, NULL);
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}

/* matmul_cm2.comp's tiles forced (the heuristic's three and deeper unrolling): every case of the quick subset
 * passes where the device runs cm2, or is refused with a reason; stages past 8 are refused. */
Test(vulkan_variants, matmul_cm2_tiles, .timeout = 600) {
    trr_context *ctx = open_vulkan();
    const trr_config tiles[] = {
        {.variant = TRR_VARIANT_CM2, .block_m = 128, .block_n = 256, .block_k = 64, .threads = 256, .stages = 4},
        {.variant = TRR_VARIANT_CM2, .block_m = 128, .block_n = 128, .block_k = 64, .threads = 256, .stages = 1},
        {.variant = TRR_VARIANT_CM2, .block_m = 64, .block_n = 64, .block_k = 64, .threads = 128, .stages = 8},
        {.variant = TRR_VARIANT_CM2, .block_m = 64, .block_n = 64, .block_k = 16, .threads = 128, .stages = 3}};
    for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
        cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, &tiles[t]), TRR_OK);
        trr_conf_options opt = {.seed = (uint64_t)time(NULL), .quick = 1, .op_mask = 1u << TRR_OP_MATMUL};
        trr_conf_report *rep = NULL;
        cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
        for (int i = 0; i < rep->n_results; i++) {
            const trr_conf_result *r = &rep->results[i];
            cr_expect_neq(r->outcome, TRR_CONF_FAIL, "tile %zu, %s (seed %llu): %s", t, r->name,
                          (unsigned long long)opt.seed, r->message);
            if (r->outcome == TRR_CONF_UNSUPPORTED) cr_expect_str_neq(r->message, "", "tile %zu: %s", t, r->name);
        }
        trr_conformance_free(rep);
    }
    trr_tensor a, b, c;
    trr_buffer *buf = forced_matmul_operands(ctx, TRR_F16, 48, 64, 64, &a, &b, &c);
    const trr_config past = {.variant = TRR_VARIANT_CM2, .block_m = 64, .block_n = 64, .block_k = 64,
                             .threads = 128, .stages = 9};
    expect_forced_matmul_refused(ctx, &past, &a, &b, &c, NULL);
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}
