/* The conformance engine, the bench and the tuner as calls of the shared library (trr_tool_*, trireme.h): what
 * `trireme conformance|bench|tune --json` do for one device, run in the calling process. A binding's ops live in
 * its process (Python's trireme.define_op registers a NumPy reference and maybe a Python CPU kernel through
 * callbacks), so a `trireme` subprocess could not see them. The documents are the commands' own JSON (the same
 * writers); tune's, which the command does not write, is described in docs/custom-ops.md. */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include "bench.h"
#include "conformance.h"
#include "json_fields.h"
#include "op_table.h"
#include "tune_space.h"
#include "tuner.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define TOOL_LIST_MAX 1024
#define TOOL_SHAPES_MAX 64

/* Calls each comma-separated item of list (NULL or "": never) with a copy; stops at the first non-OK status. */
static trr_status each_item(const char *list, trr_status (*fn)(const char *item, void *user), void *user) {
    if (!list || !*list) return TRR_OK;
    if (strlen(list) >= TOOL_LIST_MAX)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "list too long: '%.64s...'", list);
    char buf[TOOL_LIST_MAX];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        trr_status st = fn(tok, user);
        if (st != TRR_OK) return st;
    }
    return TRR_OK;
}

static trr_status add_op(const char *name, void *user) {
    trr_op op;
    if (trr_op_from_name(name, &op) != TRR_OK)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "no op named '%s' (built-in or defined)", name);
    *(uint64_t *)user |= (uint64_t)1 << op;
    return TRR_OK;
}

static trr_status add_bench(const char *name, void *user) {
    uint64_t m = trr_bench_mask_for(name);
    if (!m) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "no benchmark or op named '%s'", name);
    *(unsigned *)user |= m;
    return TRR_OK;
}

static trr_status open_device(const trr_tool_options *o, trr_context **out_ctx) {
    return trr_context_create(o->device && *o->device ? o->device : NULL, out_ctx);
}

/* Options are checked before the device opens (errors on the thread); after, errors are on the context, and move
 * to the thread's before it goes, so trr_last_error(NULL) explains the status either way. */
static trr_status close_device(trr_context *ctx, trr_status st) {
    if (st != TRR_OK) trr_error(NULL, st, "%s", trr_last_error(ctx));
    trr_context_destroy(ctx);
    return st;
}

static trr_status check_args(const trr_tool_options *options, char **out_json) {
    if (!options || !out_json) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "options and out_json are required");
    *out_json = NULL;
    return TRR_OK;
}

trr_status trr_tool_conformance(const trr_tool_options *options, char **out_json) {
    uint64_t mask = 0;
    TRR_TRY(check_args(options, out_json));
    TRR_TRY(each_item(options->ops, add_op, &mask));
    trr_context *ctx = NULL;
    TRR_TRY(open_device(options, &ctx));
    trr_conf_report *report = NULL;
    trr_conf_options opt = {.seed = options->seed, .quick = options->quick, .op_mask = mask};
    trr_status st = trr_conformance_run(ctx, &opt, &report);
    if (st == TRR_OK) {
        st = trr_conformance_json((const trr_conf_report *const *)&report, 1, out_json);
        trr_conformance_free(report);
        if (st != TRR_OK) st = trr_error(ctx, st, "conformance: the report: %s", trr_last_error(NULL));
    }
    return close_device(ctx, st);
}

trr_status trr_tool_bench(const trr_tool_options *options, char **out_json) {
    TRR_TRY(check_args(options, out_json));
    trr_bench_options opt = {.sizes = TRR_BENCH_SIZES_QUICK, .seed = options->seed, .reps = options->reps,
                             .budget_s = options->budget_s, .no_vendor = options->no_vendor};
    const char *sizes = options->sizes;
    if (sizes && !strcmp(sizes, "full")) opt.sizes = TRR_BENCH_SIZES_FULL;
    else if (sizes && *sizes && strcmp(sizes, "quick")) opt.sizes = TRR_BENCH_SIZES_LIST, opt.size_list = sizes;
    TRR_TRY(each_item(options->ops, add_bench, &opt.bench_mask));
    /* a bad size list fails before the device opens, as the command's usage error does */
    for (int b = 0; b < trr_bench_count() && opt.sizes == TRR_BENCH_SIZES_LIST; b++) {
        if (opt.bench_mask && !(opt.bench_mask & ((uint64_t)1 << b))) continue;
        trr_case *cases = NULL;
        int n = 0;
        TRR_TRY(trr_bench_cases((trr_bench_id)b, opt.sizes, opt.size_list, &cases, &n));
        free(cases);
    }
    trr_context *ctx = NULL;
    TRR_TRY(open_device(options, &ctx));
    trr_bench_report *report = NULL;
    trr_status st = trr_bench_run(ctx, &opt, &report);
    if (st == TRR_OK) {
        st = trr_bench_json((const trr_bench_report *const *)&report, 1, out_json);
        trr_bench_free(report);
        if (st != TRR_OK) st = trr_error(ctx, st, "bench: the report: %s", trr_last_error(NULL));
    }
    return close_device(ctx, st);
}

/* ---- tune ---- */

typedef struct shape_list {
    int n;
    int64_t rows[TOOL_SHAPES_MAX], cols[TOOL_SHAPES_MAX];
    int one_number[TOOL_SHAPES_MAX]; /* given as "N" */
} shape_list;

/* "RxC" or "N" (rows 1) */
static trr_status add_shape(const char *item, void *user) {
    shape_list *s = user;
    char *end = NULL;
    long long a = strtoll(item, &end, 10), b = 0;
    const int one = !strchr(item, 'x');
    if (!one && *end != 'x') {
        a = 0;
    } else if (!one) {
        const char *second = end + 1;
        b = strtoll(second, &end, 10);
        if (end == second) a = 0;
    } else {
        b = a, a = 1;
    }
    if (*end || a <= 0 || b <= 0)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "shape '%s' is neither RxC nor N (positive integers)", item);
    if (s->n == TOOL_SHAPES_MAX)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "more than %d shapes", TOOL_SHAPES_MAX);
    s->rows[s->n] = a, s->cols[s->n] = b, s->one_number[s->n] = one, s->n++;
    return TRR_OK;
}

static cJSON *tune_result(const trr_tune_job *j, trr_status st, const char *error, const trr_tune_outcome *out,
                          int stored) {
    cJSON *r = cJSON_CreateObject();
    const char *name = "?", *in = "?", *o = "?";
    trr_op_name(j->op, &name);
    trr_dtype_name(j->in_dtype, &in);
    trr_dtype_name(j->out_dtype, &o);
    cJSON_AddStringToObject(r, "op", name);
    cJSON_AddStringToObject(r, "in_dtype", in);
    cJSON_AddStringToObject(r, "out_dtype", o);
    cJSON_AddNumberToObject(r, "rows", (double)j->rows);
    cJSON_AddNumberToObject(r, "cols", (double)j->cols);
    cJSON_AddStringToObject(r, "status", trr_status_name(st));
    cJSON_AddStringToObject(r, "error", error);
    if (st == TRR_OK) {
        char text[TRR_CONFIG_TEXT_MAX];
        trr_config_format(&out->entry.config, text, sizeof text);
        cJSON_AddStringToObject(r, "best", text);
        cJSON_AddItemToObject(r, "best_config", trr_json_config(&out->entry.config));
        trr_json_add_number(r, "best_ms", out->entry.ms);
        trr_config_format(&out->entry.default_config, text, sizeof text);
        cJSON_AddStringToObject(r, "default", text);
        trr_json_add_number(r, "default_ms", out->entry.default_ms);
    }
    cJSON_AddNumberToObject(r, "listed", st == TRR_OK || st == TRR_ERR_MISMATCH ? out->listed : 0);
    cJSON_AddNumberToObject(r, "dropped", st == TRR_OK || st == TRR_ERR_MISMATCH ? out->dropped : 0);
    cJSON_AddNumberToObject(r, "failed", st == TRR_OK || st == TRR_ERR_MISMATCH ? out->failed : 0);
    cJSON_AddNumberToObject(r, "timed", st == TRR_OK || st == TRR_ERR_MISMATCH ? out->timed : 0);
    cJSON_AddStringToObject(r, "first_failure", st == TRR_OK || st == TRR_ERR_MISMATCH ? out->first_failure : "");
    cJSON_AddBoolToObject(r, "stored", stored);
    return r;
}

/* The ops named must be tunable here: a tuning space, and shapes of rows x cols (matmul's take `trireme tune`). */
static trr_status check_tunable(uint64_t mask) {
    if (!mask) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "tune: name the ops to tune");
    for (int o = 0; o < trr_op_desc_count(); o++) {
        if (!(mask & ((uint64_t)1 << o))) continue;
        const trr_op_desc *d = trr_op_desc_get((trr_op)o);
        if (!d->config_fields)
            return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "tune: %s has no tile parameters to tune", d->name);
        if (d->shape == TRR_SHAPE_MATMUL || d->shape == TRR_SHAPE_ATTENTION)
            return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "tune: %s is tuned by the trireme command", d->name);
    }
    return TRR_OK;
}

/* Every (op, signature, shape) job, as `trireme tune` builds them for shapes of rows x cols; a shape of one
 * number fits element-wise ops alone. */
static trr_status tune_ops(trr_context *ctx, const trr_tool_options *options, uint64_t mask, const shape_list *given,
                           cJSON *results) {
    trr_tune_options opt = {.reps = options->reps, .seed = options->seed};
    char db[1024] = "";
    if (options->write_db) TRR_TRY(trr_tune_db_path(ctx, db, sizeof db));
    for (int o = 0; o < trr_op_desc_count(); o++) {
        if (!(mask & ((uint64_t)1 << o))) continue;
        const trr_op_desc *d = trr_op_desc_get((trr_op)o);
        shape_list defaults = {0};
        if (!given->n && each_item(trr_tune_default_shapes(d->shape, 1), add_shape, &defaults) != TRR_OK)
            return trr_error(ctx, TRR_ERR_INTERNAL, "tune: the default shapes of %s: %s", d->name,
                             trr_last_error(NULL));
        const shape_list *shapes = given->n ? given : &defaults;
        for (int s = 0; s < shapes->n; s++) {
            if (shapes->one_number[s] && d->shape != TRR_SHAPE_ELEMENTWISE) continue;
            for (int g = 0; g < d->n_signatures; g++) {
                if (d->signatures[g].mixed) continue; /* as the command: a job has one input dtype */
                trr_tune_job j = {.op = (trr_op)o, .in_dtype = d->signatures[g].in, .out_dtype = d->signatures[g].out,
                                  .rows = shapes->rows[s], .cols = shapes->cols[s]};
                trr_tune_outcome out;
                memset(&out, 0, sizeof out);
                trr_status st = trr_tune_run(ctx, &j, &opt, &out);
                const char *error = st == TRR_OK ? "" : trr_last_error(ctx);
                int stored = 0;
                if (st == TRR_OK && options->write_db && out.listed > 0) {
                    char note[512];
                    TRR_TRY(trr_tune_db_store(ctx, db, &out.entry, 1, note, sizeof note));
                    stored = 1;
                }
                cJSON *r = tune_result(&j, st, error, &out, stored);
                if (!r || !cJSON_AddItemToArray(results, r)) {
                    cJSON_Delete(r);
                    return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "tune: out of host memory for the report");
                }
                if (st == TRR_ERR_DEVICE) return st; /* the context may be unusable */
            }
        }
    }
    return TRR_OK;
}

trr_status trr_tool_tune(const trr_tool_options *options, char **out_json) {
    uint64_t mask = 0;
    shape_list given = {0};
    TRR_TRY(check_args(options, out_json));
    TRR_TRY(each_item(options->ops, add_op, &mask));
    TRR_TRY(check_tunable(mask));
    TRR_TRY(each_item(options->sizes, add_shape, &given));
    trr_context *ctx = NULL;
    TRR_TRY(open_device(options, &ctx));
    trr_device_info info;
    trr_status st = trr_context_device(ctx, &info);
    cJSON *doc = cJSON_CreateObject(), *results = cJSON_CreateArray(), *dev = NULL;
    if (st == TRR_OK && (dev = trr_json_device(&info)) && doc && results) {
        cJSON_AddStringToObject(doc, "tool", "trireme tune");
        cJSON_AddItemToObject(doc, "device", dev);
        cJSON_AddItemToObject(doc, "results", results);
        st = tune_ops(ctx, options, mask, &given, results);
        dev = results = NULL; /* the document holds them */
    } else if (st == TRR_OK) {
        st = trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "tune: out of host memory for the report");
    }
    if (st == TRR_OK && !(*out_json = cJSON_PrintUnformatted(doc)))
        st = trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "tune: out of host memory for the report");
    cJSON_Delete(dev);
    cJSON_Delete(results);
    cJSON_Delete(doc);
    return close_device(ctx, st);
}

trr_status trr_tool_free(char *text) {
    free(text);
    return TRR_OK;
}
