/* The harness as library calls (trr_tool_*, bench/inprocess.c): each returns the document its command writes,
 * checks its options before opening a device, and says why it refused in trr_last_error(NULL). */
#include "trireme.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <string.h>

static cJSON *parse(char *text) {
    cr_assert(text);
    cJSON *doc = cJSON_Parse(text);
    cr_assert(doc, "not JSON: %.200s", text);
    trr_tool_free(text);
    return doc;
}

static cJSON *first_report(cJSON *doc) {
    cJSON *reports = cJSON_GetObjectItem(doc, "reports");
    cr_assert_eq(cJSON_GetArraySize(reports), 1);
    return cJSON_GetArrayItem(reports, 0);
}

static double number(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    cr_assert(cJSON_IsNumber(v), "%s is not a number", key);
    return v->valuedouble;
}

Test(tool, conformance_writes_the_command_report) {
    const trr_tool_options opt = {.device = "cpu", .ops = "add,silu", .seed = 11, .quick = 1};
    char *text = NULL;
    cr_assert_eq(trr_tool_conformance(&opt, &text), TRR_OK, "%s", trr_last_error(NULL));
    cJSON *doc = parse(text);
    cJSON *rep = first_report(doc);
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "device"), "spec")->valuestring, "cpu:0");
    cr_assert_gt(number(rep, "passed"), 0);
    cr_assert_eq(number(rep, "failed"), 0);
    cr_assert_str_eq(cJSON_GetObjectItem(rep, "seed")->valuestring, "11"); /* a string: 64 bits */
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(rep, "summary")) {
        const char *op = cJSON_GetObjectItem(s, "op")->valuestring;
        cr_assert(!strcmp(op, "add") || !strcmp(op, "silu"), "%s was not asked for", op);
    }
    cJSON_Delete(doc);
}

Test(tool, bench_checks_then_times) {
    const trr_tool_options opt = {.device = "cpu", .ops = "add_f32", .sizes = "4097", .reps = 3, .seed = 5};
    char *text = NULL;
    cr_assert_eq(trr_tool_bench(&opt, &text), TRR_OK, "%s", trr_last_error(NULL));
    cJSON *doc = parse(text);
    cJSON *results = cJSON_GetObjectItem(first_report(doc), "results");
    cr_assert_eq(cJSON_GetArraySize(results), 1);
    cJSON *r = cJSON_GetArrayItem(results, 0);
    cr_assert_str_eq(cJSON_GetObjectItem(r, "status")->valuestring, "ok");
    cr_assert_eq(number(cJSON_GetObjectItem(r, "shape"), "cols"), 4097);
    cr_assert_gt(number(r, "median_ms"), 0);
    /* add moves three f32 operands: the figure is their bytes over the median */
    cr_assert_float_eq(number(r, "figure"), 3.0 * 4 * 4097 / (number(r, "median_ms") * 1e-3) / 1e9,
                       1e-9 * number(r, "figure"));
    cJSON_Delete(doc);
}

Test(tool, tune_reports_every_signature_and_shape) {
    const trr_tool_options opt = {.device = "cpu", .ops = "silu", .sizes = "3x4099,777", .reps = 2, .seed = 3};
    char *text = NULL;
    cr_assert_eq(trr_tool_tune(&opt, &text), TRR_OK, "%s", trr_last_error(NULL));
    cJSON *doc = parse(text);
    cJSON *results = cJSON_GetObjectItem(doc, "results");
    cr_assert_eq(cJSON_GetArraySize(results), 6); /* f32, f16, bf16 at two shapes */
    const cJSON *r;
    cJSON_ArrayForEach(r, results) {
        cr_assert_str_eq(cJSON_GetObjectItem(r, "status")->valuestring, "TRR_OK");
        cr_assert_eq(number(r, "failed"), 0);
        cr_assert_gt(number(r, "best_ms"), 0);
        cr_assert_leq(number(r, "best_ms"), number(r, "default_ms"));
        cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "stored")));
    }
    cr_assert_eq(number(cJSON_GetArrayItem(results, 0), "rows"), 3);
    cr_assert_eq(number(cJSON_GetArrayItem(results, 3), "cols"), 777);
    cJSON_Delete(doc);
}

Test(tool, bad_options_are_refused_with_the_reason) {
    char *text = (char *)"untouched";
    const trr_tool_options unknown = {.device = "cpu", .ops = "add,no_such_op"};
    cr_assert_eq(trr_tool_conformance(&unknown, &text), TRR_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(trr_last_error(NULL), "no_such_op"), "%s", trr_last_error(NULL));
    cr_assert_null(text);
    const trr_tool_options sizes = {.device = "cpu", .ops = "add_f32", .sizes = "12,banana"};
    cr_assert_eq(trr_tool_bench(&sizes, &text), TRR_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(trr_last_error(NULL), "banana"), "%s", trr_last_error(NULL));
    const trr_tool_options none = {.device = "cpu"};
    cr_assert_eq(trr_tool_tune(&none, &text), TRR_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(trr_last_error(NULL), "name the ops"), "%s", trr_last_error(NULL));
    const trr_tool_options shape = {.device = "cpu", .ops = "silu", .sizes = "3x"};
    cr_assert_eq(trr_tool_tune(&shape, &text), TRR_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(trr_last_error(NULL), "'3x'"), "%s", trr_last_error(NULL));
    const trr_tool_options matmul = {.device = "cpu", .ops = "matmul"};
    cr_assert_eq(trr_tool_tune(&matmul, &text), TRR_ERR_INVALID_ARGUMENT);
    const trr_tool_options device = {.device = "nosuch:0", .ops = "add"};
    cr_assert_neq(trr_tool_conformance(&device, &text), TRR_OK);
    cr_assert_neq(trr_last_error(NULL)[0], '\0');
    cr_assert_eq(trr_tool_conformance(NULL, &text), TRR_ERR_INVALID_ARGUMENT);
    cr_assert_eq(trr_tool_free(NULL), TRR_OK);
}
