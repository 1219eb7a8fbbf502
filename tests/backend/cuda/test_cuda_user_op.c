/* A user op's CUDA C through the backend's NVRTC path (a variant carrying the definition's text, as
 * backend_cuda/user.c compiles it): examples/custom_op's swiglu.cu, silu_user.cu and add_rms_norm.cu, and the
 * copies of the built-in silu and gelu made of kernels/cuda/elementwise.cu's text (tests/unit/test_user_op.c runs
 * them), for A100 (sm_80) and H100/H200 (sm_90a) at tile candidates of their definitions, with no warning; a
 * source with an error gives TRR_ERR_COMPILE and the compiler's log. Needs NVRTC only; skipped, with the reason,
 * where it is not installed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin_copy_text.h"
#include "trr_cuda.h"

#ifndef TRR_SWIGLU_CU
#error "TRR_SWIGLU_CU must name examples/custom_op/swiglu.cu"
#endif
#ifndef TRR_ADD_RMS_NORM_CU
#error "TRR_ADD_RMS_NORM_CU must name examples/custom_op/add_rms_norm.cu"
#endif
#ifndef TRR_SILU_USER_CU
#error "TRR_SILU_USER_CU must name examples/custom_op/silu_user.cu"
#endif

static void need_nvrtc(void) {
    char reason[1024];
    if (trr_cuda_load_nvrtc(reason, sizeof reason) != TRR_OK) cr_skip_test("NVRTC unavailable: %s", reason);
}

/* the defines backend_cuda/user.c passes (trr_user_defines): dtype, threads, then the tile parameters (swiglu's
 * BLOCK and ITEMS, silu_user's THREADS, VEC and BLOCK_N, add_rms_norm's THREADS) */
static trr_status compile(const char *text, const char *arch, int block, int items, char **out_log) {
    trr_cuda_variant v = {.file = "user#12", .text = text};
    cr_assert(trr_cuda_define(&v, "-DTRR_DTYPE=0 -DTRR_THREADS=%d -DBLOCK=%d -DITEMS=%d -DTHREADS=%d -DVEC=%d -DBLOCK_N=%d",
                                block, block, items, block, items == 1 ? 1 : 4, block * items * 4));
    void *cubin = NULL;
    size_t size = 0;
    const trr_status st = trr_cuda_compile(NULL, &v, arch, &cubin, &size, NULL, out_log);
    free(cubin);
    return st;
}

static void compiles_for_sm_80_and_sm_90a(const char *path) {
    need_nvrtc();
    char *text = read_text_file(path);
    static const char *const archs[] = {"sm_80", "sm_90a"};
    static const int tiles[][2] = {{256, 4}, {1024, 8}, {128, 1}};
    for (int a = 0; a < 2; a++)
        for (int t = 0; t < 3; t++) {
            char *log = NULL;
            const trr_status st = compile(text, archs[a], tiles[t][0], tiles[t][1], &log);
            cr_expect_eq(st, TRR_OK, "%s %s BLOCK=%d ITEMS=%d: %s", path, archs[a], tiles[t][0], tiles[t][1],
                         trr_last_error(NULL));
            cr_expect(!log || !strstr(log, "warning"), "%s: %s", archs[a], log);
            free(log);
        }
    free(text);
}

Test(cuda_user_op, swiglu_compiles_for_sm_80_and_sm_90a, .timeout = 600) {
    compiles_for_sm_80_and_sm_90a(TRR_SWIGLU_CU);
}
Test(cuda_user_op, silu_user_compiles_for_sm_80_and_sm_90a, .timeout = 600) {
    compiles_for_sm_80_and_sm_90a(TRR_SILU_USER_CU);
}

Test(cuda_user_op, add_rms_norm_compiles_for_sm_80_and_sm_90a, .timeout = 600) {
    compiles_for_sm_80_and_sm_90a(TRR_ADD_RMS_NORM_CU);
}

Test(cuda_user_op, builtin_silu_and_gelu_copies_compile_for_sm_80_and_sm_90a, .timeout = 600) {
    need_nvrtc();
    static const char *const ops[] = {"silu", "gelu"}, *const archs[] = {"sm_80", "sm_90a"};
    static const int tiles[][2] = {{256, 4}, {128, 1}}; /* THREADS, UNROLL: test_user_op.c's candidates */
    for (int o = 0; o < 2; o++) {
        char *text = builtin_copy_cuda(ops[o]);
        for (int a = 0; a < 2; a++)
            for (int t = 0; t < 2; t++) {
                trr_cuda_variant v = {.file = "user#13", .text = text};
                cr_assert(trr_cuda_define(&v, "-DTRR_DTYPE=0 -DTRR_THREADS=%d -DTHREADS=%d -DUNROLL=%d", tiles[t][0],
                                          tiles[t][0], tiles[t][1]));
                void *cubin = NULL;
                size_t size = 0;
                char *log = NULL;
                cr_expect_eq(trr_cuda_compile(NULL, &v, archs[a], &cubin, &size, NULL, &log), TRR_OK, "%s %s: %s",
                             ops[o], archs[a], trr_last_error(NULL));
                cr_expect(!log || !strstr(log, "warning"), "%s %s: %s", ops[o], archs[a], log);
                free(cubin), free(log);
            }
        free(text);
    }
}

Test(cuda_user_op, a_compile_error_returns_the_log) {
    need_nvrtc();
    char *log = NULL;
    const trr_status st =
        compile("extern \"C\" __global__ void broken(float *x) { this_is_not_declared = 1; }", "sm_80", 256, 4, &log);
    cr_expect_eq(st, TRR_ERR_COMPILE);
    cr_expect(strstr(trr_last_error(NULL), "this_is_not_declared"), "no log in '%s'", trr_last_error(NULL));
    free(log);
}
