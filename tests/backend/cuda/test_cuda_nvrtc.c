/* Compiles every CUDA kernel variant the backend can choose (all ops, dtypes, layouts, tile configs) with NVRTC
 * for A100 (sm_80) and H100/H200 (sm_90a). Needs NVRTC only, no GPU or driver, so it runs in CI; a compile error
 * fails, and so does a warning. Skipped, with the reason, where NVRTC is not installed.
 *
 * Every variant is compiled in NVRTC's fast-compile mode, which checks the source as the default build does at a
 * small part of its cost, and one representative of each group of variants that share their register
 * allocation and tensor-core schedule is compiled at the default optimisation instead, where ptxas reports a
 * serialised wgmma (trr_cuda_compile_check in backend_cuda/variants.c says which, why, and what each mode fails
 * on). The compiles of both architectures are dealt into parts of about equal cost that together cover them all:
 * NVRTC compiles one program at a time within a process, so ctest runs the parts as separate entries
 * (tests/CMakeLists.txt) to use every core. */
#include <criterion/criterion.h>

#include "trr_cuda.h"

#define PARTS 4

static void compile_part(int part) {
    static const char *const archs[] = {"sm_80", "sm_90a"};
    char reason[1024];
    if (trr_cuda_load_nvrtc(reason, sizeof reason) != TRR_OK) cr_skip_test("NVRTC unavailable: %s", reason);
    static char report[1 << 16];
    int done = 0;
    trr_status st = trr_cuda_compile_check(archs, 2, part, PARTS, &done, report, sizeof report);
    cr_assert_eq(st, TRR_OK, "part %d of %d: %s (%d compiles checked before it)", part + 1, PARTS, report, done);
    cr_assert_gt(done, 0, "nothing compiled in part %d of %d", part + 1, PARTS);
}

Test(cuda_nvrtc, every_variant_part_1_of_4, .timeout = 1200) { compile_part(0); }
Test(cuda_nvrtc, every_variant_part_2_of_4, .timeout = 1200) { compile_part(1); }
Test(cuda_nvrtc, every_variant_part_3_of_4, .timeout = 1200) { compile_part(2); }
Test(cuda_nvrtc, every_variant_part_4_of_4, .timeout = 1200) { compile_part(3); }
