/* The conformance checker's verdict on one output, for tests that build the case, the call and the output's
 * bytes by hand (harness/conformance_check.h). */
#ifndef TRR_TEST_CONF_VERDICT_H
#define TRR_TEST_CONF_VERDICT_H

#include "conformance_check.h"

#include <criterion/criterion.h>
#include <string.h>

/* before and after: the output buffer's bytes as poisoned and as returned; ref: the reference's packed result */
static inline trr_conf_result conf_verdict(const trr_case *tc, const trr_call *call, const uint8_t *before,
                                           const uint8_t *after, size_t bytes, const double *ref) {
    trr_conf_result res;
    memset(&res, 0, sizeof res);
    const trr_conf_check_input in = {.tcase = tc, .call = call, .before = before, .after = after, .bytes = bytes,
                                     .ref = ref};
    cr_assert_eq(trr_conf_check(&in, &res), TRR_OK);
    return res;
}

/* The verdict on a fixture f with members tc, call, before, after (an array: the whole buffer) and ref. */
#define CONF_VERDICT_OF(f) conf_verdict(&(f)->tc, &(f)->call, (f)->before, (f)->after, sizeof(f)->after, (f)->ref)

#endif
