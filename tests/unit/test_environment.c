/* The environment variables that are no test-suite switch of their own: where the cache and the tuning
 * database live (TRIREME_CACHE_DIR, XDG_CACHE_HOME, HOME), the kernel dump (TRIREME_DUMP_DIR) and the Vulkan
 * pipeline statistics (TRIREME_VK_PIPELINE_STATS). None of them may change what a kernel computes. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "cache.h"
#include "tune.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[256];

static void make_tmp(void) {
    snprintf(tmp, sizeof tmp, "/tmp/trireme-env-test-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
}

static void remove_tree(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            remove_tree(sub);
        }
        closedir(d);
    }
    remove(path);
}

static void clean_tmp(void) { remove_tree(tmp); }

TestSuite(environment, .init = make_tmp, .fini = clean_tmp);

static int count_files(const char *dir, const char *suffix) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name), sl = strlen(suffix);
        if (e->d_name[0] != '.' && len >= sl && !strcmp(e->d_name + len - sl, suffix)) n++;
    }
    closedir(d);
    return n;
}

Test(environment, cache_directory_precedence) {
    char want[512], got[4096];
    unsetenv("TRIREME_TUNE_DB");
    snprintf(want, sizeof want, "%s/explicit", tmp);
    setenv("TRIREME_CACHE_DIR", want, 1);
    setenv("XDG_CACHE_HOME", tmp, 1);
    cr_assert_eq(trr_cache_dir(NULL, got, sizeof got), TRR_OK);
    cr_assert_str_eq(got, want);
    struct stat st;
    cr_assert_eq(stat(want, &st), 0, "the cache directory was not created");
    /* the tuning database lives in it unless TRIREME_TUNE_DB says otherwise */
    char db[4200], expect[4200];
    cr_assert_eq(trr_tune_db_path(NULL, db, sizeof db), TRR_OK);
    snprintf(expect, sizeof expect, "%s/tune.json", want);
    cr_assert_str_eq(db, expect);

    unsetenv("TRIREME_CACHE_DIR");
    snprintf(want, sizeof want, "%s/trireme", tmp);
    cr_assert_eq(trr_cache_dir(NULL, got, sizeof got), TRR_OK);
    cr_assert_str_eq(got, want);

    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", tmp, 1);
    snprintf(want, sizeof want, "%s/.cache/trireme", tmp);
    cr_assert_eq(trr_cache_dir(NULL, got, sizeof got), TRR_OK);
    cr_assert_str_eq(got, want);
}

/* Runs a softmax on spec with random rows and checks each row sums to 1; 0 when the device is not here. */
static int softmax_on(const char *spec) {
    trr_context *ctx = NULL;
    if (trr_context_create(spec, &ctx) != TRR_OK) return 0;
    enum { R = 4, C = 96 };
    float in[R * C], out[R * C];
    srand(5);
    for (int i = 0; i < R * C; i++) in[i] = 4.0f * (float)rand() / RAND_MAX - 2.0f, out[i] = NAN;
    trr_buffer *bx = NULL, *by = NULL;
    cr_assert_eq(trr_buffer_create(ctx, sizeof in, &bx), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, sizeof out, &by), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bx, 0, in, sizeof in), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, by, 0, out, sizeof out), TRR_OK); /* poisoned */
    trr_tensor x, y;
    trr_tensor_2d(bx, 0, TRR_F32, R, C, 0, &x);
    trr_tensor_2d(by, 0, TRR_F32, R, C, 0, &y);
    cr_assert_eq(trr_softmax(ctx, &x, &y), TRR_OK, "%s: %s", spec, trr_last_error(ctx));
    cr_assert_eq(trr_buffer_read(ctx, by, 0, out, sizeof out), TRR_OK);
    for (int r = 0; r < R; r++) {
        double s = 0;
        for (int c = 0; c < C; c++) s += out[r * C + c];
        cr_assert_float_eq(s, 1.0, 1e-5, "%s row %d sums to %g", spec, r, s);
    }
    trr_buffer_destroy(bx);
    trr_buffer_destroy(by);
    trr_context_destroy(ctx);
    return 1;
}

Test(environment, dump_directory_receives_kernels) {
    char dump[512], cache[512];
    snprintf(dump, sizeof dump, "%s/dump", tmp);
    snprintf(cache, sizeof cache, "%s/cache", tmp);
    mkdir(dump, 0700);
    setenv("TRIREME_DUMP_DIR", dump, 1);
    setenv("TRIREME_CACHE_DIR", cache, 1); /* a fresh cache: the kernels are compiled, so dumped */
    int ran = 0;
    if (softmax_on("vulkan:0")) {
        ran++;
        cr_assert_gt(count_files(dump, ".spv"), 0, "no SPIR-V dumped");
    }
    if (softmax_on("opencl:0")) {
        ran++;
        cr_assert_gt(count_files(dump, ".cl"), 0, "no OpenCL source dumped");
    }
    if (!ran) cr_skip_test("neither vulkan:0 nor opencl:0 is available");
    unsetenv("TRIREME_DUMP_DIR");
}

/* A diagnostic: with it set the device is created with the statistics extension where the driver offers it, and
 * pipelines report to stderr; results must not change (and the validation layer must stay quiet). */
Test(environment, vulkan_pipeline_statistics, .init = cr_redirect_stderr) {
    char cache[512];
    snprintf(cache, sizeof cache, "%s/cache", tmp);
    setenv("TRIREME_CACHE_DIR", cache, 1);
    setenv("TRIREME_VK_PIPELINE_STATS", "1", 1);
    if (!softmax_on("vulkan:0")) cr_skip_test("vulkan:0 is not available");
    unsetenv("TRIREME_VK_PIPELINE_STATS");
}
