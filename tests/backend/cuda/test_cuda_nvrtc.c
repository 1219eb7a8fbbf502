/* Compiles every CUDA kernel variant the backend can choose (all ops, dtypes, layouts, tile configs) with NVRTC
 * for A100 (sm_80) and H100/H200 (sm_90a). Needs NVRTC only, no GPU or driver, so it runs in CI; any compile
 * error or warning fails. Skipped, with the reason, where NVRTC is not installed.
 *
 * Each architecture's variants are split into parts (every n-th from the i-th, trr_cuda_compile_part) that
 * together cover them all: NVRTC compiles one program at a time within a process, so ctest runs the parts as
 * separate entries (tests/CMakeLists.txt) to use every core. */
#include <criterion/criterion.h>

#include "trr_cuda.h"

static void compile_part(const char *arch, int part, int parts) {
    char reason[1024];
    if (trr_cuda_load_nvrtc(reason, sizeof reason) != TRR_OK) cr_skip_test("NVRTC unavailable: %s", reason);
    static char report[1 << 16];
    int done = 0;
    trr_status st = trr_cuda_compile_part(arch, part, parts, &done, report, sizeof report);
    cr_assert_eq(st, TRR_OK, "%s, part %d of %d: %s (%d variants compiled before it)", arch, part + 1, parts, report,
                 done);
    cr_assert_gt(done, 0, "no variants compiled for %s, part %d of %d", arch, part + 1, parts);
}

/* sm_90a has the wgmma kernels besides, about twice sm_80's compile time: twice the parts */
Test(cuda_nvrtc, every_variant_sm_80_part_1_of_2, .timeout = 1200) { compile_part("sm_80", 0, 2); }
Test(cuda_nvrtc, every_variant_sm_80_part_2_of_2, .timeout = 1200) { compile_part("sm_80", 1, 2); }
Test(cuda_nvrtc, every_variant_sm_90a_part_1_of_4, .timeout = 1200) { compile_part("sm_90a", 0, 4); }
Test(cuda_nvrtc, every_variant_sm_90a_part_2_of_4, .timeout = 1200) { compile_part("sm_90a", 1, 4); }
Test(cuda_nvrtc, every_variant_sm_90a_part_3_of_4, .timeout = 1200) { compile_part("sm_90a", 2, 4); }
Test(cuda_nvrtc, every_variant_sm_90a_part_4_of_4, .timeout = 1200) { compile_part("sm_90a", 3, 4); }
