/* A CPU context with an f32 matmul call of its own (buffers zeroed) and what the tuning-database tests do with it:
 * entries for the call (at its own bucket or another), the database file written by hand, and the config a
 * call ran with through the public API. With tune_db_fixture.h's database of the test's own. */
#ifndef TRR_TEST_TUNE_MATMUL_FIXTURE_H
#define TRR_TEST_TUNE_MATMUL_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tune.h"
#include "tune_db_fixture.h"
#include "validate.h"

typedef struct mm {
    trr_context *ctx;
    trr_buffer *a, *b, *c;
    trr_tensor ta, tb, tc;
    trr_call call;
} mm;

static inline void mm_open(mm *m, int64_t M, int64_t N, int64_t K) {
    memset(m, 0, sizeof *m);
    cr_assert_eq(trr_context_create("cpu", &m->ctx), TRR_OK);
    cr_assert_eq(trr_buffer_create(m->ctx, (size_t)(M * K) * 4, &m->a), TRR_OK);
    cr_assert_eq(trr_buffer_create(m->ctx, (size_t)(K * N) * 4, &m->b), TRR_OK);
    cr_assert_eq(trr_buffer_create(m->ctx, (size_t)(M * N) * 4, &m->c), TRR_OK);
    trr_buffer_fill(m->ctx, m->a, 0, (size_t)(M * K) * 4, 0);
    trr_buffer_fill(m->ctx, m->b, 0, (size_t)(K * N) * 4, 0);
    trr_tensor_2d(m->a, 0, TRR_F32, M, K, 0, &m->ta);
    trr_tensor_2d(m->b, 0, TRR_F32, K, N, 0, &m->tb);
    trr_tensor_2d(m->c, 0, TRR_F32, M, N, 0, &m->tc);
    int empty = 0;
    cr_assert_eq(trr_call_build(m->ctx, TRR_OP_MATMUL, &m->ta, &m->tb, &m->tc, TRR_EPI_NONE, 0, 0, &m->call, &empty),
                 TRR_OK);
}

static inline void mm_close(mm *m) {
    trr_buffer_destroy(m->a);
    trr_buffer_destroy(m->b);
    trr_buffer_destroy(m->c);
    trr_context_destroy(m->ctx);
}

static const trr_config tuned_cfg = {.block_m = 16, .block_n = 32, .block_k = 64, .group_m = 4, .threads = 1,
                                     .stages = 1, .vector_width = 8, .split_k = 1, .variant = TRR_VARIANT_SIMT};

/* What a stand-in (the entry of another bucket) gives a matmul: its config with the K split left to the backend. */
static inline trr_config stand_in(trr_config c) {
    c.split_k = 0;
    return c;
}

static inline trr_tune_entry entry_for(const mm *m, const trr_config *cfg) {
    trr_tune_entry e;
    memset(&e, 0, sizeof e);
    trr_tune_key_of(m->ctx, &m->call, &e.key);
    trr_tune_shape_of(&m->call, e.shape);
    e.config = *cfg;
    e.ms = 1.0;
    trr_tune_default_config(m->ctx, &m->call, &e.default_config);
    e.default_ms = 2.0;
    e.candidates = 3;
    return e;
}

static inline void write_text(const char *text) {
    FILE *f = fopen(db_path, "wb");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    trr_tune_reset();
}

static inline int same(const trr_config *a, const trr_config *b) { return memcmp(a, b, sizeof *a) == 0; }

/* The config the matmul ran with (through the public API, so the whole resolve path is exercised). */
static inline trr_config run_matmul(mm *m) {
    cr_assert_eq(trr_matmul(m->ctx, &m->ta, &m->tb, &m->tc, TRR_EPI_NONE, 0, 0), TRR_OK, "%s",
                 trr_last_error(m->ctx));
    trr_config c;
    trr_config_last(m->ctx, &c);
    return c;
}

static inline trr_tune_entry entry_at(const mm *m, const trr_config *cfg, int64_t b0, int64_t b1, int64_t b2) {
    trr_tune_entry e = entry_for(m, cfg);
    e.key.bucket[0] = b0, e.key.bucket[1] = b1, e.key.bucket[2] = b2;
    return e;
}

#endif
