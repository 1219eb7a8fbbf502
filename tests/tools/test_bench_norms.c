/* The row norms' benchmarks: names, sizes, the bytes their GB/s counts, and the check before timing (whole rows
 * against the float64 reference, the f32 bound with each column's w and b). */
#include "bench.h"
#include "conformance_check.h"
#include "half.h"
#include "op_table.h"
#include "reference.h"

#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    trr_op op;
    trr_dtype dt;
    int esz;
} g_norm_benches[] = {
    {"rms_norm_f32", TRR_OP_RMS_NORM, TRR_F32, 4},       {"rms_norm_f16", TRR_OP_RMS_NORM, TRR_F16, 2},
    {"rms_norm_bf16", TRR_OP_RMS_NORM, TRR_BF16, 2},     {"layer_norm_f32", TRR_OP_LAYER_NORM, TRR_F32, 4},
    {"layer_norm_f16", TRR_OP_LAYER_NORM, TRR_F16, 2},   {"layer_norm_bf16", TRR_OP_LAYER_NORM, TRR_BF16, 2},
};
#define N_NORM_BENCHES ((int)(sizeof g_norm_benches / sizeof g_norm_benches[0]))

Test(bench_norms, names_sizes_and_bytes) {
    static const int64_t sizes[4] = {1024, 4096, 8192, 16384};
    for (int i = 0; i < N_NORM_BENCHES; i++) {
        const int id = trr_bench_find(g_norm_benches[i].name);
        cr_assert_geq(id, 0, "%s", g_norm_benches[i].name);
        const trr_bench_def *d = trr_bench_get((trr_bench_id)id);
        cr_assert_eq(d->op, g_norm_benches[i].op);
        cr_assert_str_eq(d->unit, "GB/s");
        cr_assert_eq(d->compute_bound, 0);
        for (int mode = TRR_BENCH_SIZES_QUICK; mode <= TRR_BENCH_SIZES_FULL; mode++) {
            trr_case *cases = NULL;
            int n = 0;
            cr_assert_eq(trr_bench_cases((trr_bench_id)id, (trr_bench_sizes_mode)mode, NULL, &cases, &n), TRR_OK);
            cr_assert_eq(n, 4, "%s: %d sizes", d->name, n);
            for (int k = 0; k < n; k++) {
                const trr_case *c = &cases[k];
                cr_assert_eq(c->op, g_norm_benches[i].op);
                cr_assert(c->in_dtype == g_norm_benches[i].dt && c->out_dtype == g_norm_benches[i].dt);
                cr_assert_eq(c->rows, 4096);
                cr_assert_eq(c->cols, sizes[k]);
                /* x and y [M,N], w (and b) [N], each once */
                const double vectors = c->op == TRR_OP_LAYER_NORM ? 2.0 : 1.0;
                const double bytes =
                    (2.0 * 4096 * (double)sizes[k] + vectors * (double)sizes[k]) * g_norm_benches[i].esz;
                cr_assert_eq(trr_bench_case_work(c), bytes, "%s N=%lld: %g, want %g", d->name, (long long)sizes[k],
                             trr_bench_case_work(c), bytes);
                cr_assert(fabs(trr_bench_case_figure(c, 2.0) - bytes / 2e-3 * 1e-9) < 1e-9);
                char text[48];
                trr_bench_size_text((trr_bench_id)id, c, text, sizeof text);
                char want[48];
                snprintf(want, sizeof want, "4096x%lld", (long long)sizes[k]);
                cr_assert_str_eq(text, want);
                cr_assert_eq(trr_bench_size_x((trr_bench_id)id, c), (double)sizes[k]);
            }
            free(cases);
        }
        trr_case *listed = NULL;
        int nl = 0;
        cr_assert_eq(trr_bench_cases((trr_bench_id)id, TRR_BENCH_SIZES_LIST, "2048,2^13", &listed, &nl), TRR_OK);
        cr_assert(nl == 2 && listed[0].cols == 2048 && listed[1].cols == 8192 && listed[1].rows == 4096);
        free(listed);
    }
    /* an op name selects its three dtypes */
    const uint64_t rms = trr_bench_mask_for("rms_norm"), layer = trr_bench_mask_for("layer_norm");
    cr_assert_eq(__builtin_popcount(rms), 3);
    cr_assert_eq(__builtin_popcount(layer), 3);
    cr_assert_eq(rms & layer, 0u);
}

/* The check before timing on the CPU's buffers: the float64 reference written as the output passes; one element
 * off by 1e-4 of its scale (f32) or a whole row scaled (half) fails. */
static void check_norm_bench(const char *name) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_case c = {.op = strncmp(name, "rms", 3) ? TRR_OP_LAYER_NORM : TRR_OP_RMS_NORM, .rows = 5, .cols = 300,
                  .layout = TRR_LAYOUT_PACKED};
    c.in_dtype = c.out_dtype = strstr(name, "bf16") ? TRR_BF16 : strstr(name, "f16") ? TRR_F16 : TRR_F32;
    trr_bench_setup s;
    cr_assert_eq(trr_bench_setup_create(ctx, &c, 11, &s), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert(s.has[TRR_U] == (c.op == TRR_OP_LAYER_NORM));
    trr_call call;
    int empty = 0;
    cr_assert_eq(trr_case_call_build(ctx, &c, s.t, 0, &call, &empty), TRR_OK, "%s", trr_last_error(ctx));
    size_t esz = 0;
    cr_assert_eq(trr_dtype_size(c.out_dtype, &esz), TRR_OK);
    void *out = calloc(s.op[TRR_OUT].bytes, 1);
    double *ref = malloc(5 * 300 * sizeof *ref);
    cr_assert(out && ref);
    void *hosts[TRR_CASE_SLOTS];
    for (int i = 0; i < TRR_CASE_SLOTS; i++) hosts[i] = s.has[i] && i != TRR_OUT ? s.op[i].host : NULL;
    hosts[TRR_OUT] = out;
    trr_case_call_host(&call, hosts);
    cr_assert_eq(trr_reference_run(&call, ref), TRR_OK);
    for (int64_t r = 0; r < 5; r++)
        for (int64_t j = 0; j < 300; j++)
            trr_dtype_store_f32(out, c.out_dtype, call.z.offset + r * call.z.stride0 + j, (float)ref[r * 300 + j]);
    trr_bench_check chk;
    cr_assert_eq(trr_bench_check_output(&c, &call, out, NULL, 3, &chk), TRR_OK, "%s: %s", name, chk.message);
    cr_assert_eq(chk.checked, 5 * 300, "every element of the sampled rows");
    if (c.out_dtype == TRR_F32) {
        const int64_t at = call.z.offset + 4 * call.z.stride0 + 299;
        const double scale = fabs(ref[4 * 300 + 299]) + trr_conf_norm_scale(&call, 299);
        trr_dtype_store_f32(out, TRR_F32, at, (float)(ref[4 * 300 + 299] + 1e-4 * scale));
        cr_assert_eq(trr_bench_check_output(&c, &call, out, NULL, 3, &chk), TRR_ERR_MISMATCH, "%s", name);
        cr_assert(strstr(chk.message, "norm_rel"), "%s", chk.message);
    } else {
        for (int64_t j = 0; j < 300; j++) {
            const int64_t at = call.z.offset + 2 * call.z.stride0 + j;
            trr_dtype_store_f32(out, c.out_dtype, at, 1.1f * trr_dtype_load_f32(out, c.out_dtype, at));
        }
        cr_assert_eq(trr_bench_check_output(&c, &call, out, NULL, 3, &chk), TRR_ERR_MISMATCH, "%s", name);
    }
    free(out), free(ref);
    trr_bench_setup_destroy(&s);
    trr_context_destroy(ctx);
}

Test(bench_norms, check_before_timing) {
    for (int i = 0; i < N_NORM_BENCHES; i++) check_norm_bench(g_norm_benches[i].name);
}
