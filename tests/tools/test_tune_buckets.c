/* Tuning buckets (core/tune.h): four an octave, no cap, version-1 files read onto the finer grid, and the
 * nearest bucket standing in for one with no entry of its own. CPU backend. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include "tune_matmul_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(tune_buckets, .init = tune_db_setup, .fini = tune_db_teardown);

Test(tune_buckets, nearest_bucket_stands_in) {
    mm m;
    mm_open(&m, 40, 33, 20); /* bucket 40, 40, 20 */
    const trr_config far_cfg = {.block_m = 128, .block_n = 128, .block_k = 128, .group_m = 8, .threads = 1,
                                .stages = 1, .vector_width = 8, .split_k = 1, .variant = TRR_VARIANT_SIMT};
    trr_tune_entry es[2] = {entry_at(&m, &tuned_cfg, 40, 40, 20), entry_at(&m, &far_cfg, 1024, 1024, 1024)};
    cr_assert_eq(trr_tune_db_store(m.ctx, NULL, es, 2, NULL, 0), TRR_OK, "%s", trr_last_error(m.ctx));
    trr_config got;
    char where[512];
    /* exact */
    cr_assert_eq(trr_tune_lookup(m.ctx, &m.call, 0, &got, where, sizeof where), 1);
    cr_assert(same(&got, &tuned_cfg));
    /* bucket 112, 40, 20: 1.5 octaves from the first entry, about 22 from the second */
    trr_call c = m.call;
    c.rows = 100;
    cr_assert_eq(trr_tune_lookup(m.ctx, &c, 0, &got, where, sizeof where), 1);
    const trr_config near_in = stand_in(tuned_cfg), far_in = stand_in(far_cfg);
    cr_assert(same(&got, &near_in), "took %s", where);
    cr_assert(strstr(where, "[40, 40, 20]") != NULL, "%s", where);
    cr_assert(strstr(where, "[112, 40, 20]") != NULL, "%s", where);
    /* bucket 2048, 512, 1024: nearer the second */
    c.rows = 2000, c.cols = 500, c.k = 1000;
    cr_assert_eq(trr_tune_lookup(m.ctx, &c, 0, &got, NULL, 0), 1);
    cr_assert(same(&got, &far_in));
    /* another dtype or layout has no entry near or far */
    c = m.call;
    c.trans_b = 1;
    cr_assert_eq(trr_tune_lookup(m.ctx, &c, 0, &got, NULL, 0), 0);
    c = m.call;
    c.x.dtype = c.y.dtype = TRR_F16;
    cr_assert_eq(trr_tune_lookup(m.ctx, &c, 0, &got, NULL, 0), 0);
    /* the whole resolve path: a shape of the untuned bucket runs the nearest entry's config, the backend's split
     * (the CPU backend's: none) */
    mm other;
    mm_open(&other, 100, 33, 20);
    trr_config ran = run_matmul(&other);
    cr_assert(same(&ran, &tuned_cfg));
    cr_assert_eq(ran.split_k, 1);
    mm_close(&other);
    mm_close(&m);
}

Test(tune_buckets, buckets_have_no_cap) {
    mm m;
    mm_open(&m, 4, 4, 4);
    trr_call c = m.call;
    c.op = TRR_OP_SOFTMAX;
    c.rows = 2, c.cols = (int64_t)1 << 23, c.k = 0;
    int64_t b[3];
    trr_tune_bucket_of(&c, b);
    cr_assert_eq(b[0], 2);
    cr_assert_eq(b[1], (int64_t)1 << 23, "bucket %lld", (long long)b[1]);
    cr_assert_eq(b[2], 1);
    c.cols = ((int64_t)1 << 22) * 7 / 4 + 1;
    trr_tune_bucket_of(&c, b);
    cr_assert_eq(b[1], (int64_t)1 << 23);
    c.cols = (int64_t)1 << 16;
    trr_tune_bucket_of(&c, b);
    cr_assert_eq(b[1], (int64_t)1 << 16);

    /* an 8M-column entry is its own bucket: next to a 64K one, each call finds its own */
    const trr_config small = {.block_n = 4096, .threads = 1, .vector_width = 1, .variant = TRR_VARIANT_SIMT};
    const trr_config big = {.block_n = 65536, .threads = 1, .vector_width = 1, .variant = TRR_VARIANT_SIMT};
    trr_tune_entry es[2];
    c.cols = (int64_t)1 << 16;
    memset(es, 0, sizeof es);
    trr_tune_key_of(m.ctx, &c, &es[0].key);
    es[0].config = small;
    trr_tune_shape_of(&c, es[0].shape);
    c.cols = (int64_t)1 << 23;
    trr_tune_key_of(m.ctx, &c, &es[1].key);
    es[1].config = big;
    trr_tune_shape_of(&c, es[1].shape);
    cr_assert_eq(es[1].key.bucket[1], (int64_t)1 << 23);
    cr_assert_eq(trr_tune_db_store(m.ctx, NULL, es, 2, NULL, 0), TRR_OK, "%s", trr_last_error(m.ctx));
    trr_config got;
    cr_assert_eq(trr_tune_lookup(m.ctx, &c, 0, &got, NULL, 0), 1);
    cr_assert(same(&got, &big));
    c.cols = 70000; /* bucket 5 * 2^14: nearer 2^16 */
    cr_assert_eq(trr_tune_lookup(m.ctx, &c, 0, &got, NULL, 0), 1);
    cr_assert(same(&got, &small));
    /* the file keeps the large bucket */
    trr_tune_entry *all = NULL;
    int n = 0;
    char why[256];
    cr_assert_eq(trr_tune_db_load(db_path, &all, &n, why, sizeof why), TRR_OK, "%s", why);
    cr_assert_eq(n, 2);
    cr_assert_eq(all[1].key.bucket[1], (int64_t)1 << 23);
    free(all);

    /* a row past 2^31 columns (such calls run in parts) is stored and read back, not a damaged file */
    c.cols = 3000000000;
    trr_tune_key_of(m.ctx, &c, &es[0].key);
    trr_tune_shape_of(&c, es[0].shape);
    cr_assert_eq(es[0].key.bucket[1], (int64_t)3 << 30);
    cr_assert_eq(trr_tune_db_store(m.ctx, NULL, es, 1, NULL, 0), TRR_OK, "%s", trr_last_error(m.ctx));
    cr_assert_eq(trr_tune_db_load(db_path, &all, &n, why, sizeof why), TRR_OK, "%s", why);
    cr_assert_eq(n, 3);
    free(all);
    cr_assert_eq(trr_tune_lookup(m.ctx, &c, 0, &got, NULL, 0), 1);
    cr_assert(same(&got, &small));
    mm_close(&m);
}

static int significant_bits(int64_t n) {
    while (n && !(n & 1)) n >>= 1;
    int bits = 0;
    for (; n; n >>= 1) bits++;
    return bits;
}

/* Four buckets an octave: every dimension goes to the smallest number at or above it with at most three
 * significant bits, so 1152 and 1280 share a bucket, 1536 has its own, and a power of two stays one. */
Test(tune_buckets, buckets_are_four_an_octave) {
    int64_t want = 1; /* the smallest bucket >= n, walked upwards */
    for (int64_t n = 1; n <= (1 << 20); n++) {
        while (want < n || significant_bits(want) > 3) want++;
        cr_assert_eq(trr_tune_bucket_round(n), want, "n %lld: bucket %lld, want %lld", (long long)n,
                     (long long)trr_tune_bucket_round(n), (long long)want);
    }
    const int64_t cases[][2] = {{1152, 1280}, {1280, 1280}, {1281, 1536}, {1536, 1536}, {1537, 1792},
                                {1920, 2048}, {11008, 12288}, {14336, 14336}, {(int64_t)1 << 31, (int64_t)1 << 31},
                                {((int64_t)1 << 30) + 1, ((int64_t)5 << 28)}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(trr_tune_bucket_round(cases[i][0]), cases[i][1], "%lld", (long long)cases[i][0]);
    for (int e = 0; e < 62; e++) cr_assert_eq(trr_tune_bucket_round((int64_t)1 << e), (int64_t)1 << e);
}

/* A version-1 file (one bucket an octave) still reads: each entry keys the finer bucket of the shape it was timed
 * at, so the call of that shape finds it as its own (split and all), and the next write is version 2. */
Test(tune_buckets, version_1_files_take_the_finer_buckets) {
    mm m;
    mm_open(&m, 40, 33, 20); /* bucket 40, 40, 20; its octaves' 64, 64, 32 */
    trr_tune_entry e = entry_at(&m, &tuned_cfg, 64, 64, 32);
    char *text = NULL;
    cr_assert_eq(trr_tune_db_format(&e, 1, &text), TRR_OK);
    char *v = strstr(text, "\"version\":\t2");
    cr_assert_not_null(v, "%s", text);
    v[strlen("\"version\":\t")] = '1';
    write_text(text);
    trr_config got;
    char where[512];
    cr_assert_eq(trr_tune_lookup(m.ctx, &m.call, 0, &got, where, sizeof where), 1);
    cr_assert(same(&got, &tuned_cfg), "not its own bucket: %s", where);
    cr_assert(strstr(where, "the entry of bucket [40, 40, 20]") != NULL, "%s", where);
    /* a shape of the old octave in another fine bucket: a stand-in now */
    trr_call c = m.call;
    c.rows = 60;
    cr_assert_eq(trr_tune_lookup(m.ctx, &c, 0, &got, NULL, 0), 1);
    const trr_config in = stand_in(tuned_cfg);
    cr_assert(same(&got, &in));

    /* a version-1 bucket that is no power of two is a damaged file */
    char *bad = strdup(text);
    char *b = strstr(bad, "[64, 64, 32]");
    cr_assert_not_null(b, "%s", bad);
    memcpy(b, "[48", 3);
    trr_tune_entry *all = NULL;
    int n = 0;
    char why[256] = "";
    cr_assert_eq(trr_tune_db_parse(bad, &all, &n, why, sizeof why), TRR_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(why, "not a power of two") != NULL, "%s", why);
    free(bad);

    /* merging another entry writes version 2, the first entry under its new bucket */
    trr_tune_entry e2 = entry_at(&m, &tuned_cfg, 1024, 1024, 1024);
    cr_assert_eq(trr_tune_db_store(m.ctx, NULL, &e2, 1, NULL, 0), TRR_OK, "%s", trr_last_error(m.ctx));
    FILE *f = fopen(db_path, "rb");
    cr_assert_not_null(f);
    char file[8192];
    const size_t len = fread(file, 1, sizeof file - 1, f);
    fclose(f);
    file[len] = '\0';
    cr_assert(strstr(file, "\"version\":\t2") != NULL, "%s", file);
    cr_assert_eq(trr_tune_db_parse(file, &all, &n, why, sizeof why), TRR_OK, "%s", why);
    cr_assert_eq(n, 2);
    const int64_t fine[3] = {40, 40, 20};
    cr_assert(!memcmp(all[0].key.bucket, fine, sizeof fine));
    free(all);
    free(text);
    mm_close(&m);
}
