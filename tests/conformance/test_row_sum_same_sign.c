/* row_sum of long rows whose terms all have one sign (issue #41, item 5): docs/ops.md bounds |err| by
 * 1e-6 * sum|x| at every length, and a plain f32 running sum per thread breaks that on such rows, where random
 * signs would let the roundings cancel. Rows of 0.1f (a constant, so every rounding of a running sum goes the
 * same way) and of uniform (0, 1] values, 2^22 and 2^24 + 3 long, f32 and f16, under each backend's default
 * config and under thread counts and variants a caller may pick: right, or refused as unsupported. */
#include "random.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { N_CFG = 4 };

/* One call over a rows x n input (f32 or f16 values as stored in host[]), checked against the float64 sum of
 * those stored values. Returns the number of rows outside the bound (-1: the config was refused). */
static int run_case(trr_context *ctx, const char *spec, const char *what, trr_dtype dt, const float *vals,
                    int rows, int64_t n, const trr_config *cfg) {
    const size_t es = dt == TRR_F32 ? 4 : 2, count = (size_t)rows * (size_t)n;
    void *host = malloc(es * count);
    float *stored = malloc(sizeof(float) * count);
    cr_assert(host && stored);
    if (dt == TRR_F32) {
        memcpy(host, vals, 4 * count);
        memcpy(stored, vals, 4 * count);
    } else {
        trr_f32_to_f16(vals, host, count);
        trr_f16_to_f32(host, stored, count);
    }
    trr_buffer *bx, *by;
    cr_assert_eq(trr_buffer_create(ctx, es * count, &bx), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_create(ctx, 4 * (size_t)rows, &by), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_write(ctx, bx, 0, host, es * count), TRR_OK, "%s", trr_last_error(ctx));
    trr_tensor tx, ty;
    cr_assert_eq(trr_tensor_2d(bx, 0, dt, rows, n, n, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_1d(by, 0, TRR_F32, rows, &ty), TRR_OK);
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ROW_SUM, cfg), TRR_OK, "%s", trr_last_error(ctx));
    int bad = 0;
    const trr_status st = trr_row_sum(ctx, &tx, &ty);
    if (st == TRR_ERR_UNSUPPORTED) {
        printf("%s %s %s n=%lld threads=%d variant=%d: unsupported: %s\n", spec, what, dt == TRR_F32 ? "f32" : "f16",
               (long long)n, cfg ? cfg->threads : 0, cfg ? cfg->variant : 0, trr_last_error(ctx));
        bad = -1;
    } else {
        cr_assert_eq(st, TRR_OK, "%s: %s", spec, trr_last_error(ctx));
        float got[2];
        cr_assert(rows <= 2);
        cr_assert_eq(trr_buffer_read(ctx, by, 0, got, 4 * (size_t)rows), TRR_OK, "%s", trr_last_error(ctx));
        for (int r = 0; r < rows; r++) {
            double ref = 0, mag = 0;
            for (int64_t c = 0; c < n; c++) {
                ref += stored[(size_t)r * (size_t)n + (size_t)c];
                mag += fabs(stored[(size_t)r * (size_t)n + (size_t)c]);
            }
            const double err = fabs((double)got[r] - ref), rel = err / mag;
            const int ok = err <= 1e-6 * mag;
            printf("%s %s %s n=%lld threads=%d variant=%d row %d: |err| / sum|x| = %.3g%s\n", spec, what,
                   dt == TRR_F32 ? "f32" : "f16", (long long)n, cfg ? cfg->threads : 0, cfg ? cfg->variant : 0, r,
                   rel, ok ? "" : "  FAIL");
            bad += !ok;
        }
    }
    trr_buffer_destroy(bx);
    trr_buffer_destroy(by);
    free(host);
    free(stored);
    return bad;
}

static void run_device(const char *spec) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    const int64_t lens[] = {(int64_t)1 << 22, ((int64_t)1 << 24) + 3};
    const int64_t nmax = lens[1];
    float *vals = malloc(sizeof(float) * 2 * (size_t)nmax);
    cr_assert(vals);
    /* NULL: the backend's own choice; then few and many threads, and the subgroup variant where there is one */
    const trr_config cfgs[N_CFG] = {{0}, {.threads = 32}, {.threads = 256}, {.variant = TRR_VARIANT_SUBGROUP}};
    int bad = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const int64_t n = lens[li];
        /* the 2^22 rows: one of 0.1f and one of uniform (0, 1]; the longest: 0.1f alone */
        const int rows = li == 0 ? 2 : 1;
        uint64_t rng = 41;
        for (int64_t c = 0; c < n; c++) vals[c] = 0.1f;
        if (rows == 2)
            for (int64_t c = 0; c < n; c++)
                vals[n + c] = (float)((double)((trr_rng_next(&rng) >> 40) + 1) / (double)(1u << 24));
        for (int dt = 0; dt < 2; dt++)
            for (int k = 0; k < N_CFG; k++) {
                const int r = run_case(ctx, spec, rows == 2 ? "0.1f/uniform" : "0.1f", dt ? TRR_F16 : TRR_F32, vals,
                                       rows, n, k ? &cfgs[k] : NULL);
                bad += r > 0 ? r : 0;
            }
    }
    fflush(stdout);
    free(vals);
    trr_context_destroy(ctx);
    cr_assert_eq(bad, 0, "%d same-sign rows on %s summed outside 1e-6 * sum|x| (listed above)", bad, spec);
}

Test(row_sum_same_sign, cpu) { run_device("cpu"); }
Test(row_sum_same_sign, opencl) { run_device("opencl:0"); }
Test(row_sum_same_sign, vulkan) { run_device("vulkan:0"); }
