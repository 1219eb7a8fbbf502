/* softmax and row_sum under a thread count the caller picks (trr_config_override): every config a backend
 * accepts must compute right at every row length the conformance suite has (up to 2^20 + 3, with masked
 * stretches and NaN), or be refused for that call as unsupported. The default configs run in test_conformance.
 *
 * Environment: TRIREME_CONFORMANCE_SEED fixes the seed (printed either way). */
#include "conformance.h"
#include "long_k_matmul.h"
#include "random.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* One thread count per test, so ctest can run them side by side (tests/CMakeLists.txt). */
static void run_device(const char *spec, int threads) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    const char *s = getenv("TRIREME_CONFORMANCE_SEED");
    const uint64_t seed = s && *s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    const trr_config cfg = {.threads = threads};
    cr_assert_eq(trr_config_override(ctx, TRR_OP_SOFTMAX, &cfg), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ROW_SUM, &cfg), TRR_OK, "%s", trr_last_error(ctx));
    trr_conf_options opt = {.seed = seed, .op_mask = (1u << TRR_OP_SOFTMAX) | (1u << TRR_OP_ROW_SUM)};
    trr_conf_report *rep = NULL;
    cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s: engine: %s", spec, trr_last_error(ctx));
    for (int r = 0; r < rep->n_results; r++) {
        const trr_conf_result *res = &rep->results[r];
        if (res->outcome == TRR_CONF_FAIL) printf("%s threads=%d: FAIL %s: %s\n", spec, threads, res->name, res->message);
    }
    printf("%s threads=%d: %d passed, %d failed, %d unsupported (seed %llu)\n", spec, threads, rep->passed,
           rep->failed, rep->unsupported, (unsigned long long)seed);
    fflush(stdout);
    const int failed = rep->failed;
    trr_conformance_free(rep);
    trr_context_destroy(ctx);
    cr_assert_eq(failed, 0, "%d softmax/row_sum cases failed on %s with %d threads (listed above)", failed, spec,
                 threads);
}

/* the thread counts: 8 (under one subgroup), 32, 64 and 256 */
#define LONG_ROWS_ON(name, spec)                                                                               \
    Test(long_rows, name##_threads_8) { run_device(spec, 8); }                                                 \
    Test(long_rows, name##_threads_32) { run_device(spec, 32); }                                               \
    Test(long_rows, name##_threads_64) { run_device(spec, 64); }                                               \
    Test(long_rows, name##_threads_256) { run_device(spec, 256); }

LONG_ROWS_ON(cpu, "cpu")
LONG_ROWS_ON(opencl, "opencl:0")
LONG_ROWS_ON(vulkan, "vulkan:0")

/* matmul 3x17xK (long_k_matmul.h), f32 and f16 inputs, under the backend's block_k and 16, 32 and 64: right
 * (relative Frobenius error within the f32 bound, docs/ops.md) or refused as unsupported, at K past 2^16 and past
 * 2^17, and at 2^20 + 3 under the backend's block_k; one case per device and input type. */
static double frob_rel(const double *ref, const float *got, int n) {
    double e = 0, r = 0;
    for (int i = 0; i < n; i++) {
        e += (got[i] - ref[i]) * (got[i] - ref[i]);
        r += ref[i] * ref[i];
    }
    return sqrt(e / r);
}

static void run_long_k(const char *spec, int dt) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    static const int64_t ks[] = {70000, 131075, 1048579};
    static const int block_k[] = {0, 16, 32, 64};
    long_k_inputs in = long_k_inputs_make(ks[sizeof ks / sizeof ks[0] - 1]);
    int bad = 0;
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        long_k_case c;
        long_k_case_make(ctx, &in, ks[ki], dt ? TRR_F16 : TRR_F32, &c);
        /* The forced block_k values change how the K loop is tiled, not how far its counters count: they run at
         * the two lengths past 2^16 and 2^17, and the longest K (where a software-rendered Vulkan device spends
         * most of this test in one workgroup's loop) with the backend's own choice only. */
        const size_t n_bk = ki + 1 < sizeof ks / sizeof ks[0] ? sizeof block_k / sizeof block_k[0] : 1;
        for (size_t bi = 0; bi < n_bk; bi++) {
            /* 64-deep slices with 32 x 32 tiles, which fit 32 KiB of shared memory as f32 */
            const int bk = block_k[bi], small = bk == 64;
            const trr_config cfg = {.block_k = bk, .block_m = small ? 32 : 0, .block_n = small ? 32 : 0};
            cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, block_k[bi] ? &cfg : NULL), TRR_OK);
            float got[LONG_K_M * LONG_K_N];
            const trr_status st = long_k_case_run(ctx, &c, got);
            if (st == TRR_ERR_UNSUPPORTED) {
                printf("%s %s K=%lld block_k=%d: unsupported: %s\n", spec, dt ? "f16" : "f32", (long long)c.k,
                       block_k[bi], trr_last_error(ctx));
                continue;
            }
            cr_assert_eq(st, TRR_OK, "%s", trr_last_error(ctx));
            const double err = frob_rel(c.ref, got, LONG_K_M * LONG_K_N);
            const int ok = err <= 1e-5; /* f32 accumulation either way; the output is f32 */
            printf("%s %s K=%lld block_k=%d: frobenius %.3g%s\n", spec, dt ? "f16" : "f32", (long long)c.k,
                   block_k[bi], err, ok ? "" : "  FAIL");
            bad += !ok;
        }
        long_k_case_free(&c);
    }
    fflush(stdout);
    long_k_inputs_free(&in);
    trr_context_destroy(ctx);
    cr_assert_eq(bad, 0, "%d long-K matmuls on %s gave a wrong result with TRR_OK (listed above)", bad, spec);
}

Test(long_k, cpu_f32) { run_long_k("cpu", 0); }
Test(long_k, cpu_f16) { run_long_k("cpu", 1); }
Test(long_k, opencl_f32) { run_long_k("opencl:0", 0); }
Test(long_k, opencl_f16) { run_long_k("opencl:0", 1); }
Test(long_k, vulkan_f32) { run_long_k("vulkan:0", 0); }
Test(long_k, vulkan_f16) { run_long_k("vulkan:0", 1); }
LONG_ROWS_ON(cuda, "cuda:0")
