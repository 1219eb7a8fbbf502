/* `trireme bench` on a CPU device (issue #41 item 14): quick keeps each case's whole cost small (sizes capped, the
 * ones left out named), and a case whose operands fit in the last-level cache is labelled "in cache", not flagged
 * above the copy ceiling. The run's wall time is not asserted (no timed tests); these are the functions that
 * decide it. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include "bench.h"
#include "bench_ids.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void write_file(const char *dir, int index, const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/index%d", dir, index);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/index%d/%s", dir, index, name);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "%s\n", text);
    fclose(f);
}

static void cache_index(const char *dir, int index, const char *level, const char *type, const char *size) {
    write_file(dir, index, "level", level);
    write_file(dir, index, "type", type);
    write_file(dir, index, "size", size);
}

/* The last-level data cache: the highest level that holds data, whatever order sysfs lists the indices in. */
Test(bench_cpu_quick, last_level_cache_from_sysfs) {
    char dir[] = "/tmp/trireme-llc-XXXXXX";
    cr_assert(mkdtemp(dir));
    cache_index(dir, 0, "1", "Data", "32K");
    cache_index(dir, 1, "1", "Instruction", "64M"); /* never a data cache, however large */
    cache_index(dir, 2, "3", "Unified", "32768K");
    cache_index(dir, 3, "2", "Unified", "512K");
    cr_assert_eq(trr_bench_llc_bytes_sysfs(dir), (size_t)32 << 20);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(trr_bench_llc_bytes_sysfs("/nonexistent-trireme-cache"), 0);
    /* GPUs: the runtime knows no L2 size, so nothing is labelled in cache there */
    const trr_device_info gpu = {.is_gpu = 1};
    cr_assert_eq(trr_bench_device_llc_bytes(&gpu), 0);
}

static trr_case add_case(int64_t n) {
    return (trr_case){.op = TRR_OP_ADD, .in_dtype = TRR_F32, .out_dtype = TRR_F32, .rows = 1, .cols = n,
                      .layout = TRR_LAYOUT_PACKED};
}

Test(bench_cpu_quick, working_sets_within_the_cache_are_in_cache) {
    const size_t llc = (size_t)32 << 20;
    const trr_case small = add_case(1 << 16), edge = add_case((32 << 20) / 12), big = add_case(1 << 24);
    cr_assert(trr_bench_in_cache(&small, llc), "add 2^16: 768 KiB");
    cr_assert(trr_bench_in_cache(&edge, llc), "add of 32 MiB of operands");
    cr_assert_not(trr_bench_in_cache(&big, llc), "add 2^24: 192 MiB");
    cr_assert_not(trr_bench_in_cache(&small, 0), "no cache size known: never in cache");
}

/* An in-cache figure 5x the copy ceiling is not suspect; the same figure out of cache is. */
Test(bench_cpu_quick, an_in_cache_figure_is_not_flagged) {
    trr_bench_result r = {.bench = bench_id("add_f32"), .tcase = add_case(1 << 16), .outcome = TRR_BENCH_OK,
                          .figure = 50.0, .figure_lo = 40, .figure_hi = 60, .ceiling = 10.0, .fraction = 5.0,
                          .in_cache = 1, .timing = {.reps = 5}};
    snprintf(r.size, sizeof r.size, "n=2^16");
    cr_assert_not(trr_bench_result_suspect(&r, 10.0));
    trr_bench_result out = r;
    out.in_cache = 0;
    cr_assert(trr_bench_result_suspect(&out, 10.0));
    /* the table labels it */
    trr_bench_report rep = {.n_results = 1, .results = &r, .llc_bytes = (size_t)32 << 20};
    snprintf(rep.device.spec, sizeof rep.device.spec, "cpu:0");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert(f);
    const trr_bench_report *reps[1] = {&rep};
    trr_bench_print(reps, 1, f);
    fclose(f);
    cr_assert(strstr(text, "in cache"), "%s", text);
    cr_assert(!strstr(text, "ABOVE"), "%s", text);
    cr_assert(strstr(text, "last-level cache: 32 MiB"), "%s", text);
    free(text);
}

/* Quick on a CPU device: every case within the caps (add 2^27 and matmul 4096^3 run smaller), every benchmark
 * still has its cases (each is checked against the reference before it is timed), none twice, and the sizes that
 * ran smaller are named. GPU quick and the other modes are unchanged. */
Test(bench_cpu_quick, quick_sizes_on_a_cpu_device_are_capped) {
    char left_out[4096] = "";
    int total = 0;
    for (int b = 0; b < trr_bench_count(); b++) {
        trr_case *cases = NULL, *gpu = NULL, *plain = NULL;
        int n = 0, n_gpu = 0, n_plain = 0;
        cr_assert_eq(trr_bench_device_cases((trr_bench_id)b, TRR_BENCH_SIZES_QUICK, NULL, 0, &cases, &n, left_out,
                                            sizeof left_out), TRR_OK);
        cr_assert_gt(n, 0, "%s has no case on a CPU device", trr_bench_get((trr_bench_id)b)->name);
        total += n;
        for (int i = 0; i < n; i++) {
            char size[48];
            trr_bench_size_text((trr_bench_id)b, &cases[i], size, sizeof size);
            cr_assert(trr_bench_cpu_quick_fits(&cases[i]), "%s %s is over the CPU quick caps",
                      trr_bench_get((trr_bench_id)b)->name, size);
            const double work = trr_bench_case_work(&cases[i]);
            cr_assert(trr_bench_case_compute_bound(&cases[i]) ? work <= 268435456.0 : work <= 48.0 * 1048576.0,
                      "%s %s: %g", trr_bench_get((trr_bench_id)b)->name, size, work);
            for (int j = 0; j < i; j++) {
                char other[48];
                trr_bench_size_text((trr_bench_id)b, &cases[j], other, sizeof other);
                cr_assert_str_neq(size, other, "%s %s runs twice", trr_bench_get((trr_bench_id)b)->name, size);
            }
        }
        char ignored[8] = "";
        cr_assert_eq(trr_bench_device_cases((trr_bench_id)b, TRR_BENCH_SIZES_QUICK, NULL, 1, &gpu, &n_gpu, ignored,
                                            sizeof ignored), TRR_OK);
        cr_assert_eq(trr_bench_cases((trr_bench_id)b, TRR_BENCH_SIZES_QUICK, NULL, &plain, &n_plain), TRR_OK);
        cr_assert_eq(n_gpu, n_plain);
        for (int i = 0; i < n_gpu; i++) {
            char a[96], c[96];
            trr_case_describe(&gpu[i], a, sizeof a);
            trr_case_describe(&plain[i], c, sizeof c);
            cr_assert_str_eq(a, c, "GPU quick sizes changed");
        }
        free(cases), free(gpu), free(plain);
    }
    cr_assert(strstr(left_out, "add_f32 n=2^27 as n=2^22"), "%s", left_out);
    cr_assert(strstr(left_out, "matmul_f32 4096^3 as 512^3"), "%s", left_out);
    cr_assert(strstr(left_out, "bmm_f16 64x1024x1024x128 as 1x1024x1024x128"), "%s", left_out);
    /* 24 before the row norms; their six benchmarks add ten (f32 at 4096x1024, f16 and bf16 also at 4096x2048) */
    cr_assert(strstr(left_out, "rms_norm_f32 4096x16384 as 4096x1024"), "%s", left_out);
    /* attention's four add fourteen: each prefill benchmark's eight cases shrink to five distinct ones, and each
     * decode benchmark keeps two */
    cr_assert(strstr(left_out, "attention_f16 B16 H32 S1024 D64 as B1 H1 S1024 D64"), "%s", left_out);
    cr_assert_leq(total, 48);
    /* the full table on a CPU device is left as it is */
    trr_case *full = NULL, *plain = NULL;
    int n_full = 0, n_plain = 0;
    char none[8] = "";
    cr_assert_eq(trr_bench_device_cases(bench_id("add_f32"), TRR_BENCH_SIZES_FULL, NULL, 0, &full, &n_full, none, sizeof none),
                 TRR_OK);
    cr_assert_eq(trr_bench_cases(bench_id("add_f32"), TRR_BENCH_SIZES_FULL, NULL, &plain, &n_plain), TRR_OK);
    cr_assert_eq(n_full, n_plain);
    cr_assert_str_eq(none, "");
    free(full), free(plain);
}
