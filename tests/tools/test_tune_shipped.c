/* The tuning tables shipped in tuning/ (embedded in the library, core/tune_lookup.c): they parse, a fresh
 * install's lookup hits them for the device they were tuned on whatever its driver version, the user's own
 * database wins over them, and a device they do not name gets nothing from them. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include "shipped_tuning.h"
#include "tune_db_fixture.h"
#include "tune.h"
#include "validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(tune_shipped, .init = tune_db_setup, .fini = tune_db_teardown);

static int same(const trr_config *a, const trr_config *b) { return memcmp(a, b, sizeof *a) == 0; }

/* A CPU context renamed as entry e's backend and device, with another driver (the lookup reads nothing else of
 * it); renamed_done puts the CPU backend and its device back before the context is destroyed. */
typedef struct renamed_ctx {
    trr_context *ctx;
    const trr_backend *cpu;
    trr_backend backend;
    trr_device_info info;
} renamed_ctx;

static void renamed_open(renamed_ctx *r, const trr_tune_entry *e, const char *driver) {
    cr_assert_eq(trr_context_create("cpu", &r->ctx), TRR_OK);
    r->cpu = r->ctx->backend;
    r->backend = *r->cpu;
    r->backend.name = e->key.backend;
    r->ctx->backend = &r->backend;
    r->info = r->ctx->info;
    snprintf(r->ctx->info.name, sizeof r->ctx->info.name, "%s", e->key.device);
    snprintf(r->ctx->info.driver, sizeof r->ctx->info.driver, "%s", driver);
}

static void renamed_done(renamed_ctx *r) {
    r->ctx->backend = r->cpu;
    r->ctx->info = r->info;
    trr_context_destroy(r->ctx);
}

Test(tune_shipped, tables_parse_and_are_embedded) {
    cr_assert_gt(trr_shipped_tuning_count, 0, "the library carries no tuning table");
    int n = 0;
    trr_tune_entry *all = shipped_entries(&n);
    cr_assert_eq(n, trr_tune_shipped_count());
    for (int i = 0; i < n; i++) {
        cr_assert(all[i].key.op != TRR_OP_LIMIT, "entry %d names an op the library does not define", i);
        cr_assert_gt(all[i].ms, 0.0);
        cr_assert_leq(all[i].ms, all[i].default_ms * 1.0001, "entry %d is slower than the default it replaces", i);
    }
    free(all);
}

/* Each entry answers its own key under any driver version (a fresh install's driver is not the tuning
 * machine's); a key of the same device one bucket away gets nothing from the tables (a shipped entry serves
 * its own bucket only: the heuristic keeps every other shape), unless the tables hold that bucket too. */
Test(tune_shipped, every_entry_is_found_for_any_driver) {
    int n = 0;
    trr_tune_entry *all = shipped_entries(&n);
    for (int i = 0; i < n; i++) {
        trr_tune_key key = all[i].key;
        snprintf(key.driver, sizeof key.driver, "%s", "a driver no table was made with");
        trr_config got;
        char where[400] = "";
        cr_assert_eq(trr_tune_shipped_find(&key, 0, &got, where, sizeof where), 1, "entry %d", i);
        cr_assert(strstr(where, "shipped tuning table"), "%s", where);
        /* another entry of the same bucket and key may come first in the table: the first one is the answer */
        int first = i;
        for (int j = 0; j < i; j++)
            if (!memcmp(all[j].key.bucket, all[i].key.bucket, sizeof all[i].key.bucket) &&
                !strcmp(all[j].key.backend, all[i].key.backend) && !strcmp(all[j].key.device, all[i].key.device) &&
                all[j].key.op == all[i].key.op && all[j].key.in_dtype == all[i].key.in_dtype &&
                all[j].key.out_dtype == all[i].key.out_dtype && all[j].key.trans_a == all[i].key.trans_a &&
                all[j].key.trans_b == all[i].key.trans_b && all[j].key.tf32 == all[i].key.tf32) {
                first = j;
                break;
            }
        cr_assert(same(&got, &all[first].config), "entry %d", i);
        key.bucket[0] *= 2;
        int held = 0;
        for (int j = 0; j < n; j++)
            held |= !memcmp(all[j].key.bucket, key.bucket, sizeof key.bucket) && all[j].key.op == key.op &&
                    !strcmp(all[j].key.device, key.device) && !strcmp(all[j].key.backend, key.backend);
        if (!held)
            cr_assert_eq(trr_tune_shipped_find(&key, 0, &got, NULL, 0), 0, "entry %d's config reached another bucket", i);
    }
    free(all);
}

/* Through trr_tune_lookup, as every call resolves its config: a context whose backend and device are the first
 * entry's (a CPU context renamed: the lookup reads nothing else of it) finds the entry with no user database,
 * and the user's own entry for the same key wins once there is one. */
Test(tune_shipped, lookup_hits_the_table_and_the_user_database_wins) {
    int n = 0;
    trr_tune_entry *all = shipped_entries(&n);
    const trr_tune_entry *e = &all[0];

    renamed_ctx r;
    renamed_open(&r, e, "a driver no table was made with");
    trr_context *ctx = r.ctx;
    trr_call call = shipped_call_of(e);

    trr_config got;
    char where[400] = "";
    cr_assert_eq(trr_tune_lookup(ctx, &call, 0, &got, where, sizeof where), 1);
    cr_assert(same(&got, &e->config));
    cr_assert(strstr(where, "shipped tuning table"), "%s", where);

    /* TRIREME_TUNE_SHIPPED=0 leaves the tables aside: the heuristic's turn */
    setenv("TRIREME_TUNE_SHIPPED", "0", 1);
    trr_tune_reset();
    cr_assert_eq(trr_tune_lookup(ctx, &call, 0, &got, NULL, 0), 0);
    unsetenv("TRIREME_TUNE_SHIPPED");
    trr_tune_reset();

    /* the user's database: an entry for the same key on this driver, with another config */
    trr_tune_entry mine = *e;
    trr_tune_key_of(ctx, &call, &mine.key);
    mine.config.stages = e->config.stages + 1;
    cr_assert_eq(trr_tune_db_store(ctx, NULL, &mine, 1, NULL, 0), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_tune_lookup(ctx, &call, 0, &got, where, sizeof where), 1);
    cr_assert(same(&got, &mine.config), "the user's database did not win over the shipped table");
    cr_assert(strstr(where, db_path), "%s", where);

    /* another device: nothing from the shipped tables (nor from the user's entry, made for the renamed one) */
    snprintf(ctx->info.name, sizeof ctx->info.name, "%s", "a device no table names");
    cr_assert_eq(trr_tune_lookup(ctx, &call, 0, &got, NULL, 0), 0);

    renamed_done(&r);
    free(all);
}

/* The user's entry of another bucket (a stand-in, tuned at another shape) does not displace the shipped entry of
 * the call's own bucket; where no shipped entry holds the call's bucket, the stand-in serves it (a matmul's K split
 * left to the backend). */
Test(tune_shipped, a_stand_in_does_not_displace_a_shipped_entry) {
    int n = 0;
    trr_tune_entry *all = shipped_entries(&n);
    const trr_tune_entry *e = &all[0];

    renamed_ctx r;
    renamed_open(&r, e, "the user's driver");
    trr_context *ctx = r.ctx;
    trr_call call = shipped_call_of(e);

    /* the user's entry four times as wide: another bucket */
    trr_call wide = call;
    wide.cols = 4 * call.cols;
    trr_tune_entry mine = *e;
    trr_tune_key_of(ctx, &wide, &mine.key);
    cr_assert_neq(mine.key.bucket[1], e->key.bucket[1]);
    mine.config.stages = e->config.stages + 1;
    cr_assert_eq(trr_tune_db_store(ctx, NULL, &mine, 1, NULL, 0), TRR_OK, "%s", trr_last_error(ctx));

    trr_config got;
    char where[400] = "";
    cr_assert_eq(trr_tune_lookup(ctx, &call, 0, &got, where, sizeof where), 1);
    cr_assert(same(&got, &e->config), "the user's stand-in displaced the shipped entry of the call's bucket");
    cr_assert(strstr(where, "shipped tuning table"), "%s", where);
    /* its own bucket, and a bucket neither holds: the user's entry */
    cr_assert_eq(trr_tune_lookup(ctx, &wide, 0, &got, where, sizeof where), 1);
    cr_assert(same(&got, &mine.config), "%s", where);
    trr_call wider = wide;
    wider.cols = 2 * wide.cols;
    int held = 0;
    trr_tune_key wk;
    trr_tune_key_of(ctx, &wider, &wk);
    for (int j = 0; j < n; j++) held |= !memcmp(all[j].key.bucket, wk.bucket, sizeof wk.bucket);
    if (!held) {
        cr_assert_eq(trr_tune_lookup(ctx, &wider, 0, &got, where, sizeof where), 1);
        trr_config stand_in = mine.config;
        if (e->key.op == TRR_OP_MATMUL) stand_in.split_k = 0; /* a matmul stand-in leaves the K split to the backend */
        cr_assert(same(&got, &stand_in), "%s", where);
        cr_assert(strstr(where, db_path), "%s", where);
    }

    renamed_done(&r);
    free(all);
}
