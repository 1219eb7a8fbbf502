/* The CPU attention kernel (backend_cpu/attention.c) under block shapes the heuristic never picks: one query row
 * and one key per block, blocks that are not multiples of the vector chunk, blocks larger than any sequence, and a
 * query block smaller than a GQA group. Each runs attention's quick conformance cases (every dtype, GQA, causal,
 * rows that see no key, lse, [B,S,H,D] views). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "conformance.h"
#include "trireme.h"

Test(cpu_attention, odd_block_configs, .timeout = 300) {
    const trr_config configs[] = {{.block_m = 1, .block_n = 1}, {.block_m = 3, .block_n = 17},
                                  {.block_m = 5, .block_n = 100}, {.block_m = 1024, .block_n = 1024},
                                  {.block_m = 64, .block_n = 16}};
    trr_conf_options opt = {.seed = (uint64_t)time(NULL), .quick = 1, .op_mask = 1u << TRR_OP_ATTENTION};
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        trr_context *ctx = NULL;
        cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
        cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, &configs[i]), TRR_OK, "%s", trr_last_error(ctx));
        trr_conf_report *rep = NULL;
        cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
        if (rep->failed) trr_conformance_print_matrix((const trr_conf_report *const *)&rep, 1, stdout);
        cr_expect_eq(rep->failed, 0, "block_m %d block_n %d: %d cases failed (seed %llu)", configs[i].block_m,
                     configs[i].block_n, rep->failed, (unsigned long long)opt.seed);
        cr_expect_gt(rep->passed, 10);
        cr_expect_eq(rep->unsupported, 0);
        trr_conformance_free(rep);
        trr_context_destroy(ctx);
    }
}

/* A block size past the kernel's limit is refused with the reason, not clamped. */
Test(cpu_attention, oversized_blocks_are_refused) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK);
    const trr_config big = {.block_n = 4096};
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, &big), TRR_OK);
    trr_conf_options opt = {.seed = 1, .quick = 1, .op_mask = 1u << TRR_OP_ATTENTION};
    trr_conf_report *rep = NULL;
    cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK);
    cr_expect_eq(rep->passed, 0);
    cr_expect_gt(rep->unsupported, 0);
    cr_expect(strstr(rep->results[0].message, "block_n 4096"), "%s", rep->results[0].message);
    trr_conformance_free(rep);
    trr_context_destroy(ctx);
}
