/* --compare A.json B.json: the cases two reports share, side by side with the ratio B / A and whether the two
 * figures' ranges over the repetitions (figure_min..figure_max) overlap: overlapping ranges mean the difference
 * is within the run-to-run spread, not a change. Reports are paired
 * by position (the first device of A with the first of B, ...); when one file holds a single report it is
 * paired with every report of the other, so one baseline can be compared with several devices. */
#include "bench.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double dbl(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* "yes" / "no" when both ranges are known, "-" otherwise (older reports, cases without a figure). */
static const char *overlap(const cJSON *a, const cJSON *b) {
    const cJSON *alo = cJSON_GetObjectItem(a, "figure_min"), *ahi = cJSON_GetObjectItem(a, "figure_max");
    const cJSON *blo = cJSON_GetObjectItem(b, "figure_min"), *bhi = cJSON_GetObjectItem(b, "figure_max");
    if (!cJSON_IsNumber(alo) || !cJSON_IsNumber(ahi) || !cJSON_IsNumber(blo) || !cJSON_IsNumber(bhi)) return "-";
    if (strcmp(str(a, "status"), "ok") || strcmp(str(b, "status"), "ok")) return "-";
    return alo->valuedouble <= bhi->valuedouble && blo->valuedouble <= ahi->valuedouble ? "yes" : "no";
}

static const cJSON *find(const cJSON *results, const char *bench, const char *size) {
    const cJSON *r;
    cJSON_ArrayForEach(r, results) {
        if (!strcmp(str(r, "bench"), bench) && !strcmp(str(r, "size"), size)) return r;
    }
    return NULL;
}

static void cell(char *out, size_t cap, const cJSON *r) {
    if (!strcmp(str(r, "status"), "ok")) snprintf(out, cap, "%.4g", dbl(r, "figure"));
    else snprintf(out, cap, "%s", str(r, "status"));
}

static void compare_pair(const cJSON *ra, const cJSON *rb, FILE *out) {
    const cJSON *da = cJSON_GetObjectItem(ra, "device"), *db = cJSON_GetObjectItem(rb, "device");
    fprintf(out, "A: %s %s (%s, %s)\nB: %s %s (%s, %s)\n", str(da, "spec"), str(da, "name"), str(ra, "date"),
            str(ra, "library_version"), str(db, "spec"), str(db, "name"), str(rb, "date"), str(rb, "library_version"));
    const cJSON *ca = cJSON_GetObjectItem(ra, "ceilings"), *cb = cJSON_GetObjectItem(rb, "ceilings");
    if (dbl(ca, "copy_gbs") > 0 && dbl(cb, "copy_gbs") > 0)
        fprintf(out, "   %-16s %-16s %10.4g %10.4g %7.3f  GB/s\n", "copy ceiling", "", dbl(ca, "copy_gbs"),
                dbl(cb, "copy_gbs"), dbl(cb, "copy_gbs") / dbl(ca, "copy_gbs"));
    fprintf(out, "   %-16s %-16s %10s %10s %7s  %-7s %s\n", "bench", "size", "A", "B", "B/A", "unit", "ranges overlap");
    const cJSON *res_a = cJSON_GetObjectItem(ra, "results"), *res_b = cJSON_GetObjectItem(rb, "results");
    const cJSON *r;
    int shared = 0;
    cJSON_ArrayForEach(r, res_a) {
        const cJSON *o = find(res_b, str(r, "bench"), str(r, "size"));
        if (!o) continue;
        shared++;
        char a[24], b[24], ratio[16] = "-";
        cell(a, sizeof a, r);
        cell(b, sizeof b, o);
        if (dbl(r, "figure") > 0 && dbl(o, "figure") > 0)
            snprintf(ratio, sizeof ratio, "%.3f", dbl(o, "figure") / dbl(r, "figure"));
        const char *ov = overlap(r, o);
        fprintf(out, "   %-16s %-16s %10s %10s %7s  %-7s %s\n", str(r, "bench"), str(r, "size"), a, b, ratio, str(r, "unit"),
                !strcmp(ov, "no") ? "no (a real difference)" : !strcmp(ov, "yes") ? "yes (within the spread)" : ov);
    }
    if (!shared) fprintf(out, "   (no case in common)\n");
    fprintf(out, "\n");
}

trr_status trr_bench_compare(const char *path_a, const char *path_b, FILE *out) {
    cJSON *a = trr_bench_json_load(path_a, out), *b = a ? trr_bench_json_load(path_b, out) : NULL;
    if (!a || !b) {
        cJSON_Delete(a);
        return trr_error(NULL, TRR_ERR_IO, "cannot compare %s and %s", path_a, path_b);
    }
    const cJSON *ra = cJSON_GetObjectItem(a, "reports"), *rb = cJSON_GetObjectItem(b, "reports");
    const int na = cJSON_GetArraySize(ra), nb = cJSON_GetArraySize(rb);
    const int pairs = na == 1 ? nb : nb == 1 ? na : na < nb ? na : nb;
    for (int i = 0; i < pairs; i++)
        compare_pair(cJSON_GetArrayItem(ra, na == 1 ? 0 : i), cJSON_GetArrayItem(rb, nb == 1 ? 0 : i), out);
    cJSON_Delete(a);
    cJSON_Delete(b);
    if (pairs == 0) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "%s and %s hold no reports to compare", path_a, path_b);
    return TRR_OK;
}
