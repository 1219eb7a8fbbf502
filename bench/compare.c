/* --compare A.json B.json: the cases two reports share, side by side with the ratio B / A, each side's
 * repetitions, and whether the two figures' interquartile ranges (figure_p25..figure_p75) overlap: overlapping
 * quartiles mean the difference is within the run-to-run spread, not a change. Min..max ranges would call a 30x
 * gap "within the spread" as soon as one repetition of either side strays; reports from before the quartiles
 * were written are judged by min..max, and the verdict says so. Reports are paired
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

trr_bench_spread trr_bench_spread_of(const cJSON *r) {
    trr_bench_spread s = {0};
    if (strcmp(str(r, "status"), "ok")) return s;
    const cJSON *q1 = cJSON_GetObjectItem(r, "figure_p25"), *q3 = cJSON_GetObjectItem(r, "figure_p75");
    const cJSON *lo = cJSON_GetObjectItem(r, "figure_min"), *hi = cJSON_GetObjectItem(r, "figure_max");
    s.reps = (int)dbl(r, "reps");
    if (cJSON_IsNumber(q1) && cJSON_IsNumber(q3)) {
        s.known = s.quartiles = 1;
        s.lo = q1->valuedouble, s.hi = q3->valuedouble;
    } else if (cJSON_IsNumber(lo) && cJSON_IsNumber(hi)) {
        s.known = 1;
        s.lo = lo->valuedouble, s.hi = hi->valuedouble;
    }
    return s;
}

int trr_bench_spreads_overlap(const trr_bench_spread *a, const trr_bench_spread *b) {
    if (!a->known || !b->known) return -1;
    return a->lo <= b->hi && b->lo <= a->hi;
}

/* The verdict column: the judgement, what it was judged by and each side's repetitions. */
static void verdict(char *out, size_t cap, const cJSON *a, const cJSON *b) {
    const trr_bench_spread sa = trr_bench_spread_of(a), sb = trr_bench_spread_of(b);
    const int ov = trr_bench_spreads_overlap(&sa, &sb);
    if (ov < 0) {
        snprintf(out, cap, "-");
        return;
    }
    char reps[48];
    if (sa.reps > 0 && sb.reps > 0) snprintf(reps, sizeof reps, "%d/%d reps", sa.reps, sb.reps);
    else snprintf(reps, sizeof reps, "reps not recorded");
    const int quart = sa.quartiles && sb.quartiles;
    snprintf(out, cap, "%s, %s%s", ov ? "yes (within the spread)" : "no (a real difference)",
             quart ? "interquartile ranges, " : "by min..max (no quartiles in the reports), ", reps);
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
    fprintf(out, "   %-16s %-16s %10s %10s %7s  %-7s %s\n", "bench", "size", "A", "B", "B/A", "unit",
            "spreads overlap (A/B repetitions)");
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
        char ov[160];
        verdict(ov, sizeof ov, r, o);
        fprintf(out, "   %-16s %-16s %10s %10s %7s  %-7s %s\n", str(r, "bench"), str(r, "size"), a, b, ratio,
                str(r, "unit"), ov);
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
