/* The SIMT matmul (kernels/vulkan/matmul.comp) in the tile shapes the heuristic does not pick on this device,
 * forced through trr_config_override and checked by the conformance engine's quick matmul cases (random inputs,
 * poisoned outputs, guard bytes, the float64 reference; every dtype, layout, epilogue and batch it holds, the
 * 8-bit floats included, which the kernel widens as it loads them):
 * - 128x128x8 over 256 invocations, double-buffered: what GPUs run for large products (8x8 micro-tiles as two
 *   4x4 quarters, 4-element load chunks, vector loads and stores where the operands are aligned);
 * - 12x20x6 over 20, double-buffered: a 3x4 micro-tile (rows one at a time, columns in a group of 4) and
 *   single-element chunks, since 6 is no multiple of 4;
 * - 32x32x16 over 256, single-buffered: 2x2 micro-tiles, one row and one column at a time.
 * Runs on vulkan:0 under TRIREME_VK_VALIDATION=1 as every test does; skipped without a Vulkan device unless
 * TRIREME_REQUIRE_BACKENDS names vulkan. */
#include "conformance.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static trr_context *open_vulkan(void) { return open_device_or_skip("vulkan:0", "vulkan"); }

/* Every quick matmul case passes with cfg forced; none is refused. */
static void run_tile(const trr_config *cfg) {
    trr_context *ctx = open_vulkan();
    cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, cfg), TRR_OK);
    trr_conf_options opt = {.seed = (uint64_t)time(NULL), .quick = 1, .op_mask = 1u << TRR_OP_MATMUL};
    trr_conf_report *rep = NULL;
    cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
    for (int i = 0; i < rep->n_results; i++) {
        const trr_conf_result *r = &rep->results[i];
        cr_expect_eq(r->outcome, TRR_CONF_PASS, "%dx%dx%d over %d, %d stages: %s (seed %llu): %s", cfg->block_m,
                     cfg->block_n, cfg->block_k, cfg->threads, cfg->stages, r->name, (unsigned long long)opt.seed,
                     r->message);
    }
    cr_assert_gt(rep->passed, 0);
    trr_conformance_free(rep);
    trr_context_destroy(ctx);
}

Test(vulkan_simt_tiles, gpu_large_tile, .timeout = 600) {
    const trr_config c = {.block_m = 128, .block_n = 128, .block_k = 8, .threads = 256, .stages = 2,
                          .variant = TRR_VARIANT_SIMT};
    run_tile(&c);
}

Test(vulkan_simt_tiles, odd_tile_scalar_chunks, .timeout = 600) {
    const trr_config c = {.block_m = 12, .block_n = 20, .block_k = 6, .threads = 20, .stages = 2,
                          .variant = TRR_VARIANT_SIMT};
    run_tile(&c);
}

Test(vulkan_simt_tiles, single_rows_and_columns, .timeout = 600) {
    const trr_config c = {.block_m = 32, .block_n = 32, .block_k = 16, .threads = 256, .stages = 1,
                          .variant = TRR_VARIANT_SIMT};
    run_tile(&c);
}
