/* A call's config is resolved once: the backend's choose_config and check_config run exactly once per call,
 * whether the config comes from the heuristic, a tuning-database entry or an override. The CPU backend's table
 * is wrapped in a copy whose two hooks count their calls. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "backend.h"
#include "tune_db_fixture.h"
#include "tune.h"
#include "validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const trr_backend *real;
static trr_backend counting;
static int n_choose, n_check;

static void count_choose(trr_context *ctx, trr_call *call) {
    n_choose++;
    real->choose_config(ctx, call);
}

static trr_status count_check(trr_context *ctx, const trr_call *call) {
    n_check++;
    return real->check_config(ctx, call);
}

TestSuite(resolve, .init = tune_db_setup, .fini = tune_db_teardown);

typedef struct fixture {
    trr_context *ctx;
    trr_buffer *a, *b, *c;
    trr_tensor ta, tb, tc;
} fixture;

enum { M = 24, N = 40, K = 16 };

static void open_counting(fixture *f) {
    memset(f, 0, sizeof *f);
    cr_assert_eq(trr_context_create("cpu", &f->ctx), TRR_OK);
    real = f->ctx->backend;
    cr_assert_not_null(real->choose_config);
    cr_assert_not_null(real->check_config);
    counting = *real;
    counting.choose_config = count_choose;
    counting.check_config = count_check;
    f->ctx->backend = &counting;
    cr_assert_eq(trr_buffer_create(f->ctx, M * K * 4, &f->a), TRR_OK);
    cr_assert_eq(trr_buffer_create(f->ctx, K * N * 4, &f->b), TRR_OK);
    cr_assert_eq(trr_buffer_create(f->ctx, M * N * 4, &f->c), TRR_OK);
    /* random inputs: the counts must not depend on what the data is */
    float va[M * K], vb[K * N];
    srand(11);
    for (int i = 0; i < M * K; i++) va[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < K * N; i++) vb[i] = (float)rand() / RAND_MAX - 0.5f;
    trr_buffer_write(f->ctx, f->a, 0, va, sizeof va);
    trr_buffer_write(f->ctx, f->b, 0, vb, sizeof vb);
    trr_tensor_2d(f->a, 0, TRR_F32, M, K, 0, &f->ta);
    trr_tensor_2d(f->b, 0, TRR_F32, K, N, 0, &f->tb);
    trr_tensor_2d(f->c, 0, TRR_F32, M, N, 0, &f->tc);
}

static void close_counting(fixture *f) {
    trr_buffer_destroy(f->a);
    trr_buffer_destroy(f->b);
    trr_buffer_destroy(f->c);
    f->ctx->backend = real;
    trr_context_destroy(f->ctx);
}

/* Runs one matmul and returns the config it ran with; asserts each hook ran `expect` times. */
static trr_config run_counted(fixture *f, int expect_choose, int expect_check) {
    n_choose = n_check = 0;
    cr_assert_eq(trr_matmul(f->ctx, &f->ta, &f->tb, &f->tc, TRR_EPI_NONE, 0, 0), TRR_OK, "%s",
                 trr_last_error(f->ctx));
    cr_assert_eq(n_choose, expect_choose, "choose_config ran %d times", n_choose);
    cr_assert_eq(n_check, expect_check, "check_config ran %d times", n_check);
    trr_config c;
    trr_config_last(f->ctx, &c);
    return c;
}

/* The entry a tuning run would store for this call, with cfg as the tuned config. */
static void store_entry(fixture *f, const trr_config *cfg) {
    trr_call call;
    int empty = 0;
    cr_assert_eq(trr_call_build(f->ctx, TRR_OP_MATMUL, &f->ta, &f->tb, &f->tc, TRR_EPI_NONE, 0, 0, &call, &empty),
                 TRR_OK);
    trr_tune_entry e;
    memset(&e, 0, sizeof e);
    trr_tune_key_of(f->ctx, &call, &e.key);
    trr_tune_shape_of(&call, e.shape);
    e.config = *cfg;
    e.default_config = *cfg;
    e.ms = e.default_ms = 1.0;
    e.candidates = 1;
    cr_assert_eq(trr_tune_db_store(f->ctx, NULL, &e, 1, NULL, 0), TRR_OK, "%s", trr_last_error(f->ctx));
}

static const trr_config tuned = {.block_m = 8, .block_n = 16, .block_k = 8, .group_m = 2, .threads = 1,
                                 .stages = 1, .vector_width = 8, .split_k = 1, .variant = TRR_VARIANT_SIMT};

Test(resolve, heuristic_once_per_call) {
    fixture f;
    open_counting(&f);
    for (int i = 0; i < 3; i++) run_counted(&f, 1, 1);
    close_counting(&f);
}

Test(resolve, database_hit_once_per_call) {
    fixture f;
    open_counting(&f);
    store_entry(&f, &tuned);
    for (int i = 0; i < 3; i++) {
        trr_config ran = run_counted(&f, 1, 1);
        cr_assert_eq(ran.block_m, tuned.block_m);
        cr_assert_eq(ran.block_n, tuned.block_n);
        cr_assert_eq(ran.block_k, tuned.block_k);
    }
    close_counting(&f);
}

Test(resolve, override_once_per_call) {
    fixture f;
    open_counting(&f);
    store_entry(&f, &tuned); /* the override wins over it */
    const trr_config mine = {.block_m = 4, .block_n = 8, .variant = TRR_VARIANT_SIMT};
    cr_assert_eq(trr_config_override(f.ctx, TRR_OP_MATMUL, &mine), TRR_OK);
    for (int i = 0; i < 3; i++) {
        trr_config ran = run_counted(&f, 1, 1);
        cr_assert_eq(ran.block_m, 4);
        cr_assert_eq(ran.block_n, 8);
    }
    /* a variant-only override takes the database's tiles: still one resolve */
    const trr_config simt = {.variant = TRR_VARIANT_SIMT};
    cr_assert_eq(trr_config_override(f.ctx, TRR_OP_MATMUL, &simt), TRR_OK);
    trr_config ran = run_counted(&f, 1, 1);
    cr_assert_eq(ran.block_m, tuned.block_m);
    close_counting(&f);
}

/* A rejected entry costs one more round (the heuristic's), and the call still succeeds with no error left. */
Test(resolve, rejected_entry_then_heuristic, .init = cr_redirect_stderr) {
    fixture f;
    open_counting(&f);
    trr_config bad = tuned;
    bad.split_k = 33; /* past the most slices a call may have */
    store_entry(&f, &bad);
    trr_config ran = run_counted(&f, 2, 2);
    cr_assert_eq(ran.split_k, 1);
    cr_assert_str_empty(trr_last_error(f.ctx));
    close_counting(&f);
    fflush(stderr);
    cr_assert_stderr_neq_str("");
}

/* A rejected override is the call's error: one check, nothing runs, the reason is on the context. */
Test(resolve, rejected_override_fails_the_call) {
    fixture f;
    open_counting(&f);
    const trr_config bad = {.split_k = 33};
    cr_assert_eq(trr_config_override(f.ctx, TRR_OP_MATMUL, &bad), TRR_OK);
    n_choose = n_check = 0;
    cr_assert_eq(trr_matmul(f.ctx, &f.ta, &f.tb, &f.tc, TRR_EPI_NONE, 0, 0), TRR_ERR_UNSUPPORTED);
    cr_assert_eq(n_choose, 1);
    cr_assert_eq(n_check, 1);
    cr_assert(strstr(trr_last_error(f.ctx), "split_k") != NULL, "%s", trr_last_error(f.ctx));
    close_counting(&f);
}
