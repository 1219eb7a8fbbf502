/* OpenCL devices that cut a work-item's loops short: rusticl on llvmpipe stops a work-item after 65535 loop
 * iterations summed over all its loops and returns what it has (issue #41, item 4: softmax and row_sum rows of
 * 2^20 + 3 and matmuls deeper than about 800 came back wrong with TRR_OK). The backend bounds each work-item's
 * iterations (backend_opencl/config.c: trr_cl_loop_budget): more work-items per long row, K split across
 * launches; what it cannot bound it refuses as unsupported. Never a wrong answer with TRR_OK.
 *
 * Runs on every OpenCL device named llvmpipe (each test sets RUSTICL_ENABLE=llvmpipe unless it is set),
 * with the cases that reach the limit and stay affordable on 2 CPU cores: the quick conformance list, every
 * long-row case (softmax, row_sum: rows past 2^16), every long-K matmul (K past 2^16) and attention's long key
 * ranges at large head dims (split across work-groups); the long rows again
 * under the thread counts a caller may force, and 3x17xK matmuls at K past 2^16 and 2^17 under forced tiles.
 * Skipped without such a device unless TRIREME_REQUIRE_BACKENDS names rusticl.
 *
 * Environment: TRIREME_CONFORMANCE_SEED fixes the seed (printed either way). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "conformance.h"
#include "long_k_matmul.h"
#include "random.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DEVICES 16

static uint64_t test_seed(void) {
    const char *s = getenv("TRIREME_CONFORMANCE_SEED");
    return s && *s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
}

/* The specs of the OpenCL devices named llvmpipe; skips (or fails, where rusticl is required) without one. */
static int llvmpipe_devices(char specs[MAX_DEVICES][48]) {
    /* Mesa's OpenCL lists llvmpipe only when asked; each Criterion test is a process of its own, and OpenCL is
     * loaded at the first call below */
    cr_assert_eq(setenv("RUSTICL_ENABLE", "llvmpipe", 0), 0);
    int n_backends = 0, n = 0;
    cr_assert_eq(trr_backend_count(&n_backends), TRR_OK);
    for (int b = 0; b < n_backends; b++) {
        trr_backend_info bi;
        cr_assert_eq(trr_backend_get_info(b, &bi), TRR_OK);
        if (strcmp(bi.name, "opencl") || !bi.available) continue;
        for (int d = 0; d < bi.device_count && n < MAX_DEVICES; d++) {
            trr_device_info info;
            cr_assert_eq(trr_device_get_info("opencl", d, &info), TRR_OK, "%s", trr_last_error(NULL));
            if (!strncmp(info.name, "llvmpipe", 8)) snprintf(specs[n++], 48, "%s", info.spec);
        }
    }
    if (n == 0) {
        if (backend_required("rusticl"))
            cr_assert_fail("rusticl is required (TRIREME_REQUIRE_BACKENDS) but no OpenCL device is named llvmpipe "
                           "(is mesa-opencl-icd installed, and RUSTICL_ENABLE=llvmpipe set?)");
        cr_skip_test("no OpenCL device named llvmpipe (rusticl with RUSTICL_ENABLE=llvmpipe)");
    }
    return n;
}

static int long_row(const trr_case *c) {
    return (c->op == TRR_OP_SOFTMAX || c->op == TRR_OP_ROW_SUM) && c->cols > 65536;
}

static int quick_or_long(const trr_case *c, void *user) {
    (void)user;
    /* attention with 1823 keys at D = 128 takes several splits of the keys (backend_opencl/attention.c) */
    return c->quick || long_row(c) || (c->op == TRR_OP_MATMUL && c->k > 65536) ||
           (c->op == TRR_OP_ATTENTION && c->attn.skv > 1000 && c->attn.d >= 128);
}

static int long_rows_only(const trr_case *c, void *user) {
    (void)user;
    return long_row(c);
}

static int report_failures(const char *spec, const char *what, trr_conf_report *rep) {
    for (int r = 0; r < rep->n_results; r++) {
        const trr_conf_result *res = &rep->results[r];
        if (res->outcome == TRR_CONF_FAIL) printf("%s %s: FAIL %s: %s\n", spec, what, res->name, res->message);
    }
    printf("%s %s: %d passed, %d failed, %d unsupported (seed %llu, %.0f s)\n", spec, what, rep->passed, rep->failed,
           rep->unsupported, (unsigned long long)rep->seed, rep->seconds);
    fflush(stdout);
    return rep->failed;
}

/* The quick list and the long cases under the backend's own configs: all must pass. */
Test(opencl_loop_budget, quick_list_and_long_cases_pass, .timeout = 1800) {
    char specs[MAX_DEVICES][48];
    const int n = llvmpipe_devices(specs);
    trr_conf_options opt = {.seed = test_seed(), .select = quick_or_long};
    int failed = 0, unsupported = 0;
    for (int d = 0; d < n; d++) {
        trr_context *ctx = open_device_or_skip(specs[d], "opencl");
        trr_conf_report *rep = NULL;
        cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s: engine: %s", specs[d], trr_last_error(ctx));
        failed += report_failures(specs[d], "quick + long cases", rep);
        if (rep->unsupported) trr_conformance_print_matrix((const trr_conf_report *const *)&rep, 1, stdout);
        unsupported += rep->unsupported;
        trr_conformance_free(rep);
        trr_context_destroy(ctx);
    }
    cr_assert_eq(failed, 0, "%d cases failed (listed above; seed %llu)", failed, (unsigned long long)opt.seed);
    cr_assert_eq(unsupported, 0, "%d cases unsupported under the backend's own configs (above)", unsupported);
}

/* The long rows under forced thread counts: right, or refused as unsupported where a work-item's share of the
 * row would outrun the budget (8 work-items on a softmax row of 2^20 + 3). */
Test(opencl_loop_budget, long_rows_under_forced_threads_pass_or_are_refused, .timeout = 1800) {
    char specs[MAX_DEVICES][48];
    const int n = llvmpipe_devices(specs);
    static const int threads[] = {8, 64, 1024};
    int failed = 0, passed = 0;
    for (int d = 0; d < n; d++) {
        trr_context *ctx = open_device_or_skip(specs[d], "opencl");
        for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
            const trr_config cfg = {.threads = threads[i]};
            cr_assert_eq(trr_config_override(ctx, TRR_OP_SOFTMAX, &cfg), TRR_OK, "%s", trr_last_error(ctx));
            cr_assert_eq(trr_config_override(ctx, TRR_OP_ROW_SUM, &cfg), TRR_OK, "%s", trr_last_error(ctx));
            trr_conf_options opt = {.seed = test_seed(),
                                    .op_mask = (1u << TRR_OP_SOFTMAX) | (1u << TRR_OP_ROW_SUM),
                                    .select = long_rows_only};
            trr_conf_report *rep = NULL;
            cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s: engine: %s", specs[d],
                         trr_last_error(ctx));
            char what[32];
            snprintf(what, sizeof what, "threads=%d", threads[i]);
            failed += report_failures(specs[d], what, rep);
            passed += rep->passed;
            trr_conformance_free(rep);
        }
        trr_context_destroy(ctx);
    }
    cr_assert_eq(failed, 0, "%d long-row cases failed under forced thread counts (listed above)", failed);
    cr_assert_gt(passed, 0, "every forced thread count was refused");
}

/* matmul 3x17xK (long_k_matmul.h), f32 and f16 inputs, at K past 2^16 and 2^17, under the backend's config and
 * 64-deep K tiles, and (f32, K past 2^16) under tiles whose work-items run more loop iterations a K tile: exact,
 * or refused as unsupported. */
Test(opencl_loop_budget, long_k_matmul_is_exact_or_refused, .timeout = 1800) {
    char specs[MAX_DEVICES][48];
    const int n_devices = llvmpipe_devices(specs);
    static const int64_t ks[] = {70000, 131075};
    static const trr_config configs[] = {
        {0}, {.block_k = 64},
        /* the other CPU devices' tile (8x8 outputs per work-item), and 16x8 per work-item: about 1300 and 2500
         * iterations a K tile */
        {.block_m = 64, .block_n = 64, .block_k = 16, .threads = 64},
        {.block_m = 64, .block_n = 64, .block_k = 16, .threads = 32}};
    long_k_inputs in = long_k_inputs_make(ks[sizeof ks / sizeof ks[0] - 1]);
    int bad = 0, ran = 0;
    for (int d = 0; d < n_devices; d++) {
        trr_context *ctx = open_device_or_skip(specs[d], "opencl");
        for (int dt = 0; dt < 2; dt++)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                long_k_case c;
                long_k_case_make(ctx, &in, ks[ki], dt ? TRR_F16 : TRR_F32, &c);
                for (size_t ci = 0; ci < sizeof configs / sizeof configs[0]; ci++) {
                    /* the 64x64 tiles run the K loop over mostly padding, at a minute a call on 2 cores: f32 at
                     * the shorter K only */
                    if (ci >= 2 && (dt || ki > 0)) continue;
                    cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, ci ? &configs[ci] : NULL), TRR_OK);
                    float got[LONG_K_M * LONG_K_N];
                    const trr_status st = long_k_case_run(ctx, &c, got);
                    if (st == TRR_ERR_UNSUPPORTED) {
                        printf("%s %s K=%lld config %zu: unsupported: %s\n", specs[d], dt ? "f16" : "f32",
                               (long long)c.k, ci, trr_last_error(ctx));
                        continue;
                    }
                    cr_assert_eq(st, TRR_OK, "%s", trr_last_error(ctx));
                    int exact = 1;
                    for (int i = 0; i < LONG_K_M * LONG_K_N; i++) exact &= (double)got[i] == c.ref[i];
                    printf("%s %s K=%lld config %zu: %s\n", specs[d], dt ? "f16" : "f32", (long long)c.k, ci,
                           exact ? "exact" : "WRONG");
                    bad += !exact;
                    ran++;
                }
                long_k_case_free(&c);
            }
        trr_context_destroy(ctx);
    }
    fflush(stdout);
    long_k_inputs_free(&in);
    cr_assert_eq(bad, 0, "%d long-K matmuls gave a wrong result with TRR_OK (listed above)", bad);
    cr_assert_gt(ran, 0, "every long-K matmul was refused");
}

/* attention at D >= 128 under blocks the heuristic never picks: one key a block over a whole block of queries, and
 * odd sizes; several splits of the keys each, every one within the budget. */
static int attention_large_d(const trr_case *c, void *user) {
    (void)user;
    return c->op == TRR_OP_ATTENTION && c->attn.d >= 128 && c->quick;
}

Test(opencl_loop_budget, attention_under_forced_blocks_pass, .timeout = 1800) {
    char specs[MAX_DEVICES][48];
    const int n = llvmpipe_devices(specs);
    const trr_config forced[] = {{.block_m = 64, .block_n = 1, .threads = 32}, {.block_m = 3, .block_n = 5, .threads = 7}};
    trr_conf_options opt = {.seed = test_seed(), .select = attention_large_d};
    int failed = 0;
    for (int d = 0; d < n; d++)
        for (size_t f = 0; f < sizeof forced / sizeof forced[0]; f++) {
            trr_context *ctx = open_device_or_skip(specs[d], "opencl");
            cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, &forced[f]), TRR_OK, "%s", trr_last_error(ctx));
            trr_conf_report *rep = NULL;
            cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s: engine: %s", specs[d], trr_last_error(ctx));
            failed += report_failures(specs[d], "attention under forced blocks", rep);
            cr_expect_gt(rep->passed, 0, "%s: no attention case ran under block_n %d, threads %d", specs[d],
                         forced[f].block_n, forced[f].threads);
            trr_conformance_free(rep);
            trr_context_destroy(ctx);
        }
    cr_assert_eq(failed, 0, "%d cases failed (listed above; seed %llu)", failed, (unsigned long long)opt.seed);
}
