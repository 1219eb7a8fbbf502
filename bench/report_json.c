/* The JSON report (bench/README.md lists the keys): what --compare and later tooling read back. */
#include "op_table.h"
#include "bench.h"

#include "json_fields.h"
#include "report_meta.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* A figure that was not measured is null, never 0: 0 reads as a measurement of nothing. */
static void opt_number(cJSON *o, const char *key, double v, int present) {
    if (present) trr_json_add_number(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

/* The SM clock over a case's repetitions; null when not sampled. */
static cJSON *clock_json(const trr_bench_clock_stats *c, int ok, double max_mhz) {
    if (!ok || c->samples == 0) return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    trr_json_add_number(o, "samples", c->samples);
    trr_json_add_number(o, "min_mhz", c->min_mhz);
    trr_json_add_number(o, "mean_mhz", c->mean_mhz);
    trr_json_add_number(o, "max_mhz", c->max_mhz);
    trr_json_add_number(o, "idle_samples", c->idle_samples);
    cJSON_AddBoolToObject(o, "idle_low", trr_bench_clock_idle_low(c, max_mhz));
    return o;
}

static cJSON *result_json(const trr_bench_result *r, double max_mhz) {
    const trr_bench_def *def = trr_bench_get(r->bench);
    const trr_case *c = &r->tcase;
    cJSON *o = cJSON_CreateObject();
    const char *op = "?", *din = "?", *dout = "?";
    trr_op_name(c->op, &op);
    trr_dtype_name(c->in_dtype, &din);
    trr_dtype_name(c->out_dtype, &dout);
    char desc[96];
    trr_case_describe(c, desc, sizeof desc);
    cJSON_AddStringToObject(o, "bench", def->name);
    cJSON_AddStringToObject(o, "op", op);
    cJSON_AddStringToObject(o, "case", desc);
    cJSON_AddStringToObject(o, "in_dtype", din);
    cJSON_AddStringToObject(o, "out_dtype", dout);
    cJSON *shape = cJSON_AddObjectToObject(o, "shape");
    if (trr_op_desc_get(c->op)->shape == TRR_SHAPE_MATMUL) {
        trr_json_add_number(shape, "m", (double)c->m);
        trr_json_add_number(shape, "n", (double)c->n);
        trr_json_add_number(shape, "k", (double)c->k);
        if (c->batch > 0) trr_json_add_number(shape, "batch", (double)c->batch);
    } else {
        trr_json_add_number(shape, "rows", (double)c->rows);
        trr_json_add_number(shape, "cols", (double)c->cols);
    }
    cJSON_AddStringToObject(o, "size", r->size);
    trr_json_add_number(o, "x", r->x);
    cJSON_AddStringToObject(o, "unit", def->unit);
    cJSON_AddStringToObject(o, "status", trr_bench_outcome_name(r->outcome));
    cJSON_AddStringToObject(o, "error", r->status ? trr_status_name(r->status) : "");
    cJSON_AddStringToObject(o, "reason", r->reason);
    const int ok = r->outcome == TRR_BENCH_OK, vendor = ok && r->vendor_figure > 0, ceil = ok && r->ceiling > 0;
    opt_number(o, "reps", r->timing.reps, ok);
    opt_number(o, "median_ms", r->timing.median_ms, ok);
    opt_number(o, "min_ms", r->timing.min_ms, ok);
    opt_number(o, "max_ms", r->timing.max_ms, ok);
    opt_number(o, "p25_ms", r->timing.p25_ms, ok);
    opt_number(o, "p75_ms", r->timing.p75_ms, ok);
    opt_number(o, "figure", r->figure, ok);
    opt_number(o, "figure_min", r->figure_lo, ok); /* at the slowest repetition */
    opt_number(o, "figure_max", r->figure_hi, ok); /* at the fastest */
    opt_number(o, "figure_p25", r->figure_p25, ok); /* the quartiles, which --compare judges by */
    opt_number(o, "figure_p75", r->figure_p75, ok);
    opt_number(o, "ceiling", r->ceiling, ceil);
    opt_number(o, "fraction_of_ceiling", r->fraction, ceil);
    cJSON_AddBoolToObject(o, "above_ceiling", r->above_ceiling);
    cJSON_AddBoolToObject(o, "in_cache", r->in_cache);
    opt_number(o, "vendor_figure", r->vendor_figure, vendor);
    opt_number(o, "vendor_median_ms", r->vendor_timing.median_ms, vendor);
    opt_number(o, "fraction_of_vendor", vendor ? r->figure / r->vendor_figure : 0, vendor);
    cJSON_AddItemToObject(o, "sm_clock", clock_json(&r->timing.clock, ok, max_mhz));
    cJSON_AddItemToObject(o, "config", trr_json_config(&r->config));
    cJSON *chk = cJSON_AddObjectToObject(o, "check");
    trr_json_add_number(chk, "checked", (double)r->check.checked);
    trr_json_add_number(chk, "total", (double)r->check.total);
    cJSON_AddStringToObject(chk, "metric", r->check.metric ? r->check.metric : "");
    opt_number(chk, "error", r->check.error, r->check.checked > 0);
    opt_number(chk, "bound", r->check.bound, r->check.checked > 0);
    opt_number(chk, "ratio", r->check.ratio, r->check.checked > 0);
    return o;
}

static cJSON *report_json(const trr_bench_report *rep) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "device", trr_json_device(&rep->device));
    cJSON_AddStringToObject(o, "backend", rep->device.backend);
    cJSON_AddStringToObject(o, "driver", rep->device.driver);
    cJSON_AddStringToObject(o, "library_version", rep->library_version);
    cJSON_AddStringToObject(o, "date", rep->date);
    cJSON_AddStringToObject(o, "sizes", rep->sizes);
    int unsupported = 0, skipped = 0, failed = 0, measured = 0;
    for (int i = 0; i < rep->n_results; i++) {
        unsupported += rep->results[i].outcome == TRR_BENCH_UNSUPPORTED;
        skipped += rep->results[i].outcome == TRR_BENCH_SKIPPED;
        failed += rep->results[i].outcome == TRR_BENCH_FAILED;
        measured += rep->results[i].outcome == TRR_BENCH_OK;
    }
    cJSON *counts = cJSON_AddObjectToObject(o, "counts");
    trr_json_add_number(counts, "measured", measured);
    trr_json_add_number(counts, "skipped", skipped);
    trr_json_add_number(counts, "unsupported", unsupported);
    trr_json_add_number(counts, "failed", failed);
    trr_json_add_number(o, "reps_requested", rep->reps_requested);
    trr_json_add_number(o, "budget_s", rep->budget_s);
    trr_json_add_number(o, "seed", (double)rep->seed);
    trr_json_add_number(o, "flush_bytes", (double)rep->flush_bytes);
    opt_number(o, "llc_bytes", (double)rep->llc_bytes, rep->llc_bytes > 0);
    cJSON_AddStringToObject(o, "sizes_note", rep->sizes_note);
    trr_json_add_number(o, "seconds", rep->seconds);
    trr_json_add_number(o, "cases_planned", rep->cases_planned);
    cJSON_AddBoolToObject(o, "interrupted", rep->interrupted != 0);
    cJSON_AddStringToObject(o, "clock_source", rep->clock_source);
    opt_number(o, "sm_clock_max_mhz", rep->clock_max_mhz, rep->clock_max_mhz > 0);
    cJSON *ceil = cJSON_AddObjectToObject(o, "ceilings");
    const int copy = rep->copy.gbs > 0;
    opt_number(ceil, "copy_gbs", rep->copy.gbs, copy);
    trr_json_add_number(ceil, "copy_bytes", (double)rep->copy.bytes);
    opt_number(ceil, "copy_median_ms", rep->copy.timing.median_ms, copy);
    opt_number(ceil, "copy_min_ms", rep->copy.timing.min_ms, copy);
    opt_number(ceil, "copy_max_ms", rep->copy.timing.max_ms, copy);
    opt_number(ceil, "copy_reps", rep->copy.timing.reps, copy);
    cJSON_AddItemToObject(ceil, "copy_sm_clock", clock_json(&rep->copy.timing.clock, copy, rep->clock_max_mhz));
    cJSON_AddStringToObject(ceil, "copy_note", rep->copy.note);
    cJSON_AddBoolToObject(ceil, "copy_remeasured", rep->copy.remeasured);
    opt_number(ceil, "copy_first_gbs", rep->copy.first_gbs, rep->copy.remeasured && rep->copy.first_gbs > 0);
    /* not a hardware peak: the best matmul of this run (bench.h) */
    opt_number(ceil, "best_matmul_f32_tflops_measured_in_this_run", rep->best_matmul_f32_tflops,
               rep->best_matmul_f32_tflops > 0);
    opt_number(ceil, "best_matmul_f16_tflops_measured_in_this_run", rep->best_matmul_f16_tflops,
               rep->best_matmul_f16_tflops > 0);
    cJSON_AddStringToObject(ceil, "vendor", rep->vendor);
    cJSON_AddStringToObject(ceil, "vendor_note", rep->vendor_note);
    cJSON *res = cJSON_AddArrayToObject(o, "results");
    for (int i = 0; i < rep->n_results; i++)
        cJSON_AddItemToArray(res, result_json(&rep->results[i], rep->clock_max_mhz));
    return o;
}

trr_status trr_bench_json(const trr_bench_report *const *reports, int n, char **out_text) {
    if (!reports || !out_text) return TRR_ERR_INVALID_ARGUMENT;
    cJSON *root = cJSON_CreateObject();
    if (!root) return TRR_ERR_OUT_OF_MEMORY;
    const trr_device_info *devs[64] = {0};
    const int n_devs = n < 64 ? n : 64;
    for (int i = 0; i < n_devs; i++) devs[i] = &reports[i]->device;
    trr_report_add_meta(root, "trireme bench", n > 0 ? reports[0]->command_line : "", n > 0 ? reports[0]->date : "",
                        devs, n_devs);
    cJSON *arr = cJSON_AddArrayToObject(root, "reports");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, report_json(reports[i]));
    cJSON_AddItemToObject(root, "physical_gpus", trr_bench_physical_json(reports, n));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return TRR_ERR_OUT_OF_MEMORY;
    *out_text = text;
    return TRR_OK;
}

trr_status trr_bench_write_json(const trr_bench_report *const *reports, int n, const char *path) {
    char *text = NULL;
    TRR_TRY(trr_bench_json(reports, n, &text));
    FILE *f = fopen(path, "w");
    if (!f) {
        free(text);
        return trr_error(NULL, TRR_ERR_IO, "cannot write %s", path);
    }
    int ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    ok = (fclose(f) == 0) && ok;
    free(text);
    return ok ? TRR_OK : trr_error(NULL, TRR_ERR_IO, "writing %s failed", path);
}
