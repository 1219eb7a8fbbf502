/* `trireme bench --compare` judges a difference by the figures' interquartile ranges and says how many
 * repetitions each side had (issue #41 item 13): a 30x gap with one stray repetition on each side is a real
 * difference, though the min..max ranges overlap. */
#define _POSIX_C_SOURCE 200809L /* fork, execv, mkstemp, waitpid, setenv */

#include "bench.h"
#include "cli_child.h"

#include <cjson/cJSON.h>
#include <math.h>

/* A result object as the JSON report writes it, for times ms[0..n) of an add of 2^20 floats. */
static cJSON *result_of(double *ms, int n, int with_quartiles) {
    trr_bench_timing t = {0};
    trr_bench_timing_of(ms, n, &t);
    const trr_case c = {.op = TRR_OP_ADD, .in_dtype = TRR_F32, .out_dtype = TRR_F32, .rows = 1, .cols = 1 << 20};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "bench", "add_f32");
    cJSON_AddStringToObject(o, "size", "n=2^20");
    cJSON_AddStringToObject(o, "unit", "GB/s");
    cJSON_AddStringToObject(o, "status", "ok");
    cJSON_AddNumberToObject(o, "reps", t.reps);
    cJSON_AddNumberToObject(o, "figure", trr_bench_case_figure(&c, t.median_ms));
    cJSON_AddNumberToObject(o, "figure_min", trr_bench_case_figure(&c, t.max_ms));
    cJSON_AddNumberToObject(o, "figure_max", trr_bench_case_figure(&c, t.min_ms));
    if (with_quartiles) {
        cJSON_AddNumberToObject(o, "figure_p25", trr_bench_case_figure(&c, t.p75_ms));
        cJSON_AddNumberToObject(o, "figure_p75", trr_bench_case_figure(&c, t.p25_ms));
    }
    return o;
}

/* n repetitions at base ms, each within +-2%, and one stray at stray_ms */
static void samples(double *ms, int n, double base, double stray_ms) {
    for (int i = 0; i < n; i++) ms[i] = base * (1.0 + 0.02 * sin(i * 1.7));
    ms[n / 2] = stray_ms;
}

Test(bench_compare, quartiles_of_the_repetitions) {
    double ms[5] = {5, 1, 4, 2, 3};
    trr_bench_timing t = {0};
    trr_bench_timing_of(ms, 5, &t);
    cr_assert_eq(t.reps, 5);
    cr_assert_float_eq(t.min_ms, 1, 1e-12);
    cr_assert_float_eq(t.p25_ms, 2, 1e-12);
    cr_assert_float_eq(t.median_ms, 3, 1e-12);
    cr_assert_float_eq(t.p75_ms, 4, 1e-12);
    cr_assert_float_eq(t.max_ms, 5, 1e-12);
    double even[4] = {4, 1, 3, 2};
    trr_bench_timing_of(even, 4, &t);
    cr_assert_float_eq(t.median_ms, 2.5, 1e-12);
    cr_assert_float_eq(t.p25_ms, 1.75, 1e-12);
    cr_assert_float_eq(t.p75_ms, 3.25, 1e-12);
}

Test(bench_compare, a_30x_gap_with_stray_repetitions_is_a_real_difference) {
    double a[20], b[20];
    samples(a, 20, 1.0, 30.0); /* fast, one slow stray */
    samples(b, 20, 30.0, 1.0); /* 30x slower, one fast stray */
    cJSON *ra = result_of(a, 20, 1), *rb = result_of(b, 20, 1);
    trr_bench_spread sa = trr_bench_spread_of(ra), sb = trr_bench_spread_of(rb);
    cr_assert(sa.known && sa.quartiles && sa.reps == 20 && sb.reps == 20);
    cr_assert_eq(trr_bench_spreads_overlap(&sa, &sb), 0, "A %g..%g, B %g..%g", sa.lo, sa.hi, sb.lo, sb.hi);
    /* what the old criterion saw: min..max ranges that overlap */
    cJSON *oa = result_of(a, 20, 0), *ob = result_of(b, 20, 0);
    trr_bench_spread ma = trr_bench_spread_of(oa), mb = trr_bench_spread_of(ob);
    cr_assert(ma.known && !ma.quartiles);
    cr_assert_eq(trr_bench_spreads_overlap(&ma, &mb), 1);
    cJSON_Delete(ra), cJSON_Delete(rb), cJSON_Delete(oa), cJSON_Delete(ob);
}

Test(bench_compare, noise_of_one_figure_is_within_the_spread) {
    double a[40], b[9];
    samples(a, 40, 1.0, 1.5);
    samples(b, 9, 1.01, 0.7);
    cJSON *ra = result_of(a, 40, 1), *rb = result_of(b, 9, 1);
    trr_bench_spread sa = trr_bench_spread_of(ra), sb = trr_bench_spread_of(rb);
    cr_assert_eq(trr_bench_spreads_overlap(&sa, &sb), 1, "A %g..%g, B %g..%g", sa.lo, sa.hi, sb.lo, sb.hi);
    /* no figure: no verdict */
    cJSON_ReplaceItemInObject(rb, "status", cJSON_CreateString("skipped"));
    sb = trr_bench_spread_of(rb);
    cr_assert_eq(trr_bench_spreads_overlap(&sa, &sb), -1);
    cJSON_Delete(ra), cJSON_Delete(rb);
}

/* Through the CLI: the verdict, what it was judged by and the repetitions of each side. */
Test(bench_compare, compare_prints_the_verdict_and_the_repetitions) {
    double a[20], b[12];
    samples(a, 20, 1.0, 30.0);
    samples(b, 12, 30.0, 1.0);
    char paths[2][40] = {"/tmp/trireme-cmp-q-a-XXXXXX", "/tmp/trireme-cmp-q-b-XXXXXX"};
    for (int i = 0; i < 2; i++) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "tool", "trireme bench");
        cJSON *rep = cJSON_CreateObject();
        cJSON *dev = cJSON_AddObjectToObject(rep, "device");
        cJSON_AddStringToObject(dev, "spec", "cpu:0");
        cJSON *results = cJSON_AddArrayToObject(rep, "results");
        cJSON_AddItemToArray(results, i ? result_of(b, 12, 1) : result_of(a, 20, 1));
        cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "reports"), rep);
        char *text = cJSON_Print(root);
        int fd = mkstemp(paths[i]);
        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        free(text);
        cJSON_Delete(root);
    }
    cli_child *r = cli_child_run((const char *const[]){"bench", "--compare", paths[0], paths[1], NULL});
    unlink(paths[0]);
    unlink(paths[1]);
    CLI_EXPECT(r, 0);
    const char *line = strstr(r->out, "add_f32");
    cr_assert(line, "%s", r->out);
    cr_assert(strstr(line, "no (a real difference)") && strstr(line, "interquartile") && strstr(line, "20/12 reps"),
              "%s", r->out);
}
