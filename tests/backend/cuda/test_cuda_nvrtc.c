/* Compiles every CUDA kernel variant the backend can choose (all ops, dtypes, layouts, tile configs) with NVRTC
 * for A100 (sm_80) and H100/H200 (sm_90a). Needs NVRTC only, no GPU or driver, so it runs in CI; any compile
 * error or warning fails. Skipped, with the reason, where NVRTC is not installed. */
#include <criterion/criterion.h>

#include "trr_cuda.h"

static void compile_for(const char *arch) {
    char reason[1024];
    if (trr_cuda_load_nvrtc(reason, sizeof reason) != TRR_OK) cr_skip_test("NVRTC unavailable: %s", reason);
    static char report[1 << 16];
    int done = 0;
    trr_status st = trr_cuda_compile_all(arch, &done, report, sizeof report);
    cr_assert_eq(st, TRR_OK, "%s: %s (%d variants compiled before it)", arch, report, done);
    cr_assert_gt(done, 0, "no variants compiled for %s", arch);
}

Test(cuda_nvrtc, every_variant_sm_80, .timeout = 1200) { compile_for("sm_80"); }
Test(cuda_nvrtc, every_variant_sm_90a, .timeout = 1200) { compile_for("sm_90a"); }
