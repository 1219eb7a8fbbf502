/* trireme bench: the JSON report's schema on a small CPU run, and the check that keeps a wrong kernel from
 * reporting a figure (run on outputs corrupted here, after a correct run). */
#define _POSIX_C_SOURCE 200809L /* setenv, mkdtemp */
#include "bench.h"
#include "bench_ids.h"
#include "clock.h"
#include "validate.h"
#include "warmup.h"
#include "report_meta.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void expect_type(const cJSON *o, const char *key, cJSON_bool (*is)(const cJSON *), const char *what) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    cr_assert(v != NULL, "missing key \"%s\" (%s)", key, what);
    cr_assert(is(v), "key \"%s\" has the wrong type (%s)", key, what);
}

Test(bench, json_schema_of_a_small_cpu_run, .timeout = 300) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_bench_options opt = {
        .bench_mask = ((uint64_t)1 << bench_id("add_f32")) | ((uint64_t)1 << bench_id("softmax_f32")) | ((uint64_t)1 << bench_id("matmul_f32")),
        .sizes = TRR_BENCH_SIZES_LIST, .size_list = "256", .reps = 3, .seed = 42,
        .command_line = "trireme bench 'a b'"};
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
    /* the report describes itself */
    expect_type(root, "date", cJSON_IsString, "top");
    expect_type(root, "host", cJSON_IsString, "top");
    expect_type(root, "device_uuids", cJSON_IsArray, "top");
    expect_type(root, "physical_gpus", cJSON_IsArray, "top");
    cr_expect(cJSON_IsNull(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "device_uuids"), 0)), "cpu has no UUID: null");
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "physical_gpus")), 0);
    const cJSON *commit = cJSON_GetObjectItem(root, "commit");
    cr_expect(cJSON_IsNull(commit) || (cJSON_IsString(commit) && commit->valuestring[0]), "commit: a describe or null");
    cr_expect(strlen(cJSON_GetObjectItem(root, "date")->valuestring) == 20, "ISO 8601 UTC: YYYY-MM-DDTHH:MM:SSZ");
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
    expect_type(ceil, "vendor", cJSON_IsString, "ceilings");
    cr_expect(strstr(cJSON_GetObjectItem(ceil, "vendor")->valuestring, "OpenBLAS"), "the CPU's vendor is the system BLAS");
    cr_assert_gt(cJSON_GetObjectItem(ceil, "copy_gbs")->valuedouble, 0);
    cr_assert_str_eq(cJSON_GetObjectItem(r0, "library_version")->valuestring, TRR_VERSION_STRING);
    cr_assert_str_eq(cJSON_GetObjectItem(root, "command_line")->valuestring, "trireme bench 'a b'");
    const cJSON *counts = cJSON_GetObjectItem(r0, "counts");
    cr_assert_eq(cJSON_GetObjectItem(counts, "measured")->valueint, 3);
    cr_assert_eq(cJSON_GetObjectItem(counts, "unsupported")->valueint, 0);

    const cJSON *res;
    int n = 0;
    cJSON_ArrayForEach(res, cJSON_GetObjectItem(r0, "results")) {
        static const char *const strings[] = {"bench", "op", "case", "size", "unit", "status", "reason"};
        static const char *const numbers[] = {"x", "reps", "median_ms", "min_ms", "max_ms", "figure", "figure_min",
                                              "figure_max"};
        for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) expect_type(res, strings[i], cJSON_IsString, "result");
        for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) expect_type(res, numbers[i], cJSON_IsNumber, "result");
        /* the f32 matmul is judged against the system BLAS's sgemm, timed beside it (its ceiling); the streaming
         * ops have no vendor figure: null, never 0 */
        const int matmul = !strcmp(cJSON_GetObjectItem(res, "op")->valuestring, "matmul");
        static const char *const vendor_keys[] = {"vendor_figure", "vendor_median_ms", "fraction_of_vendor"};
        for (size_t i = 0; i < sizeof vendor_keys / sizeof vendor_keys[0]; i++) {
            if (matmul) {
                expect_type(res, vendor_keys[i], cJSON_IsNumber, "matmul result");
                cr_expect_gt(cJSON_GetObjectItem(res, vendor_keys[i])->valuedouble, 0, "%s", vendor_keys[i]);
            } else {
                cr_expect(cJSON_IsNull(cJSON_GetObjectItem(res, vendor_keys[i])), "%s must be null without a vendor",
                          vendor_keys[i]);
            }
        }
        expect_type(res, "ceiling", cJSON_IsNumber, "result");
        expect_type(res, "fraction_of_ceiling", cJSON_IsNumber, "result");
        if (matmul)
            cr_expect_eq(cJSON_GetObjectItem(res, "ceiling")->valuedouble,
                         cJSON_GetObjectItem(res, "vendor_figure")->valuedouble, "matmul's ceiling is the vendor's");
        expect_type(res, "above_ceiling", cJSON_IsBool, "result");
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
    cr_assert_eq(trr_case_call_build(ctx, c, s.t, 0, &call, &empty), TRR_OK);
    void *hosts[TRR_CASE_SLOTS];
    for (int i = 0; i < TRR_CASE_SLOTS; i++) hosts[i] = s.has[i] && i != TRR_OUT ? s.op[i].host : NULL;
    hosts[TRR_OUT] = out;
    trr_case_call_host(&call, hosts);
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
    cr_assert_eq(trr_bench_cases(bench_id("softmax_f32"), TRR_BENCH_SIZES_FULL, NULL, &cases, &n), TRR_OK);
    cr_assert_eq(n, (12672 - 256) / 128 + 1);
    cr_assert_eq(cases[n - 1].cols, 12672);
    cr_assert_eq(cases[0].rows, 4096);
    free(cases);
    cr_assert_eq(trr_bench_cases(bench_id("matmul_f32"), TRR_BENCH_SIZES_FULL, NULL, &cases, &n), TRR_OK);
    cr_assert_eq(cases[n - 1].m, 8192);
    cr_assert_eq(cases[n - 1].n, 4096);
    cr_assert_eq(cases[n - 1].k, 6144);
    free(cases);
    cr_assert_eq(trr_bench_cases(bench_id("add_f32"), TRR_BENCH_SIZES_LIST, "2^24,1000", &cases, &n), TRR_OK);
    cr_assert_eq(n, 2);
    cr_assert_eq(cases[0].cols, 1 << 24);
    cr_assert_eq(cases[1].cols, 1000);
    free(cases);
    cr_assert_neq(trr_bench_cases(bench_id("add_f32"), TRR_BENCH_SIZES_LIST, "12x", &cases, &n), TRR_OK);
    trr_case add = {.op = TRR_OP_ADD, .rows = 1, .cols = 1 << 27};
    cr_assert_float_eq(trr_bench_figure(bench_id("add_f32"), &add, 1.0), 12.0 * (1 << 27) / 1e-3 * 1e-9, 1e-6);
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

/* trr_warmup_run keeps calling for its seconds, at least min_rounds times, in bursts each ended by a
 * synchronize (the add's output is complete when it returns), and gives back the first failure. */
typedef struct warm_count {
    int calls, fail_at;
    const trr_tensor *x, *ones;
} warm_count;

static trr_status counted_add(trr_context *ctx, void *user) {
    warm_count *w = user;
    if (++w->calls == w->fail_at) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "call %d fails", w->calls);
    return trr_add(ctx, w->x, w->ones, w->x);
}

Test(bench, warmup_runs_in_bursts_for_its_seconds) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    const int64_t n = 4096;
    trr_buffer *bx = NULL, *b1 = NULL;
    cr_assert_eq(trr_buffer_create(ctx, (size_t)n * sizeof(float), &bx), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, (size_t)n * sizeof(float), &b1), TRR_OK);
    float *h = malloc((size_t)n * sizeof *h);
    cr_assert_not_null(h);
    for (int64_t i = 0; i < n; i++) h[i] = 1.0f;
    cr_assert_eq(trr_buffer_write(ctx, b1, 0, h, (size_t)n * sizeof *h), TRR_OK);
    cr_assert_eq(trr_buffer_fill(ctx, bx, 0, (size_t)n * sizeof *h, 0), TRR_OK);
    trr_tensor x, ones;
    cr_assert_eq(trr_tensor_1d(bx, 0, TRR_F32, n, &x), TRR_OK);
    cr_assert_eq(trr_tensor_1d(b1, 0, TRR_F32, n, &ones), TRR_OK);
    warm_count w = {.x = &x, .ones = &ones};
    const double t0 = trr_now_s();
    cr_assert_eq(trr_warmup_run(ctx, counted_add, &w, 0, 0.05, 3), TRR_OK, "%s", trr_last_error(ctx));
    const double el = trr_now_s() - t0;
    cr_expect(el >= 0.05 && el < 0.05 + 0.5 + 0.5, "ran %g s for 0.05 s", el);
    cr_expect(w.calls >= 3 && w.calls < (1 << 24), "%d calls", w.calls);
    /* x gained 1 per call, and every call had finished when it returned: x = calls, exactly, in every element */
    cr_assert_eq(trr_buffer_read(ctx, bx, 0, h, (size_t)n * sizeof *h), TRR_OK);
    cr_expect_eq(h[0], (float)w.calls, "%g after %d calls", (double)h[0], w.calls);
    cr_expect_eq(h[n - 1], (float)w.calls, "%g after %d calls", (double)h[n - 1], w.calls);
    /* no time asked: whole bursts until min_rounds */
    w.calls = 0;
    cr_assert_eq(trr_warmup_run(ctx, counted_add, &w, 0, 0, 5), TRR_OK);
    cr_expect(w.calls >= 5, "%d calls", w.calls);
    w.calls = 0;
    w.fail_at = 2;
    cr_expect_eq(trr_warmup_run(ctx, counted_add, &w, 0, 0.05, 3), TRR_ERR_INVALID_ARGUMENT);
    cr_expect_eq(w.calls, 2, "stops at the failing call");
    free(h);
    trr_buffer_destroy(bx);
    trr_buffer_destroy(b1);
    trr_context_destroy(ctx);
}

/* The command line a report records can be pasted back into a shell. */
Test(bench, command_line_is_quoted_for_the_shell) {
    char *argv[] = {"bench", "--sizes", "2^20", "--json", "my file.json", "it's"};
    char out[256];
    trr_report_command_line("trireme", 6, argv, out, sizeof out);
    cr_assert_str_eq(out, "trireme bench --sizes 2^20 --json 'my file.json' 'it'\\''s'");
    char tiny[16];
    trr_report_command_line("trireme", 6, argv, tiny, sizeof tiny);
    cr_assert_eq(strlen(tiny), sizeof tiny - 1);
    cr_assert_str_eq(tiny + sizeof tiny - 4, "...");
}

/* The warm-up and cache flushing scale with the case: benchmarking add of 4096 floats on the CPU (the check,
 * warm-up, flushes and repetitions; the progress callback brackets exactly that) takes about a second, and stays well
 * under 6 s on a 2-core machine busy with the rest of the suite, where a flush before every warm-up call would make
 * it 20-38 s. */
static double case_start_s, case_seconds;
static void time_case(void *user, int index, int total, const char *name, const trr_bench_result *r,
                      double elapsed_s, double eta_s) {
    (void)user, (void)index, (void)total, (void)name, (void)eta_s;
    if (!r) case_start_s = elapsed_s;
    else case_seconds = elapsed_s - case_start_s;
}

Test(bench, a_tiny_case_takes_seconds_not_tens, .timeout = 120) {
    unsetenv("TRIREME_WARMUP_MS");
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_bench_options opt = {.bench_mask = (uint64_t)1 << bench_id("add_f32"), .sizes = TRR_BENCH_SIZES_LIST, .size_list = "4096",
                             .seed = 5, .progress = time_case};
    trr_bench_report *rep = NULL;
    case_seconds = -1;
    cr_assert_eq(trr_bench_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(rep->n_results, 1);
    cr_assert_eq(rep->results[0].outcome, TRR_BENCH_OK, "%s", rep->results[0].reason);
    cr_assert_geq(rep->results[0].timing.reps, 5);
    cr_assert(rep->flush_bytes > 0, "the case must still be timed from a flushed cache");
    cr_assert(case_seconds >= 0 && case_seconds < 6.0, "n = 4096 add took %.2f s", case_seconds);
    trr_bench_free(rep);
    trr_context_destroy(ctx);
}

/* Synthetic devices for the same-GPU grouping: the bench's CI has no GPU. */
static trr_device_info dev(const char *backend, int is_gpu, const char *uuid, const char *bus) {
    trr_device_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.backend, sizeof d.backend, "%s", backend);
    snprintf(d.spec, sizeof d.spec, "%s:0", backend);
    d.is_gpu = is_gpu;
    snprintf(d.uuid, sizeof d.uuid, "%s", uuid);
    snprintf(d.pci_bus_id, sizeof d.pci_bus_id, "%s", bus);
    return d;
}

Test(bench, devices_of_one_physical_gpu_are_grouped) {
    const char *u0 = "0a1b2c3d-0000-1111-2222-333344445555", *u1 = "ffffffff-0000-1111-2222-333344445555";
    trr_device_info d[] = {
        dev("cuda", 1, u0, "0000:3b:00.0"),   /* 0: GPU A */
        dev("cuda", 1, u1, "0000:5e:00.0"),   /* 1: GPU B */
        dev("vulkan", 1, u0, "0000:3b:00.0"), /* 2: A through Vulkan */
        dev("opencl", 1, "", "0000:5E:00.0"), /* 3: B through OpenCL, no UUID: the bus id decides (any case) */
        dev("vulkan", 1, u1, ""),             /* 4: B through Vulkan */
        dev("opencl", 1, "", ""),             /* 5: a GPU with no identity: alone */
    };
    const trr_device_info *p[6];
    for (int i = 0; i < 6; i++) p[i] = &d[i];
    int g[6];
    cr_assert_eq(trr_bench_gpu_groups(p, 6, g), 2);
    cr_assert_eq(g[0], 0);
    cr_assert_eq(g[1], 1);
    cr_assert_eq(g[2], 0);
    cr_assert_eq(g[3], 1);
    cr_assert_eq(g[4], 1);
    cr_assert_eq(g[5], 5);
    /* different UUIDs are different GPUs even on one bus id (MIG slices) */
    trr_device_info m0 = dev("cuda", 1, u0, "0000:3b:00.0"), m1 = dev("vulkan", 1, u1, "0000:3b:00.0");
    cr_assert_not(trr_bench_same_gpu(&m0, &m1));
    /* one backend never lists one GPU twice */
    trr_device_info c2 = dev("cuda", 1, u0, "0000:3b:00.0");
    cr_assert_not(trr_bench_same_gpu(&d[0], &c2));
}

/* This machine's case: PoCL, lavapipe and the cpu backend are devices of one CPU, but not GPUs, and lavapipe's
 * "UUID" is the driver's name: nothing is grouped, even when two CPU devices report the same UUID. */
Test(bench, cpu_devices_are_never_grouped) {
    const char *mesa = "6d657361-3232-2e33-2e36-000000000000";
    trr_device_info d[] = {dev("opencl", 0, "", ""), dev("vulkan", 0, mesa, ""), dev("cpu", 0, "", ""),
                           dev("vulkan", 0, mesa, "")};
    snprintf(d[3].backend, sizeof d[3].backend, "opencl"); /* the same "UUID" from another backend */
    const trr_device_info *p[4] = {&d[0], &d[1], &d[2], &d[3]};
    int g[4];
    cr_assert_eq(trr_bench_gpu_groups(p, 4, g), 0);
    for (int i = 0; i < 4; i++) cr_assert_eq(g[i], i);
    /* and the devices this machine really has */
    int nb = 0;
    cr_assert_eq(trr_backend_count(&nb), TRR_OK);
    trr_device_info real[16];
    const trr_device_info *rp[16];
    int n = 0;
    for (int b = 0; b < nb && n < 16; b++) {
        trr_backend_info bi;
        if (trr_backend_get_info(b, &bi) != TRR_OK || !bi.available) continue;
        for (int i = 0; i < bi.device_count && n < 16; i++)
            if (trr_device_get_info(bi.name, i, &real[n]) == TRR_OK && !real[n].is_gpu) rp[n] = &real[n], n++;
    }
    int rg[16];
    cr_assert_eq(trr_bench_gpu_groups(rp, n, rg), 0, "CPU devices were grouped as one GPU");
}

/* The cross-API view, from two synthetic reports of one GPU: fractions of the GPU's best copy ceiling and of the
 * best API, in the JSON's physical_gpus section. */
Test(bench, physical_gpu_view_compares_the_apis) {
    const char *u = "0a1b2c3d-0000-1111-2222-333344445555";
    trr_bench_report a, b;
    trr_bench_result ra, rb;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b), memset(&ra, 0, sizeof ra), memset(&rb, 0, sizeof rb);
    a.device = dev("cuda", 1, u, ""), b.device = dev("vulkan", 1, u, "");
    a.copy.gbs = 4000, b.copy.gbs = 3000;
    ra.bench = rb.bench = bench_id("add_f32");
    snprintf(ra.size, sizeof ra.size, "n=2^24"), snprintf(rb.size, sizeof rb.size, "n=2^24");
    ra.outcome = rb.outcome = TRR_BENCH_OK;
    ra.figure = 3000, rb.figure = 1500;
    a.results = &ra, a.n_results = 1, b.results = &rb, b.n_results = 1;
    const trr_bench_report *reps[2] = {&a, &b};
    cJSON *arr = trr_bench_physical_json(reps, 2);
    cr_assert_eq(cJSON_GetArraySize(arr), 1);
    const cJSON *gpu = cJSON_GetArrayItem(arr, 0);
    cr_assert_str_eq(cJSON_GetObjectItem(gpu, "uuid")->valuestring, u);
    cr_assert_float_eq(cJSON_GetObjectItem(gpu, "copy_ceiling_gbs")->valuedouble, 4000, 1e-9);
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(gpu, "cases"), 0);
    cr_assert_str_eq(cJSON_GetObjectItem(c, "bench")->valuestring, "add_f32");
    const cJSON *apis = cJSON_GetObjectItem(c, "apis");
    cr_assert_eq(cJSON_GetArraySize(apis), 2);
    const cJSON *vk = cJSON_GetArrayItem(apis, 1);
    cr_assert_str_eq(cJSON_GetObjectItem(vk, "backend")->valuestring, "vulkan");
    cr_assert_float_eq(cJSON_GetObjectItem(vk, "fraction_of_ceiling")->valuedouble, 1500.0 / 4000, 1e-12);
    cr_assert_float_eq(cJSON_GetObjectItem(vk, "fraction_of_best")->valuedouble, 0.5, 1e-12);
    cJSON_Delete(arr);
    char *text = NULL;
    FILE *mem = open_memstream(&text, &(size_t){0});
    trr_bench_print_physical(reps, 2, mem);
    fclose(mem);
    cr_assert(strstr(text, "physical GPU 0") && strstr(text, "38%") && strstr(text, "0.50"), "%s", text);
    free(text);
}

/* The same-GPU chart: one bar per API that ran, at its fraction of the GPU's ceiling, and in place of a bar the
 * reason there is none. */
/* --replot's input: a saved report reads back with the figures, ranges, ceiling, outcomes and device it was
 * written with; a file that is not a bench report is refused. */
/* rep written as a JSON report to path (a mkstemp template, filled in) and read back: the one report it holds. */
static trr_bench_report *written_and_read(const trr_bench_report *rep, char *path) {
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    const trr_bench_report *reps[1] = {rep};
    cr_assert_eq(trr_bench_write_json(reps, 1, path), TRR_OK, "%s", trr_last_error(NULL));
    trr_bench_report *back[4];
    int n = 0;
    cr_assert_eq(trr_bench_load_reports(path, back, 4, &n, stderr), TRR_OK, "%s", trr_last_error(NULL));
    cr_assert_eq(n, 1);
    return back[0];
}

Test(bench, saved_report_reads_back, .timeout = 120) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_bench_options opt = {.bench_mask = ((uint64_t)1 << bench_id("add_f32")) | ((uint64_t)1 << bench_id("matmul_f32")),
                             .sizes = TRR_BENCH_SIZES_LIST, .size_list = "96", .reps = 3, .seed = 7};
    trr_bench_report *rep = NULL;
    cr_assert_eq(trr_bench_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
    char path[] = "/tmp/trr_bench_report_XXXXXX";
    trr_bench_report *back[4] = {written_and_read(rep, path)};
    int n = 1;
    cr_assert_str_eq(back[0]->device.spec, rep->device.spec);
    cr_assert_eq(back[0]->device.is_gpu, rep->device.is_gpu);
    cr_assert_float_eq(back[0]->copy.gbs, rep->copy.gbs, 1e-9 * rep->copy.gbs);
    cr_assert_eq(back[0]->n_results, rep->n_results);
    for (int i = 0; i < rep->n_results; i++) {
        const trr_bench_result *a = &rep->results[i], *b = &back[0]->results[i];
        cr_assert_eq(a->bench, b->bench);
        cr_assert_str_eq(a->size, b->size);
        cr_assert_eq(a->outcome, b->outcome);
        cr_assert_float_eq(a->figure, b->figure, 1e-9 * a->figure);
        cr_assert_float_eq(a->figure_lo, b->figure_lo, 1e-9 * a->figure_lo);
        cr_assert_float_eq(a->figure_hi, b->figure_hi, 1e-9 * a->figure_hi);
        cr_assert_float_eq(a->x, b->x, 1e-9);
    }
    trr_bench_free(back[0]);
    /* a conformance report (or anything else) is refused, with nothing appended */
    FILE *f = fopen(path, "w");
    fputs("{\"tool\": \"trireme conformance\", \"reports\": []}", f);
    fclose(f);
    cr_assert_neq(trr_bench_load_reports(path, back, 4, &n, stderr), TRR_OK);
    cr_assert_eq(n, 1);
    remove(path);
    trr_bench_free(rep);
    trr_context_destroy(ctx);
}

/* A run asked to stop (options.stop, which a signal handler sets) ends before its next case: the report holds
 * the cases that ran, says it was interrupted and how many were planned, and reads back the same. */
static volatile sig_atomic_t stop_flag;
static void stop_after_first(void *user, int index, int total, const char *name, const trr_bench_result *r,
                             double elapsed_s, double eta_s) {
    (void)user, (void)index, (void)total, (void)name, (void)elapsed_s, (void)eta_s;
    if (r) stop_flag = 1;
}

Test(bench, a_stopped_run_reports_the_cases_it_ran, .timeout = 120) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_bench_options opt = {.bench_mask = (uint64_t)1 << bench_id("add_f32"), .sizes = TRR_BENCH_SIZES_LIST,
                             .size_list = "96,128,160,192", .reps = 3, .seed = 7, .progress = stop_after_first,
                             .stop = &stop_flag};
    stop_flag = 0;
    trr_bench_report *rep = NULL;
    cr_assert_eq(trr_bench_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(rep->n_results, 1);
    cr_assert_eq(rep->cases_planned, 4);
    cr_assert(rep->interrupted);
    cr_assert_eq(rep->results[0].outcome, TRR_BENCH_OK, "%s", rep->results[0].reason);
    cr_assert_str_eq(rep->results[0].size, "n=96");
    char path[] = "/tmp/trr_bench_stopped_XXXXXX";
    trr_bench_report *back = written_and_read(rep, path);
    cr_assert(back->interrupted);
    cr_assert_eq(back->cases_planned, 4);
    cr_assert_eq(back->n_results, 1);
    trr_bench_free(back);
    remove(path);
    trr_bench_free(rep);
    /* asked to stop before it starts: no case runs, and a run that is not stopped says so */
    stop_flag = 1;
    opt.progress = NULL;
    cr_assert_eq(trr_bench_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(rep->n_results, 0);
    cr_assert(rep->interrupted);
    trr_bench_free(rep);
    stop_flag = 0;
    opt.size_list = "96";
    cr_assert_eq(trr_bench_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(rep->n_results, 1);
    cr_assert_eq(rep->cases_planned, 1);
    cr_assert(!rep->interrupted);
    trr_bench_free(rep);
    trr_context_destroy(ctx);
}

Test(bench, same_gpu_chart_has_a_bar_per_api) {
    const char *u = "0a1b2c3d-0000-1111-2222-333344445555";
    trr_bench_report a, b, c;
    trr_bench_result ra[2], rb, rc;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b), memset(&c, 0, sizeof c);
    memset(ra, 0, sizeof ra), memset(&rb, 0, sizeof rb), memset(&rc, 0, sizeof rc);
    a.device = dev("cuda", 1, u, ""), b.device = dev("vulkan", 1, u, ""), c.device = dev("opencl", 1, u, "");
    a.copy.gbs = 4000, b.copy.gbs = 3000, c.copy.gbs = 3900;
    ra[0].bench = rb.bench = rc.bench = bench_id("add_f32");
    ra[1].bench = bench_id("softmax_f32");
    snprintf(ra[0].size, sizeof ra[0].size, "n=2^24"), snprintf(rb.size, sizeof rb.size, "n=2^24");
    snprintf(rc.size, sizeof rc.size, "n=2^24"), snprintf(ra[1].size, sizeof ra[1].size, "4096x1024");
    ra[0].outcome = ra[1].outcome = rb.outcome = TRR_BENCH_OK;
    rc.outcome = TRR_BENCH_UNSUPPORTED;
    ra[0].figure = 3000, ra[1].figure = 2000, rb.figure = 1000;
    a.results = ra, a.n_results = 2, b.results = &rb, b.n_results = 1, c.results = &rc, c.n_results = 1;
    const trr_bench_report *reps[3] = {&a, &b, &c};
    int nv = 0;
    trr_bench_gpu_view *views = trr_bench_gpu_views(reps, 3, &nv);
    cr_assert_eq(nv, 1);
    cr_assert_eq(views[0].n, 3);
    cr_assert_eq(views[0].n_cases, 2, "add and softmax: two cases");
    char dir[] = "/tmp/trr_same_gpu_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/chart.svg", dir);
    cr_assert_eq(trr_bench_write_same_gpu_svg(&views[0], path), TRR_OK);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char svg[32768];
    size_t len = fread(svg, 1, sizeof svg - 1, f);
    svg[len] = '\0';
    fclose(f);
    remove(path), rmdir(dir);
    int bars = 0;
    for (const char *p = svg; (p = strstr(p, "<rect x=")) != NULL; p++) bars += strstr(p, "<title>") != NULL &&
                                                                         strstr(p, "<title>") < strstr(p, "</rect>");
    cr_expect_eq(bars, 3, "3 measured figures, 3 bars:\n%s", svg);
    cr_expect(strstr(svg, "cuda:0 add_f32 n=2^24: 3000 GB/s, 75% of 4000"), "%s", svg);
    cr_expect(strstr(svg, "vulkan:0 add_f32 n=2^24: 1000 GB/s, 25% of 4000"), "%s", svg);
    cr_expect(strstr(svg, "unsupported") && strstr(svg, "not run"), "%s", svg);
    free(views);
}

Test(bench, wrong_element_in_the_last_batch_fails) {
    /* packed batches: the last element of the last matrix is always among the samples */
    trr_case c = {.op = TRR_OP_MATMUL, .in_dtype = TRR_F16, .out_dtype = TRR_F16, .m = 33, .n = 40, .k = 24,
                  .batch = 5, .bcast_b = 1};
    corrupted_output_fails(&c, 5 * 33 - 1, 39, off_by_a_bit);
}

Test(bench, bmm_sizes_follow_the_spec) {
    trr_case *cases = NULL;
    int n = 0;
    cr_assert_eq(trr_bench_cases(bench_id("bmm_f16"), TRR_BENCH_SIZES_QUICK, NULL, &cases, &n), TRR_OK);
    cr_assert_eq(n, 2);
    cr_assert(cases[0].batch == 512 && cases[0].m == 128 && cases[0].n == 128 && cases[0].k == 128);
    cr_assert(cases[1].batch == 64 && cases[1].m == 1024 && cases[1].n == 1024 && cases[1].k == 128);
    cr_assert_eq(cases[1].in_dtype, TRR_F16);
    /* TFLOPS = 2·B·M·N·K / t */
    cr_assert_float_eq(trr_bench_figure(bench_id("bmm_f16"), &cases[1], 1.0), 2.0 * 64 * 1024 * 1024 * 128 / 1e-3 * 1e-12,
                       1e-9);
    free(cases);
    cr_assert_eq(trr_bench_cases(bench_id("bmm_f16"), TRR_BENCH_SIZES_LIST, "3x17x5x9", &cases, &n), TRR_OK);
    cr_assert(n == 1 && cases[0].batch == 3 && cases[0].m == 17 && cases[0].n == 5 && cases[0].k == 9);
    free(cases);
    cr_assert_neq(trr_bench_cases(bench_id("bmm_f16"), TRR_BENCH_SIZES_LIST, "17x5x9", &cases, &n), TRR_OK);
    cr_assert_neq(trr_bench_cases(bench_id("matmul_f16"), TRR_BENCH_SIZES_LIST, "3x17x5x9", &cases, &n), TRR_OK);
    /* bmm_bf16: the same sizes, bf16 in and out */
    cr_assert_eq(trr_bench_cases(bench_id("bmm_bf16"), TRR_BENCH_SIZES_QUICK, NULL, &cases, &n), TRR_OK);
    cr_assert_eq(n, 2);
    cr_assert(cases[0].batch == 512 && cases[1].batch == 64 && cases[1].k == 128);
    cr_assert(cases[0].in_dtype == TRR_BF16 && cases[0].out_dtype == TRR_BF16);
    free(cases);
    cr_assert_eq(trr_bench_cases(bench_id("bmm_bf16"), TRR_BENCH_SIZES_LIST, "3x17x5x9", &cases, &n), TRR_OK);
    cr_assert(n == 1 && cases[0].batch == 3 && cases[0].in_dtype == TRR_BF16);
    free(cases);
}

/* A case and its vendor ceiling are timed side by side (bench/timing.c): warmed up together, then in turn
 * repetition by repetition, each call's timing its own. Here one call adds 2^20 floats and the other does
 * nothing; the log records which ran when. */
typedef struct turn_log {
    int *order, n, cap;
} turn_log;
typedef struct timed_call {
    int id;
    turn_log *log;
    const trr_tensor *x; /* NULL: the call does no work */
} timed_call;

static trr_status logged_call(trr_context *ctx, void *user) {
    timed_call *c = user;
    if (c->log->n < c->log->cap) c->log->order[c->log->n++] = c->id;
    return c->x ? trr_add(ctx, c->x, c->x, c->x) : TRR_OK;
}

Test(bench, calls_timed_side_by_side_take_turns, .timeout = 120) {
    unsetenv("TRIREME_WARMUP_MS");
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    const size_t n = (size_t)1 << 20;
    trr_buffer *x = NULL;
    cr_assert_eq(trr_buffer_create(ctx, n * sizeof(float), &x), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_fill(ctx, x, 0, n * sizeof(float), 0), TRR_OK, "%s", trr_last_error(ctx));
    trr_tensor xt;
    cr_assert_eq(trr_tensor_1d(x, 0, TRR_F32, (int64_t)n, &xt), TRR_OK);
    turn_log log = {.cap = 100000};
    log.order = malloc((size_t)log.cap * sizeof *log.order);
    cr_assert_not_null(log.order);
    timed_call work = {.id = 0, .log = &log, .x = &xt}, idle = {.id = 1, .log = &log};
    const trr_bench_timed items[2] = {{logged_call, &work}, {logged_call, &idle}};
    trr_bench_timing t[2];
    const int reps = 7;
    cr_assert_eq(trr_bench_time_each(ctx, items, 2, NULL, NULL, reps, 0.1, t), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert(log.n < log.cap, "%d calls", log.n);
    cr_assert(log.n >= 2 * (reps + 1), "warm-up and %d repetitions each, got %d calls", reps, log.n);
    cr_assert_eq(log.n % 2, 0, "as many calls of each: %d in all", log.n);
    for (int i = 0; i < log.n; i++) cr_assert_eq(log.order[i], i % 2, "call %d was item %d", i, log.order[i]);
    for (int j = 0; j < 2; j++) {
        cr_expect_eq(t[j].reps, reps);
        cr_expect(t[j].min_ms >= 0 && t[j].min_ms <= t[j].median_ms && t[j].median_ms <= t[j].max_ms,
                  "item %d: min %g, median %g, max %g", j, t[j].min_ms, t[j].median_ms, t[j].max_ms);
    }
    cr_expect(t[0].median_ms > t[1].median_ms, "the add (%g ms) must time longer than the empty call (%g ms)",
              t[0].median_ms, t[1].median_ms);
    cr_expect_eq(trr_bench_time_each(ctx, items, 0, NULL, NULL, reps, 0.1, t), TRR_ERR_INVALID_ARGUMENT);
    cr_expect_eq(trr_bench_time_each(ctx, items, TRR_BENCH_TIMED_MAX + 1, NULL, NULL, reps, 0.1, t),
                 TRR_ERR_INVALID_ARGUMENT);
    free(log.order);
    trr_buffer_destroy(x);
    trr_context_destroy(ctx);
}

/* Above the copy ceiling is suspect only where the bench writes as much as it reads: row_sum's and attention
 * decode's reads may stream past a copy (they are judged, not flagged); add's may not; matmul is judged against
 * the vendor library. */
Test(bench, only_a_writing_bench_is_suspect_above_the_copy_ceiling) {
    cr_assert(trr_bench_above_ceiling_suspect(bench_id("add_f32"), 4100.0, 4000.0));
    cr_assert(trr_bench_above_ceiling_suspect(bench_id("softmax_f32"), 4000.5, 4000.0));
    cr_assert_not(trr_bench_above_ceiling_suspect(bench_id("add_f32"), 3999.0, 4000.0));
    cr_assert_not(trr_bench_above_ceiling_suspect(bench_id("add_f32"), 4100.0, 0.0), "no ceiling measured: nothing to judge");
    cr_assert_not(trr_bench_above_ceiling_suspect(bench_id("row_sum_f32"), 4200.0, 4000.0));
    cr_assert_not(trr_bench_above_ceiling_suspect(bench_id("matmul_f16"), 700.0, 4000.0 / 1e4));
    for (int id = 0; id < trr_bench_count(); id++) {
        const trr_bench_def *d = trr_bench_get((trr_bench_id)id);
        cr_assert(!d->reads_only || (!d->compute_bound && (d->op == TRR_OP_ROW_SUM || d->op == TRR_OP_ATTENTION)),
                  "%s: only row_sum and attention decode only read", d->name);
    }
}

/* The SM clock is sampled only on an NVIDIA GPU NVML can find (bench/gpu_clock.c); elsewhere the sampler does
 * nothing, says why, and the cases' clock stays unsampled (null in the JSON, "-" in the table). */
Test(bench, clock_sampler_off_a_gpu_says_why_and_samples_nothing) {
    trr_device_info cpu = {.is_gpu = 0};
    trr_bench_clock *c = NULL;
    trr_bench_clock_open(&cpu, 0, &c);
    cr_assert_not_null(c);
    cr_expect(strstr(trr_bench_clock_source(c), "not a GPU") != NULL, "%s", trr_bench_clock_source(c));
    cr_expect_eq(trr_bench_clock_max_mhz(c), 0);
    trr_bench_clock_begin(c);
    trr_bench_clock_stats s;
    memset(&s, 0x5a, sizeof s);
    trr_bench_clock_end(c, &s);
    cr_expect_eq(s.samples, 0);
    cr_expect_eq(s.idle_samples, 0);
    trr_bench_clock_close(c);
    trr_bench_clock_end(NULL, &s);
    cr_expect_eq(s.samples, 0);
    /* a GPU without NVML's library, or one NVML does not list: no failure, a reason */
    trr_device_info gpu = {.is_gpu = 1};
    snprintf(gpu.uuid, sizeof gpu.uuid, "%s", "00000000-0000-0000-0000-000000000000");
    trr_bench_clock_open(&gpu, 0, &c);
    cr_assert_not_null(c);
    cr_expect(strstr(trr_bench_clock_source(c), "not sampled") != NULL, "%s", trr_bench_clock_source(c));
    trr_bench_clock_close(c);
    trr_bench_clock_open(&gpu, 1, &c);
    cr_assert_not_null(c);
    cr_expect(strstr(trr_bench_clock_source(c), "--no-clock") != NULL, "%s", trr_bench_clock_source(c));
    trr_bench_clock_close(c);
}

/* Low means both: a reading the driver marked idle, and a clock under TRR_BENCH_CLOCK_LOW of the top. A power
 * cap's lower clock under load is the figure's clock, not the idle governor's. */
Test(bench, only_an_idle_lowered_clock_is_flagged) {
    const trr_bench_clock_stats idle_low = {.samples = 40, .min_mhz = 750, .mean_mhz = 1500, .max_mhz = 1980,
                                            .idle_samples = 3};
    const trr_bench_clock_stats capped = {.samples = 40, .min_mhz = 1400, .mean_mhz = 1600, .max_mhz = 1755};
    const trr_bench_clock_stats idle_top = {.samples = 40, .min_mhz = 1980, .mean_mhz = 1980, .max_mhz = 1980,
                                            .idle_samples = 40};
    const trr_bench_clock_stats none = {0};
    cr_expect(trr_bench_clock_idle_low(&idle_low, 1980));
    cr_expect_not(trr_bench_clock_idle_low(&capped, 1980));
    cr_expect_not(trr_bench_clock_idle_low(&idle_top, 1980));
    cr_expect_not(trr_bench_clock_idle_low(&none, 1980));
    cr_expect_not(trr_bench_clock_idle_low(&idle_low, 0), "no top clock known: nothing to judge");
}

/* A case's clock goes through the JSON and back, and the text marks an idle-lowered one with '*' and a note;
 * the clock of a CPU run is null in the JSON and '-' in the table. */
Test(bench, case_clock_reads_back_and_marks_an_idle_lowered_case, .timeout = 120) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_bench_options opt = {.bench_mask = (uint64_t)1 << bench_id("add_f32"), .sizes = TRR_BENCH_SIZES_LIST, .size_list = "96,128",
                             .reps = 3, .seed = 9};
    trr_bench_report *rep = NULL;
    cr_assert_eq(trr_bench_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(rep->n_results, 2);
    cr_assert_eq(rep->results[0].timing.clock.samples, 0, "a CPU device is not sampled");
    cr_assert(strstr(rep->clock_source, "not a GPU") != NULL, "%s", rep->clock_source);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    const trr_bench_report *reps[1] = {rep};
    trr_bench_print(reps, 1, mem);
    fclose(mem);
    cr_expect(strstr(text, "*") == NULL, "no case marked on a CPU run:\n%s", text);
    free(text);

    /* as an NVIDIA GPU's run would fill them: one case at the top clock, one lowered while idle */
    rep->clock_max_mhz = 1980;
    snprintf(rep->clock_source, sizeof rep->clock_source, "%s", "NVML, driver 580.159.04, SM clock up to 1980 MHz");
    rep->results[0].timing.clock = (trr_bench_clock_stats){.samples = 25, .min_mhz = 1980, .mean_mhz = 1980,
                                                           .max_mhz = 1980};
    rep->results[1].timing.clock = (trr_bench_clock_stats){.samples = 25, .min_mhz = 750, .mean_mhz = 1234,
                                                           .max_mhz = 1980, .idle_samples = 6};
    mem = open_memstream(&text, &len);
    trr_bench_print(reps, 1, mem);
    fclose(mem);
    cr_expect(strstr(text, " 1980 ") != NULL, "the top-clock case's MHz:\n%s", text);
    cr_expect(strstr(text, " 1234* ") != NULL, "the idle-lowered case's MHz, marked:\n%s", text);
    cr_expect(strstr(text, "1 timed while the driver, seeing the GPU idle") != NULL, "the note:\n%s", text);
    free(text);

    char path[] = "/tmp/trr_bench_clock_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(trr_bench_write_json(reps, 1, path), TRR_OK, "%s", trr_last_error(NULL));
    cJSON *root = trr_bench_json_load(path, stderr);
    cr_assert_not_null(root);
    const cJSON *rep0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "reports"), 0);
    const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(rep0, "results"), 1);
    const cJSON *clk = cJSON_GetObjectItem(r0, "sm_clock");
    cr_assert(cJSON_IsObject(clk));
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(clk, "idle_low")));
    cr_expect_float_eq(cJSON_GetObjectItem(clk, "min_mhz")->valuedouble, 750.0, 1e-9);
    cJSON_Delete(root);
    trr_bench_report *back[2];
    int n = 0;
    cr_assert_eq(trr_bench_load_reports(path, back, 2, &n, stderr), TRR_OK, "%s", trr_last_error(NULL));
    cr_assert_eq(n, 1);
    cr_expect_float_eq(back[0]->clock_max_mhz, 1980.0, 1e-9);
    cr_expect_str_eq(back[0]->clock_source, rep->clock_source);
    const trr_bench_clock_stats *b = &back[0]->results[1].timing.clock;
    cr_expect_eq(b->samples, 25);
    cr_expect_eq(b->idle_samples, 6);
    cr_expect_float_eq(b->mean_mhz, 1234.0, 1e-9);
    cr_expect(trr_bench_clock_idle_low(b, back[0]->clock_max_mhz));
    cr_expect_not(trr_bench_clock_idle_low(&back[0]->results[0].timing.clock, back[0]->clock_max_mhz));
    trr_bench_free(back[0]);
    remove(path);
    trr_bench_free(rep);
    trr_context_destroy(ctx);
}
