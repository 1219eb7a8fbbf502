/* TRIREME_TRACE: a few ops on the CPU backend with the variable set, the file parsed back with cJSON. Criterion
 * runs each test in its own process, so each sets the variable before its first op. */
#define _POSIX_C_SOURCE 200809L /* setenv, mkstemp */
#include "test_support.h"
#include "trace.h"
#include "trireme.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

static trr_buffer *filled(trr_context *ctx, int64_t n) {
    trr_buffer *b = NULL;
    cr_assert_eq(trr_buffer_create(ctx, (size_t)n * 4, &b), TRR_OK);
    float *h = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) h[i] = (float)rand() / RAND_MAX - 0.5f;
    cr_assert_eq(trr_buffer_write(ctx, b, 0, h, (size_t)n * 4), TRR_OK);
    free(h);
    return b;
}

/* A fresh file for TRIREME_TRACE, named into path (a mkstemp template). */
static void trace_to_temp_file(char *path) {
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    setenv("TRIREME_TRACE", path, 1);
}

Test(trace, every_op_call_is_an_event) {
    char path[] = "/tmp/trireme_trace_XXXXXX";
    trace_to_temp_file(path);
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_buffer *a = filled(ctx, 64 * 32), *b = filled(ctx, 32 * 16), *c = filled(ctx, 64 * 16);
    trr_tensor ta, tb, tc, x, y, z;
    cr_assert_eq(trr_tensor_2d(a, 0, TRR_F32, 64, 32, 0, &ta), TRR_OK);
    cr_assert_eq(trr_tensor_2d(b, 0, TRR_F32, 32, 16, 0, &tb), TRR_OK);
    cr_assert_eq(trr_tensor_2d(c, 0, TRR_F32, 64, 16, 0, &tc), TRR_OK);
    cr_assert_eq(trr_tensor_1d(a, 0, TRR_F32, 512, &x), TRR_OK);
    cr_assert_eq(trr_tensor_1d(b, 0, TRR_F32, 512, &y), TRR_OK);
    cr_assert_eq(trr_tensor_1d(c, 0, TRR_F32, 512, &z), TRR_OK);
    cr_assert_eq(trr_add(ctx, &x, &y, &z), TRR_OK);
    cr_assert_eq(trr_gelu(ctx, &x, &z), TRR_OK);
    cr_assert_eq(trr_matmul(ctx, &ta, &tb, &tc, TRR_EPI_RELU, 0.0f, 0), TRR_OK);
    cr_assert_eq(trr_matmul(ctx, &tb, &ta, &tc, TRR_EPI_NONE, 0.0f, 0), TRR_ERR_SHAPE); /* rejected: traced too */
    trr_buffer_destroy(a), trr_buffer_destroy(b), trr_buffer_destroy(c);
    cr_assert_eq(trr_context_destroy(ctx), TRR_OK); /* writes the file */

    char *text = slurp(path);
    cr_assert(text, "no trace file");
    cJSON *root = cJSON_Parse(text);
    cr_assert(root, "the trace is not JSON:\n%s", text);
    const cJSON *ev = cJSON_GetObjectItem(root, "traceEvents");
    cr_assert(cJSON_IsArray(ev));
    cr_assert_eq(cJSON_GetArraySize(ev), 4);
    static const char *const names[] = {"add", "gelu", "matmul", "matmul"};
    static const char *const status[] = {"TRR_OK", "TRR_OK", "TRR_OK", "TRR_ERR_SHAPE"};
    static const int n_operands[] = {3, 2, 3, 3};
    double last_ts = -1;
    for (int i = 0; i < 4; i++) {
        const cJSON *e = cJSON_GetArrayItem(ev, i);
        cr_assert_str_eq(cJSON_GetObjectItem(e, "name")->valuestring, names[i]);
        cr_assert_str_eq(cJSON_GetObjectItem(e, "ph")->valuestring, "X");
        const double ts = cJSON_GetObjectItem(e, "ts")->valuedouble, dur = cJSON_GetObjectItem(e, "dur")->valuedouble;
        cr_assert(ts >= last_ts && dur >= 0, "event %d: ts %g after %g, dur %g", i, ts, last_ts, dur);
        last_ts = ts + dur;
        cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(e, "pid")) && cJSON_IsNumber(cJSON_GetObjectItem(e, "tid")));
        const cJSON *args = cJSON_GetObjectItem(e, "args");
        cr_assert_str_eq(cJSON_GetObjectItem(args, "device")->valuestring, "cpu:0");
        cr_assert_str_eq(cJSON_GetObjectItem(args, "status")->valuestring, status[i]);
        const cJSON *ops = cJSON_GetObjectItem(args, "operands");
        cr_assert_eq(cJSON_GetArraySize(ops), n_operands[i]);
        cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(ops, 0), "dtype")->valuestring, "f32");
        const cJSON *cfg = cJSON_GetObjectItem(args, "config");
        if (i < 3) {
            cr_assert(cJSON_IsObject(cfg), "event %d has no config", i);
            cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(cfg, "block_n")), "the config's fields are named");
        } else {
            cr_assert_null(cfg, "a rejected call ran with no config");
        }
    }
    /* the matmul: shapes as given, its epilogue named */
    const cJSON *mm = cJSON_GetObjectItem(cJSON_GetArrayItem(ev, 2), "args");
    const cJSON *shape_a = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(mm, "operands"), 0), "shape");
    cr_assert_eq(cJSON_GetArrayItem(shape_a, 0)->valueint, 64);
    cr_assert_eq(cJSON_GetArrayItem(shape_a, 1)->valueint, 32);
    cr_assert_str_eq(cJSON_GetObjectItem(mm, "epilogue")->valuestring, "relu");
    cJSON_Delete(root);
    free(text);
    unlink(path);
}

/* A path that cannot be written: the ops still run, one warning on stderr (not stdout), no file. */
Test(trace, a_bad_path_warns_once, .init = cr_redirect_stderr) {
    const char *path = "/nonexistent-dir/trace.json";
    setenv("TRIREME_TRACE", path, 1);
    log_to_stderr(); /* the warning reaches stderr through the program's handler, as the CLI installs it */
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_buffer *a = filled(ctx, 256);
    trr_tensor x;
    cr_assert_eq(trr_tensor_1d(a, 0, TRR_F32, 256, &x), TRR_OK);
    for (int i = 0; i < 3; i++) cr_assert_eq(trr_gelu(ctx, &x, &x), TRR_OK);
    trr_buffer_destroy(a);
    trr_context_destroy(ctx);
    cr_assert_eq(access(path, F_OK), -1);
    fflush(stderr);
    cr_assert_stderr_eq_str("trireme: TRIREME_TRACE: cannot write /nonexistent-dir/trace.json (opening it: No such "
                            "file or directory); no trace is recorded\n");
}

/* TRIREME_TRACE_DEVICE_TIME=1: each call carries its device time, except one made while the caller's own timer
 * runs (the timers do not nest, and the caller's span must stay the caller's). */
Test(trace, device_time_when_asked) {
    char path[] = "/tmp/trireme_trace_XXXXXX";
    trace_to_temp_file(path);
    setenv("TRIREME_TRACE_DEVICE_TIME", "1", 1);
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_buffer *a = filled(ctx, 1 << 16), *b = filled(ctx, 1 << 16);
    trr_tensor x, y;
    cr_assert_eq(trr_tensor_1d(a, 0, TRR_F32, 1 << 16, &x), TRR_OK);
    cr_assert_eq(trr_tensor_1d(b, 0, TRR_F32, 1 << 16, &y), TRR_OK);
    cr_assert_eq(trr_gelu(ctx, &x, &y), TRR_OK);
    cr_assert_eq(trr_timer_start(ctx), TRR_OK);
    cr_assert_eq(trr_add(ctx, &x, &y, &y), TRR_OK);
    double ms = -1;
    cr_assert_eq(trr_timer_stop(ctx, &ms), TRR_OK);
    cr_assert(ms >= 0, "the caller's timer still works: %g", ms);
    trr_buffer_destroy(a), trr_buffer_destroy(b);
    cr_assert_eq(trr_context_destroy(ctx), TRR_OK);
    char *text = slurp(path);
    cJSON *root = cJSON_Parse(text);
    cr_assert(root, "the trace is not JSON:\n%s", text);
    const cJSON *ev = cJSON_GetObjectItem(root, "traceEvents");
    cr_assert_eq(cJSON_GetArraySize(ev), 2);
    const cJSON *g = cJSON_GetObjectItem(cJSON_GetArrayItem(ev, 0), "args");
    const cJSON *dev = cJSON_GetObjectItem(g, "device_us");
    cr_assert(cJSON_IsNumber(dev) && dev->valuedouble > 0, "gelu has no device time:\n%s", text);
    const cJSON *host = cJSON_GetObjectItem(cJSON_GetArrayItem(ev, 0), "dur");
    cr_assert(dev->valuedouble <= host->valuedouble * 1.01 + 1.0, "device time %g us inside host time %g us",
              dev->valuedouble, host->valuedouble);
    cr_assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(ev, 1), "args"), "device_us"),
                   "the add inside the caller's timer was timed again");
    /* no key twice in one object (cJSON keeps both; Perfetto's parser takes one) */
    const cJSON *cfg = cJSON_GetObjectItem(g, "config"), *item;
    int variants = 0;
    cJSON_ArrayForEach(item, cfg) variants += !strcmp(item->string, "variant");
    cr_assert_eq(variants, 1);
    cJSON_Delete(root);
    free(text);
    unlink(path);
}

/* The exit (trr_trace_flush, as at exit) writes the file only when calls came after the last context's destroy
 * wrote it: a program that read and removed its trace then (as these tests do) does not find it made again. */
Test(trace, exit_writes_only_new_calls) {
    char path[] = "/tmp/trireme_trace_XXXXXX";
    trace_to_temp_file(path);
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_buffer *a = filled(ctx, 64);
    trr_tensor x;
    cr_assert_eq(trr_tensor_1d(a, 0, TRR_F32, 64, &x), TRR_OK);
    cr_assert_eq(trr_gelu(ctx, &x, &x), TRR_OK);
    trr_buffer_destroy(a);
    cr_assert_eq(trr_context_destroy(ctx), TRR_OK); /* writes the file */
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_gt(st.st_size, 0);
    cr_assert_eq(unlink(path), 0);
    trr_trace_flush();
    cr_assert_neq(stat(path, &st), 0, "the exit wrote the trace again with nothing new");

    /* a call after the destroy: the exit writes the file with both */
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    a = filled(ctx, 64);
    cr_assert_eq(trr_tensor_1d(a, 0, TRR_F32, 64, &x), TRR_OK);
    cr_assert_eq(trr_gelu(ctx, &x, &x), TRR_OK);
    trr_trace_flush();
    char *text = slurp(path);
    cr_assert(text, "the exit did not write the call made after the destroy");
    cJSON *root = cJSON_Parse(text);
    cr_assert(root, "%s", text);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "traceEvents")), 2);
    cJSON_Delete(root);
    free(text);
    trr_buffer_destroy(a);
    cr_assert_eq(trr_context_destroy(ctx), TRR_OK);
    unlink(path);
}
