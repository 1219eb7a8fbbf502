/* Verdicts for one output (conformance_check.h; the rules are listed in conformance.h). */
#include "conformance_check.h"

#include "half.h"
#include "op_table.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void trr_conf_note(trr_conf_worst *w, double value, int64_t r, int64_t c, double got, double want) {
    if (!w->seen || value > w->value) {
        w->value = value;
        w->r = r, w->c = c, w->got = got, w->want = want;
        w->seen = 1;
    }
}

double trr_conf_ratio(const trr_conf_worst *w) {
    if (!w->seen) return 0.0;
    return w->bound > 0 ? w->value / w->bound : w->value;
}

int trr_conf_fails(const trr_conf_worst *w) { return w->seen && w->value > w->bound; }

double trr_conf_load(const void *base, trr_dtype dtype, int64_t index) {
    switch (dtype) {
    case TRR_F32: {
        float f;
        memcpy(&f, (const uint8_t *)base + index * 4, 4);
        return f;
    }
    case TRR_F16:
    case TRR_BF16:
    case TRR_U8:
    case TRR_F8E4M3:
    case TRR_F8E5M2: return trr_dtype_load_f32(base, dtype, index);
    default: return NAN;
    }
}

int trr_conf_judge(const trr_conf_worst *w1, const trr_conf_worst *w2, trr_conf_mode mode, long long checked,
                   char *msg, size_t cap, const trr_conf_worst **out_top) {
    const trr_conf_worst *ws[2] = {w1, w2};
    const trr_conf_worst *top = w1;
    int failed = 0;
    for (int i = 0; i < 2; i++) {
        const trr_conf_worst *w = ws[i];
        if (!w->metric) continue;
        if (trr_conf_ratio(w) > trr_conf_ratio(top)) top = w;
        if (!trr_conf_fails(w)) continue;
        failed = 1;
        if (w == w1 && trr_conf_mode_frobenius(mode)) {
            if (checked >= 0)
                trr_conf_append(msg, cap, "%s %.3g > %.3g over %lld checked elements", w->metric, w->value,
                                w->bound, checked);
            else
                trr_conf_append(msg, cap, "%s %.3g > %.3g", w->metric, w->value, w->bound);
        } else {
            trr_conf_append(msg, cap, "%s %.3g > %.3g at (%lld,%lld): got %.9g, want %.9g", w->metric, w->value,
                            w->bound, (long long)w->r, (long long)w->c, w->got, w->want);
        }
    }
    *out_top = top;
    return failed;
}

int trr_conf_mode_frobenius(trr_conf_mode mode) {
    return mode == TRR_CONF_MODE_FROB || mode == TRR_CONF_MODE_FROB_F8 || mode == TRR_CONF_MODE_F16 ||
           mode == TRR_CONF_MODE_BF16;
}

trr_conf_mode trr_conf_mode_of(const trr_case *c) {
    const trr_op_desc *d = trr_op_desc_get(c->op);
    if (d->exact == 2 || (d->exact == 1 && c->out_dtype == TRR_F32)) return TRR_CONF_MODE_BITEXACT;
    if (d->shape == TRR_SHAPE_ROW_REDUCE) return TRR_CONF_MODE_ROW_REL;
    if (d->shape == TRR_SHAPE_PLANES && c->out_dtype == TRR_U8) return TRR_CONF_MODE_GREY_U8;
    if (c->out_dtype == TRR_F16) return TRR_CONF_MODE_F16;
    if (c->out_dtype == TRR_BF16) return TRR_CONF_MODE_BF16;
    if (d->shape == TRR_SHAPE_MATMUL) return trr_dtype_is_f8(c->in_dtype) ? TRR_CONF_MODE_FROB_F8 : TRR_CONF_MODE_FROB;
    if (d->shape == TRR_SHAPE_ROW_NORM) return TRR_CONF_MODE_NORM;
    return TRR_CONF_MODE_MAX_REL;
}

/* Sign-magnitude bits onto a line where neighbouring representable values are one apart. */
static int64_t ordered(uint32_t bits, uint32_t sign) {
    return (bits & sign) ? -(int64_t)(bits & (sign - 1)) : (int64_t)bits;
}

double trr_conf_ulp_distance(trr_dtype dt, double got, double want) {
    if (dt == TRR_U8) return fabs(got - want);
    float g = (float)got, w = (float)want;
    if (dt == TRR_F16) {
        uint16_t hg, hw;
        trr_f32_to_f16(&g, &hg, 1);
        trr_f32_to_f16(&w, &hw, 1);
        return (double)llabs(ordered(hg, 0x8000u) - ordered(hw, 0x8000u));
    }
    if (dt == TRR_BF16) {
        uint16_t hg = trr_bf16_from_float(g), hw = trr_bf16_from_float(w);
        return (double)llabs(ordered(hg, 0x8000u) - ordered(hw, 0x8000u));
    }
    if (trr_dtype_is_f8(dt)) {
        uint8_t bg = 0, bw = 0;
        trr_dtype_store_f32(&bg, dt, 0, g);
        trr_dtype_store_f32(&bw, dt, 0, w);
        return (double)llabs(ordered(bg, 0x80u) - ordered(bw, 0x80u));
    }
    uint32_t bg, bw;
    memcpy(&bg, &g, 4);
    memcpy(&bw, &w, 4);
    return (double)llabs(ordered(bg, 0x80000000u) - ordered(bw, 0x80000000u));
}

/* volatile keeps the compiler from contracting to an FMA, which would change the last bit */
float trr_conf_grey_f32(double r, double g, double b) {
    volatile float v = 0.2989f * (float)r;
    v = v + 0.5870f * (float)g;
    v = v + 0.1140f * (float)b;
    return v;
}

double trr_conf_clamp_u8(double v) { return v < 0 ? 0 : v > 255 ? 255 : v; }

int trr_conf_grey_u8_ok(double r, double g, double b, double got, double *out_expect) {
    const double expect = trr_conf_clamp_u8(roundf(trr_conf_grey_f32(r, g, b)));
    const double exact = 0.2989 * r + 0.5870 * g + 0.1140 * b;
    const double lo = floor(exact);
    *out_expect = expect;
    if (got == expect) return 1;
    return fabs(exact - lo - 0.5) <= 1e-4 && (got == trr_conf_clamp_u8(lo) || got == trr_conf_clamp_u8(lo + 1));
}

int trr_conf_judge_element(trr_conf_mode mode, trr_dtype odt, double got, double want, const double rgb[3],
                           double row_abs, int64_t r, int64_t c, trr_conf_worst *w1, trr_conf_worst *w2) {
    const double err = fabs(got - want);
    switch (mode) {
    case TRR_CONF_MODE_BITEXACT: trr_conf_note(w1, trr_conf_ulp_distance(odt, got, want), r, c, got, want); return 1;
    case TRR_CONF_MODE_GREY_U8: {
        double expect;
        const int ok = trr_conf_grey_u8_ok(rgb[0], rgb[1], rgb[2], got, &expect);
        trr_conf_note(w1, ok ? 0 : fabs(got - expect), r, c, got, expect);
        return 1;
    }
    case TRR_CONF_MODE_MAX_REL:
        trr_conf_note(w1, err / fmax(fabs(want), FLT_MIN), r, c, got, want);
        if (w2->metric) trr_conf_note(w2, err, r, c, got, want);
        return 1;
    case TRR_CONF_MODE_ROW_REL: trr_conf_note(w1, err / fmax(row_abs, FLT_MIN), r, c, got, want); return 1;
    case TRR_CONF_MODE_NORM: trr_conf_note(w1, err / fmax(fabs(want) + row_abs, FLT_MIN), r, c, got, want); return 1;
    default: return 0;
    }
}

void trr_conf_worst_init(trr_conf_mode mode, trr_op op, trr_conf_worst *w1, trr_conf_worst *w2) {
    *w1 = (trr_conf_worst){0};
    *w2 = (trr_conf_worst){0};
    switch (mode) {
    case TRR_CONF_MODE_BITEXACT: w1->metric = "ulp", w1->bound = 0; break;
    case TRR_CONF_MODE_GREY_U8: w1->metric = "u8", w1->bound = 0; break;
    case TRR_CONF_MODE_MAX_REL:
        w1->metric = "max_rel", w1->bound = 1e-5;
        if (trr_op_desc_get(op)->shape == TRR_SHAPE_ROWS) w2->metric = "max_abs", w2->bound = 1e-6;
        break;
    case TRR_CONF_MODE_ROW_REL: w1->metric = "row_rel", w1->bound = 1e-6; break;
    case TRR_CONF_MODE_NORM: w1->metric = "norm_rel", w1->bound = 1e-5; break;
    case TRR_CONF_MODE_FROB: w1->metric = "frobenius", w1->bound = 1e-5; break;
    /* docs/ops.md, Correctness bounds: 8-bit float products */
    case TRR_CONF_MODE_FROB_F8: w1->metric = "frobenius", w1->bound = 1e-3; break;
    case TRR_CONF_MODE_F16:
        w1->metric = "frobenius", w1->bound = 2e-3;
        w2->metric = "max_rel", w2->bound = 1e-2;
        break;
    case TRR_CONF_MODE_BF16:
        w1->metric = "frobenius", w1->bound = 8e-3;
        w2->metric = "max_rel", w2->bound = 4e-2;
        break;
    }
}

/* 1 when row r of x holds one value throughout (a row of one element included). */
static int constant_row(const trr_operand *x, int64_t r, int64_t n) {
    const int64_t base = x->offset + r * x->stride0;
    const double first = trr_conf_load(x->mem, x->dtype, base);
    for (int64_t c = 1; c < n; c++)
        if (trr_conf_load(x->mem, x->dtype, base + c) != first) return 0;
    return 1;
}

double trr_conf_norm_scale(const trr_call *call, int64_t c) {
    /* the per-column vectors' magnitudes: the weight w, and a bias (layer_norm's b) */
    const trr_op_desc *d = trr_op_desc_get(call->op);
    const trr_operand *os[TRR_SLOTS] = {&call->x, &call->y, &call->z, &call->u, &call->w};
    double s = 0.0;
    for (int v = 0; v < TRR_SLOTS; v++)
        if (d->operand[v].name && d->operand[v].vector)
            s += fabs(trr_conf_load(os[v]->mem, os[v]->dtype, os[v]->offset + c * os[v]->stride0));
    return s;
}

static int is_poison(trr_dtype dt, const uint8_t *buf, int64_t idx) {
    if (dt == TRR_F32) {
        uint32_t b;
        memcpy(&b, buf + idx * 4, 4);
        return b == TRR_CONF_POISON_F32;
    }
    if (dt == TRR_F16 || dt == TRR_BF16) {
        uint16_t b;
        memcpy(&b, buf + idx * 2, 2);
        return b == trr_conf_poison(dt);
    }
    return 0;
}

void trr_conf_append(char *msg, size_t cap, const char *fmt, ...) {
    size_t len = strlen(msg);
    if (len + 1 >= cap) return;
    if (len > 0 && len + 3 < cap) {
        strcat(msg, "; ");
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + len, cap - len, fmt, ap);
    va_end(ap);
}

/* Element (r, c) of the output, where r counts rows batch after batch (a batched matmul's C is batch·M rows of
 * the reference; mrows = M): batch r / M at the batch stride, then row r % M. */
static int64_t out_index(const trr_operand *z, int64_t mrows, int64_t r, int64_t c) {
    return z->offset + (r / mrows) * z->batch_stride + (r % mrows) * z->stride0 + c;
}

/* Marks the output view's bytes; any other byte must come back as it was written. */
static trr_status guard_check(const trr_conf_check_input *in, int64_t mrows, int64_t rows, int64_t cols, size_t esz,
                              trr_conf_result *res, int *out_bad) {
    const trr_operand *z = &in->call->z;
    uint8_t *mask = calloc(in->bytes ? in->bytes : 1, 1);
    if (!mask) return trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "conformance check: out of host memory for a %zu-byte mask", in->bytes);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++) {
            int64_t idx = out_index(z, mrows, r, c);
            size_t at = (size_t)idx * esz;
            if (idx < 0 || at + esz > in->bytes) {
                free(mask);
                snprintf(res->message, sizeof res->message, "engine: output element (%lld,%lld) outside buffer",
                         (long long)r, (long long)c);
                return TRR_ERR_INTERNAL;
            }
            memset(mask + at, 1, esz);
        }
    }
    int64_t bad = 0, first = -1;
    for (size_t b = 0; b < in->bytes; b++) {
        int changed = in->after[b] != in->before[b] || (in->after2 && in->after2[b] != in->before2[b]);
        if (!mask[b] && changed) {
            if (first < 0) first = (int64_t)b;
            bad++;
        }
    }
    free(mask);
    if (bad) {
        trr_conf_append(res->message, sizeof res->message,
                        "%lld guard bytes around the output changed (first at byte %lld, view starts at byte %lld)",
                        (long long)bad, (long long)first, (long long)(z->offset * (int64_t)esz));
    }
    *out_bad = bad != 0;
    return TRR_OK;
}

double trr_conf_f16_floor(double rms, int64_t k) {
    const double depth = (double)k / 4096.0;
    return fmax(TRR_CONF_F16_MIN_NORMAL, rms / 1024.0 * (depth > 1.0 ? pow(depth, 1.5) : 1.0));
}

double trr_conf_bf16_floor(double rms, int64_t k) {
    const double depth = (double)k / 4096.0;
    return fmax(TRR_CONF_BF16_MIN_NORMAL, rms / 128.0 * (depth > 1.0 ? pow(depth, 1.5) : 1.0));
}

double trr_conf_half_floor(trr_dtype dt, double rms, int64_t k) {
    return dt == TRR_BF16 ? trr_conf_bf16_floor(rms, k) : trr_conf_f16_floor(rms, k);
}

double trr_conf_product_floor(trr_dtype out, trr_dtype in, double rms, int64_t k, double rel_bound) {
    const double half = trr_conf_half_floor(out, rms, k);
    return trr_dtype_is_f8(in) ? fmax(half, TRR_CONF_F8_SUM_ERROR * rms / rel_bound) : half;
}

uint32_t trr_conf_poison(trr_dtype dt) {
    switch (dt) {
    case TRR_U8:
    case TRR_F8E4M3:
    case TRR_F8E5M2: return TRR_CONF_POISON_U8_A;
    case TRR_F16: return TRR_CONF_POISON_F16;
    case TRR_BF16: return TRR_CONF_POISON_BF16;
    default: return TRR_CONF_POISON_F32;
    }
}

trr_status trr_conf_check(const trr_conf_check_input *in, trr_conf_result *res) {
    const trr_case *tc = in->tcase;
    const trr_call *call = in->call;
    const trr_dtype odt = tc->out_dtype;
    const trr_conf_mode mode = trr_conf_mode_of(tc);
    /* a batched matmul's output is checked batch after batch: rows counts every batch's rows, mrows one's */
    const int64_t mrows = call->rows;
    const int64_t rows = mrows * (call->batch > 1 ? call->batch : 1);
    const trr_op_desc *desc = trr_op_desc_get(tc->op);
    const int64_t cols = desc->shape == TRR_SHAPE_ROW_REDUCE ? 1 : call->cols;
    /* docs/ops.md's exact values: softmax's masked entries (the rows rule), a row norm's bias on a constant row */
    const int rows_rule = desc->shape == TRR_SHAPE_ROWS;
    const int bias = desc->shape == TRR_SHAPE_ROW_NORM && !desc->user && desc->operand[TRR_SLOT_U].name != NULL;
    size_t esz = 0;
    trr_status st = trr_dtype_size(odt, &esz);
    if (st != TRR_OK) return st;

    res->message[0] = '\0';
    int guard_bad = 0;
    st = guard_check(in, mrows, rows, cols, esz, res, &guard_bad);
    if (st != TRR_OK) return st;

    /* the rms of the reference sets the f16 relative-error floor, so it is needed before the element pass */
    double ref2 = 0;
    for (int64_t i = 0; i < rows * cols; i++)
        if (!isnan(in->ref[i])) ref2 += in->ref[i] * in->ref[i];
    const double rms = rows * cols > 0 ? sqrt(ref2 / (double)(rows * cols)) : 0;
    int64_t dims[3];
    trr_case_dims(tc, dims);
    trr_conf_worst w1, w2;
    trr_conf_worst_init(mode, tc->op, &w1, &w2);
    const double f16_floor = trr_conf_product_floor(odt, tc->in_dtype, rms, dims[2], w2.bound);

    int64_t unwritten = 0, nonfinite = 0, special = 0;
    int64_t first_unwritten[2] = {-1, -1}, first_nonfinite[2] = {-1, -1}, first_special[2] = {-1, -1};
    double nonfinite_got = 0, special_got = 0, special_want = 0;
    double err2 = 0;
    const trr_operand *z = &call->z;
    const trr_operand *x = &call->x;
    for (int64_t r = 0; r < rows; r++) {
        double row_abs = 0;
        if (mode == TRR_CONF_MODE_ROW_REL)
            for (int64_t c = 0; c < call->cols; c++) row_abs += fabs(trr_conf_load(x->mem, x->dtype, x->offset + r * x->stride0 + c));
        /* layer_norm of a constant row (N = 1 included) is exactly b, whatever the bound (docs/ops.md, Special
         * values): the reference gives b there, or NaN with eps = 0 */
        const int exact_b = bias && constant_row(x, r, call->cols);
        for (int64_t c = 0; c < cols; c++) {
            const int64_t idx = out_index(z, mrows, r, c);
            const double want = in->ref[r * cols + c];
            const double got = trr_conf_load(in->after, odt, idx);
            int unw = is_poison(odt, in->after, idx);
            if (in->after2 && in->after2[idx * (int64_t)esz] != in->after[idx * (int64_t)esz]) unw = 1;
            if (unw) {
                if (unwritten++ == 0) first_unwritten[0] = r, first_unwritten[1] = c;
                continue;
            }
            /* Where the reference is NaN (a softmax row masked everywhere or holding a NaN) the output must be
             * NaN; where softmax's reference is exactly 0 (a masked entry) the output must be exactly 0. */
            const int want_nan = isnan(want), masked = rows_rule && want == 0.0;
            if (want_nan || masked || exact_b) {
                if (want_nan ? !isnan(got) : got != want) {
                    if (special++ == 0)
                        first_special[0] = r, first_special[1] = c, special_got = got, special_want = want;
                }
                continue;
            }
            if (!isfinite(got) && isfinite(want)) {
                if (nonfinite++ == 0) first_nonfinite[0] = r, first_nonfinite[1] = c, nonfinite_got = got;
                continue;
            }
            double rgb[3] = {0, 0, 0};
            if (mode == TRR_CONF_MODE_GREY_U8) {
                const int64_t p = x->offset + r * x->stride1 + c;
                for (int ch = 0; ch < 3; ch++) rgb[ch] = trr_conf_load(x->mem, TRR_U8, p + ch * x->stride0);
            }
            const double scale = mode == TRR_CONF_MODE_NORM ? trr_conf_norm_scale(call, c) : row_abs;
            if (trr_conf_judge_element(mode, odt, got, want, rgb, scale, r, c, &w1, &w2)) continue;
            /* Frobenius and f16: judged over the whole output below; f16 also bounds each element */
            const double err = fabs(got - want);
            err2 += err * err;
            if (mode == TRR_CONF_MODE_F16 || mode == TRR_CONF_MODE_BF16) trr_conf_note(&w2, err / fmax(fabs(want), f16_floor), r, c, got, want);
        }
        /* the Frobenius bound holds per matrix: each batch is judged on its own and the worst one reported. A
         * half output is judged against a norm of at least its smallest normal per element, as each element is
         * (f16_floor): below it the format holds only absolute steps (f16: 2^-24), so a correctly rounded result
         * of a product that small (a 1x1x1 f16 matmul of two small inputs) would fail a relative bound */
        if (trr_conf_mode_frobenius(mode) && (r + 1) % mrows == 0) {
            double bref2 = 0;
            for (int64_t i = (r + 1 - mrows) * cols; i < (r + 1) * cols; i++)
                if (!isnan(in->ref[i])) bref2 += in->ref[i] * in->ref[i];
            const double min_normal = mode == TRR_CONF_MODE_F16    ? TRR_CONF_F16_MIN_NORMAL
                                      : mode == TRR_CONF_MODE_BF16 ? TRR_CONF_BF16_MIN_NORMAL
                                                                   : FLT_MIN;
            const double frob = sqrt(err2) / fmax(sqrt(bref2), min_normal * sqrt((double)(mrows * cols)));
            if (!w1.seen || frob > w1.value) w1.value = frob;
            w1.seen = 1;
            err2 = 0;
        }
    }

    int failed = guard_bad;
    if (unwritten) {
        failed = 1;
        trr_conf_append(res->message, sizeof res->message,
                        "%lld of %lld output elements not written (first at %lld,%lld)", (long long)unwritten,
                        (long long)(rows * cols), (long long)first_unwritten[0], (long long)first_unwritten[1]);
    }
    if (nonfinite) {
        failed = 1;
        trr_conf_append(res->message, sizeof res->message,
                        "%lld non-finite outputs where the reference is finite (first at %lld,%lld: %g)",
                        (long long)nonfinite, (long long)first_nonfinite[0], (long long)first_nonfinite[1],
                        nonfinite_got);
    }
    if (special) {
        failed = 1;
        trr_conf_append(res->message, sizeof res->message,
                        "%lld outputs differ where the reference is NaN, a masked 0 or a constant row's b (first "
                        "at %lld,%lld: got %.9g, want %.9g)",
                        (long long)special, (long long)first_special[0], (long long)first_special[1], special_got,
                        special_want);
    }
    const trr_conf_worst *top = NULL;
    failed |= trr_conf_judge(&w1, &w2, mode, -1, res->message, sizeof res->message, &top);
    res->metric = top->metric ? top->metric : "";
    res->error = top->value;
    res->bound = top->bound;
    res->ratio = trr_conf_ratio(top);
    if (unwritten || nonfinite || special || guard_bad) res->ratio = INFINITY;
    res->outcome = failed ? TRR_CONF_FAIL : TRR_CONF_PASS;
    return TRR_OK;
}
