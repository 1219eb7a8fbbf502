/* TRIREME_VK_VALIDATION=gpu-av (issue #41, item 18): the Khronos layer with GPU-assisted validation and the
 * synchronization check, and operands in descriptor sets, since layer 1.3.239's GPU-AV reads pushed descriptors
 * as uninitialized and skips the dispatch. The quick conformance list on vulkan:0 must pass with no validation
 * message (any message fails the call that caused it, and so its case). Each test sets the variable itself, over
 * the TRIREME_VK_VALIDATION=1 that ctest gives every test.
 *
 * Cost: GPU-AV instruments every pipeline, which on lavapipe costs seconds of CPU each (cold caches), so the whole
 * quick list took 5.3 min of CPU (12.6 min on a loaded 2-core machine) where its ops other than matmul take 42 s:
 * the quick list runs without matmul, and matmul runs as three direct calls (f32, f16 and bf16 inputs, one odd
 * shape, each layout of A and B and an epilogue) checked against the float64 reference. TRIREME_GPU_AV_FULL=1 runs the
 * whole quick list, matmul included. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "conformance.h"
#include "reference.h"
#include "test_support.h"

#include "../backend_vulkan/vk_validation.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* weak: a build without the Vulkan backend links (and skips, as it cannot open vulkan:0) */
#pragma weak trr_vk_validation_state

Test(vulkan_gpu_av, mode_forces_descriptor_sets) {
    setenv("TRIREME_VK_VALIDATION", "gpu-av", 1);
    unsetenv("TRIREME_VK_PUSH_DESCRIPTORS"); /* where the device offers push descriptors, they are the default */
    trr_context *ctx = open_device_or_skip("vulkan:0", NULL);
    cr_assert(trr_vk_validation_state != NULL, "the Vulkan backend has no validation state to ask");
    int gpu_av = 0, push = 1;
    cr_assert_eq(trr_vk_validation_state(ctx, &gpu_av, &push), 1, "the validation layer is off");
    cr_assert_eq(gpu_av, 1, "TRIREME_VK_VALIDATION=gpu-av did not turn GPU-assisted validation on");
    cr_assert_eq(push, 0, "push descriptors under GPU-AV");
    trr_context_destroy(ctx);
    /* =1 keeps its meaning: the layer without GPU-AV */
    setenv("TRIREME_VK_VALIDATION", "1", 1);
    ctx = open_device_or_skip("vulkan:0", NULL);
    gpu_av = 1;
    cr_assert_eq(trr_vk_validation_state(ctx, &gpu_av, NULL), 1);
    cr_assert_eq(gpu_av, 0);
    trr_context_destroy(ctx);
}

Test(vulkan_gpu_av, quick_conformance) {
    setenv("TRIREME_VK_VALIDATION", "gpu-av", 1);
    unsetenv("TRIREME_VK_PUSH_DESCRIPTORS");
    trr_context *ctx = open_device_or_skip("vulkan:0", NULL);
    int gpu_av = 0;
    cr_assert(trr_vk_validation_state != NULL && trr_vk_validation_state(ctx, &gpu_av, NULL) == 1 && gpu_av,
              "TRIREME_VK_VALIDATION=gpu-av did not turn GPU-assisted validation on");
    const char *s = getenv("TRIREME_CONFORMANCE_SEED");
    const uint64_t seed = s && *s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    const char *full = getenv("TRIREME_GPU_AV_FULL");
    const int all = full && strcmp(full, "1") == 0;
    trr_conf_options opt = {.seed = seed, .quick = 1, .op_mask = all ? 0u : ~(1u << TRR_OP_MATMUL)};
    trr_conf_report *rep = NULL;
    const time_t t0 = time(NULL);
    cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "engine: %s", trr_last_error(ctx));
    for (int r = 0; r < rep->n_results; r++)
        if (rep->results[r].outcome == TRR_CONF_FAIL)
            printf("vulkan:0 gpu-av: FAIL %s: %s\n", rep->results[r].name, rep->results[r].message);
    printf("vulkan:0 gpu-av: %d passed, %d failed, %d unsupported in %lld s (seed %llu)\n", rep->passed, rep->failed,
           rep->unsupported, (long long)(time(NULL) - t0), (unsigned long long)seed);
    fflush(stdout);
    const int failed = rep->failed, passed = rep->passed;
    trr_conformance_free(rep);
    trr_context_destroy(ctx);
    cr_assert_eq(failed, 0, "%d quick cases failed under GPU-AV (listed above)", failed);
    cr_assert_gt(passed, 0);
}

/* One matmul M x N x K of signature in -> out, A and B random multiples of 1/8 (stored as in_dtype), under
 * epilogue epi: relative Frobenius error against the float64 reference within the output's bound. */
static void matmul_call(trr_context *ctx, trr_dtype in, trr_dtype out, int ta, int tb, trr_epilogue epi) {
    enum { M = 67, N = 45, K = 129 };
    const size_t ies = in == TRR_F32 ? 4 : 2, oes = out == TRR_F32 ? 4 : 2;
    static float fa[M * K], fb[K * N], fc[M * N];
    static uint16_t ha[M * K], hb[K * N], hc[M * N];
    uint64_t s = 5;
    for (int i = 0; i < M * K; i++) fa[i] = (float)((int)((s = s * 6364136223846793005ull + 1) >> 60) - 8) / 8.0f;
    for (int i = 0; i < K * N; i++) fb[i] = (float)((int)((s = s * 6364136223846793005ull + 1) >> 60) - 8) / 8.0f;
    if (in == TRR_F16) trr_f32_to_f16(fa, ha, M * K), trr_f32_to_f16(fb, hb, K * N);
    if (in == TRR_BF16) trr_f32_to_bf16(fa, ha, M * K), trr_f32_to_bf16(fb, hb, K * N);
    const void *pa = in == TRR_F32 ? (const void *)fa : ha, *pb = in == TRR_F32 ? (const void *)fb : hb;
    trr_buffer *ba, *bb, *bc;
    cr_assert_eq(trr_buffer_create(ctx, ies * M * K, &ba), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, ies * K * N, &bb), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, oes * M * N, &bc), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, ba, 0, pa, ies * M * K), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bb, 0, pb, ies * K * N), TRR_OK);
    /* the same values read as A [M,K] or as the transpose of a stored [K,M] (likewise B): only the layout
     * differs, and the reference reads them the same way */
    trr_tensor t0, tx, ty, tz;
    if (ta) {
        cr_assert_eq(trr_tensor_2d(ba, 0, in, K, M, M, &t0), TRR_OK);
        cr_assert_eq(trr_tensor_transpose(&t0, &tx), TRR_OK);
    } else {
        cr_assert_eq(trr_tensor_2d(ba, 0, in, M, K, K, &tx), TRR_OK);
    }
    if (tb) {
        cr_assert_eq(trr_tensor_2d(bb, 0, in, N, K, K, &t0), TRR_OK);
        cr_assert_eq(trr_tensor_transpose(&t0, &ty), TRR_OK);
    } else {
        cr_assert_eq(trr_tensor_2d(bb, 0, in, K, N, N, &ty), TRR_OK);
    }
    cr_assert_eq(trr_tensor_2d(bc, 0, out, M, N, N, &tz), TRR_OK);
    cr_assert_eq(trr_matmul(ctx, &tx, &ty, &tz, epi, 0.01f, 0), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_read(ctx, bc, 0, out == TRR_F32 ? (void *)fc : hc, oes * M * N), TRR_OK, "%s",
                 trr_last_error(ctx));
    if (out == TRR_F16) trr_f16_to_f32(hc, fc, M * N);
    if (out == TRR_BF16) trr_bf16_to_f32(hc, fc, M * N);
    static double ref[M * N];
    trr_call call = {.op = TRR_OP_MATMUL, .rows = M, .cols = N, .k = K, .trans_a = ta, .trans_b = tb,
                     .epilogue = epi, .alpha = 0.01f, .batch = 1};
    call.x = (trr_operand){.mem = (void *)pa, .stride0 = ta ? M : K, .dtype = in};
    call.y = (trr_operand){.mem = (void *)pb, .stride0 = tb ? K : N, .dtype = in};
    call.z = (trr_operand){.stride0 = N, .dtype = out};
    cr_assert_eq(trr_reference_run(&call, ref), TRR_OK);
    double e = 0, r = 0;
    for (int i = 0; i < M * N; i++) e += (fc[i] - ref[i]) * (fc[i] - ref[i]), r += ref[i] * ref[i];
    const double bound = out == TRR_F32 ? 1e-5 : out == TRR_F16 ? 2e-3 : 8e-3;
    cr_assert(sqrt(e / r) <= bound, "matmul %d->%d tA=%d tB=%d epi=%d: frobenius %g > %g", (int)in, (int)out, ta, tb,
              (int)epi, sqrt(e / r), bound);
    trr_buffer_destroy(ba);
    trr_buffer_destroy(bb);
    trr_buffer_destroy(bc);
}

Test(vulkan_gpu_av, matmul_calls) {
    setenv("TRIREME_VK_VALIDATION", "gpu-av", 1);
    unsetenv("TRIREME_VK_PUSH_DESCRIPTORS");
    trr_context *ctx = open_device_or_skip("vulkan:0", NULL);
    int gpu_av = 0;
    cr_assert(trr_vk_validation_state != NULL && trr_vk_validation_state(ctx, &gpu_av, NULL) == 1 && gpu_av,
              "TRIREME_VK_VALIDATION=gpu-av did not turn GPU-assisted validation on");
    const time_t t0 = time(NULL);
    matmul_call(ctx, TRR_F32, TRR_F32, 1, 1, TRR_EPI_GELU);
    matmul_call(ctx, TRR_F16, TRR_F16, 0, 1, TRR_EPI_RELU);
    matmul_call(ctx, TRR_BF16, TRR_F32, 1, 0, TRR_EPI_LEAKY_RELU);
    printf("vulkan:0 gpu-av: 3 matmul calls in %lld s\n", (long long)(time(NULL) - t0));
    fflush(stdout);
    trr_context_destroy(ctx);
}
