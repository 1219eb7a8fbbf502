/* The same-GPU cross-API view: devices of different backends that are one physical GPU (bench.h), side by side
 * per benchmark and size, as fractions of that GPU's ceiling and of the best API. */
#include "bench.h"

#include "json_fields.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

int trr_bench_same_gpu(const trr_device_info *a, const trr_device_info *b) {
    if (!a || !b || !a->is_gpu || !b->is_gpu || !strcmp(a->backend, b->backend)) return 0;
    /* two UUIDs decide alone: MIG slices share a bus id but not a UUID */
    if (a->uuid[0] && b->uuid[0]) return !strcasecmp(a->uuid, b->uuid);
    return a->pci_bus_id[0] && b->pci_bus_id[0] && !strcasecmp(a->pci_bus_id, b->pci_bus_id);
}

int trr_bench_gpu_groups(const trr_device_info *const *devices, int n, int *group_of) {
    int groups = 0;
    for (int i = 0; i < n; i++) {
        group_of[i] = i;
        for (int j = 0; j < i; j++)
            if (trr_bench_same_gpu(devices[j], devices[i])) {
                group_of[i] = group_of[j];
                break;
            }
    }
    for (int g = 0; g < n; g++) {
        int members = 0;
        for (int i = 0; i < n; i++) members += group_of[i] == g;
        groups += members >= 2;
    }
    return groups;
}

/* The result of (bench, size) among the reports of API k of the view, NULL when none ran it. */
static const trr_bench_result *find(const trr_bench_gpu_view *v, int k, trr_bench_id id, const char *size) {
    for (int r = 0; r < v->n_reports; r++) {
        if (v->api_of[r] != k) continue;
        const trr_bench_report *rep = v->report[r];
        for (int i = 0; i < rep->n_results; i++)
            if (rep->results[i].bench == id && !strcmp(rep->results[i].size, size)) return &rep->results[i];
    }
    return NULL;
}

/* The ceiling of one case on this GPU: its copy ceiling for memory-bound benchmarks, the vendor library (any
 * API's measurement at this size) for matmul; 0 when there is none. */
static double case_ceiling(const trr_bench_gpu_view *v, trr_bench_id id, const char *size) {
    if (!trr_bench_get(id)->compute_bound) return v->copy_gbs;
    double best = 0;
    for (int k = 0; k < v->n; k++) {
        const trr_bench_result *r = find(v, k, id, size);
        if (r && r->vendor_figure > best) best = r->vendor_figure;
    }
    return best;
}

/* Every (bench, size) any API of the view ran, in the order first met, with each API's result. */
static void add_cases(trr_bench_gpu_view *v) {
    for (int m = 0; m < v->n_reports; m++)
        for (int i = 0; i < v->report[m]->n_results; i++) {
            const trr_bench_result *r0 = &v->report[m]->results[i];
            int seen = 0;
            for (int c = 0; c < v->n_cases && !seen; c++)
                seen = v->cases[c].bench == r0->bench && !strcmp(v->cases[c].size, r0->size);
            if (seen || v->n_cases == TRR_BENCH_VIEW_MAX_CASES) continue;
            trr_bench_gpu_case *c = &v->cases[v->n_cases++];
            c->bench = r0->bench;
            c->size = r0->size;
            c->ceiling = case_ceiling(v, r0->bench, r0->size);
            for (int k = 0; k < v->n; k++) {
                c->api[k] = find(v, k, r0->bench, r0->size);
                if (c->api[k] && c->api[k]->outcome == TRR_BENCH_OK && c->api[k]->figure > c->best)
                    c->best = c->api[k]->figure;
            }
        }
}

trr_bench_gpu_view *trr_bench_gpu_views(const trr_bench_report *const *reports, int n, int *out_n) {
    const trr_device_info *devs[TRR_BENCH_VIEW_MAX_APIS * 8] = {0};
    int group_of[TRR_BENCH_VIEW_MAX_APIS * 8];
    const int m = n < (int)(sizeof devs / sizeof devs[0]) ? n : (int)(sizeof devs / sizeof devs[0]);
    *out_n = 0;
    for (int i = 0; i < m; i++) devs[i] = &reports[i]->device;
    if (m < 2 || trr_bench_gpu_groups(devs, m, group_of) == 0) return NULL;
    trr_bench_gpu_view *views = calloc((size_t)m, sizeof *views);
    if (!views) return NULL;
    int nv = 0;
    for (int g = 0; g < m; g++) {
        trr_bench_gpu_view *v = &views[nv];
        memset(v, 0, sizeof *v);
        for (int i = 0; i < m; i++) {
            if (group_of[i] != g || v->n_reports == (int)(sizeof v->report / sizeof v->report[0])) continue;
            int k = 0;
            while (k < v->n && strcmp(v->member[k]->device.spec, reports[i]->device.spec)) k++;
            if (k == v->n) {
                if (v->n == TRR_BENCH_VIEW_MAX_APIS) continue;
                v->member[v->n++] = reports[i];
            }
            v->report[v->n_reports] = reports[i], v->api_of[v->n_reports++] = k;
            if (reports[i]->copy.gbs > v->copy_gbs) v->copy_gbs = reports[i]->copy.gbs, v->copy_from = reports[i]->device.spec;
        }
        if (v->n < 2) continue;
        add_cases(v);
        nv++;
    }
    *out_n = nv;
    return views;
}

void trr_bench_print_physical(const trr_bench_report *const *reports, int n, FILE *out) {
    int nv = 0;
    trr_bench_gpu_view *views = trr_bench_gpu_views(reports, n, &nv);
    for (int g = 0; g < nv; g++) {
        const trr_bench_gpu_view *v = &views[g];
        const trr_device_info *d = &v->member[0]->device;
        fprintf(out, "== physical GPU %d: %s (%s%s)\n   APIs:", g, d->name, d->uuid[0] ? "uuid " : "pci ",
                d->uuid[0] ? d->uuid : d->pci_bus_id);
        for (int k = 0; k < v->n; k++) fprintf(out, " %s", v->member[k]->device.spec);
        if (v->copy_gbs > 0) fprintf(out, "; copy ceiling %.1f GB/s (best of its APIs, %s)\n", v->copy_gbs, v->copy_from);
        else fprintf(out, "; no copy ceiling measured\n");
        fprintf(out, "   each API: figure (fraction of the GPU's ceiling, fraction of the best API)\n");
        for (int c = 0; c < v->n_cases; c++) {
            const trr_bench_gpu_case *gc = &v->cases[c];
            fprintf(out, "   %-16s %-16s", trr_bench_get(gc->bench)->name, gc->size);
            for (int k = 0; k < v->n; k++) {
                const trr_bench_result *r = gc->api[k];
                char cell[96], frac[16] = "-";
                if (!r) snprintf(cell, sizeof cell, "not run");
                else if (r->outcome != TRR_BENCH_OK) snprintf(cell, sizeof cell, "%s", trr_bench_outcome_name(r->outcome));
                else {
                    if (gc->ceiling > 0) snprintf(frac, sizeof frac, "%.0f%%", 100.0 * r->figure / gc->ceiling);
                    snprintf(cell, sizeof cell, "%.4g %s (%s, %.2f)", r->figure, trr_bench_get(r->bench)->unit, frac,
                             gc->best > 0 ? r->figure / gc->best : 0);
                }
                fprintf(out, "  %s %-30s", v->member[k]->device.backend, cell);
            }
            fprintf(out, "\n");
        }
        fprintf(out, "\n");
    }
    free(views);
}

static void opt_number(cJSON *o, const char *key, double v, int present) {
    if (present) trr_json_add_number(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

cJSON *trr_bench_physical_json(const trr_bench_report *const *reports, int n) {
    cJSON *arr = cJSON_CreateArray();
    int nv = 0;
    trr_bench_gpu_view *views = trr_bench_gpu_views(reports, n, &nv);
    for (int g = 0; arr && g < nv; g++) {
        const trr_bench_gpu_view *v = &views[g];
        const trr_device_info *d = &v->member[0]->device;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", d->name);
        if (d->uuid[0]) cJSON_AddStringToObject(o, "uuid", d->uuid);
        else cJSON_AddNullToObject(o, "uuid");
        if (d->pci_bus_id[0]) cJSON_AddStringToObject(o, "pci_bus_id", d->pci_bus_id);
        else cJSON_AddNullToObject(o, "pci_bus_id");
        cJSON *specs = cJSON_AddArrayToObject(o, "devices");
        for (int k = 0; k < v->n; k++) cJSON_AddItemToArray(specs, cJSON_CreateString(v->member[k]->device.spec));
        opt_number(o, "copy_ceiling_gbs", v->copy_gbs, v->copy_gbs > 0);
        cJSON_AddStringToObject(o, "copy_ceiling_from", v->copy_from ? v->copy_from : "");
        cJSON *cases = cJSON_AddArrayToObject(o, "cases");
        for (int ci = 0; ci < v->n_cases; ci++) {
            const trr_bench_gpu_case *gc = &v->cases[ci];
            const double ceil = gc->ceiling, best = gc->best;
            cJSON *c = cJSON_CreateObject();
            cJSON_AddStringToObject(c, "bench", trr_bench_get(gc->bench)->name);
            cJSON_AddStringToObject(c, "size", gc->size);
            cJSON_AddStringToObject(c, "unit", trr_bench_get(gc->bench)->unit);
            cJSON_AddStringToObject(c, "ceiling_kind", trr_bench_get(gc->bench)->compute_bound ? "vendor" : "copy");
            opt_number(c, "ceiling", ceil, ceil > 0);
            cJSON *apis = cJSON_AddArrayToObject(c, "apis");
            for (int k = 0; k < v->n; k++) {
                const trr_bench_result *r = gc->api[k];
                const int ok = r && r->outcome == TRR_BENCH_OK;
                cJSON *a = cJSON_CreateObject();
                cJSON_AddStringToObject(a, "spec", v->member[k]->device.spec);
                cJSON_AddStringToObject(a, "backend", v->member[k]->device.backend);
                cJSON_AddStringToObject(a, "status", r ? trr_bench_outcome_name(r->outcome) : "not run");
                opt_number(a, "figure", ok ? r->figure : 0, ok);
                opt_number(a, "figure_min", ok ? r->figure_lo : 0, ok);
                opt_number(a, "figure_max", ok ? r->figure_hi : 0, ok);
                opt_number(a, "fraction_of_ceiling", ok && ceil > 0 ? r->figure / ceil : 0, ok && ceil > 0);
                opt_number(a, "fraction_of_best", ok && best > 0 ? r->figure / best : 0, ok && best > 0);
                cJSON_AddItemToArray(apis, a);
            }
            cJSON_AddItemToArray(cases, c);
        }
        cJSON_AddItemToArray(arr, o);
    }
    free(views);
    return arr;
}
