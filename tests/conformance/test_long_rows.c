/* softmax and row_sum under a thread count the caller picks (trr_config_override): every config a backend
 * accepts must compute right at every row length the conformance suite has (up to 2^20 + 3, with masked
 * stretches and NaN), or be refused for that call as unsupported. The default configs run in test_conformance.
 *
 * Environment: TRIREME_CONFORMANCE_SEED fixes the seed (printed either way). */
#include "conformance.h"
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

/* matmul 3x17xK, A [M,K] and B [N,K] (both read along K), f32 and f16 inputs, under the backend's block_k and
 * 16, 32 and 64: right (relative Frobenius error within the f32 bound, docs/ops.md) or refused as unsupported, at
 * K past 2^16 and past 2^17, and at 2^20 + 3 under the backend's block_k; one case per device and input type. The inputs are random multiples of 1/4 in [-1, 1], so every product and partial sum
 * is exact in f32 whatever the order of accumulation: a correct kernel gives the float64 value exactly, and a
 * K loop cut short shows at once. */
static double frob_rel(const double *ref, const float *got, int n) {
    double e = 0, r = 0;
    for (int i = 0; i < n; i++) {
        e += (got[i] - ref[i]) * (got[i] - ref[i]);
        r += ref[i] * ref[i];
    }
    return sqrt(e / r);
}

/* +-1/4, +-2/4, +-3/4 or +-1: products are multiples of 1/16 of at most 1, so partial sums of up to 2^20 of
 * them are exact in f32 (2^20 x 16 < 2^24) */
static float quarter(uint64_t *rng) {
    uint64_t r = trr_rng_next(rng);
    return (float)((int)(r % 4) + 1) / 4.0f * ((r >> 32) & 1 ? -1.0f : 1.0f);
}

static void run_long_k(const char *spec, int dt) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    enum { M = 3, N = 17 };
    static const int64_t ks[] = {70000, 131075, 1048579};
    static const int block_k[] = {0, 16, 32, 64};
    const int64_t kmax = ks[sizeof ks / sizeof ks[0] - 1];
    float *a = malloc(sizeof(float) * M * (size_t)kmax), *b = malloc(sizeof(float) * N * (size_t)kmax);
    uint16_t *h = malloc(sizeof(uint16_t) * N * (size_t)kmax);
    cr_assert(a && b && h);
    uint64_t rng = 12345;
    for (int64_t i = 0; i < M * kmax; i++) a[i] = quarter(&rng);
    for (int64_t i = 0; i < N * kmax; i++) b[i] = quarter(&rng);
    int bad = 0;
    {
        const trr_dtype in = dt ? TRR_F16 : TRR_F32;
        const size_t es = dt ? 2 : 4;
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            const int64_t K = ks[ki];
            double ref[M * N];
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double s = 0;
                    for (int64_t k = 0; k < K; k++) s += (double)a[(int64_t)i * K + k] * (double)b[(int64_t)j * K + k];
                    ref[i * N + j] = s;
                }
            trr_buffer *ba, *bb, *bc;
            cr_assert_eq(trr_buffer_create(ctx, es * M * (size_t)K, &ba), TRR_OK);
            cr_assert_eq(trr_buffer_create(ctx, es * N * (size_t)K, &bb), TRR_OK);
            cr_assert_eq(trr_buffer_create(ctx, 4 * M * N, &bc), TRR_OK);
            if (dt) {
                trr_f32_to_f16(a, h, (size_t)(M * K));
                cr_assert_eq(trr_buffer_write(ctx, ba, 0, h, 2 * M * (size_t)K), TRR_OK);
                trr_f32_to_f16(b, h, (size_t)(N * K));
                cr_assert_eq(trr_buffer_write(ctx, bb, 0, h, 2 * N * (size_t)K), TRR_OK);
            } else {
                cr_assert_eq(trr_buffer_write(ctx, ba, 0, a, 4 * M * (size_t)K), TRR_OK);
                cr_assert_eq(trr_buffer_write(ctx, bb, 0, b, 4 * N * (size_t)K), TRR_OK);
            }
            trr_tensor ta, tb0, tb, tc;
            cr_assert_eq(trr_tensor_2d(ba, 0, in, M, K, K, &ta), TRR_OK);
            cr_assert_eq(trr_tensor_2d(bb, 0, in, N, K, K, &tb0), TRR_OK);
            cr_assert_eq(trr_tensor_transpose(&tb0, &tb), TRR_OK);
            cr_assert_eq(trr_tensor_2d(bc, 0, TRR_F32, M, N, N, &tc), TRR_OK);
            /* The forced block_k values change how the K loop is tiled, not how far its counters count: they
             * run at the two lengths past 2^16 and 2^17, and the longest K (where a software-rendered Vulkan
             * device spends most of this test in one workgroup's loop) with the backend's own choice only. */
            const size_t n_bk = ki + 1 < sizeof ks / sizeof ks[0] ? sizeof block_k / sizeof block_k[0] : 1;
            for (size_t bi = 0; bi < n_bk; bi++) {
                /* 64-deep slices with 32 x 32 tiles, which fit 32 KiB of shared memory as f32 */
                const int bk = block_k[bi], small = bk == 64;
                const trr_config cfg = {.block_k = bk, .block_m = small ? 32 : 0, .block_n = small ? 32 : 0};
                cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, block_k[bi] ? &cfg : NULL), TRR_OK);
                float got[M * N], poison = NAN;
                for (int i = 0; i < M * N; i++) got[i] = poison;
                cr_assert_eq(trr_buffer_write(ctx, bc, 0, got, sizeof got), TRR_OK);
                trr_status st = trr_matmul(ctx, &ta, &tb, &tc, TRR_EPI_NONE, 0.0f, 0);
                if (st == TRR_ERR_UNSUPPORTED) {
                    printf("%s %s K=%lld block_k=%d: unsupported: %s\n", spec, dt ? "f16" : "f32", (long long)K,
                           block_k[bi], trr_last_error(ctx));
                    continue;
                }
                cr_assert_eq(st, TRR_OK, "%s", trr_last_error(ctx));
                cr_assert_eq(trr_buffer_read(ctx, bc, 0, got, sizeof got), TRR_OK);
                const double err = frob_rel(ref, got, M * N);
                const int ok = err <= 1e-5; /* f32 accumulation either way; the output is f32 */
                printf("%s %s K=%lld block_k=%d: frobenius %.3g%s\n", spec, dt ? "f16" : "f32", (long long)K,
                       block_k[bi], err, ok ? "" : "  FAIL");
                bad += !ok;
            }
            trr_buffer_destroy(ba);
            trr_buffer_destroy(bb);
            trr_buffer_destroy(bc);
        }
    }
    fflush(stdout);
    free(a);
    free(b);
    free(h);
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
