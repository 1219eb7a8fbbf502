/* CSV: one row per device and case, for spreadsheets. Text fields are quoted (reasons hold commas). */
#include "bench.h"

/* The config's kernel family by name; empty for ops that have one. */
static const char *variant_text(int v) {
    const char *name = "";
    if (v && trr_variant_name((trr_variant)v, &name) != TRR_OK) name = "";
    return name;
}

static void quoted(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void cell(FILE *f, double v, int present) {
    if (present) fprintf(f, "%.6g,", v);
    else fputc(',', f);
}

trr_status trr_bench_write_csv(const trr_bench_report *const *reports, int n, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return trr_error(NULL, TRR_ERR_IO, "cannot write %s", path);
    fprintf(f, "device,backend,device_name,driver,library_version,date,bench,size,x,status,figure,unit,figure_min,"
               "figure_max,median_ms,min_ms,max_ms,reps,ceiling,fraction_of_ceiling,vendor_figure,copy_gbs,block_m,"
               "block_n,block_k,group_m,threads,stages,vector_width,split_k,variant,check_metric,check_ratio,reason\n");
    for (int i = 0; i < n; i++) {
        const trr_bench_report *rep = reports[i];
        for (int j = 0; j < rep->n_results; j++) {
            const trr_bench_result *r = &rep->results[j];
            const trr_bench_def *def = trr_bench_get(r->bench);
            const trr_config *c = &r->config;
            fprintf(f, "%s,%s,", rep->device.spec, rep->device.backend);
            quoted(f, rep->device.name);
            fputc(',', f);
            quoted(f, rep->device.driver);
            const int ok = r->outcome == TRR_BENCH_OK;
            fprintf(f, ",%s,%s,%s,%s,%.17g,%s,", rep->library_version, rep->date, def->name, r->size, r->x,
                    trr_bench_outcome_name(r->outcome));
            /* a figure that was not measured is an empty cell, never 0 */
            cell(f, r->figure, ok);
            fprintf(f, "%s,", def->unit);
            cell(f, r->figure_lo, ok);
            cell(f, r->figure_hi, ok);
            cell(f, r->timing.median_ms, ok);
            cell(f, r->timing.min_ms, ok);
            cell(f, r->timing.max_ms, ok);
            cell(f, r->timing.reps, ok);
            cell(f, r->ceiling, ok && r->ceiling > 0);
            cell(f, r->fraction, ok && r->ceiling > 0);
            cell(f, r->vendor_figure, ok && r->vendor_figure > 0);
            cell(f, rep->copy.gbs, rep->copy.gbs > 0);
            fprintf(f, "%d,%d,%d,%d,%d,%d,%d,%d,%s,%s,", c->block_m, c->block_n, c->block_k, c->group_m, c->threads,
                    c->stages, c->vector_width, c->split_k, variant_text(c->variant),
                    r->check.metric ? r->check.metric : "");
            cell(f, r->check.ratio, r->check.checked > 0);
            quoted(f, r->reason);
            fputc('\n', f);
        }
    }
    return fclose(f) == 0 ? TRR_OK : trr_error(NULL, TRR_ERR_IO, "writing %s failed", path);
}
