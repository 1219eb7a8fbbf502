/*
 * The float64 reference of attention (docs/ops.md, attention), on the normalised call a backend gets: for each
 * (batch, query head, query row) the full row of scores s_j = scale * q.k_j over the keys the row sees, in
 * double, then m = max s_j, l = sum e^(s_j - m), o = sum e^(s_j - m) v_j / l and lse = m + ln l. Nothing is
 * blocked or approximated: this is the definition the kernels' online softmax is checked against.
 *
 * Besides o and lse it gives each row's logit scale L = |scale| * max_j sum_d |q_d k_jd| over the keys the row
 * sees (0 for a row that sees none): the magnitude the f32 rounding errors of the scores scale with, which the
 * bounds of docs/ops.md take into account.
 *
 * Inputs are read in their dtype (f16 and bf16 widened exactly). The keys and values of one (batch, kv head) are
 * converted to double once and shared by the query heads that read them (grouped-query attention).
 */
#include "reference.h"

#include "half.h"

#include <math.h>
#include <stdlib.h>

static double load(const trr_operand *o, int64_t idx) { return trr_dtype_load_f32(o->mem, o->dtype, idx); }

static int64_t at(const trr_operand *o, int64_t b, int64_t h, int64_t s) {
    return o->offset + b * o->batch_stride + h * o->stride1 + s * o->stride0;
}

int64_t trr_reference_attention_visible(const trr_call *c, int64_t i) {
    const trr_attention_shape *a = &c->attn;
    if (!a->causal) return a->seq_kv;
    const int64_t last = i + (a->seq_kv - a->seq_q); /* keys j <= last */
    return last < 0 ? 0 : last + 1 < a->seq_kv ? last + 1 : a->seq_kv;
}

/* One query row against keys kd and values vd (n x D doubles each, the first n keys are the ones it sees). */
static void row(const trr_call *c, const double *qd, const double *kd, const double *vd, int64_t n, double *s,
                double *o, double *lse, double *logit_scale) {
    const int64_t D = c->attn.head_dim;
    const double scale = (double)c->attn.scale;
    for (int64_t d = 0; d < D; d++) o[d] = 0.0;
    if (n == 0) {
        *lse = -INFINITY;
        if (logit_scale) *logit_scale = 0.0;
        return;
    }
    double m = -INFINITY, L = 0.0;
    for (int64_t j = 0; j < n; j++) {
        const double *k = kd + j * D;
        double dot = 0.0, mag = 0.0;
        for (int64_t d = 0; d < D; d++) {
            dot += qd[d] * k[d];
            mag += fabs(qd[d] * k[d]);
        }
        s[j] = scale * dot;
        if (s[j] > m) m = s[j];
        if (fabs(scale) * mag > L) L = fabs(scale) * mag;
    }
    double l = 0.0;
    for (int64_t j = 0; j < n; j++) {
        const double p = exp(s[j] - m);
        l += p;
        const double *v = vd + j * D;
        for (int64_t d = 0; d < D; d++) o[d] += p * v[d];
    }
    for (int64_t d = 0; d < D; d++) o[d] /= l;
    *lse = m + log(l);
    if (logit_scale) *logit_scale = L;
}

/* The (b, g) head's keys and values as n x D doubles. */
static void load_kv(const trr_call *c, int64_t b, int64_t g, int64_t n, double *kd, double *vd) {
    const int64_t D = c->attn.head_dim;
    for (int64_t j = 0; j < n; j++) {
        const int64_t ki = at(&c->y, b, g, j), vi = at(&c->u, b, g, j);
        for (int64_t d = 0; d < D; d++) {
            kd[j * D + d] = load(&c->y, ki + d);
            vd[j * D + d] = load(&c->u, vi + d);
        }
    }
}

static trr_status check_call(const trr_call *c) {
    if (c->op != TRR_OP_ATTENTION)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "reference attention: op %d is not attention", (int)c->op);
    if (!c->x.mem || !c->y.mem || !c->u.mem)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "reference attention: an input's host copy is NULL");
    const trr_attention_shape *a = &c->attn;
    if (a->head_dim < 1 || a->heads_kv < 1 || a->heads_q % a->heads_kv != 0)
        return trr_error(NULL, TRR_ERR_SHAPE, "reference attention: D %lld, Hq %lld, Hkv %lld", (long long)a->head_dim,
                         (long long)a->heads_q, (long long)a->heads_kv);
    return TRR_OK;
}

trr_status trr_reference_attention_row(const trr_call *c, int64_t b, int64_t h, int64_t i, double *o, double *lse,
                                       double *logit_scale) {
    TRR_TRY(check_call(c));
    const trr_attention_shape *a = &c->attn;
    const int64_t D = a->head_dim, n = trr_reference_attention_visible(c, i);
    const int64_t g = h / (a->heads_q / a->heads_kv);
    double *buf = malloc(((size_t)D * (size_t)(2 * n + 1) + (size_t)n + 1) * sizeof *buf);
    if (!buf) return trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "reference attention: a row of %lld keys", (long long)n);
    double *qd = buf, *kd = qd + D, *vd = kd + n * D, *s = vd + n * D;
    const int64_t qi = at(&c->x, b, h, i);
    for (int64_t d = 0; d < D; d++) qd[d] = load(&c->x, qi + d);
    load_kv(c, b, g, n, kd, vd);
    row(c, qd, kd, vd, n, s, o, lse, logit_scale);
    free(buf);
    return TRR_OK;
}

trr_status trr_reference_attention(const trr_call *c, double *o, double *lse, double *logit_scale) {
    TRR_TRY(check_call(c));
    const trr_attention_shape *a = &c->attn;
    const int64_t D = a->head_dim, Skv = a->seq_kv, Sq = a->seq_q, group = a->heads_q / a->heads_kv;
    double *buf = malloc(((size_t)D * (size_t)(2 * Skv + 1) + (size_t)Skv + 1) * sizeof *buf);
    if (!buf) return trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "reference attention: %lld keys", (long long)Skv);
    double *qd = buf, *kd = qd + D, *vd = kd + Skv * D, *s = vd + Skv * D;
    double unused;
    for (int64_t b = 0; b < a->batch; b++)
        for (int64_t g = 0; g < a->heads_kv; g++) {
            load_kv(c, b, g, Skv, kd, vd);
            for (int64_t h = g * group; h < (g + 1) * group; h++)
                for (int64_t i = 0; i < Sq; i++) {
                    const int64_t r = (b * a->heads_q + h) * Sq + i; /* packed [B,Hq,Sq] row */
                    const int64_t qi = at(&c->x, b, h, i);
                    for (int64_t d = 0; d < D; d++) qd[d] = load(&c->x, qi + d);
                    row(c, qd, kd, vd, trr_reference_attention_visible(c, i), s, o + r * D, lse ? lse + r : &unused,
                        logit_scale ? logit_scale + r : NULL);
                }
        }
    free(buf);
    return TRR_OK;
}
