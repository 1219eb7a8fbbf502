/* The tuning database and the tuner on the CPU backend: round trip through trr_tune_lookup, damaged and stale
 * files ignored without a crash, an override beating the database, real tuning runs that pick checked configs
 * and write the file, and each backend's tuning space. The buckets are test_tune_buckets.c's. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "config_fields.h"
#include "tune_matmul_fixture.h"
#include "tune_space.h"
#include "tuner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(tune, .init = tune_db_setup, .fini = tune_db_teardown);

Test(tune, round_trip_through_lookup) {
    mm m;
    mm_open(&m, 40, 33, 20);
    trr_config untuned = run_matmul(&m);
    cr_assert(!same(&untuned, &tuned_cfg), "pick a tuned config that differs from the heuristic");
    trr_tune_entry e = entry_for(&m, &tuned_cfg);
    cr_assert_eq(trr_tune_db_store(m.ctx, NULL, &e, 1, NULL, 0), TRR_OK, "%s", trr_last_error(m.ctx));
    trr_config got;
    cr_assert_eq(trr_tune_lookup(m.ctx, &m.call, 0, &got, NULL, 0), 1);
    cr_assert(same(&got, &tuned_cfg));
    trr_config ran = run_matmul(&m);
    cr_assert(same(&ran, &tuned_cfg), "the call did not use the database entry");

    /* the same bucket serves a nearby shape; another bucket with no entry of its own takes the nearest one's */
    mm near, far;
    mm_open(&near, 35, 36, 17); /* buckets 40, 40, 20: as 40x33x20 */
    cr_assert_eq(trr_tune_lookup(near.ctx, &near.call, 0, &got, NULL, 0), 1);
    cr_assert(same(&got, &tuned_cfg), "the entry of its own bucket, split and all");
    mm_open(&far, 100, 33, 20);
    cr_assert_eq(trr_tune_lookup(far.ctx, &far.call, 0, &got, NULL, 0), 1);
    const trr_config want_far = stand_in(tuned_cfg);
    cr_assert(same(&got, &want_far));
    mm_close(&near);
    mm_close(&far);

    /* the file parses back to what was written */
    trr_tune_entry *all = NULL;
    int n = 0;
    char why[256];
    cr_assert_eq(trr_tune_db_load(db_path, &all, &n, why, sizeof why), TRR_OK, "%s", why);
    cr_assert_eq(n, 1);
    cr_assert(same(&all[0].config, &tuned_cfg));
    cr_assert_eq(all[0].default_ms, 2.0);
    free(all);
    mm_close(&m);
}

Test(tune, store_merges_entries) {
    mm m;
    mm_open(&m, 40, 33, 20);
    trr_tune_entry e = entry_for(&m, &tuned_cfg);
    cr_assert_eq(trr_tune_db_store(m.ctx, NULL, &e, 1, NULL, 0), TRR_OK);
    trr_tune_entry e2 = e;
    e2.key.bucket[0] = 1024;
    cr_assert_eq(trr_tune_db_store(m.ctx, NULL, &e2, 1, NULL, 0), TRR_OK);
    e.config.block_m = 8; /* same key: replaces */
    cr_assert_eq(trr_tune_db_store(m.ctx, NULL, &e, 1, NULL, 0), TRR_OK);
    trr_tune_entry *all = NULL;
    int n = 0;
    cr_assert_eq(trr_tune_db_load(db_path, &all, &n, NULL, 0), TRR_OK);
    cr_assert_eq(n, 2);
    cr_assert_eq(all[0].config.block_m, 8);
    free(all);
    mm_close(&m);
}

Test(tune, missing_database_is_a_miss) {
    mm m;
    mm_open(&m, 8, 8, 8);
    trr_config got;
    cr_assert_eq(trr_tune_lookup(m.ctx, &m.call, 0, &got, NULL, 0), 0);
    run_matmul(&m);
    mm_close(&m);
}

/* Damaged files: every one is ignored (the call runs with the heuristic) and nothing crashes. */
Test(tune, corrupt_files_are_ignored, .init = cr_redirect_stderr) {
    mm m;
    mm_open(&m, 40, 33, 20);
    trr_config untuned = run_matmul(&m);
    trr_tune_entry e = entry_for(&m, &tuned_cfg);
    char *good = NULL;
    cr_assert_eq(trr_tune_db_format(&e, 1, &good), TRR_OK);
    const size_t len = strlen(good);

    char *variants[16];
    int nv = 0;
    variants[nv++] = strdup("this is not json {{{");
    variants[nv++] = strdup("");
    variants[nv++] = strndup(good, len / 2); /* truncated */
    variants[nv++] = strdup("[1, 2, 3]");
    variants[nv++] = strdup("{\"version\": 1, \"entries\": 7}");
    variants[nv++] = strdup("{\"version\": 99, \"entries\": []}");
    /* wrong field types and out-of-range values, each in an otherwise good file */
    const char *edits[][2] = {
        {"\"block_m\":\t16", "\"block_m\":\t\"16\""},
        {"\"block_m\":\t16", "\"block_m\":\t1e9"},
        {"\"block_m\":\t16", "\"block_m\":\t-4"},
        {"\"trans_a\":\tfalse", "\"trans_a\":\t0"},
        {"\"op\":\t\"matmul\"", "\"op\":\t\"conv\""},
        {"\"ms\":\t1", "\"ms\":\t\"fast\""},
        {"\"bucket\":\t[40, 40, 20]", "\"bucket\":\t[36, 40, 20]"}, /* 36 is no bucket: 33 to 40 are 40's */
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        const char *at = strstr(good, edits[i][0]);
        cr_assert_not_null(at, "edit %zu: '%s' not in the formatted file", i, edits[i][0]);
        size_t pre = (size_t)(at - good), old = strlen(edits[i][0]), neu = strlen(edits[i][1]);
        char *v = malloc(len - old + neu + 1);
        memcpy(v, good, pre);
        memcpy(v + pre, edits[i][1], neu);
        strcpy(v + pre + neu, at + old);
        variants[nv++] = v;
    }
    for (int i = 0; i < nv; i++) {
        write_text(variants[i]);
        trr_config got;
        cr_assert_eq(trr_tune_lookup(m.ctx, &m.call, 0, &got, NULL, 0), 0, "variant %d was not ignored:\n%s", i, variants[i]);
        trr_config ran = run_matmul(&m);
        cr_assert(same(&ran, &untuned), "variant %d changed the config", i);
        free(variants[i]);
    }
    /* the good file itself is used, so the misses above were the damage's doing */
    write_text(good);
    trr_config got;
    cr_assert_eq(trr_tune_lookup(m.ctx, &m.call, 0, &got, NULL, 0), 1);
    free(good);
    mm_close(&m);
    fflush(stderr);
}

Test(tune, store_moves_a_corrupt_file_aside) {
    mm m;
    mm_open(&m, 40, 33, 20);
    write_text("garbage");
    trr_tune_entry e = entry_for(&m, &tuned_cfg);
    char note[512];
    cr_assert_eq(trr_tune_db_store(m.ctx, NULL, &e, 1, note, sizeof note), TRR_OK);
    cr_assert(strstr(note, ".corrupt") != NULL, "note: %s", note);
    char aside[400];
    snprintf(aside, sizeof aside, "%s.corrupt", db_path);
    cr_assert_eq(access(aside, F_OK), 0);
    trr_config got;
    cr_assert_eq(trr_tune_lookup(m.ctx, &m.call, 0, &got, NULL, 0), 1);
    mm_close(&m);
}

Test(tune, stale_driver_is_ignored, .init = cr_redirect_stderr) {
    mm m;
    mm_open(&m, 40, 33, 20);
    trr_tune_entry e = entry_for(&m, &tuned_cfg);
    snprintf(e.key.driver, sizeof e.key.driver, "some other driver 0.0");
    cr_assert_eq(trr_tune_db_store(m.ctx, NULL, &e, 1, NULL, 0), TRR_OK);
    trr_config got;
    cr_assert_eq(trr_tune_lookup(m.ctx, &m.call, 0, &got, NULL, 0), 0);
    trr_config ran = run_matmul(&m);
    cr_assert(!same(&ran, &tuned_cfg));
    mm_close(&m);
    fflush(stderr);
    cr_assert_stderr_neq_str("", "the stale database was ignored without a warning");
}

Test(tune, rejected_entry_falls_back, .init = cr_redirect_stderr) {
    mm m;
    mm_open(&m, 40, 33, 20);
    trr_config bad = tuned_cfg;
    bad.split_k = 33; /* past the most slices a call may have */
    trr_tune_entry e = entry_for(&m, &bad);
    cr_assert_eq(trr_tune_db_store(m.ctx, NULL, &e, 1, NULL, 0), TRR_OK);
    /* the lookup finds it; the one resolve step asks the backend, which rejects it, and the call runs on the
     * heuristic's config with the reason in the debug output, not as the context's error */
    trr_config got;
    cr_assert_eq(trr_tune_lookup(m.ctx, &m.call, 0, &got, NULL, 0), 1);
    trr_config ran = run_matmul(&m);
    cr_assert_eq(ran.split_k, 1);
    cr_assert_str_empty(trr_last_error(m.ctx));
    mm_close(&m);
    fflush(stderr);
    cr_assert_stderr_neq_str("", "the rejected entry was skipped without a word");
}

Test(tune, override_beats_database) {
    mm m;
    mm_open(&m, 40, 33, 20);
    trr_tune_entry e = entry_for(&m, &tuned_cfg);
    cr_assert_eq(trr_tune_db_store(m.ctx, NULL, &e, 1, NULL, 0), TRR_OK);
    trr_config mine = {.block_m = 8, .block_n = 16, .block_k = 32, .group_m = 2, .threads = 1, .stages = 1,
                       .vector_width = 8, .split_k = 1, .variant = TRR_VARIANT_SIMT};
    cr_assert_eq(trr_config_override(m.ctx, TRR_OP_MATMUL, &mine), TRR_OK);
    trr_config ran = run_matmul(&m);
    cr_assert(same(&ran, &mine));
    cr_assert_eq(trr_config_override(m.ctx, TRR_OP_MATMUL, NULL), TRR_OK);
    ran = run_matmul(&m);
    cr_assert(same(&ran, &tuned_cfg));
    mm_close(&m);
}

Test(tune, config_text) {
    trr_config c;
    cr_assert_eq(trr_config_parse("64,128,32,8,256,3,4,1", &c), TRR_OK);
    cr_assert_eq(c.block_m, 64);
    cr_assert_eq(c.threads, 256);
    cr_assert_eq(c.split_k, 1);
    cr_assert_eq(trr_config_parse("64,64,,,256", &c), TRR_OK);
    cr_assert_eq(c.block_k, 0);
    cr_assert_eq(c.threads, 256);
    cr_assert_eq(c.stages, 0);
    char text[64];
    trr_config_format(&c, text, sizeof text);
    cr_assert_str_eq(text, "block_m=64,block_n=64,threads=256");
    cr_assert_neq(trr_config_parse("1,2,3,4,5,6,7,8,9", &c), TRR_OK);
    cr_assert_neq(trr_config_parse("64,x", &c), TRR_OK);
    cr_assert_neq(trr_config_parse("-1", &c), TRR_OK);
    cr_assert_neq(trr_config_parse("100000", &c), TRR_OK);
}

Test(tune, tuner_on_cpu_picks_checked_configs) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK);
    const trr_tune_job jobs[] = {
        {.op = TRR_OP_MATMUL, .in_dtype = TRR_F32, .out_dtype = TRR_F32, .m = 48, .n = 40, .k = 24},
        {.op = TRR_OP_MATMUL, .in_dtype = TRR_F16, .out_dtype = TRR_F32, .m = 17, .n = 33, .k = 9, .trans_b = 1},
        {.op = TRR_OP_SOFTMAX, .in_dtype = TRR_F32, .out_dtype = TRR_F32, .rows = 16, .cols = 100},
        /* packed rows of an element-wise op fold into one long row: the reference holds all of them */
        {.op = TRR_OP_SILU, .in_dtype = TRR_F32, .out_dtype = TRR_F32, .rows = 3, .cols = 4099},
    };
    const int n_jobs = (int)(sizeof jobs / sizeof jobs[0]);
    trr_tune_options opt = {.reps = 3, .warmup = 1, .seed = 7};
    for (int i = 0; i < n_jobs; i++) {
        trr_tune_outcome out;
        cr_assert_eq(trr_tune_run(ctx, &jobs[i], &opt, &out), TRR_OK, "job %d: %s", i, trr_last_error(ctx));
        cr_assert_gt(out.timed, 0);
        cr_assert_eq(out.failed, 0, "job %d: %s", i, out.first_failure);
        cr_assert_gt(out.entry.ms, 0);
        cr_assert_gt(out.entry.default_ms, 0);
        cr_assert_str_eq(out.entry.key.backend, "cpu");
        cr_assert_eq(trr_tune_db_store(ctx, NULL, &out.entry, 1, NULL, 0), TRR_OK, "%s", trr_last_error(ctx));
    }
    trr_tune_entry *all = NULL;
    int n = 0;
    char why[256];
    cr_assert_eq(trr_tune_db_load(db_path, &all, &n, why, sizeof why), TRR_OK, "%s", why);
    cr_assert_eq(n, n_jobs);
    free(all);

    /* a later call of the first job's shape runs with the tuned config */
    mm m;
    mm_open(&m, 48, 40, 24);
    trr_tune_entry *db = NULL;
    trr_tune_db_load(db_path, &db, &n, NULL, 0);
    trr_config ran = run_matmul(&m);
    cr_assert(same(&ran, &db[0].config));
    free(db);
    mm_close(&m);

    /* --only-config: that config alone, kept when it passes */
    trr_config only = {.block_m = 16, .block_n = 16, .block_k = 8};
    opt.only_config = &only;
    trr_tune_outcome out;
    cr_assert_eq(trr_tune_run(ctx, &jobs[0], &opt, &out), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(out.entry.config.block_m, 16);
    cr_assert_eq(out.entry.config.block_k, 8);
    cr_assert_eq(out.timed, 2);
    /* the override the tuner used is gone again */
    cr_assert_eq(ctx->has_override[TRR_OP_MATMUL], 0);
    trr_context_destroy(ctx);
}

Test(tune, space_drops_with_reasons) {
    mm m;
    mm_open(&m, 8, 8, 8);
    trr_tune_candidate *cand = calloc(TRR_TUNE_MAX_CANDIDATES, sizeof *cand);
    int n = 0;
    cr_assert_eq(trr_tune_space(m.ctx, &m.call, cand, TRR_TUNE_MAX_CANDIDATES, &n), TRR_OK);
    cr_assert_gt(n, 0);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (!cand[i].dropped) {
            kept++;
            cr_assert(trr_tune_config_runs(m.ctx, &m.call, &cand[i].resolved, NULL, 0));
        } else {
            cr_assert_str_neq(cand[i].reason, "", "candidate %d dropped without a reason", i);
        }
    }
    cr_assert_gt(kept, 0);
    free(cand);
    mm_close(&m);
}

/* ---- files that are not regular files (found by the issue list) ---- */

#include "cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

static int saved_stderr = -1;
static char captured_path[400];

/* stderr into a file until capture_end, which returns what was written (malloc'd). */
static void capture_begin(void) {
    fflush(stderr);
    snprintf(captured_path, sizeof captured_path, "%s/stderr.txt", db_dir);
    int fd = open(captured_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(fd >= 0);
    saved_stderr = dup(2);
    dup2(fd, 2);
    close(fd);
}

static char *capture_end(void) {
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    void *text = NULL;
    size_t size = 0;
    cr_assert_eq(trr_file_read(captured_path, &text, &size), TRR_OK);
    remove(captured_path);
    return text;
}

/* A directory where the database should be is reported as such, not as an allocation failure (from reading its
 * "size"); lookups ignore it with the one-time warning. */
Test(tune, directory_as_database) {
    cr_assert_eq(mkdir(db_path, 0700), 0);
    trr_tune_entry *entries = NULL;
    int n = 0;
    char why[256] = "";
    cr_assert_eq(trr_tune_db_load(db_path, &entries, &n, why, sizeof why), TRR_ERR_IO);
    cr_assert(strstr(why, "is a directory") != NULL, "%s", why);
    cr_assert(strstr(why, "memory") == NULL, "%s", why);
    mm m;
    mm_open(&m, 40, 33, 20);
    capture_begin();
    run_matmul(&m);
    char *err = capture_end();
    cr_assert(strstr(err, "ignoring the tuning database") && strstr(err, "is a directory"), "stderr: %s", err);
    free(err);
    mm_close(&m);
}

/* A FIFO as TRIREME_TUNE_DB must not block the first op call forever (opening one waits for a writer): it is
 * skipped with a warning. The alarm turns a hang into a failure. */
Test(tune, fifo_as_database_does_not_hang) {
    alarm(60);
    cr_assert_eq(mkfifo(db_path, 0600), 0);
    trr_tune_entry *entries = NULL;
    int n = 0;
    char why[256] = "";
    cr_assert_eq(trr_tune_db_load(db_path, &entries, &n, why, sizeof why), TRR_ERR_IO);
    cr_assert(strstr(why, "not a regular file") != NULL, "%s", why);
    mm m;
    mm_open(&m, 40, 33, 20);
    capture_begin();
    run_matmul(&m);
    char *err = capture_end();
    cr_assert(strstr(err, "ignoring the tuning database") && strstr(err, "FIFO"), "stderr: %s", err);
    free(err);
    mm_close(&m);
    alarm(0);
}

static void remove_tree_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[700];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        remove(p);
    }
    closedir(d);
    rmdir(dir);
}

/* Every entry of a compiling backend's kernel cache replaced by a FIFO: opening the device and running an op
 * must neither hang nor fail; each FIFO met is named in a warning. */
static void fifo_kernel_cache(const char *device) {
    char cache[400];
    snprintf(cache, sizeof cache, "%s/cache", db_dir);
    setenv("TRIREME_CACHE_DIR", cache, 1);
    for (int round = 0; round < 2; round++) {
        trr_context *ctx = NULL;
        if (round == 1) capture_begin();
        if (trr_context_create(device, &ctx) != TRR_OK) {
            if (round == 1) free(capture_end());
            cr_log_warn("%s is absent (%s): its kernel cache is not tested", device, trr_last_error(NULL));
            break;
        }
        trr_buffer *b = NULL;
        trr_tensor x, z;
        cr_assert_eq(trr_buffer_create(ctx, 256, &b), TRR_OK);
        cr_assert_eq(trr_buffer_fill(ctx, b, 0, 256, 0), TRR_OK);
        trr_tensor_1d(b, 0, TRR_F32, 16, &x);
        trr_tensor_1d(b, 128, TRR_F32, 16, &z);
        trr_status st = trr_copy(ctx, &x, &z);
        trr_buffer_destroy(b);
        trr_context_destroy(ctx);
        if (round == 1) {
            char *err = capture_end();
            cr_assert_eq(st, TRR_OK, "%s with FIFOs in its cache: %s", device, err);
            cr_assert(strstr(err, "not a regular file") != NULL, "%s: no warning about the FIFOs: %s", device, err);
            free(err);
            break;
        }
        cr_assert_eq(st, TRR_OK);
        /* the first round filled the cache: put a FIFO in place of every file */
        DIR *d = opendir(cache);
        cr_assert_not_null(d);
        struct dirent *e;
        int n = 0;
        char p[700];
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            snprintf(p, sizeof p, "%s/%s", cache, e->d_name);
            remove(p);
            cr_assert_eq(mkfifo(p, 0600), 0);
            n++;
        }
        closedir(d);
        cr_assert_gt(n, 0, "%s wrote no kernel cache into %s", device, cache);
    }
    remove_tree_files(cache);
    unsetenv("TRIREME_CACHE_DIR");
}

Test(tune, fifo_in_kernel_cache_does_not_hang) {
    alarm(300);
    char fifo[400];
    snprintf(fifo, sizeof fifo, "%s/entry", db_dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    void *data = NULL;
    size_t size = 0;
    capture_begin();
    trr_status st = trr_file_read(fifo, &data, &size);
    char *err = capture_end();
    cr_assert_eq(st, TRR_ERR_IO);
    cr_assert(strstr(err, "is a FIFO, not a regular file") != NULL, "stderr: %s", err);
    free(err);
    remove(fifo);
    fifo_kernel_cache("vulkan:0");
    fifo_kernel_cache("opencl:0");
    alarm(0);
}

/* ---- variants, and each backend's tuning space ---- */

Test(tune, variant_round_trips_through_the_file) {
    mm m;
    mm_open(&m, 40, 33, 20);
    trr_config cfg = tuned_cfg;
    cfg.variant = TRR_VARIANT_COOP_KHR;
    trr_tune_entry e = entry_for(&m, &cfg);
    char *text = NULL;
    cr_assert_eq(trr_tune_db_format(&e, 1, &text), TRR_OK);
    cr_assert(strstr(text, "\"variant\":\t\"coop_khr\"") != NULL, "%s", text);
    trr_tune_entry *back = NULL;
    int n = 0;
    char why[256];
    cr_assert_eq(trr_tune_db_parse(text, &back, &n, why, sizeof why), TRR_OK, "%s", why);
    cr_assert_eq(n, 1);
    cr_assert(same(&back[0].config, &cfg));
    cr_assert_eq(back[0].default_config.variant, TRR_VARIANT_SIMT); /* the CPU heuristic's */
    free(back);
    /* a variant that is not a name, or an unknown name, makes the file invalid */
    const char *bad[] = {"\"variant\":\t\"coop_khr\"", "\"variant\":\t4"};
    const char *edit[] = {"\"variant\":\t\"tensor\"", "\"variant\":\t4"};
    for (int i = 0; i < 2; i++) {
        const char *at = strstr(text, bad[0]);
        cr_assert_not_null(at);
        size_t pre = (size_t)(at - text);
        char *v = malloc(strlen(text) + 32);
        memcpy(v, text, pre);
        strcpy(v + pre, edit[i]);
        strcat(v, at + strlen(bad[0]));
        cr_assert_eq(trr_tune_db_parse(v, &back, &n, why, sizeof why), TRR_ERR_INVALID_ARGUMENT, "edit %d", i);
        cr_assert(strstr(why, "variant") != NULL, "%s", why);
        free(v);
    }
    (void)bad[1];
    free(text);
    mm_close(&m);
}

/* An override that names only a variant still takes the database's tiles, from entries of that variant. */
Test(tune, variant_override_uses_entries_of_that_variant, .init = cr_redirect_stderr) {
    mm m;
    mm_open(&m, 40, 33, 20);
    trr_tune_entry e = entry_for(&m, &tuned_cfg);
    cr_assert_eq(trr_tune_db_store(m.ctx, NULL, &e, 1, NULL, 0), TRR_OK);
    trr_config got;
    cr_assert_eq(trr_tune_lookup(m.ctx, &m.call, TRR_VARIANT_SIMT, &got, NULL, 0), 1);
    cr_assert_eq(trr_tune_lookup(m.ctx, &m.call, TRR_VARIANT_WGMMA, &got, NULL, 0), 0);
    const trr_config simt = {.variant = TRR_VARIANT_SIMT};
    cr_assert_eq(trr_config_override(m.ctx, TRR_OP_MATMUL, &simt), TRR_OK);
    trr_config ran = run_matmul(&m);
    cr_assert(same(&ran, &tuned_cfg));
    /* a variant the CPU backend does not have is rejected, with the reason, and nothing runs */
    const trr_config mma = {.variant = TRR_VARIANT_MMA};
    cr_assert_eq(trr_config_override(m.ctx, TRR_OP_MATMUL, &mma), TRR_OK);
    cr_assert_eq(trr_matmul(m.ctx, &m.ta, &m.tb, &m.tc, TRR_EPI_NONE, 0, 0), TRR_ERR_UNSUPPORTED);
    cr_assert(strstr(trr_last_error(m.ctx), "mma") != NULL, "%s", trr_last_error(m.ctx));
    /* out of range is an argument error */
    const trr_config wild = {.variant = TRR_VARIANT_COUNT};
    cr_assert_eq(trr_config_override(m.ctx, TRR_OP_MATMUL, &wild), TRR_ERR_INVALID_ARGUMENT);
    mm_close(&m);
}

Test(tune, named_config_text) {
    trr_config c;
    cr_assert_eq(trr_config_from_text(NULL, "block_m=128, block_n=256,threads=384,stages=4,variant=wgmma", &c), TRR_OK,
                 "%s", trr_last_error(NULL));
    cr_assert_eq(c.block_m, 128);
    cr_assert_eq(c.block_n, 256);
    cr_assert_eq(c.block_k, 0);
    cr_assert_eq(c.variant, TRR_VARIANT_WGMMA);
    char text[TRR_CONFIG_TEXT_MAX];
    trr_config_to_text(&c, text, sizeof text);
    cr_assert_str_eq(text, "block_m=128,block_n=256,threads=384,stages=4,variant=wgmma");
    trr_config back;
    cr_assert_eq(trr_config_parse(text, &back), TRR_OK);
    cr_assert(same(&back, &c));
    cr_assert_eq(trr_config_from_text(NULL, "", &c), TRR_OK);
    cr_assert_eq(c.block_m, 0);
    const char *bad[] = {"block_q=4",      "block_m=x",     "block_m=-1",  "block_m=100000", "variant=tensor",
                         "block_m=4,",     "block_m",       "variant=99",  "block_m=4,block_m=8", ",block_m=4"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(trr_config_from_text(NULL, bad[i], &c), TRR_ERR_INVALID_ARGUMENT, "\"%s\" was taken", bad[i]);
        cr_assert_str_neq(trr_last_error(NULL), "", "\"%s\": no message", bad[i]);
    }
    for (int v = 0; v < TRR_VARIANT_COUNT; v++) {
        const char *name = NULL;
        trr_variant got;
        cr_assert_eq(trr_variant_name((trr_variant)v, &name), TRR_OK);
        cr_assert_eq(trr_variant_from_name(name, &got), TRR_OK);
        cr_assert_eq((int)got, v);
    }
}

/* An f16 matmul call of M x N x K on ctx's device, its buffers (A, B, C) in bufs for the caller to destroy. */
static trr_call f16_matmul_call(trr_context *ctx, int64_t M, int64_t N, int64_t K, trr_buffer *bufs[3]) {
    const int64_t dims[3][2] = {{M, K}, {K, N}, {M, N}};
    trr_tensor t[3];
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(trr_buffer_create(ctx, (size_t)(dims[i][0] * dims[i][1]) * 2, &bufs[i]), TRR_OK);
        trr_tensor_2d(bufs[i], 0, TRR_F16, dims[i][0], dims[i][1], 0, &t[i]);
    }
    trr_call call;
    int empty = 0;
    cr_assert_eq(trr_call_build(ctx, TRR_OP_MATMUL, &t[0], &t[1], &t[2], TRR_EPI_NONE, 0, 0, &call, &empty), TRR_OK);
    return call;
}

/* OpenCL f16 matmul: the tuner's space offers the tensor-core kernel's tiles beside the portable ones. On PoCL,
 * whose compiler refuses inline PTX, every mma candidate is dropped with the probe's reason and the portable ones
 * stay; a device where the probe passes times both. */
Test(tune, opencl_space_offers_mma_tiles) {
    trr_context *ctx = open_device_or_skip("opencl:0", "opencl");
    trr_buffer *bufs[3];
    /* every listed tile fits: none is dropped for its size */
    const trr_call call = f16_matmul_call(ctx, 256, 256, 256, bufs);
    trr_tune_candidate *cand = calloc(TRR_TUNE_MAX_CANDIDATES, sizeof *cand);
    int n = 0, mma = 0, mma_kept = 0, simt_kept = 0;
    cr_assert_eq(trr_tune_space(ctx, &call, cand, TRR_TUNE_MAX_CANDIDATES, &n), TRR_OK);
    trr_device_info info;
    cr_assert_eq(trr_context_device(ctx, &info), TRR_OK);
    const int probe_passed = strstr(info.capabilities, "tensor cores: mma.sync") != NULL;
    for (int i = 0; i < n; i++) {
        if (cand[i].listed.variant == TRR_VARIANT_MMA) {
            mma++;
            mma_kept += !cand[i].dropped;
            /* (a split candidate may be dropped first for its grid) */
            if (cand[i].dropped && !probe_passed && cand[i].listed.split_k <= 1)
                cr_assert(strstr(cand[i].reason, "unavailable"), "mma candidate %d dropped for: %s", i, cand[i].reason);
        } else {
            simt_kept += !cand[i].dropped;
        }
    }
    cr_assert_geq(mma, 5, "the space lists the mma tiles");
    cr_assert_gt(simt_kept, 0, "the portable kernel's tiles stay");
    if (!probe_passed) cr_assert_eq(mma_kept, 0, "%s offers no tensor cores, yet an mma tile was kept", info.name);
    else cr_assert_gt(mma_kept, 0);
    free(cand);
    for (int i = 0; i < 3; i++) trr_buffer_destroy(bufs[i]);
    trr_context_destroy(ctx);
}

/* A 256^3 e4m3 matmul into bf16 with B stored [N,K] on ctx, its operands in bufs. */
static trr_call f8_matmul_call(trr_context *ctx, trr_buffer *bufs[3]) {
    const int64_t M = 256, N = 256, K = 256;
    trr_tensor a, bnk, b, c;
    cr_assert_eq(trr_buffer_create(ctx, (size_t)(M * K), &bufs[0]), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, (size_t)(N * K), &bufs[1]), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, (size_t)(M * N) * 2, &bufs[2]), TRR_OK);
    trr_tensor_2d(bufs[0], 0, TRR_F8E4M3, M, K, 0, &a);
    trr_tensor_2d(bufs[1], 0, TRR_F8E4M3, N, K, 0, &bnk);
    cr_assert_eq(trr_tensor_transpose(&bnk, &b), TRR_OK);
    trr_tensor_2d(bufs[2], 0, TRR_BF16, M, N, 0, &c);
    trr_call call;
    int empty = 0;
    cr_assert_eq(trr_call_build(ctx, TRR_OP_MATMUL, &a, &b, &c, TRR_EPI_NONE, 0, 0, &call, &empty), TRR_OK);
    return call;
}

/* OpenCL e4m3 matmul with B stored [N,K] (the layout wgmma reads): the space offers the wgmma kernel's tiles and the
 * tensor-core kernel's two-stage ones beside the portable ones. On PoCL every tensor-core candidate is dropped with
 * the probes' reasons and the portable ones stay; a device where the wgmma probe passed keeps wgmma tiles. */
Test(tune, opencl_space_offers_wgmma_tiles_for_8_bit_floats) {
    trr_context *ctx = open_device_or_skip("opencl:0", "opencl");
    trr_buffer *bufs[3];
    trr_call call = f8_matmul_call(ctx, bufs);
    trr_tune_candidate *cand = calloc(TRR_TUNE_MAX_CANDIDATES, sizeof *cand);
    int n = 0, wgmma = 0, wgmma_kept = 0, mma = 0, simt_kept = 0;
    cr_assert_eq(trr_tune_space(ctx, &call, cand, TRR_TUNE_MAX_CANDIDATES, &n), TRR_OK);
    trr_device_info info;
    cr_assert_eq(trr_context_device(ctx, &info), TRR_OK);
    const int wgmma_passed = strstr(info.capabilities, "wgmma") != NULL;
    for (int i = 0; i < n; i++) {
        if (cand[i].listed.variant == TRR_VARIANT_WGMMA) {
            wgmma++;
            wgmma_kept += !cand[i].dropped;
            if (cand[i].dropped && !wgmma_passed)
                cr_assert(strstr(cand[i].reason, "variant wgmma cannot run"), "wgmma candidate %d dropped for: %s", i,
                          cand[i].reason);
        } else if (cand[i].listed.variant == TRR_VARIANT_MMA) {
            mma++;
        } else {
            simt_kept += !cand[i].dropped;
        }
    }
    cr_assert_geq(wgmma, 5, "the space lists the wgmma tiles");
    cr_assert_geq(mma, 3, "the space lists the tensor-core kernel's two-stage tiles");
    cr_assert_gt(simt_kept, 0, "the portable kernel's tiles stay");
    if (wgmma_passed) cr_assert_gt(wgmma_kept, 0);
    else cr_assert_eq(wgmma_kept, 0, "%s has no wgmma, yet a wgmma tile was kept", info.name);
    free(cand);
    for (int i = 0; i < 3; i++) trr_buffer_destroy(bufs[i]);
    trr_context_destroy(ctx);
}

/* Vulkan e4m3 matmul: the space offers the cooperative-matrix tiles of coop_khr and coop_nv (the f16 matrices the
 * bytes are widened onto) beside the SIMT ones, and none of cm2, which refuses 8-bit floats. A device without a
 * variant (lavapipe) drops its tiles with the reason; the SIMT ones stay. */
Test(tune, vulkan_space_offers_cooperative_tiles_for_8_bit_floats) {
    trr_context *ctx = open_device_or_skip("vulkan:0", "vulkan");
    trr_buffer *bufs[3];
    trr_call call = f8_matmul_call(ctx, bufs);
    trr_tune_candidate *cand = calloc(TRR_TUNE_MAX_CANDIDATES, sizeof *cand);
    int n = 0, khr = 0, nv = 0, simt_kept = 0;
    cr_assert_eq(trr_tune_space(ctx, &call, cand, TRR_TUNE_MAX_CANDIDATES, &n), TRR_OK);
    for (int i = 0; i < n; i++) {
        const int v = cand[i].listed.variant;
        khr += v == TRR_VARIANT_COOP_KHR;
        nv += v == TRR_VARIANT_COOP_NV;
        cr_assert_neq(v, TRR_VARIANT_CM2, "candidate %d is a cm2 tile", i);
        if (v == TRR_VARIANT_SIMT || v == TRR_VARIANT_AUTO) simt_kept += !cand[i].dropped;
        else if (cand[i].dropped) cr_assert_neq(cand[i].reason[0], '\0', "candidate %d dropped without a reason", i);
    }
    cr_assert_geq(khr, 3, "the space lists coop_khr's tiles");
    cr_assert_geq(nv, 3, "the space lists coop_nv's tiles");
    cr_assert_gt(simt_kept, 0, "the SIMT kernel's tiles stay");
    free(cand);
    for (int i = 0; i < 3; i++) trr_buffer_destroy(bufs[i]);
    trr_context_destroy(ctx);
}

/* Vulkan f16 matmul of a 64-row grid and deep K: the space offers split-K (2 to 16 slices) on the SIMT kernel and on
 * coop_khr and coop_nv; a device that says how many compute units it has keeps those whose grid leaves most of them
 * idle, one that does not (lavapipe) drops them all, saying why. */
Test(tune, vulkan_space_offers_split_k) {
    trr_context *ctx = open_device_or_skip("vulkan:0", "vulkan");
    trr_device_info info;
    cr_assert_eq(trr_context_device(ctx, &info), TRR_OK);
    trr_buffer *bufs[3];
    const trr_call call = f16_matmul_call(ctx, 64, 1024, 4096, bufs);
    trr_tune_candidate *cand = calloc(TRR_TUNE_MAX_CANDIDATES, sizeof *cand);
    int n = 0, simt = 0, khr = 0, nv = 0, kept = 0;
    cr_assert_eq(trr_tune_space(ctx, &call, cand, TRR_TUNE_MAX_CANDIDATES, &n), TRR_OK);
    for (int i = 0; i < n; i++) {
        if (cand[i].listed.split_k < 2) continue;
        simt += cand[i].listed.variant == TRR_VARIANT_SIMT;
        khr += cand[i].listed.variant == TRR_VARIANT_COOP_KHR;
        nv += cand[i].listed.variant == TRR_VARIANT_COOP_NV;
        kept += !cand[i].dropped;
        if (cand[i].dropped && info.compute_units <= 0 && cand[i].listed.variant == TRR_VARIANT_SIMT)
            cr_expect(strstr(cand[i].reason, "does not say how many it has") != NULL, "candidate %d: %s", i,
                      cand[i].reason);
    }
    cr_expect_eq(simt, 4, "SIMT split candidates: %d", simt);
    cr_expect_eq(khr, 8, "coop_khr split candidates: %d", khr);
    cr_expect_eq(nv, 8, "coop_nv split candidates: %d", nv);
    if (info.compute_units <= 0) cr_expect_eq(kept, 0, "%d split candidates kept on %s", kept, info.name);
    else cr_expect_gt(kept, 0, "no split candidate kept on %s (%d compute units)", info.name, info.compute_units);
    free(cand);
    for (int i = 0; i < 3; i++) trr_buffer_destroy(bufs[i]);
    trr_context_destroy(ctx);
}

/* CUDA f16 matmul of few rows: the space offers mma.sync's few-row tiles with split-K (a 16-row product had only
 * the known-good list's four tiles before), keeps the 16-row ones and drops the 32-row ones as taller than M, and
 * keeps no 64- or 128-row wgmma tile. Needs a CUDA device with tensor cores (sm_80 or later). */
Test(tune, cuda_space_offers_few_row_tiles) {
    trr_context *ctx = open_device_or_skip("cuda:0", "cuda");
    trr_buffer *bufs[3];
    const trr_call call = f16_matmul_call(ctx, 16, 11008, 4096, bufs);
    trr_tune_candidate *cand = calloc(TRR_TUNE_MAX_CANDIDATES, sizeof *cand);
    int n = 0, few_split = 0, tall_kept = 0;
    cr_assert_eq(trr_tune_space(ctx, &call, cand, TRR_TUNE_MAX_CANDIDATES, &n), TRR_OK);
    for (int i = 0; i < n; i++) {
        const trr_config *r = &cand[i].resolved;
        if (cand[i].dropped) continue;
        if (r->block_m == 16 && r->split_k > 1 && r->variant == TRR_VARIANT_MMA) few_split++;
        if (r->block_m > 16) tall_kept++;
    }
    cr_expect_geq(few_split, 10, "16-row tiles with split-K kept: %d", few_split);
    cr_expect_eq(tall_kept, 0, "%d tiles taller than 16 rows kept for a 16-row product", tall_kept);
    free(cand);
    for (int i = 0; i < 3; i++) trr_buffer_destroy(bufs[i]);
    trr_context_destroy(ctx);
}
