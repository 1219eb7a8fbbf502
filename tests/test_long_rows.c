/* softmax and row_sum under a thread count the caller picks (trr_config_override): every config a backend
 * accepts must compute right at every row length the conformance suite has (up to 2^20 + 3, with masked
 * stretches and NaN), or be refused for that call as unsupported. The default configs run in test_conformance.
 *
 * Environment: TRIREME_CONFORMANCE_SEED fixes the seed (printed either way). */
#include "conformance.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void run_device(const char *spec) {
    trr_context *ctx = NULL;
    if (trr_context_create(spec, &ctx) != TRR_OK) {
        cr_skip_test("%s is unavailable: %s", spec, trr_last_error(NULL));
        return;
    }
    const char *s = getenv("TRIREME_CONFORMANCE_SEED");
    const uint64_t seed = s && *s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    static const int threads[] = {32, 64, 256};
    int failed = 0;
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        const trr_config cfg = {.threads = threads[i]};
        cr_assert_eq(trr_config_override(ctx, TRR_OP_SOFTMAX, &cfg), TRR_OK, "%s", trr_last_error(ctx));
        cr_assert_eq(trr_config_override(ctx, TRR_OP_ROW_SUM, &cfg), TRR_OK, "%s", trr_last_error(ctx));
        trr_conf_options opt = {.seed = seed, .op_mask = (1u << TRR_OP_SOFTMAX) | (1u << TRR_OP_ROW_SUM)};
        trr_conf_report *rep = NULL;
        cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s: engine: %s", spec, trr_last_error(ctx));
        for (int r = 0; r < rep->n_results; r++) {
            const trr_conf_result *res = &rep->results[r];
            if (res->outcome == TRR_CONF_FAIL)
                printf("%s threads=%d: FAIL %s: %s\n", spec, threads[i], res->name, res->message);
        }
        printf("%s threads=%d: %d passed, %d failed, %d unsupported (seed %llu)\n", spec, threads[i], rep->passed,
               rep->failed, rep->unsupported, (unsigned long long)seed);
        fflush(stdout);
        failed += rep->failed;
        trr_conformance_free(rep);
    }
    trr_context_destroy(ctx);
    cr_assert_eq(failed, 0, "%d softmax/row_sum cases failed on %s under overridden thread counts (listed above)",
                 failed, spec);
}

Test(long_rows, cpu) { run_device("cpu"); }
Test(long_rows, opencl) { run_device("opencl:0"); }
Test(long_rows, vulkan) { run_device("vulkan:0"); }
