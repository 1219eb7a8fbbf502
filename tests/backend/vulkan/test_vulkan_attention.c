/* attention's SIMT kernel (kernels/vulkan/attention.comp) under blocks the heuristic does not pick, on the head dims
 * of 128 and more whose loops reach lavapipe's loop budget first: one key a block over a whole block of queries,
 * and odd sizes; the keys then split several ways, each split within the budget (backend_vulkan/vk_attention.c).
 * Checked by the conformance engine on attention's quick cases at D >= 128. Runs on vulkan:0 under
 * TRIREME_VK_VALIDATION=1 as every test does; skipped without a Vulkan device unless TRIREME_REQUIRE_BACKENDS names
 * vulkan. */
#include "conformance.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <time.h>

static int large_d(const trr_case *c, void *user) {
    (void)user;
    return c->op == TRR_OP_ATTENTION && c->attn.d >= 128 && c->quick;
}

Test(vulkan_attention, forced_blocks_pass, .timeout = 900) {
    const trr_config forced[] = {{.block_m = 64, .block_n = 1, .threads = 32},
                                 {.block_m = 3, .block_n = 5, .threads = 7}};
    trr_conf_options opt = {.seed = (uint64_t)time(NULL), .select = large_d};
    for (size_t f = 0; f < sizeof forced / sizeof forced[0]; f++) {
        trr_context *ctx = open_device_or_skip("vulkan:0", "vulkan");
        cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, &forced[f]), TRR_OK, "%s", trr_last_error(ctx));
        trr_conf_report *rep = NULL;
        cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
        for (int i = 0; i < rep->n_results; i++) {
            const trr_conf_result *r = &rep->results[i];
            cr_expect_neq(r->outcome, TRR_CONF_FAIL, "block_m %d, block_n %d, threads %d: %s (seed %llu): %s",
                          forced[f].block_m, forced[f].block_n, forced[f].threads, r->name,
                          (unsigned long long)opt.seed, r->message);
        }
        cr_expect_gt(rep->passed, 0, "block_n %d, threads %d: nothing ran", forced[f].block_n, forced[f].threads);
        trr_conformance_free(rep);
        trr_context_destroy(ctx);
    }
}
