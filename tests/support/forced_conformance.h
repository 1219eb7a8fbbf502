/* A config forced on an op and its conformance cases run under it (random inputs, poisoned outputs, guard bytes,
 * the float64 reference): what the forced-variant and split-K tests of every backend share. */
#ifndef TRR_TEST_FORCED_CONFORMANCE_H
#define TRR_TEST_FORCED_CONFORMANCE_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "conformance.h"
#include "test_support.h"

/* Runs op's conformance cases on ctx (the quick subset where quick, and in the sanitizer run: conformance_quick_env)
 * with `forced` as its config override, expects none to fail and every unsupported one to say why, clears the
 * override and returns the report (free it with trr_conformance_free). label leads each failure's message. */
static inline trr_conf_report *run_forced_conformance(trr_context *ctx, trr_op op, const trr_config *forced, int quick,
                                                      const char *label) {
    cr_assert_eq(trr_config_override(ctx, op, forced), TRR_OK, "%s%s", label, trr_last_error(ctx));
    trr_conf_options opt = {
        .seed = (uint64_t)time(NULL), .quick = quick || conformance_quick_env(), .op_mask = 1u << op};
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

/* matmul's quick conformance under split_k 2, 3 and 7 (K's rest in a shorter slice) on each of the variants; the
 * SIMT kernel, which every device runs, must run some cases, the others may be refused with a reason. */
static inline void run_forced_splits(trr_context *ctx, const trr_variant *variants, int n_variants) {
    static const int splits[] = {2, 3, 7};
    for (int i = 0; i < n_variants; i++)
        for (int j = 0; j < 3; j++) {
            const trr_config forced = {.variant = (int)variants[i], .split_k = splits[j]};
            const char *name = "?";
            trr_variant_name(variants[i], &name);
            char label[64];
            snprintf(label, sizeof label, "%s split_k %d: ", name, splits[j]);
            trr_conf_report *rep = run_forced_conformance(ctx, TRR_OP_MATMUL, &forced, 1, label);
            if (variants[i] == TRR_VARIANT_SIMT) cr_expect_gt(rep->passed, 0, "%sno case ran", label);
            trr_conformance_free(rep);
        }
}

/* One buffer holding A (m x k), B (k x n) and C (m x n) of dtype dt, packed one after another. */
static inline trr_buffer *forced_matmul_operands(trr_context *ctx, trr_dtype dt, int64_t m, int64_t n, int64_t k,
                                                 trr_tensor *a, trr_tensor *b, trr_tensor *c) {
    size_t es = 0;
    cr_assert_eq(trr_dtype_size(dt, &es), TRR_OK);
    trr_buffer *buf = NULL;
    cr_assert_eq(trr_buffer_create(ctx, (size_t)(m * k + k * n + m * n) * es, &buf), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 0, dt, m, k, 0, a), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, (size_t)(m * k) * es, dt, k, n, 0, b), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, (size_t)(m * k + k * n) * es, dt, m, n, 0, c), TRR_OK);
    return buf;
}

/* With `forced` on matmul, the product of a and b into c is refused as unsupported with `reason` in its message
 * (NULL: any reason, but one); the override is cleared after. */
static inline void expect_forced_matmul_refused(trr_context *ctx, const trr_config *forced, const trr_tensor *a,
                                                const trr_tensor *b, const trr_tensor *c, const char *reason) {
    cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, forced), TRR_OK, "%s", trr_last_error(ctx));
    cr_expect_eq(trr_matmul(ctx, a, b, c, TRR_EPI_NONE, 0.0f, 0), TRR_ERR_UNSUPPORTED, "want: %s",
                 reason ? reason : "a refusal");
    if (reason)
        cr_expect(strstr(trr_last_error(ctx), reason) != NULL, "'%s' does not say '%s'", trr_last_error(ctx), reason);
    else
        cr_expect_str_neq(trr_last_error(ctx), "", "refused without a reason");
    cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, NULL), TRR_OK);
}

#endif
