/* attention's check before timing (check.c calls it): every element of o scanned for the poison and for non-finite
 * values, and whole query rows, sampled within TRR_BENCH_CHECK_BUDGET reference operations (a row costs 2·Skv·D;
 * never fewer than TRR_BENCH_CHECK_ROWS, always the first and the last), judged against the float64 reference
 * row by docs/ops.md's attention bounds: f32 by the sample's Frobenius error with the score term, half outputs
 * by its Frobenius error and each element's relative error with the floor rule, both with the score term.
 * lse is not benchmarked, so not checked here (the conformance suite checks it). */
#include "bench.h"

#include "conformance_check.h"
#include "random.h"
#include "reference.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t at(const trr_operand *o, int64_t b, int64_t h, int64_t s) {
    return o->offset + b * o->batch_stride + h * o->stride1 + s * o->stride0;
}

/* The largest |v| of kv head (b, g). */
static double value_scale(const trr_call *c, int64_t b, int64_t g) {
    double vmax = 0;
    for (int64_t j = 0; j < c->attn.seq_kv; j++)
        for (int64_t d = 0; d < c->attn.head_dim; d++)
            vmax = fmax(vmax, fabs(trr_conf_load(c->u.mem, c->u.dtype, at(&c->u, b, g, j) + d)));
    return vmax;
}

trr_status trr_bench_check_attention(const trr_case *c, const trr_call *call, const void *out, uint64_t seed,
                                     trr_bench_check *res) {
    const trr_attention_shape *a = &call->attn;
    const trr_dtype odt = c->out_dtype;
    const int64_t D = a->head_dim, rows = a->batch * a->heads_q * a->seq_q;
    res->total = rows * D;
    int64_t bad = 0, first = -1;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t i = r % a->seq_q, h = (r / a->seq_q) % a->heads_q, b = r / a->seq_q / a->heads_q;
        const int64_t base = at(&call->z, b, h, i);
        for (int64_t d = 0; d < D; d++)
            if (!isfinite(trr_conf_load(out, odt, base + d)) && bad++ == 0) first = r;
    }
    if (bad)
        trr_conf_append(res->message, sizeof res->message,
                        "%lld of %lld output elements not written or not finite (first in row %lld)", (long long)bad,
                        (long long)res->total, (long long)first);

    const int64_t cost = 2 * a->seq_kv * D;
    int64_t want = TRR_BENCH_CHECK_BUDGET / (cost > 0 ? cost : 1);
    if (want < TRR_BENCH_CHECK_ROWS) want = TRR_BENCH_CHECK_ROWS;
    if (want > rows) want = rows;
    int64_t *idx = malloc((size_t)want * sizeof *idx);
    double *ref = malloc((size_t)(want * D) * sizeof *ref), *got = malloc((size_t)(want * D) * sizeof *got);
    double *lscale = malloc((size_t)want * sizeof *lscale), *vscale = malloc((size_t)want * sizeof *vscale);
    if (!idx || !ref || !got || !lscale || !vscale) {
        free(idx), free(ref), free(got), free(lscale), free(vscale);
        return TRR_ERR_OUT_OF_MEMORY;
    }
    for (int64_t s = 0; s < want; s++) /* the first and last rows, the rest drawn from seed */
        idx[s] = s == 0 ? 0 : s == 1 ? rows - 1 : want == rows ? s : (int64_t)(trr_rng_next(&seed) % (uint64_t)rows);
    const int half = odt != TRR_F32;
    trr_status st = TRR_OK;
    double err2 = 0, ref2 = 0, lmax = 0;
    for (int64_t s = 0; s < want && st == TRR_OK; s++) {
        const int64_t r = idx[s], i = r % a->seq_q, h = (r / a->seq_q) % a->heads_q, b = r / a->seq_q / a->heads_q;
        double lse;
        st = trr_reference_attention_row(call, b, h, i, ref + s * D, &lse, &lscale[s]);
        vscale[s] = half ? value_scale(call, b, h / (a->heads_q / a->heads_kv)) : 0;
        lmax = fmax(lmax, lscale[s]);
        const int64_t base = at(&call->z, b, h, i);
        for (int64_t d = 0; d < D; d++) {
            got[s * D + d] = trr_conf_load(out, odt, base + d);
            res->checked++;
            if (!isfinite(got[s * D + d])) continue; /* counted by the scan */
            const double e = got[s * D + d] - ref[s * D + d];
            err2 += e * e;
            ref2 += ref[s * D + d] * ref[s * D + d];
        }
    }
    int failed = bad != 0;
    if (st == TRR_OK) {
        const double term = trr_conf_attention_score_term(D, lmax);
        const double fbound = odt == TRR_F16    ? 2e-3 + term
                              : odt == TRR_BF16 ? 8e-3 + term
                                                : trr_conf_attention_f32_bound(D, lmax);
        const double frob = sqrt(err2) / fmax(sqrt(ref2), FLT_MIN);
        res->metric = "frobenius", res->error = frob, res->bound = fbound, res->ratio = frob / fbound;
        if (frob > fbound) {
            failed = 1;
            trr_conf_append(res->message, sizeof res->message, "frobenius %.3g > %.3g over %lld checked elements", frob,
                            fbound, (long long)res->checked);
        }
        if (half) {
            const double floor_ = trr_conf_half_floor(odt, sqrt(ref2 / (double)(want * D)), 1);
            const double rel_bound = odt == TRR_F16 ? 1e-2 : 4e-2;
            double worst = 0, worst_rel = 0, worst_bound = rel_bound;
            int64_t wr = 0, wd = 0;
            for (int64_t s = 0; s < want; s++)
                for (int64_t d = 0; d < D; d++) {
                    const double g = got[s * D + d], w = ref[s * D + d];
                    if (!isfinite(g)) continue;
                    const double denom = fmax(fabs(w), floor_), rel = fabs(g - w) / denom;
                    const double bound = rel_bound + trr_conf_attention_score_term(D, lscale[s]) * vscale[s] / denom;
                    if (rel / bound > worst)
                        worst = rel / bound, worst_rel = rel, worst_bound = bound, wr = idx[s], wd = d;
                }
            if (worst > res->ratio)
                res->metric = "max_rel", res->error = worst_rel, res->bound = worst_bound, res->ratio = worst;
            if (worst > 1) {
                failed = 1;
                trr_conf_append(res->message, sizeof res->message, "max_rel %.3g > %.3g at row %lld, d %lld", worst_rel,
                                worst_bound, (long long)wr, (long long)wd);
            }
        }
        if (bad) res->ratio = INFINITY;
    }
    free(idx), free(ref), free(got), free(lscale), free(vscale);
    if (st != TRR_OK) return st;
    return failed ? TRR_ERR_MISMATCH : TRR_OK;
}
