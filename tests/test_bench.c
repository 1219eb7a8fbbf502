/* trireme bench: the JSON report's schema on a small CPU run, and the check that keeps a wrong kernel from
 * reporting a figure (run on outputs corrupted here, after a correct run). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "bench.h"
#include "validate.h"
#include "warmup.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void expect_type(const cJSON *o, const char *key, cJSON_bool (*is)(const cJSON *), const char *what) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    cr_assert(v != NULL, "missing key \"%s\" (%s)", key, what);
    cr_assert(is(v), "key \"%s\" has the wrong type (%s)", key, what);
}

Test(bench, json_schema_of_a_small_cpu_run, .timeout = 300) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_bench_options opt = {
        .bench_mask = (1u << TRR_BENCH_ADD) | (1u << TRR_BENCH_SOFTMAX) | (1u << TRR_BENCH_MATMUL_F32),
        .sizes = TRR_BENCH_SIZES_LIST, .size_list = "256", .reps = 3, .seed = 42};
    trr_bench_report *rep = NULL;
    cr_assert_eq(trr_bench_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(rep->n_results, 3);
    const trr_bench_report *reps[1] = {rep};
    cr_assert_eq(trr_bench_failures(reps, 1), 0, "%s", rep->results[0].reason);
    char *text = NULL;
    cr_assert_eq(trr_bench_json(reps, 1, &text), TRR_OK);
    cJSON *root = cJSON_Parse(text);
    cr_assert(root != NULL, "the report is not JSON");

    expect_type(root, "tool", cJSON_IsString, "top");
    expect_type(root, "version", cJSON_IsString, "top");
    expect_type(root, "reports", cJSON_IsArray, "top");
    const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "reports"), 0);
    cr_assert(r0 != NULL);
    static const char *const report_strings[] = {"backend", "driver", "library_version", "date", "sizes"};
    for (size_t i = 0; i < sizeof report_strings / sizeof report_strings[0]; i++)
        expect_type(r0, report_strings[i], cJSON_IsString, "report");
    expect_type(r0, "seconds", cJSON_IsNumber, "report");
    expect_type(r0, "device", cJSON_IsObject, "report");
    expect_type(r0, "ceilings", cJSON_IsObject, "report");
    expect_type(r0, "results", cJSON_IsArray, "report");
    const cJSON *dev = cJSON_GetObjectItem(r0, "device");
    expect_type(dev, "spec", cJSON_IsString, "device");
    expect_type(dev, "name", cJSON_IsString, "device");
    expect_type(dev, "is_gpu", cJSON_IsBool, "device");
    const cJSON *ceil = cJSON_GetObjectItem(r0, "ceilings");
    expect_type(ceil, "copy_gbs", cJSON_IsNumber, "ceilings");
    expect_type(ceil, "vendor_note", cJSON_IsString, "ceilings");
    cr_assert_gt(cJSON_GetObjectItem(ceil, "copy_gbs")->valuedouble, 0);
    cr_assert_str_eq(cJSON_GetObjectItem(r0, "library_version")->valuestring, TRR_VERSION_STRING);

    const cJSON *res;
    int n = 0;
    cJSON_ArrayForEach(res, cJSON_GetObjectItem(r0, "results")) {
        static const char *const strings[] = {"bench", "op", "case", "size", "unit", "status", "reason"};
        static const char *const numbers[] = {"x", "reps", "median_ms", "min_ms", "max_ms", "figure", "figure_min",
                                              "figure_max", "ceiling", "fraction_of_ceiling", "vendor_figure"};
        for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) expect_type(res, strings[i], cJSON_IsString, "result");
        for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) expect_type(res, numbers[i], cJSON_IsNumber, "result");
        expect_type(res, "config", cJSON_IsObject, "result");
        expect_type(res, "check", cJSON_IsObject, "result");
        expect_type(cJSON_GetObjectItem(res, "check"), "checked", cJSON_IsNumber, "check");
        cr_assert_str_eq(cJSON_GetObjectItem(res, "status")->valuestring, "ok");
        cr_assert_gt(cJSON_GetObjectItem(res, "figure")->valuedouble, 0);
        cr_assert_geq(cJSON_GetObjectItem(res, "figure_max")->valuedouble,
                      cJSON_GetObjectItem(res, "figure")->valuedouble);
        cr_assert_geq(cJSON_GetObjectItem(res, "reps")->valuedouble, 3);
        n++;
    }
    cr_assert_eq(n, 3);
    cJSON_Delete(root);
    free(text);
    trr_bench_free(rep);
    trr_context_destroy(ctx);
}

/* Runs c on the CPU and checks it (must pass), then checks a copy of the output with element (r, col) changed by
 * corrupt (must fail with TRR_ERR_MISMATCH). */
static void corrupted_output_fails(const trr_case *c, int64_t r, int64_t col, double (*corrupt)(double)) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_bench_setup s;
    cr_assert_eq(trr_bench_setup_create(ctx, c, 7, &s), TRR_OK, "%s", trr_last_error(ctx));
    trr_bench_check chk;
    cr_assert_eq(trr_bench_check_case(ctx, &s, 9, &chk), TRR_OK, "a correct run failed: %s", chk.message);

    void *out = malloc(s.op[TRR_OUT].bytes);
    cr_assert_eq(trr_buffer_read(ctx, s.op[TRR_OUT].buf, 0, out, s.op[TRR_OUT].bytes), TRR_OK);
    trr_call call;
    int empty = 0;
    cr_assert_eq(trr_call_build(ctx, c->op, &s.t[0], s.n_inputs == 2 ? &s.t[1] : NULL, &s.t[TRR_OUT], c->epilogue, c->alpha, 0, &call,
                                &empty), TRR_OK);
    call.x.mem = s.op[0].host;
    call.y.mem = s.n_inputs == 2 ? s.op[1].host : NULL;
    cr_assert_eq(trr_bench_check_output(c, &call, out, NULL, 9, &chk), TRR_OK, "%s", chk.message);

    const int64_t at = call.z.offset + r * call.z.stride0 + col;
    if (c->out_dtype == TRR_F32) {
        float *p = out;
        p[at] = (float)corrupt(p[at]);
    } else {
        uint16_t *p = out;
        float f;
        trr_f16_to_f32(&p[at], &f, 1);
        f = (float)corrupt(f);
        trr_f32_to_f16(&f, &p[at], 1);
    }
    cr_assert_eq(trr_bench_check_output(c, &call, out, NULL, 9, &chk), TRR_ERR_MISMATCH,
                 "a corrupted output passed the check");
    cr_assert(chk.message[0] != '\0');
    free(out);
    trr_bench_setup_destroy(&s);
    trr_context_destroy(ctx);
}

static double off_by_a_bit(double v) { return v * 1.01 + 1e-3; }
static double to_nan(double v) { return v * NAN; }

Test(bench, wrong_add_result_fails) {
    trr_case c = {.op = TRR_OP_ADD, .in_dtype = TRR_F32, .out_dtype = TRR_F32, .rows = 1, .cols = 1000};
    corrupted_output_fails(&c, 0, 517, off_by_a_bit);
}

Test(bench, unwritten_element_of_a_sampled_output_fails) {
    /* 2^20 elements: only 256 are compared, but every one is scanned for the poison */
    trr_case c = {.op = TRR_OP_ADD, .in_dtype = TRR_F32, .out_dtype = TRR_F32, .rows = 1, .cols = 1 << 20};
    corrupted_output_fails(&c, 0, 777777, to_nan);
}

Test(bench, wrong_element_of_a_sampled_matmul_fails) {
    /* 300 x 300 outputs are sampled; the first element is always among the samples */
    trr_case c = {.op = TRR_OP_MATMUL, .in_dtype = TRR_F32, .out_dtype = TRR_F32, .m = 300, .n = 300, .k = 300};
    corrupted_output_fails(&c, 0, 0, off_by_a_bit);
}

Test(bench, wrong_f16_matmul_result_fails) {
    trr_case c = {.op = TRR_OP_MATMUL, .in_dtype = TRR_F16, .out_dtype = TRR_F16, .m = 64, .n = 48, .k = 80,
                  .epilogue = TRR_EPI_RELU};
    corrupted_output_fails(&c, 63, 47, off_by_a_bit);
}

Test(bench, wrong_softmax_row_fails) {
    trr_case c = {.op = TRR_OP_SOFTMAX, .in_dtype = TRR_F32, .out_dtype = TRR_F32, .rows = 4096, .cols = 256};
    corrupted_output_fails(&c, 4095, 100, off_by_a_bit); /* the last row is always checked */
}

Test(bench, sizes_follow_the_spec) {
    trr_case *cases = NULL;
    int n = 0;
    cr_assert_eq(trr_bench_cases(TRR_BENCH_SOFTMAX, TRR_BENCH_SIZES_FULL, NULL, &cases, &n), TRR_OK);
    cr_assert_eq(n, (12672 - 256) / 128 + 1);
    cr_assert_eq(cases[n - 1].cols, 12672);
    cr_assert_eq(cases[0].rows, 4096);
    free(cases);
    cr_assert_eq(trr_bench_cases(TRR_BENCH_MATMUL_F32, TRR_BENCH_SIZES_FULL, NULL, &cases, &n), TRR_OK);
    cr_assert_eq(cases[n - 1].m, 8192);
    cr_assert_eq(cases[n - 1].n, 4096);
    cr_assert_eq(cases[n - 1].k, 6144);
    free(cases);
    cr_assert_eq(trr_bench_cases(TRR_BENCH_ADD, TRR_BENCH_SIZES_LIST, "2^24,1000", &cases, &n), TRR_OK);
    cr_assert_eq(n, 2);
    cr_assert_eq(cases[0].cols, 1 << 24);
    cr_assert_eq(cases[1].cols, 1000);
    free(cases);
    cr_assert_neq(trr_bench_cases(TRR_BENCH_ADD, TRR_BENCH_SIZES_LIST, "12x", &cases, &n), TRR_OK);
    trr_case add = {.op = TRR_OP_ADD, .rows = 1, .cols = 1 << 27};
    cr_assert_float_eq(trr_bench_figure(TRR_BENCH_ADD, &add, 1.0), 12.0 * (1 << 27) / 1e-3 * 1e-9, 1e-6);
}

/* The warm-up before timing (core/warmup.h): a CPU device's default, and TRIREME_WARMUP_MS when it is a
 * non-negative number; anything else is ignored. */
Test(bench, warmup_seconds_follow_the_device_and_the_environment) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    unsetenv("TRIREME_WARMUP_MS");
    cr_expect_float_eq(trr_warmup_seconds(ctx), 0.05, 1e-12, "a CPU device warms up for 50 ms");
    setenv("TRIREME_WARMUP_MS", "250", 1);
    cr_expect_float_eq(trr_warmup_seconds(ctx), 0.25, 1e-12);
    setenv("TRIREME_WARMUP_MS", "0", 1);
    cr_expect_float_eq(trr_warmup_seconds(ctx), 0.0, 1e-12, "0 turns the warm-up off");
    const char *bad[] = {"-5", "abc", "10ms"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("TRIREME_WARMUP_MS", bad[i], 1);
        cr_expect_float_eq(trr_warmup_seconds(ctx), 0.05, 1e-12, "\"%s\" must be ignored", bad[i]);
    }
    unsetenv("TRIREME_WARMUP_MS");
    trr_context_destroy(ctx);
}
