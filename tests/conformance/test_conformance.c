/* Conformance of every backend against the float64 reference (core/conformance.h), one test per backend, plus
 * tests of the checker itself: a checker that passes everything would make the suite worthless.
 *
 * Environment: TRIREME_CONFORMANCE_QUICK=1 runs the quick subset; TRIREME_CONFORMANCE_SEED fixes the seed
 * (printed either way); TRIREME_REQUIRE_BACKENDS="cpu,opencl,vulkan" turns a missing or unavailable backend
 * from a skip into a failure. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "conformance.h"
#include "conf_verdict.h"
#include "conformance_check.h"
#include "half.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>

#include "test_support.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DEVICES 16

static uint64_t test_seed(void) {
    const char *s = getenv("TRIREME_CONFORMANCE_SEED");
    if (s && *s) return strtoull(s, NULL, 0);
    return (uint64_t)time(NULL);
}

static void run_backend(const char *name, int quick) {
    int n = 0, found = 0;
    trr_backend_info bi = {0};
    cr_assert_eq(trr_backend_count(&n), TRR_OK);
    for (int b = 0; b < n && !found; b++) {
        cr_assert_eq(trr_backend_get_info(b, &bi), TRR_OK);
        found = !strcmp(bi.name, name);
    }
    if (!found) {
        skip_not_compiled_in(name);
        return;
    }
    if (!bi.available) {
        char spec[40];
        snprintf(spec, sizeof spec, "%s:0", name);
        trr_context_destroy(open_device_or_skip(spec, name)); /* skips, or fails where required, with the reason */
        cr_assert_fail("backend %s reports itself unavailable (%s) but %s opens", name, bi.reason, spec);
        return;
    }
    trr_conf_options opt = {.seed = test_seed(), .quick = quick || conformance_quick_env()};
    trr_conf_report *reports[MAX_DEVICES];
    int n_reports = 0, failed = 0;
    for (int d = 0; d < bi.device_count && d < MAX_DEVICES; d++) {
        char spec[48];
        trr_context *ctx = NULL;
        snprintf(spec, sizeof spec, "%s:%d", name, d);
        cr_assert_eq(trr_context_create(spec, &ctx), TRR_OK, "%s: %s", spec, trr_last_error(NULL));
        trr_status st = trr_conformance_run(ctx, &opt, &reports[n_reports]);
        cr_assert_eq(st, TRR_OK, "%s: engine: %s", spec, trr_last_error(ctx));
        failed += reports[n_reports]->failed;
        n_reports++;
        trr_context_destroy(ctx);
    }
    trr_conformance_print_matrix((const trr_conf_report *const *)reports, n_reports, stdout);
    fflush(stdout);
    for (int r = 0; r < n_reports; r++) trr_conformance_free(reports[r]);
    cr_assert_eq(failed, 0, "%d conformance cases failed on %s (seed %llu; the matrix above lists them)", failed,
                 name, (unsigned long long)opt.seed);
}

/* The element-wise kernels at every vector width a backend accepts and on workgroups narrower than a vector's
 * tail (set as overrides, as a user or the tuner would), on the conformance cases: odd element offsets reach
 * the unaligned vector paths and n % 4 = 3 the tails, which the heuristic's config alone leaves partly untested
 * (PoCL faulted on unaligned half8 loads; lavapipe's one-invocation workgroups left 2 of a 3-element tail
 * unwritten). */
Test(conformance, elementwise_at_every_vector_width, .timeout = 600) {
    const trr_op ops[] = {TRR_OP_COPY, TRR_OP_ADD, TRR_OP_GELU, TRR_OP_SILU};
    const trr_config configs[] = {{.vector_width = 1}, {.vector_width = 2}, {.vector_width = 4},
                                  {.vector_width = 8}, {.vector_width = 16}, {.threads = 1},
                                  {.threads = 2, .vector_width = 4}, {.threads = 3, .vector_width = 1}};
    trr_conf_options opt = {.seed = test_seed(), .quick = 1};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) opt.op_mask |= 1u << ops[o];
    int n_backends = 0, n_devices = 0;
    cr_assert_eq(trr_backend_count(&n_backends), TRR_OK);
    for (int i = 0; i < n_backends * MAX_DEVICES; i++) {
        const int b = i / MAX_DEVICES, d = i % MAX_DEVICES;
        trr_backend_info bi;
        cr_assert_eq(trr_backend_get_info(b, &bi), TRR_OK);
        if (!bi.available || d >= bi.device_count) continue;
        trr_device_info info;
        cr_assert_eq(trr_device_get_info(bi.name, d, &info), TRR_OK, "%s", trr_last_error(NULL));
        n_devices++;
        int accepted = 0;
        for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++) {
            trr_context *ctx = NULL;
            cr_assert_eq(trr_context_create(info.spec, &ctx), TRR_OK, "%s: %s", info.spec, trr_last_error(NULL));
            for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
                cr_assert_eq(trr_config_override(ctx, ops[o], &configs[k]), TRR_OK, "%s", trr_last_error(ctx));
            trr_conf_report *report = NULL;
            cr_assert_eq(trr_conformance_run(ctx, &opt, &report), TRR_OK, "%s: engine: %s", info.spec,
                         trr_last_error(ctx));
            if (report->failed) trr_conformance_print_matrix((const trr_conf_report *const *)&report, 1, stdout);
            cr_expect_eq(report->failed, 0, "%s, threads %d, vector_width %d: %d cases failed (seed %llu)", info.spec,
                         configs[k].threads, configs[k].vector_width, report->failed, (unsigned long long)opt.seed);
            accepted += report->passed > 0;
            trr_conformance_free(report);
            trr_context_destroy(ctx);
        }
        cr_expect_gt(accepted, 2, "%s accepted fewer than three of the configs", info.spec);
    }
    cr_assert_gt(n_devices, 0, "no device at all (the cpu backend is always there)");
}

Test(conformance, cpu) { run_backend("cpu", 0); }
Test(conformance, opencl) { run_backend("opencl", 0); }
Test(conformance, vulkan) { run_backend("vulkan", 0); }
Test(conformance, cuda) { run_backend("cuda", 0); }

/* Vulkan through the memory path of discrete GPUs (device-local buffers, host transfers through a staging buffer,
 * batches that end with a host barrier only where the host reads): lavapipe maps its buffers directly, so
 * without TRIREME_VK_STAGING=1 CI would never run that path. The path is the same for every shape, so the quick
 * list (every op, dtype, layout and special value on fewer shapes) runs it; the full list runs on the direct path
 * above. Each Criterion test runs in a process of its own. */
Test(conformance, vulkan_through_staging) {
    cr_assert_eq(setenv("TRIREME_VK_STAGING", "1", 1), 0);
    run_backend("vulkan", 1);
}

/* ---- the checker on hand-made outputs: copy f32 of 4 elements at element offset 2 in an 8-element buffer ---- */

typedef struct fixture {
    trr_case tc;
    trr_call call;
    float in[4];
    double ref[4];
    uint8_t before[32], after[32];
} fixture;

static void make_fixture(fixture *f, trr_op op, trr_dtype out) {
    memset(f, 0, sizeof *f);
    f->tc = (trr_case){.op = op, .in_dtype = TRR_F32, .out_dtype = out, .rows = 1, .cols = 4};
    f->call.op = op;
    f->call.rows = 1, f->call.cols = 4;
    f->call.x = (trr_operand){.mem = f->in, .offset = 0, .stride0 = 4, .dtype = TRR_F32};
    f->call.z = (trr_operand){.offset = 2, .stride0 = 4, .dtype = out};
    for (int i = 0; i < 32; i++) f->before[i] = (uint8_t)(0x3C ^ (i * 37));
    for (int i = 0; i < 4; i++) {
        f->in[i] = 0.25f * (float)(i + 1);
        f->ref[i] = f->in[i];
        float poison;
        uint32_t p = TRR_CONF_POISON_F32;
        memcpy(&poison, &p, 4);
        memcpy(f->before + 8 + 4 * i, &poison, 4);
    }
    memcpy(f->after, f->before, 32);
    memcpy(f->after + 8, f->in, 16); /* a correct copy */
}

static trr_conf_result check(fixture *f) {
    return CONF_VERDICT_OF(f);
}

Test(checker, passes_a_correct_copy) {
    fixture f;
    make_fixture(&f, TRR_OP_COPY, TRR_F32);
    trr_conf_result r = check(&f);
    cr_assert_eq(r.outcome, TRR_CONF_PASS, "%s", r.message);
}

Test(checker, one_ulp_fails_bit_exact) {
    fixture f;
    make_fixture(&f, TRR_OP_COPY, TRR_F32);
    float v = nextafterf(f.in[3], 2.0f);
    memcpy(f.after + 8 + 12, &v, 4);
    trr_conf_result r = check(&f);
    cr_assert_eq(r.outcome, TRR_CONF_FAIL);
    cr_assert_eq(r.error, 1.0);
}

Test(checker, unwritten_element_fails) {
    fixture f;
    make_fixture(&f, TRR_OP_COPY, TRR_F32);
    memcpy(f.after + 8 + 4, f.before + 8 + 4, 4);
    trr_conf_result r = check(&f);
    cr_assert_eq(r.outcome, TRR_CONF_FAIL);
    cr_assert(strstr(r.message, "not written"), "%s", r.message);
}

Test(checker, guard_byte_fails) {
    fixture f;
    make_fixture(&f, TRR_OP_COPY, TRR_F32);
    f.after[25] ^= 1; /* just past the view */
    trr_conf_result r = check(&f);
    cr_assert_eq(r.outcome, TRR_CONF_FAIL);
    cr_assert(strstr(r.message, "guard"), "%s", r.message);
}

Test(checker, inf_fails_and_relative_bound_holds) {
    fixture f;
    make_fixture(&f, TRR_OP_GELU, TRR_F32);
    float v = f.in[0] * (1.0f + 5e-6f); /* within 1e-5 relative */
    memcpy(f.after + 8, &v, 4);
    cr_assert_eq(check(&f).outcome, TRR_CONF_PASS);
    v = f.in[0] * (1.0f + 3e-5f);
    memcpy(f.after + 8, &v, 4);
    cr_assert_eq(check(&f).outcome, TRR_CONF_FAIL);
    v = INFINITY;
    memcpy(f.after + 8, &v, 4);
    trr_conf_result r = check(&f);
    cr_assert_eq(r.outcome, TRR_CONF_FAIL);
    cr_assert(strstr(r.message, "non-finite"), "%s", r.message);
}

Test(checker, f16_floor_grows_with_matmul_depth_past_4096) {
    /* up to K = 4096 (every conformance case) the floor is rms / 1024; deeper, it grows as K^1.5 */
    cr_assert_float_eq(trr_conf_f16_floor(2048.0, 1), 2.0, 1e-15);
    cr_assert_float_eq(trr_conf_f16_floor(2048.0, 4096), 2.0, 1e-15);
    cr_assert_float_eq(trr_conf_f16_floor(2048.0, 4099), 2.0 * pow(4099.0 / 4096.0, 1.5), 1e-12);
    cr_assert_float_eq(trr_conf_f16_floor(2048.0, 8192), 2.0 * sqrt(8.0), 1e-12);
    cr_assert_float_eq(trr_conf_f16_floor(2048.0, 16384), 16.0, 1e-12);
    /* never below the smallest normal half */
    cr_assert_eq(trr_conf_f16_floor(1e-6, 8192), TRR_CONF_F16_MIN_NORMAL);
}

/* An f16 output whose reference lies below the smallest normal half (a 1x1x1 f16 matmul of two small inputs):
 * the correctly rounded halves pass, as the per-element floor already let them; zeros, or values one subnormal
 * step per ten off, fail. */
Test(checker, f16_subnormal_reference_judged_at_the_smallest_normal) {
    fixture f;
    make_fixture(&f, TRR_OP_GELU, TRR_F16);
    const double ref[4] = {3.1e-6, -1.07e-5, 2.53e-5, 7.3e-7};
    uint16_t h[4];
    for (int i = 0; i < 4; i++) {
        f.ref[i] = ref[i];
        h[i] = trr_half_from_float((float)ref[i]);
    }
    memcpy(f.after, f.before, sizeof f.after);
    memcpy(f.after + 4, h, sizeof h); /* the view: 4 halves at element offset 2 */
    trr_conf_result r = check(&f);
    cr_assert_eq(r.outcome, TRR_CONF_PASS, "%s", r.message);
    memset(f.after + 4, 0, sizeof h);
    r = check(&f);
    cr_assert_eq(r.outcome, TRR_CONF_FAIL, "zeros for a reference of norm %g passed", 2.8e-5);
    for (int i = 0; i < 4; i++) h[i] = (uint16_t)(trr_half_from_float((float)ref[i]) + 10); /* 10 steps of 2^-24 */
    memcpy(f.after + 4, h, sizeof h);
    cr_assert_eq(check(&f).outcome, TRR_CONF_FAIL);
}

Test(checker, fp8_products_floor_at_the_tensor_cores_sum_error) {
    /* 8-bit float inputs: an element's error may reach 2^-8 * rms(ref) (twice the largest the FP8 tensor cores'
     * sums make) whatever its own size; 16-bit inputs keep the half floor */
    cr_assert_float_eq(trr_conf_product_floor(TRR_BF16, TRR_F8E4M3, 2048.0, 528, 4e-2), 8.0 / 4e-2, 1e-12);
    cr_assert_float_eq(trr_conf_product_floor(TRR_F16, TRR_F8E5M2, 2048.0, 160, 1e-2), 8.0 / 1e-2, 1e-12);
    cr_assert_float_eq(trr_conf_product_floor(TRR_BF16, TRR_BF16, 2048.0, 528, 4e-2), 16.0, 1e-15);
    cr_assert_float_eq(trr_conf_product_floor(TRR_F16, TRR_F16, 2048.0, 1, 1e-2), 2.0, 1e-15);
    /* where the half floor is larger (deep K), it stays */
    const double deep = trr_conf_bf16_floor(2048.0, 65536);
    cr_assert(deep > 200.0);
    cr_assert_float_eq(trr_conf_product_floor(TRR_BF16, TRR_F8E4M3, 2048.0, 65536, 4e-2), deep, 1e-9);
}

Test(checker, bf16_judged_by_its_own_bounds_and_floor) {
    /* the same rule as f16 in bf16's epsilon: rms / 128, growing as K^1.5 past 4096, never below 2^-126 */
    cr_assert_float_eq(trr_conf_bf16_floor(2048.0, 1), 16.0, 1e-15);
    cr_assert_float_eq(trr_conf_bf16_floor(2048.0, 16384), 128.0, 1e-12);
    cr_assert_eq(trr_conf_bf16_floor(0.0, 1), TRR_CONF_BF16_MIN_NORMAL);
    cr_assert_float_eq(trr_conf_half_floor(TRR_F16, 2048.0, 1), 2.0, 1e-15);
    trr_case c = {.op = TRR_OP_MATMUL, .in_dtype = TRR_BF16, .out_dtype = TRR_BF16};
    cr_assert_eq(trr_conf_mode_of(&c), TRR_CONF_MODE_BF16);
    trr_conf_worst w1, w2;
    trr_conf_worst_init(TRR_CONF_MODE_BF16, TRR_OP_MATMUL, &w1, &w2);
    cr_assert_float_eq(w1.bound, 8e-3, 0.0);
    cr_assert_float_eq(w2.bound, 4e-2, 0.0);
    c.out_dtype = TRR_F32; /* a bf16 matmul with f32 output is judged as f32 */
    cr_assert_eq(trr_conf_mode_of(&c), TRR_CONF_MODE_FROB);
    /* one bf16 step apart is one ulp, and the poison is a NaN */
    cr_assert_float_eq(trr_conf_ulp_distance(TRR_BF16, 1.0, 1.0078125), 1.0, 0.0);
    cr_assert(isnan(trr_bf16_to_float((uint16_t)trr_conf_poison(TRR_BF16))));
}

/* The JSON report describes itself: tool, version, command line, host, commit (a describe or null), date, and
 * one UUID (or null) per device. */
Test(conformance, json_report_describes_itself, .timeout = 300) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_conf_options opt = {.seed = 3, .quick = 1, .op_mask = 1u << TRR_OP_COPY,
                            .command_line = "trireme conformance --device cpu --ops copy --quick"};
    trr_conf_report *rep = NULL;
    cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
    char *text = NULL;
    cr_assert_eq(trr_conformance_json((const trr_conf_report *const *)&rep, 1, &text), TRR_OK);
    cJSON *root = cJSON_Parse(text);
    cr_assert(root);
    cr_assert_str_eq(cJSON_GetObjectItem(root, "tool")->valuestring, "trireme conformance");
    cr_assert_str_eq(cJSON_GetObjectItem(root, "version")->valuestring, TRR_VERSION_STRING);
    cr_assert_str_eq(cJSON_GetObjectItem(root, "command_line")->valuestring, opt.command_line);
    cr_assert(cJSON_IsString(cJSON_GetObjectItem(root, "host")));
    const cJSON *commit = cJSON_GetObjectItem(root, "commit");
    cr_assert(cJSON_IsNull(commit) || cJSON_IsString(commit));
    const cJSON *date = cJSON_GetObjectItem(root, "date");
    cr_assert(cJSON_IsString(date) && strlen(date->valuestring) == 20 && date->valuestring[19] == 'Z');
    const cJSON *uuids = cJSON_GetObjectItem(root, "device_uuids");
    cr_assert_eq(cJSON_GetArraySize(uuids), 1);
    cr_assert(cJSON_IsNull(cJSON_GetArrayItem(uuids, 0)), "the cpu device has no UUID: null, not \"\"");
    const cJSON *dev = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "reports"), 0), "device");
    cr_assert(cJSON_IsNull(cJSON_GetObjectItem(dev, "uuid")) && cJSON_IsNull(cJSON_GetObjectItem(dev, "pci_bus_id")));
    cJSON_Delete(root);
    free(text);
    trr_conformance_free(rep);
    trr_context_destroy(ctx);
}
