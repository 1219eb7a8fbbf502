/*
 * attention's verdict (conformance_check.h; docs/ops.md, Correctness bounds): o judged per (batch, head) matrix
 * of Sq x D, lse per element, against the float64 reference of the full scores.
 *
 * The bounds follow where an f32 kernel's error comes from. A score s = scale·q·k summed in f32 carries an error
 * up to about (D + 1)·2^-24·L, L the row's logit scale |scale|·max_j Σ_d |q_d·k_jd|; e^(s - m) turns it into the
 * same relative error in each weight, as does an exponential evaluated on arguments down to -2L; the rest (the
 * sums of weights and of weighted values, the division, the log) is a few roundings. So f32 o is held to
 * ‖err‖_F / ‖ref‖_F <= 1e-5 + 2^-24·(D + 8)·L (L the largest of the matrix's rows) and lse to
 * |err| <= 1e-5·(1 + |lse_ref|) + 2^-24·(D + 8)·L_i: matmul's 1e-5 where the logits are small, growing with them
 * where they are large, and far below what TF32 scores or half-precision weights would give. Half outputs are
 * judged as every half output (Frobenius and max-relative with the floor rule, K = 1: the weights sum to one, so
 * nothing grows with Skv), plus the same score term: 2^-24·(D + 8)·L added to the Frobenius bound, and to each
 * element's allowance 2^-24·(D + 8)·L_i·V, V the largest |v| of the kv head, since an element of o is a
 * weighted mean of values whose weights carry that relative error (an element that cancels to near zero
 * keeps the error of the values it averages).
 *
 * A row that sees no key must be exactly 0 in o and -inf in lse; poison, guard bytes and non-finite values fail
 * as in conformance_check.c.
 */
#include "conformance_check.h"

#include "half.h"
#include "reference.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double trr_conf_attention_f32_bound(int64_t head_dim, double logit_scale) {
    return 1e-5 + trr_conf_attention_score_term(head_dim, logit_scale);
}

double trr_conf_attention_lse_bound(int64_t head_dim, double logit_scale, double lse_ref) {
    return 1e-5 * (1.0 + fabs(lse_ref)) + trr_conf_attention_score_term(head_dim, logit_scale);
}

double trr_conf_attention_score_term(int64_t head_dim, double logit_scale) {
    return 0x1p-24 * (double)(head_dim + 8) * logit_scale;
}

/* The largest |v| of kv head (b, g). */
static double value_scale(const trr_call *c, int64_t b, int64_t g) {
    double vmax = 0;
    for (int64_t j = 0; j < c->attn.seq_kv; j++) {
        const int64_t base = c->u.offset + b * c->u.batch_stride + g * c->u.stride1 + j * c->u.stride0;
        for (int64_t d = 0; d < c->attn.head_dim; d++)
            vmax = fmax(vmax, fabs(trr_conf_load(c->u.mem, c->u.dtype, base + d)));
    }
    return vmax;
}

static int64_t at(const trr_operand *o, int64_t b, int64_t h, int64_t s) {
    return o->offset + b * o->batch_stride + h * o->stride1 + s * o->stride0;
}

static int is_poison(trr_dtype dt, const uint8_t *buf, int64_t idx) {
    if (dt == TRR_F32) {
        uint32_t b;
        memcpy(&b, buf + idx * 4, 4);
        return b == TRR_CONF_POISON_F32;
    }
    uint16_t b;
    memcpy(&b, buf + idx * 2, 2);
    return b == trr_conf_poison(dt);
}

/* Counts bytes outside the view (rows of `width` elements at every (b, h, s)) that changed. */
static int64_t guard_changes(const trr_operand *op, const trr_attention_shape *a, int64_t width, size_t es,
                             const uint8_t *before, const uint8_t *after, size_t bytes, int64_t *first) {
    uint8_t *mask = calloc(bytes ? bytes : 1, 1);
    if (!mask) return -1;
    for (int64_t b = 0; b < a->batch; b++)
        for (int64_t h = 0; h < a->heads_q; h++)
            for (int64_t s = 0; s < a->seq_q; s++) {
                const size_t from = (size_t)at(op, b, h, s) * es, n = (size_t)width * es;
                if (from + n <= bytes) memset(mask + from, 1, n);
            }
    int64_t bad = 0;
    *first = -1;
    for (size_t i = 0; i < bytes; i++)
        if (!mask[i] && before[i] != after[i] && bad++ == 0) *first = (int64_t)i;
    free(mask);
    return bad;
}

typedef struct verdict {
    int64_t unwritten, nonfinite, special;
    int64_t first[3][3]; /* (b, h, i) of the first of each */
    double special_got;
    /* the worst of each measure as a ratio to its bound, with the value and bound it came from */
    double frob_ratio, frob, frob_bound;
    double rel_ratio, rel, rel_bound, rel_got, rel_want;
    double lse_ratio, lse_err, lse_bound, lse_got, lse_want;
    int64_t rel_at[4], lse_at[3], frob_at[2];
} verdict;

static void note_first(int64_t *count, int64_t first[3], int64_t b, int64_t h, int64_t i) {
    if ((*count)++ == 0) first[0] = b, first[1] = h, first[2] = i;
}

trr_status trr_conf_check_attention(const trr_conf_attention_input *in, trr_conf_result *res) {
    const trr_call *c = in->call;
    const trr_attention_shape *a = &c->attn;
    const trr_dtype odt = c->z.dtype;
    const int64_t D = a->head_dim, rows = a->batch * a->heads_q * a->seq_q;
    const int half = odt != TRR_F32;
    double *oref = malloc((size_t)(rows * D + 2 * rows + 1) * sizeof *oref);
    if (!oref)
        return trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "conformance: attention reference of %lld rows", (long long)rows);
    double *lref = oref + rows * D, *lscale = lref + rows;
    trr_status st = trr_reference_attention(c, oref, lref, lscale);
    if (st != TRR_OK) {
        free(oref);
        snprintf(res->message, sizeof res->message, "reference: %s", trr_last_error(NULL));
        return st;
    }
    res->message[0] = '\0';
    size_t es = 0;
    trr_dtype_size(odt, &es);

    /* guard bytes around both outputs */
    int guard_bad = 0;
    int64_t first = -1;
    int64_t bad = guard_changes(&c->z, a, D, es, in->o_before, in->o_after, in->o_bytes, &first);
    if (bad < 0) goto oom;
    if (bad) {
        guard_bad = 1;
        trr_conf_append(res->message, sizeof res->message, "%lld guard bytes around o changed (first at byte %lld)",
                        (long long)bad, (long long)first);
    }
    if (a->has_lse) {
        bad = guard_changes(&c->w, a, 1, 4, in->lse_before, in->lse_after, in->lse_bytes, &first);
        if (bad < 0) goto oom;
        if (bad) {
            guard_bad = 1;
            trr_conf_append(res->message, sizeof res->message,
                            "%lld guard bytes around lse changed (first at byte %lld)", (long long)bad,
                            (long long)first);
        }
    }

    /* the half floor from the whole output's rms, as for every half output */
    double ref2 = 0;
    for (int64_t i = 0; i < rows * D; i++) ref2 += oref[i] * oref[i];
    const double floor_ = half ? trr_conf_half_floor(odt, sqrt(ref2 / (double)(rows * D)), 1) : 0;
    const double min_normal = odt == TRR_F16    ? TRR_CONF_F16_MIN_NORMAL
                              : odt == TRR_BF16 ? TRR_CONF_BF16_MIN_NORMAL
                                                : FLT_MIN;

    verdict v;
    memset(&v, 0, sizeof v);
    const double rel_bound = odt == TRR_F16 ? 1e-2 : 4e-2;
    for (int64_t b = 0; b < a->batch; b++)
        for (int64_t h = 0; h < a->heads_q; h++) {
            const double vscale = half ? value_scale(c, b, h / (a->heads_q / a->heads_kv)) : 0;
            double err2 = 0, bref2 = 0, lmax = 0;
            int64_t counted = 0;
            for (int64_t i = 0; i < a->seq_q; i++) {
                const int64_t r = (b * a->heads_q + h) * a->seq_q + i;
                const int sees = trr_reference_attention_visible(c, i) > 0;
                if (lscale[r] > lmax) lmax = lscale[r];
                const int64_t base = at(&c->z, b, h, i);
                for (int64_t d = 0; d < D; d++) {
                    const double want = oref[r * D + d], got = trr_conf_load(in->o_after, odt, base + d);
                    if (is_poison(odt, in->o_after, base + d)) {
                        note_first(&v.unwritten, v.first[0], b, h, i);
                    } else if (!sees) { /* a row that sees no key: exactly 0 */
                        if (got != 0.0) {
                            if (v.special == 0) v.special_got = got;
                            note_first(&v.special, v.first[2], b, h, i);
                        }
                    } else if (!isfinite(got)) {
                        note_first(&v.nonfinite, v.first[1], b, h, i);
                    } else {
                        const double err = fabs(got - want);
                        err2 += err * err;
                        bref2 += want * want;
                        counted++;
                        if (half) {
                            const double denom = fmax(fabs(want), floor_);
                            const double rel = err / denom;
                            const double bound =
                                rel_bound + trr_conf_attention_score_term(D, lscale[r]) * vscale / denom;
                            if (rel / bound > v.rel_ratio) {
                                v.rel_ratio = rel / bound, v.rel = rel, v.rel_bound = bound, v.rel_got = got,
                                v.rel_want = want;
                                v.rel_at[0] = b, v.rel_at[1] = h, v.rel_at[2] = i, v.rel_at[3] = d;
                            }
                        }
                    }
                }
                if (!a->has_lse) continue;
                const int64_t li = at(&c->w, b, h, i);
                const double want = lref[r], got = trr_conf_load(in->lse_after, TRR_F32, li);
                if (is_poison(TRR_F32, in->lse_after, li)) {
                    note_first(&v.unwritten, v.first[0], b, h, i);
                } else if (!sees) { /* -inf exactly */
                    if (!(isinf(got) && got < 0)) {
                        if (v.special == 0) v.special_got = got;
                        note_first(&v.special, v.first[2], b, h, i);
                    }
                } else if (!isfinite(got)) {
                    note_first(&v.nonfinite, v.first[1], b, h, i);
                } else {
                    const double err = fabs(got - want), bound = trr_conf_attention_lse_bound(D, lscale[r], want);
                    if (err / bound > v.lse_ratio) {
                        v.lse_ratio = err / bound, v.lse_err = err, v.lse_bound = bound, v.lse_got = got,
                        v.lse_want = want;
                        v.lse_at[0] = b, v.lse_at[1] = h, v.lse_at[2] = i;
                    }
                }
            }
            if (!counted) continue;
            const double frob = sqrt(err2) / fmax(sqrt(bref2), min_normal * sqrt((double)counted));
            const double bound = odt == TRR_F16    ? 2e-3 + trr_conf_attention_score_term(D, lmax)
                                 : odt == TRR_BF16 ? 8e-3 + trr_conf_attention_score_term(D, lmax)
                                                   : trr_conf_attention_f32_bound(D, lmax);
            if (frob / bound > v.frob_ratio) {
                v.frob_ratio = frob / bound, v.frob = frob, v.frob_bound = bound;
                v.frob_at[0] = b, v.frob_at[1] = h;
            }
        }

    int failed = guard_bad;
    if (v.unwritten) {
        failed = 1;
        trr_conf_append(res->message, sizeof res->message,
                        "%lld output elements not written (first in row b %lld h %lld i %lld)", (long long)v.unwritten,
                        (long long)v.first[0][0], (long long)v.first[0][1], (long long)v.first[0][2]);
    }
    if (v.nonfinite) {
        failed = 1;
        trr_conf_append(res->message, sizeof res->message,
                        "%lld non-finite outputs where the reference is finite (first in row b %lld h %lld i %lld)",
                        (long long)v.nonfinite, (long long)v.first[1][0], (long long)v.first[1][1],
                        (long long)v.first[1][2]);
    }
    if (v.special) {
        failed = 1;
        trr_conf_append(res->message, sizeof res->message,
                        "%lld outputs of rows that see no key are not o = 0, lse = -inf (first in row b %lld h %lld i "
                        "%lld: %.9g)", (long long)v.special, (long long)v.first[2][0], (long long)v.first[2][1],
                        (long long)v.first[2][2], v.special_got);
    }
    if (v.frob_ratio > 1) {
        failed = 1;
        trr_conf_append(res->message, sizeof res->message, "frobenius %.3g > %.3g in matrix b %lld h %lld", v.frob,
                        v.frob_bound, (long long)v.frob_at[0], (long long)v.frob_at[1]);
    }
    if (v.rel_ratio > 1) {
        failed = 1;
        trr_conf_append(res->message, sizeof res->message,
                        "max_rel %.3g > %.3g at (b %lld, h %lld, i %lld, d %lld): got "
                        "%.9g, want %.9g",
                        v.rel, v.rel_bound, (long long)v.rel_at[0], (long long)v.rel_at[1], (long long)v.rel_at[2],
                        (long long)v.rel_at[3], v.rel_got, v.rel_want);
    }
    if (v.lse_ratio > 1) {
        failed = 1;
        trr_conf_append(res->message, sizeof res->message,
                        "lse error %.3g > %.3g at (b %lld, h %lld, i %lld): got %.9g, "
                        "want %.9g",
                        v.lse_err, v.lse_bound, (long long)v.lse_at[0], (long long)v.lse_at[1], (long long)v.lse_at[2],
                        v.lse_got, v.lse_want);
    }
    /* the measure nearest its bound names the case's figure */
    res->metric = "frobenius", res->error = v.frob, res->bound = v.frob_bound, res->ratio = v.frob_ratio;
    if (v.rel_ratio > res->ratio)
        res->metric = "max_rel", res->error = v.rel, res->bound = v.rel_bound, res->ratio = v.rel_ratio;
    if (v.lse_ratio > res->ratio)
        res->metric = "lse_abs", res->error = v.lse_err, res->bound = v.lse_bound, res->ratio = v.lse_ratio;
    if (v.unwritten || v.nonfinite || v.special || guard_bad) res->ratio = INFINITY;
    res->outcome = failed ? TRR_CONF_FAIL : TRR_CONF_PASS;
    free(oref);
    return TRR_OK;
oom:
    free(oref);
    return trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "conformance: attention guard mask of %zu bytes", in->o_bytes);
}
