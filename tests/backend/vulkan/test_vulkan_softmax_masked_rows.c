/* Vulkan's register softmax kernels (softmax_sg.comp, softmax_rows.comp) on rows with masked entries (-inf),
 * forced through trr_config_override over the thread counts that change how a row is split (one subgroup a
 * row; one workgroup a row of 1 to 32 subgroups, whose (max, sum) pairs are merged by subgroup operations):
 * rows masked but for a few entries at either end, masked throughout, masked at random, and masked in
 * alternate 64-column stretches (whole subgroups that see nothing but -inf). The conformance cases put special
 * values only into rows no register kernel takes (widths not a multiple of 4, or longer than any). Checked
 * against softmax in double on the host: the same NaN positions (a row of -inf alone is NaN throughout), and
 * the f32 bound of 1e-6 absolute (docs/ops.md) elsewhere; the output starts poisoned with NaN. */
#include "test_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS 10

static uint64_t rng = 0x2545f4914f6cdd1dull;
static double uniform(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* Row r's pattern: 1 where the entry is -inf. */
static int masked(int r, int c, int cols) {
    switch (r % 5) {
    case 0: return c < cols - 5;     /* the last 5 alone */
    case 1: return 1;                /* the whole row: NaN */
    case 2: return uniform() < 0.5;  /* scattered */
    case 3: return c >= 3;           /* the first 3 alone */
    default: return (c / 64) % 2;    /* alternate stretches of 64 */
    }
}

static void reference(const float *x, int cols, double *out) {
    double m = -INFINITY, s = 0;
    for (int c = 0; c < cols; c++) m = fmax(m, x[c]);
    for (int c = 0; c < cols; c++) s += exp((double)x[c] - m); /* exp(-inf - -inf) = NaN for a masked row */
    for (int c = 0; c < cols; c++) out[c] = exp((double)x[c] - m) / s;
}

/* Runs the softmax on cols-wide rows with cfg forced; returns 0 where the device refuses the config. */
static int check(trr_context *ctx, int cols, const trr_config *cfg, const char *label) {
    const size_t n = (size_t)ROWS * (size_t)cols;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc((size_t)cols * sizeof *ref);
    cr_assert(x && y && ref);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < cols; c++)
            x[(size_t)r * cols + c] = masked(r, c, cols) ? -INFINITY : (float)(60.0 + 40.0 * uniform());
    trr_buffer *bx = NULL, *by = NULL;
    cr_assert_eq(trr_buffer_create(ctx, n * 4, &bx), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, n * 4, &by), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bx, 0, x, n * 4), TRR_OK);
    cr_assert_eq(trr_buffer_fill(ctx, by, 0, n * 4, 0xff), TRR_OK); /* NaN */
    trr_tensor tx, ty;
    cr_assert_eq(trr_tensor_2d(bx, 0, TRR_F32, ROWS, cols, 0, &tx), TRR_OK);
    cr_assert_eq(trr_tensor_2d(by, 0, TRR_F32, ROWS, cols, 0, &ty), TRR_OK);
    cr_assert_eq(trr_config_override(ctx, TRR_OP_SOFTMAX, cfg), TRR_OK);
    trr_status st = trr_softmax(ctx, &tx, &ty);
    cr_assert_eq(trr_config_override(ctx, TRR_OP_SOFTMAX, NULL), TRR_OK);
    int ran = st == TRR_OK;
    if (!ran) cr_assert_eq(st, TRR_ERR_UNSUPPORTED, "%s cols %d: %s", label, cols, trr_last_error(ctx));
    if (ran) {
        cr_assert_eq(trr_buffer_read(ctx, by, 0, y, n * 4), TRR_OK);
        for (int r = 0; r < ROWS; r++) {
            reference(x + (size_t)r * cols, cols, ref);
            for (int c = 0; c < cols; c++) {
                const float got = y[(size_t)r * cols + c];
                if (isnan(ref[c]))
                    cr_assert(isnan(got), "%s cols %d row %d col %d: %g, expected NaN", label, cols, r, c, got);
                else
                    cr_assert(fabs(got - ref[c]) <= 1e-6, "%s cols %d row %d col %d: %.9g, expected %.9g", label,
                              cols, r, c, got, ref[c]);
            }
        }
    }
    trr_buffer_destroy(bx);
    trr_buffer_destroy(by);
    free(x);
    free(y);
    free(ref);
    return ran;
}

Test(vulkan_softmax_masked, register_kernels) {
    trr_context *ctx = open_device_or_skip("vulkan:0", "vulkan");
    static const int widths[] = {256, 1024, 4096, 12288};
    static const int threads[] = {64, 256, 1024};
    int ran = 0;
    for (int w = 0; w < 4; w++) {
        char label[64];
        const trr_config automatic = {0};
        ran += check(ctx, widths[w], &automatic, "default config");
        for (int t = 0; t < 3; t++) {
            const trr_config simt = {.threads = threads[t], .variant = TRR_VARIANT_SIMT};
            snprintf(label, sizeof label, "simt, %d threads", threads[t]);
            ran += check(ctx, widths[w], &simt, label);
            const trr_config sg = {.threads = threads[t], .variant = TRR_VARIANT_SUBGROUP};
            snprintf(label, sizeof label, "subgroup, %d threads", threads[t]);
            ran += check(ctx, widths[w], &sg, label);
        }
    }
    cr_assert_gt(ran, 12, "only %d configs ran", ran);
    trr_context_destroy(ctx);
}
