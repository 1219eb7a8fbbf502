/* Reading bench JSON reports back: the parsed document (for --compare) and the reports themselves (for
 * --replot, which redraws the tables and charts of saved runs, several files merged, without running anything):
 * everything the text table prints comes back (the copy ceiling's size and repetitions, the flush, each case's
 * op, shape and config). */
#include "bench.h"

#include "json_fields.h"
#include "op_table.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

cJSON *trr_bench_json_load(const char *path, FILE *out) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(out, "cannot read %s\n", path);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
        len += got;
        if (len + 1 == cap) {
            char *p = realloc(buf, cap *= 2);
            if (!p) free(buf);
            buf = p;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[len] = '\0';
    cJSON *root = cJSON_Parse(buf);
    free(buf);
    const cJSON *tool = root ? cJSON_GetObjectItem(root, "tool") : NULL;
    if (!root || !cJSON_IsArray(cJSON_GetObjectItem(root, "reports")) || !cJSON_IsString(tool) ||
        strcmp(tool->valuestring, "trireme bench") != 0) {
        /* a conformance report also has "reports": only the tool's name tells them apart */
        fprintf(out, "%s is not a trireme bench report (its \"tool\" is not \"trireme bench\")\n", path);
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

static void text(char *dst, size_t cap, const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    snprintf(dst, cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static double number(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0; /* null (absent) reads as 0, as in the structs */
}

static trr_bench_outcome outcome_of(const char *name) {
    for (int o = TRR_BENCH_OK; o <= TRR_BENCH_FAILED; o++)
        if (!strcmp(name, trr_bench_outcome_name((trr_bench_outcome)o))) return (trr_bench_outcome)o;
    return TRR_BENCH_FAILED;
}

static void read_clock(const cJSON *c, trr_bench_clock_stats *out) {
    if (!cJSON_IsObject(c)) return; /* null, or a report from before the clock was sampled */
    out->samples = (int)number(c, "samples");
    out->min_mhz = number(c, "min_mhz");
    out->mean_mhz = number(c, "mean_mhz");
    out->max_mhz = number(c, "max_mhz");
    out->idle_samples = (int)number(c, "idle_samples");
}

/* The case as the report names it: op, dtypes and shape (what the table's config column and the charts need). */
static void read_case(const cJSON *r, trr_bench_id bench, trr_case *c) {
    char op[32], din[16], dout[16];
    text(op, sizeof op, r, "op");
    text(din, sizeof din, r, "in_dtype");
    text(dout, sizeof dout, r, "out_dtype");
    memset(c, 0, sizeof *c);
    c->op = trr_bench_get(bench)->op;
    trr_op_from_name(op, &c->op); /* a report without "op": its benchmark's */
    for (int d = 0; d < TRR_DTYPE_COUNT; d++) {
        const char *name = NULL;
        if (trr_dtype_name((trr_dtype)d, &name) != TRR_OK || !name) continue;
        if (!strcmp(name, din)) c->in_dtype = (trr_dtype)d;
        if (!strcmp(name, dout)) c->out_dtype = (trr_dtype)d;
    }
    const cJSON *shape = cJSON_GetObjectItem(r, "shape");
    if (trr_op_desc_get(c->op)->shape == TRR_SHAPE_MATMUL) {
        c->m = (int64_t)number(shape, "m");
        c->n = (int64_t)number(shape, "n");
        c->k = (int64_t)number(shape, "k");
        c->batch = (int64_t)number(shape, "batch");
    } else {
        c->rows = (int64_t)number(shape, "rows");
        c->cols = (int64_t)number(shape, "cols");
    }
}

static trr_status read_report(const cJSON *o, trr_bench_report **out) {
    trr_bench_report *rep = calloc(1, sizeof *rep);
    if (!rep) return TRR_ERR_OUT_OF_MEMORY;
    const cJSON *d = cJSON_GetObjectItem(o, "device");
    trr_device_info *dev = &rep->device;
    text(dev->spec, sizeof dev->spec, d, "spec");
    text(dev->backend, sizeof dev->backend, d, "backend");
    text(dev->name, sizeof dev->name, d, "name");
    text(dev->vendor, sizeof dev->vendor, d, "vendor");
    text(dev->driver, sizeof dev->driver, d, "driver");
    text(dev->uuid, sizeof dev->uuid, d, "uuid");
    text(dev->pci_bus_id, sizeof dev->pci_bus_id, d, "pci_bus_id");
    dev->is_gpu = cJSON_IsTrue(cJSON_GetObjectItem(d, "is_gpu"));
    dev->index = (int)number(d, "index");
    text(rep->library_version, sizeof rep->library_version, o, "library_version");
    text(rep->date, sizeof rep->date, o, "date");
    text(rep->sizes, sizeof rep->sizes, o, "sizes");
    rep->seconds = number(o, "seconds");
    rep->cases_planned = (int)number(o, "cases_planned"); /* 0 in reports from before it was written */
    rep->interrupted = cJSON_IsTrue(cJSON_GetObjectItem(o, "interrupted"));
    rep->reps_requested = (int)number(o, "reps_requested");
    rep->budget_s = number(o, "budget_s");
    rep->seed = (uint64_t)number(o, "seed");
    rep->flush_bytes = (size_t)number(o, "flush_bytes");
    rep->llc_bytes = (size_t)number(o, "llc_bytes");
    text(rep->sizes_note, sizeof rep->sizes_note, o, "sizes_note");
    text(rep->clock_source, sizeof rep->clock_source, o, "clock_source");
    rep->clock_max_mhz = number(o, "sm_clock_max_mhz");
    const cJSON *ceil = cJSON_GetObjectItem(o, "ceilings");
    rep->copy.gbs = number(ceil, "copy_gbs");
    rep->copy.bytes = (size_t)number(ceil, "copy_bytes");
    rep->copy.timing.median_ms = number(ceil, "copy_median_ms");
    rep->copy.timing.min_ms = number(ceil, "copy_min_ms");
    rep->copy.timing.max_ms = number(ceil, "copy_max_ms");
    rep->copy.timing.reps = (int)number(ceil, "copy_reps"); /* 0 in reports from before it was written */
    rep->copy.first_gbs = number(ceil, "copy_first_gbs");
    rep->copy.remeasured = cJSON_IsTrue(cJSON_GetObjectItem(ceil, "copy_remeasured"));
    text(rep->copy.note, sizeof rep->copy.note, ceil, "copy_note");
    read_clock(cJSON_GetObjectItem(ceil, "copy_sm_clock"), &rep->copy.timing.clock);
    text(rep->vendor, sizeof rep->vendor, ceil, "vendor");
    text(rep->vendor_note, sizeof rep->vendor_note, ceil, "vendor_note");
    rep->best_matmul_f32_tflops = number(ceil, "best_matmul_f32_tflops_measured_in_this_run");
    rep->best_matmul_f16_tflops = number(ceil, "best_matmul_f16_tflops_measured_in_this_run");
    const cJSON *results = cJSON_GetObjectItem(o, "results");
    const int n = cJSON_GetArraySize(results);
    rep->results = calloc(n > 0 ? (size_t)n : 1, sizeof *rep->results);
    if (!rep->results) {
        free(rep);
        return TRR_ERR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < n; i++) {
        const cJSON *r = cJSON_GetArrayItem(results, i);
        char name[64], status[32];
        text(name, sizeof name, r, "bench");
        const int id = trr_bench_find(name);
        if (id < 0) continue; /* a benchmark this version does not know: left out */
        trr_bench_result *x = &rep->results[rep->n_results++];
        x->bench = (trr_bench_id)id;
        text(x->size, sizeof x->size, r, "size");
        text(status, sizeof status, r, "status");
        text(x->reason, sizeof x->reason, r, "reason");
        x->outcome = outcome_of(status);
        x->x = number(r, "x");
        read_case(r, x->bench, &x->tcase);
        trr_json_read_config(cJSON_GetObjectItem(r, "config"), &x->config);
        x->figure = number(r, "figure");
        x->figure_lo = number(r, "figure_min");
        x->figure_hi = number(r, "figure_max");
        x->figure_p25 = number(r, "figure_p25");
        x->figure_p75 = number(r, "figure_p75");
        x->ceiling = number(r, "ceiling");
        x->fraction = number(r, "fraction_of_ceiling");
        x->vendor_figure = number(r, "vendor_figure");
        x->above_ceiling = cJSON_IsTrue(cJSON_GetObjectItem(r, "above_ceiling"));
        x->in_cache = cJSON_IsTrue(cJSON_GetObjectItem(r, "in_cache"));
        x->timing.reps = (int)number(r, "reps");
        x->timing.median_ms = number(r, "median_ms");
        x->timing.min_ms = number(r, "min_ms");
        x->timing.max_ms = number(r, "max_ms");
        x->timing.p25_ms = number(r, "p25_ms");
        x->timing.p75_ms = number(r, "p75_ms");
        read_clock(cJSON_GetObjectItem(r, "sm_clock"), &x->timing.clock);
    }
    *out = rep;
    return TRR_OK;
}

trr_status trr_bench_load_reports(const char *path, trr_bench_report **reports, int cap, int *n, FILE *log) {
    cJSON *root = trr_bench_json_load(path, log);
    if (!root) return trr_error(NULL, TRR_ERR_IO, "cannot load the bench report %s", path);
    const cJSON *arr = cJSON_GetObjectItem(root, "reports"), *o;
    trr_status st = TRR_OK;
    cJSON_ArrayForEach(o, arr) {
        if (*n == cap) {
            st = trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "more than %d reports", cap);
            break;
        }
        if ((st = read_report(o, &reports[*n])) != TRR_OK) break;
        (*n)++;
    }
    cJSON_Delete(root);
    return st;
}
