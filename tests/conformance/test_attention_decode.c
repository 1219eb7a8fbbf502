/* attention's decode form (core/attention_decode.h; kernels/vulkan/attention_decode.comp and
 * kernels/opencl/attention_decode.cl), which the heuristic takes on GPUs only: forced with split_k on attention's
 * decode-shaped cases (a kv head's rows fit one work-group, keys in several steps) on vulkan:0 and opencl:0
 * (lavapipe and PoCL in CI), checked by the conformance engine. Every case passes, or is refused with the
 * decode kernel's reason (views that are not whole 16-byte words); and split_k = 1 turns it off: the same cases
 * pass on the per-head kernel. Skipped without the device unless TRIREME_REQUIRE_BACKENDS names its backend. */
#include "conformance.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <string.h>
#include <time.h>

static int decode_shaped(const trr_case *c, void *user) {
    (void)user;
    return c->op == TRR_OP_ATTENTION && c->attn.sq * (c->attn.hq / c->attn.hkv) <= 16 && c->attn.skv >= 256;
}

static void run_forced(const char *spec, int split_k) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    const trr_config forced = {.split_k = split_k};
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, &forced), TRR_OK, "%s", trr_last_error(ctx));
    trr_conf_options opt = {.seed = (uint64_t)time(NULL), .select = decode_shaped};
    trr_conf_report *rep = NULL;
    cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
    for (int i = 0; i < rep->n_results; i++) {
        const trr_conf_result *r = &rep->results[i];
        cr_expect_neq(r->outcome, TRR_CONF_FAIL, "%s split_k %d: %s (seed %llu): %s", spec, split_k, r->name,
                      (unsigned long long)opt.seed, r->message);
        if (r->outcome == TRR_CONF_UNSUPPORTED)
            cr_expect(split_k > 1 && strstr(r->message, "16-byte words") != NULL, "%s split_k %d: %s: %s", spec,
                      split_k, r->name, r->message);
    }
    cr_expect_geq(rep->passed, 4, "%s split_k %d: %d cases passed", spec, split_k, rep->passed);
    trr_conformance_free(rep);
    trr_context_destroy(ctx);
}

Test(attention_decode, vulkan_forced_and_off, .timeout = 900) {
    run_forced("vulkan:0", 3);
    run_forced("vulkan:0", 1);
}

Test(attention_decode, opencl_forced_and_off, .timeout = 900) {
    run_forced("opencl:0", 3);
    run_forced("opencl:0", 1);
}
