/* The CUDA matmul's split-K forced through trr_config_override, checked by the conformance engine (random inputs,
 * poisoned outputs, guard bytes, odd shapes, batches, epilogues, the float64 reference): split_k 2, 3 and the most
 * the check takes, on each tensor-core kernel the device runs and on the heuristic's choice of kernel, must pass
 * every matmul case they accept and reject the rest (f32 products: the CUDA-core kernel has no split) with
 * UNSUPPORTED and the reason. A split past the K tiles of a small case leaves splits empty: those store zero
 * partials, which the cases cover too. Skipped without a CUDA device unless TRIREME_REQUIRE_BACKENDS names cuda. */
#include "conformance.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static trr_context *open_cuda(void) { return open_device_or_skip("cuda:0", "cuda"); }

/* Runs matmul's conformance cases with forced and expects none to fail; every unsupported case names split_k or
 * the kernel it needs. Returns how many passed. */
static int run_split(trr_context *ctx, const trr_config *forced, const char *label) {
    cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, forced), TRR_OK, "%s", trr_last_error(ctx));
    trr_conf_options opt = {.seed = (uint64_t)time(NULL), .op_mask = 1u << TRR_OP_MATMUL};
    trr_conf_report *rep = NULL;
    cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
    for (int i = 0; i < rep->n_results; i++) {
        const trr_conf_result *r = &rep->results[i];
        cr_expect_neq(r->outcome, TRR_CONF_FAIL, "%s %s (seed %llu): %s", label, r->name,
                      (unsigned long long)opt.seed, r->message);
        if (r->outcome == TRR_CONF_UNSUPPORTED)
            cr_expect(strstr(r->message, "split") != NULL || strstr(r->message, "variant") != NULL ||
                          strstr(r->message, "cannot run") != NULL,
                      "%s %s: unsupported without a reason about the split or the kernel: %s", label, r->name,
                      r->message);
    }
    const int passed = rep->passed;
    trr_conformance_free(rep);
    cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, NULL), TRR_OK);
    return passed;
}

Test(cuda_split, heuristic_kernel_forced_splits, .timeout = 1800) {
    trr_context *ctx = open_cuda();
    const int splits[3] = {2, 3, 32};
    for (int i = 0; i < 3; i++) {
        char label[48];
        snprintf(label, sizeof label, "split_k=%d", splits[i]);
        const trr_config forced = {.split_k = splits[i]};
        cr_expect_gt(run_split(ctx, &forced, label), 0, "%s: no matmul case ran split", label);
    }
    trr_context_destroy(ctx);
}

Test(cuda_split, mma_sync_split, .timeout = 1800) {
    trr_context *ctx = open_cuda();
    const trr_config forced = {.split_k = 3, .variant = TRR_VARIANT_MMA};
    cr_expect_gt(run_split(ctx, &forced, "variant=mma,split_k=3"), 0, "no matmul case ran split on mma.sync");
    trr_context_destroy(ctx);
}

Test(cuda_split, wgmma_split_single_and_clustered, .timeout = 1800) {
    trr_context *ctx = open_cuda();
    const trr_config single = {.split_k = 3, .variant = TRR_VARIANT_WGMMA};
    const trr_config pair = {.split_k = 2, .block_m = 256, .variant = TRR_VARIANT_WGMMA};
    /* a device without wgmma (before sm_90a) rejects every case with the reason, which run_split checks */
    const int single_passed = run_split(ctx, &single, "variant=wgmma,split_k=3");
    const int pair_passed = run_split(ctx, &pair, "variant=wgmma,block_m=256,split_k=2");
    cr_expect_eq(single_passed > 0, pair_passed > 0, "wgmma ran split in one form only (%d, %d cases)", single_passed,
                 pair_passed);
    trr_context_destroy(ctx);
}

/* mma.sync's few-row tiles (the heuristic's for M <= 64) forced on every case, split and not: tiles of 16 rows put
 * many row tiles under each split of the larger cases, whose per-tile counters and slots must then keep apart; a
 * split of 32 leaves most splits of the short-K cases empty. Every case after the first reuses the counters the
 * launches before it left at zero. */
Test(cuda_split, mma_few_row_tiles, .timeout = 1800) {
    trr_context *ctx = open_cuda();
    const trr_config few[4] = {
        {.variant = TRR_VARIANT_MMA, .block_m = 16, .block_n = 128, .block_k = 64, .threads = 128, .stages = 6,
         .split_k = 1},
        {.variant = TRR_VARIANT_MMA, .block_m = 16, .block_n = 128, .block_k = 64, .threads = 128, .stages = 6,
         .split_k = 5},
        {.variant = TRR_VARIANT_MMA, .block_m = 64, .block_n = 128, .block_k = 64, .threads = 128, .stages = 4,
         .split_k = 32},
        {.variant = TRR_VARIANT_MMA, .block_m = 32, .block_n = 128, .block_k = 64, .threads = 128, .stages = 5,
         .split_k = 3},
    };
    for (int i = 0; i < 4; i++) {
        char label[64];
        snprintf(label, sizeof label, "mma block_m=%d,split_k=%d", few[i].block_m, few[i].split_k);
        cr_expect_gt(run_split(ctx, &few[i], label), 0, "%s: no matmul case ran", label);
    }
    trr_context_destroy(ctx);
}
