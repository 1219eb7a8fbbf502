/* The check before timing: the output of one run against the float64 reference, with docs/ops.md's bounds as
 * harness/conformance.h defines them. Large outputs are checked at sampled elements (or whole sampled rows for
 * softmax), each computed by trr_reference_run on the call restricted to that element or row: the float64
 * reference of a whole 8192^3 matmul would take hours on the host, one element takes K multiply-adds. */
#include "bench.h"

#include "op_table.h"

#include "conformance_check.h"
#include "random.h"
#include "reference.h"
#include "validate.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The elements (or, for softmax, rows) to check: all when few, else a fixed-seed sample that always holds the
 * first and the last (edges are where tiling goes wrong). Returns how many were written into idx. */
static int64_t pick(int64_t total, int64_t want, uint64_t seed, int64_t *idx) {
    if (total <= want) {
        for (int64_t i = 0; i < total; i++) idx[i] = i;
        return total;
    }
    idx[0] = 0;
    idx[1] = total - 1;
    for (int64_t i = 2; i < want; i++) idx[i] = (int64_t)(trr_rng_next(&seed) % (uint64_t)total);
    return want;
}

/* How many units (elements, or softmax rows) the reference budget pays for. */
static int64_t units_wanted(const trr_case *c, const trr_call *call, int by_row) {
    const trr_op_shape shape = trr_op_desc_get(c->op)->shape;
    const int64_t cost = shape == TRR_SHAPE_MATMUL ? call->k
                         : by_row || shape == TRR_SHAPE_ROW_REDUCE ? call->cols : 1;
    const int64_t floor_ = by_row ? TRR_BENCH_CHECK_ROWS : TRR_BENCH_CHECK_SAMPLES;
    const int64_t n = TRR_BENCH_CHECK_BUDGET / (cost > 0 ? cost : 1);
    return n > floor_ ? n : floor_;
}

/* Output row r of a batched matmul counts rows batch after batch: its batch, and its element index in z. */
static int64_t batch_of(const trr_call *call, int64_t r) { return call->rows > 0 ? r / call->rows : 0; }
static int64_t out_at(const trr_call *call, int64_t r, int64_t c) {
    const int64_t b = batch_of(call, r);
    return call->z.offset + b * call->z.batch_stride + (r - b * call->rows) * call->z.stride0 + c;
}

/* The call restricted to output row r (and column c unless whole_row): the same operands, moved offsets. */
static trr_call slice_call(const trr_call *call, int64_t r, int64_t c, int whole_row) {
    trr_call s = *call;
    s.rows = 1;
    s.batch = 1;
    if (!whole_row) s.cols = 1;
    switch (trr_op_desc_get(call->op)->shape) {
    case TRR_SHAPE_MATMUL: {
        const int64_t b = batch_of(call, r);
        r -= b * call->rows;
        s.x.offset += b * call->x.batch_stride;
        s.y.offset += b * call->y.batch_stride;
        s.x.offset += call->trans_a ? r : r * call->x.stride0;
        s.y.offset += call->trans_b ? c * call->y.stride0 : c;
        break;
    }
    case TRR_SHAPE_PLANES: s.x.offset += r * call->x.stride1 + c; break;
    case TRR_SHAPE_ROW_NORM: { /* every [M,N] input (a user row op's r too); the vectors stay */
        const trr_op_desc *d = trr_op_desc_get(call->op);
        trr_operand *ins[3] = {&s.x, &s.y, &s.u};
        const int slots[3] = {TRR_SLOT_X, TRR_SLOT_Y, TRR_SLOT_U};
        for (int i = 0; i < 3; i++)
            if (d->operand[slots[i]].name && !d->operand[slots[i]].vector) ins[i]->offset += r * ins[i]->stride0;
        break;
    }
    case TRR_SHAPE_ROWS:
    case TRR_SHAPE_ROW_REDUCE: s.x.offset += r * call->x.stride0; break;
    case TRR_SHAPE_ELEMENTWISE:
        s.x.offset += r * call->x.stride0 + c;
        s.y.offset += r * call->y.stride0 + c;
        break;
    case TRR_SHAPE_ATTENTION: break; /* checked whole, not by sampled rows */
    }
    return s;
}

/* Every output element: NaN is the poison (or an overflow) and Inf an overflow; the reference of every op on
 * these inputs is finite, so either fails. For u8, out and out2 were poisoned differently. */
static int64_t scan_unwritten(const trr_case *c, const trr_call *call, const void *out, const void *out2,
                              int64_t rows, int64_t cols, int64_t *first_r, int64_t *first_c) {
    int64_t bad = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++) {
            const int64_t at = out_at(call, r, j);
            int wrong;
            if (c->out_dtype == TRR_U8) wrong = out2 && ((const uint8_t *)out)[at] != ((const uint8_t *)out2)[at];
            else wrong = !isfinite(trr_conf_load(out, c->out_dtype, at));
            if (wrong && bad++ == 0) *first_r = r, *first_c = j;
        }
    return bad;
}

trr_status trr_bench_check_output(const trr_case *c, const trr_call *call, const void *out, const void *out2,
                                  uint64_t seed, trr_bench_check *res) {
    if (!c || !call || !out || !res) return TRR_ERR_INVALID_ARGUMENT;
    memset(res, 0, sizeof *res);
    const trr_conf_mode md = trr_conf_mode_of(c);
    const trr_dtype odt = c->out_dtype;
    const trr_op_shape shape = trr_op_desc_get(c->op)->shape;
    if (shape == TRR_SHAPE_ATTENTION) return trr_bench_check_attention(c, call, out, seed, res);
    /* a batched matmul's output is its batches' rows one after another (out_at) */
    const int64_t rows = call->rows * (call->batch > 1 ? call->batch : 1);
    const int64_t cols = shape == TRR_SHAPE_ROW_REDUCE ? 1 : call->cols;
    const trr_operand *x = &call->x;
    res->total = rows * cols;

    int64_t fr = 0, fc = 0;
    const int64_t unwritten = scan_unwritten(c, call, out, out2, rows, cols, &fr, &fc);
    if (unwritten) {
        trr_conf_append(res->message, sizeof res->message,
                        "%lld of %lld output elements not written or not finite (first at %lld,%lld)",
                        (long long)unwritten, (long long)res->total, (long long)fr, (long long)fc);
    }

    /* what to compare: whole rows for softmax (its error shows across a row) and the row norms (whose reference
     * needs the whole row), single elements otherwise */
    const int by_row = shape == TRR_SHAPE_ROWS || shape == TRR_SHAPE_ROW_NORM;
    const int64_t units = by_row ? rows : res->total;
    const int64_t want = units_wanted(c, call, by_row);
    int64_t *idx = malloc((size_t)(want < units ? want : units > 0 ? units : 1) * sizeof *idx);
    double *ref = malloc((size_t)(by_row ? cols : 1) * sizeof *ref);
    if (!ref || !idx) {
        free(ref), free(idx);
        return TRR_ERR_OUT_OF_MEMORY;
    }
    const int64_t n_pick = pick(units, want, seed, idx);

    trr_conf_worst w1, w2;
    trr_conf_worst_init(md, c->op, &w1, &w2);

    /* f16: the relative-error floor needs the rms of the reference (conformance.h), so collect first */
    double *got_s = NULL, *want_s = NULL;
    int64_t *rc_s = NULL;
    int64_t n_s = 0;
    if (md == TRR_CONF_MODE_F16 || md == TRR_CONF_MODE_BF16) {
        const size_t n_el = (size_t)n_pick * (size_t)(by_row ? cols : 1);
        got_s = malloc(n_el * sizeof *got_s);
        want_s = malloc(n_el * sizeof *want_s);
        rc_s = malloc(n_el * 2 * sizeof *rc_s);
        if (!got_s || !want_s || !rc_s) {
            free(got_s), free(want_s), free(rc_s), free(ref), free(idx);
            return TRR_ERR_OUT_OF_MEMORY;
        }
    }

    double err2 = 0, ref2 = 0;
    trr_status st = TRR_OK;
    for (int64_t s = 0; s < n_pick && st == TRR_OK; s++) {
        const int64_t r = by_row ? idx[s] : idx[s] / cols, c0 = by_row ? 0 : idx[s] % cols;
        const trr_call sc = slice_call(call, r, c0, by_row || shape == TRR_SHAPE_ROW_REDUCE);
        st = trr_reference_run(&sc, ref);
        if (st != TRR_OK) break;
        double row_abs = 0;
        if (md == TRR_CONF_MODE_ROW_REL)
            for (int64_t j = 0; j < call->cols; j++) row_abs += fabs(trr_conf_load(x->mem, x->dtype, sc.x.offset + j));
        for (int64_t j = 0; j < (by_row ? cols : 1); j++) {
            const int64_t cc = c0 + j;
            const double wv = ref[j];
            const double g = trr_conf_load(out, odt, out_at(call, r, cc));
            res->checked++;
            if (!isfinite(g)) continue; /* counted by the scan */
            double rgb[3] = {0, 0, 0};
            if (md == TRR_CONF_MODE_GREY_U8)
                for (int ch = 0; ch < 3; ch++) rgb[ch] = trr_conf_load(x->mem, TRR_U8, sc.x.offset + ch * x->stride0);
            const double scale = md == TRR_CONF_MODE_NORM ? trr_conf_norm_scale(call, cc) : row_abs;
            if (trr_conf_judge_element(md, odt, g, wv, rgb, scale, r, cc, &w1, &w2)) continue;
            /* Frobenius and f16: judged over the whole sample below; f16 elements are kept for their own bound */
            const double err = fabs(g - wv);
            err2 += err * err;
            ref2 += wv * wv;
            if (md == TRR_CONF_MODE_F16 || md == TRR_CONF_MODE_BF16) {
                got_s[n_s] = g, want_s[n_s] = wv, rc_s[2 * n_s] = r, rc_s[2 * n_s + 1] = cc;
                n_s++;
            }
        }
    }
    free(ref);
    free(idx);
    if (st != TRR_OK) {
        free(got_s), free(want_s), free(rc_s);
        return st;
    }
    if (md == TRR_CONF_MODE_F16 || md == TRR_CONF_MODE_BF16) {
        const double rms = n_s ? sqrt(ref2 / (double)n_s) : 0;
        int64_t dims[3];
        trr_case_dims(c, dims);
        const double floor_ = trr_conf_product_floor(odt, c->in_dtype, rms, dims[2], w2.bound);
        for (int64_t i = 0; i < n_s; i++)
            trr_conf_note(&w2, fabs(got_s[i] - want_s[i]) / fmax(fabs(want_s[i]), floor_), rc_s[2 * i],
                          rc_s[2 * i + 1], got_s[i], want_s[i]);
        free(got_s), free(want_s), free(rc_s);
    }
    if (trr_conf_mode_frobenius(md)) {
        w1.value = sqrt(err2) / fmax(sqrt(ref2), FLT_MIN);
        w1.seen = 1;
    }

    int failed = unwritten != 0;
    const trr_conf_worst *top = NULL;
    failed |= trr_conf_judge(&w1, &w2, md, (long long)res->checked, res->message, sizeof res->message, &top);
    res->metric = top->metric ? top->metric : "";
    res->error = top->value;
    res->bound = top->bound;
    res->ratio = unwritten ? INFINITY : trr_conf_ratio(top);
    return failed ? TRR_ERR_MISMATCH : TRR_OK;
}

/* Poisons the output (NaN for f32/f16: all-ones bytes), runs once, reads the whole output back. */
static trr_status run_poisoned(trr_context *ctx, const trr_bench_setup *s, uint8_t poison, void *out) {
    TRR_TRY(trr_buffer_fill(ctx, s->op[TRR_OUT].buf, 0, s->op[TRR_OUT].bytes, poison));
    TRR_TRY(trr_bench_setup_call(ctx, s));
    return trr_buffer_read(ctx, s->op[TRR_OUT].buf, 0, out, s->op[TRR_OUT].bytes);
}

trr_status trr_bench_check_case(trr_context *ctx, const trr_bench_setup *s, uint64_t seed, trr_bench_check *res) {
    const trr_case *c = &s->tcase;
    void *out = malloc(s->op[TRR_OUT].bytes ? s->op[TRR_OUT].bytes : 1), *out2 = NULL;
    if (!out) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "bench check: %zu bytes of host memory", s->op[TRR_OUT].bytes);
    trr_status st = run_poisoned(ctx, s, 0xFF, out);
    if (st == TRR_OK && c->out_dtype == TRR_U8) {
        /* any u8 value is a legal result: only a second run with another poison shows an unwritten one */
        out2 = malloc(s->op[TRR_OUT].bytes ? s->op[TRR_OUT].bytes : 1);
        st = out2 ? run_poisoned(ctx, s, 0x00, out2) : TRR_ERR_OUT_OF_MEMORY;
    }
    trr_call call;
    int empty = 0;
    if (st == TRR_OK) st = trr_case_call_build(ctx, c, s->t, 0, &call, &empty);
    if (st == TRR_OK && empty != TRR_CALL_NOTHING) {
        void *hosts[TRR_CASE_SLOTS];
        for (int i = 0; i < TRR_CASE_SLOTS; i++) hosts[i] = s->has[i] ? s->op[i].host : NULL;
        hosts[TRR_OUT] = out;
        trr_case_call_host(&call, hosts);
        st = trr_bench_check_output(c, &call, out, out2, seed, res);
        if (st == TRR_ERR_MISMATCH) trr_error(ctx, st, "check against the float64 reference: %s", res->message);
    }
    free(out);
    free(out2);
    return st;
}
