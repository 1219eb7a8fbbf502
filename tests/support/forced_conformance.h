/* A config forced on an op and its conformance cases run under it (random inputs, poisoned outputs, guard bytes,
 * the float64 reference): what the forced-variant and split-K tests of every backend share. */
#ifndef TRR_TEST_FORCED_CONFORMANCE_H
#define TRR_TEST_FORCED_CONFORMANCE_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <time.h>

#include "conformance.h"

/* Runs op's conformance cases on ctx (the quick subset where quick) with `forced` as its config override, expects
 * none to fail and every unsupported one to say why, clears the override and returns the report (free it with
 * trr_conformance_free). label leads each failure's message. */
static inline trr_conf_report *run_forced_conformance(trr_context *ctx, trr_op op, const trr_config *forced, int quick,
                                                      const char *label) {
    cr_assert_eq(trr_config_override(ctx, op, forced), TRR_OK, "%s%s", label, trr_last_error(ctx));
    trr_conf_options opt = {.seed = (uint64_t)time(NULL), .quick = quick, .op_mask = 1u << op};
    trr_conf_report *rep = NULL;
    cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s%s", label, trr_last_error(ctx));
    for (int i = 0; i < rep->n_results; i++) {
        const trr_conf_result *r = &rep->results[i];
        cr_expect_neq(r->outcome, TRR_CONF_FAIL, "%s%s (seed %llu): %s", label, r->name,
                      (unsigned long long)opt.seed, r->message);
        if (r->outcome == TRR_CONF_UNSUPPORTED)
            cr_expect_str_neq(r->message, "", "%s%s refused without a reason", label, r->name);
    }
    cr_assert_eq(trr_config_override(ctx, op, NULL), TRR_OK);
    return rep;
}

#endif
