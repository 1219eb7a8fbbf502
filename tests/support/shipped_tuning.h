/* The tuning tables shipped in tuning/ (embedded in the library, core/tune_lookup.c), parsed, for the tests that
 * check what they hold. */
#ifndef TRR_TEST_SHIPPED_TUNING_H
#define TRR_TEST_SHIPPED_TUNING_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "embedded.h"
#include "tune.h"

extern const trr_embedded_file trr_shipped_tuning[];
extern const size_t trr_shipped_tuning_count;

/* Every shipped entry, parsed from the embedded files (malloc'd; free() it). */
static inline trr_tune_entry *shipped_entries(int *out_count) {
    trr_tune_entry *all = NULL;
    int total = 0;
    for (size_t f = 0; f < trr_shipped_tuning_count; f++) {
        trr_tune_entry *e = NULL;
        int n = 0;
        char why[320];
        cr_assert_eq(trr_tune_db_parse((const char *)trr_shipped_tuning[f].data, &e, &n, why, sizeof why), TRR_OK,
                     "tuning/%s: %s", trr_shipped_tuning[f].name, why);
        cr_assert_gt(n, 0, "tuning/%s holds no entry", trr_shipped_tuning[f].name);
        all = realloc(all, (size_t)(total + n) * sizeof *all);
        cr_assert_not_null(all);
        memcpy(all + total, e, (size_t)n * sizeof *e);
        total += n;
        free(e);
    }
    *out_count = total;
    return all;
}

/* A call of entry e's key at the shape it was tuned at (no buffers; packed operands). */
static inline trr_call shipped_call_of(const trr_tune_entry *e) {
    trr_call call;
    memset(&call, 0, sizeof call);
    call.op = e->key.op;
    call.x.dtype = e->key.in_dtype;
    call.z.dtype = e->key.out_dtype;
    call.trans_a = e->key.trans_a;
    call.trans_b = e->key.trans_b;
    call.allow_tf32 = e->key.tf32;
    call.rows = e->shape[0];
    call.cols = e->shape[1];
    call.k = e->shape[2];
    return call;
}

#endif
