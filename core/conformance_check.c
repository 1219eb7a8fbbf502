/* Verdicts for one output (conformance_check.h; the rules are listed in conformance.h). */
#include "conformance_check.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How an op's output is judged. */
typedef enum check_mode {
    MODE_BITEXACT, /* copy, add f32 */
    MODE_MAX_REL,  /* gelu f32, softmax f32 (plus max abs), rgb_to_grey f32 */
    MODE_ROW_REL,  /* row_sum */
    MODE_FROB,     /* matmul with f32 output */
    MODE_F16,      /* any other f16 output */
    MODE_GREY_U8   /* rgb_to_grey u8 */
} check_mode;

#define F16_MIN_NORMAL 6.103515625e-05 /* 2^-14 */

/* One check's worst value and where it occurred. */
typedef struct worst {
    const char *metric;
    double value, bound;
    int64_t r, c;
    double got, want;
    int seen;
} worst;

static void note(worst *w, double value, int64_t r, int64_t c, double got, double want) {
    if (!w->seen || value > w->value) {
        w->value = value;
        w->r = r, w->c = c, w->got = got, w->want = want;
        w->seen = 1;
    }
}

static double ratio_of(const worst *w) {
    if (!w->seen) return 0.0;
    return w->bound > 0 ? w->value / w->bound : w->value;
}

static int fails(const worst *w) { return w->seen && w->value > w->bound; }

double trr_conf_load(const void *base, trr_dtype dtype, int64_t index) {
    switch (dtype) {
    case TRR_F32: {
        float f;
        memcpy(&f, (const uint8_t *)base + index * 4, 4);
        return f;
    }
    case TRR_F16: {
        uint16_t h;
        float f = 0;
        memcpy(&h, (const uint8_t *)base + index * 2, 2);
        trr_f16_to_f32(&h, &f, 1);
        return f;
    }
    case TRR_U8: return ((const uint8_t *)base)[index];
    default: return NAN;
    }
}

static check_mode mode_of(const trr_case *c) {
    if (c->op == TRR_OP_COPY || (c->op == TRR_OP_ADD && c->out_dtype == TRR_F32)) return MODE_BITEXACT;
    if (c->op == TRR_OP_ROW_SUM) return MODE_ROW_REL;
    if (c->op == TRR_OP_RGB_TO_GREY && c->out_dtype == TRR_U8) return MODE_GREY_U8;
    if (c->out_dtype == TRR_F16) return MODE_F16;
    if (c->op == TRR_OP_MATMUL) return MODE_FROB;
    return MODE_MAX_REL;
}

/* Distance in representable values between two floats of the output dtype (0 when the bits are equal). */
static double ulp_distance(trr_dtype dt, double got, double want) {
    if (dt == TRR_U8) return fabs(got - want);
    if (dt == TRR_F16) {
        float g = (float)got, w = (float)want;
        uint16_t hg, hw;
        trr_f32_to_f16(&g, &hg, 1);
        trr_f32_to_f16(&w, &hw, 1);
        int64_t og = (hg & 0x8000u) ? -(int64_t)(hg & 0x7FFFu) : (int64_t)hg;
        int64_t ow = (hw & 0x8000u) ? -(int64_t)(hw & 0x7FFFu) : (int64_t)hw;
        return (double)llabs(og - ow);
    }
    float g = (float)got, w = (float)want;
    uint32_t bg, bw;
    memcpy(&bg, &g, 4);
    memcpy(&bw, &w, 4);
    int64_t og = (bg & 0x80000000u) ? -(int64_t)(bg & 0x7FFFFFFFu) : (int64_t)bg;
    int64_t ow = (bw & 0x80000000u) ? -(int64_t)(bw & 0x7FFFFFFFu) : (int64_t)bw;
    return (double)llabs(og - ow);
}

/* SPEC.md's grey value computed in f32 in the SPEC's order, each step rounded to f32 (volatile keeps the
 * compiler from contracting to an FMA, which would change the last bit). */
static float grey_f32(double r, double g, double b) {
    volatile float v = 0.2989f * (float)r;
    v = v + 0.5870f * (float)g;
    v = v + 0.1140f * (float)b;
    return v;
}

static double clamp_u8(double v) { return v < 0 ? 0 : v > 255 ? 255 : v; }

static int is_poison(trr_dtype dt, const uint8_t *buf, int64_t idx) {
    if (dt == TRR_F32) {
        uint32_t b;
        memcpy(&b, buf + idx * 4, 4);
        return b == TRR_CONF_POISON_F32;
    }
    if (dt == TRR_F16) {
        uint16_t b;
        memcpy(&b, buf + idx * 2, 2);
        return b == TRR_CONF_POISON_F16;
    }
    return 0;
}

static void append(char *msg, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void append(char *msg, size_t cap, const char *fmt, ...) {
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

/* Marks the output view's bytes; any other byte must come back as it was written. */
static trr_status guard_check(const trr_conf_check_input *in, int64_t rows, int64_t cols, size_t esz,
                              trr_conf_result *res, int *out_bad) {
    const trr_operand *z = &in->call->z;
    uint8_t *mask = calloc(in->bytes ? in->bytes : 1, 1);
    if (!mask) return TRR_ERR_OUT_OF_MEMORY;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++) {
            int64_t idx = z->offset + r * z->stride0 + c;
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
        append(res->message, sizeof res->message, "%lld guard bytes around the output changed (first at byte %lld, "
               "view starts at byte %lld)", (long long)bad, (long long)first, (long long)(z->offset * (int64_t)esz));
    }
    *out_bad = bad != 0;
    return TRR_OK;
}

trr_status trr_conf_check(const trr_conf_check_input *in, trr_conf_result *res) {
    const trr_case *tc = in->tcase;
    const trr_call *call = in->call;
    const trr_dtype odt = tc->out_dtype;
    const check_mode mode = mode_of(tc);
    const int64_t rows = call->rows;
    const int64_t cols = tc->op == TRR_OP_ROW_SUM ? 1 : call->cols;
    size_t esz = 0;
    trr_status st = trr_dtype_size(odt, &esz);
    if (st != TRR_OK) return st;

    res->message[0] = '\0';
    int guard_bad = 0;
    st = guard_check(in, rows, cols, esz, res, &guard_bad);
    if (st != TRR_OK) return st;

    /* the rms of the reference sets the f16 relative-error floor, so it is needed before the element pass */
    double ref2 = 0;
    for (int64_t i = 0; i < rows * cols; i++) ref2 += in->ref[i] * in->ref[i];
    const double rms = rows * cols > 0 ? sqrt(ref2 / (double)(rows * cols)) : 0;
    const double f16_floor = fmax(F16_MIN_NORMAL, rms / 1024.0);

    worst w1 = {0}, w2 = {0};
    switch (mode) {
    case MODE_BITEXACT: w1 = (worst){.metric = "ulp", .bound = 0}; break;
    case MODE_GREY_U8: w1 = (worst){.metric = "u8", .bound = 0}; break;
    case MODE_MAX_REL:
        w1 = (worst){.metric = "max_rel", .bound = 1e-5};
        if (tc->op == TRR_OP_SOFTMAX) w2 = (worst){.metric = "max_abs", .bound = 1e-6};
        break;
    case MODE_ROW_REL: w1 = (worst){.metric = "row_rel", .bound = 1e-6}; break;
    case MODE_FROB: w1 = (worst){.metric = "frobenius", .bound = 1e-5}; break;
    case MODE_F16:
        w1 = (worst){.metric = "frobenius", .bound = 2e-3};
        w2 = (worst){.metric = "max_rel", .bound = 1e-2};
        break;
    }

    int64_t unwritten = 0, nonfinite = 0;
    int64_t first_unwritten[2] = {-1, -1}, first_nonfinite[2] = {-1, -1};
    double nonfinite_got = 0;
    double err2 = 0;
    const trr_operand *z = &call->z;
    const trr_operand *x = &call->x;
    for (int64_t r = 0; r < rows; r++) {
        double row_abs = 0;
        if (mode == MODE_ROW_REL)
            for (int64_t c = 0; c < call->cols; c++) row_abs += fabs(trr_conf_load(x->mem, x->dtype, x->offset + r * x->stride0 + c));
        for (int64_t c = 0; c < cols; c++) {
            const int64_t idx = z->offset + r * z->stride0 + c;
            const double want = in->ref[r * cols + c];
            const double got = trr_conf_load(in->after, odt, idx);
            int unw = is_poison(odt, in->after, idx);
            if (in->after2 && in->after2[idx * (int64_t)esz] != in->after[idx * (int64_t)esz]) unw = 1;
            if (unw) {
                if (unwritten++ == 0) first_unwritten[0] = r, first_unwritten[1] = c;
                continue;
            }
            if (!isfinite(got) && isfinite(want)) {
                if (nonfinite++ == 0) first_nonfinite[0] = r, first_nonfinite[1] = c, nonfinite_got = got;
                continue;
            }
            const double err = fabs(got - want);
            switch (mode) {
            case MODE_BITEXACT: note(&w1, ulp_distance(odt, got, want), r, c, got, want); break;
            case MODE_GREY_U8: {
                const int64_t p = x->offset + r * x->stride1 + c;
                const double R = trr_conf_load(x->mem, TRR_U8, p), G = trr_conf_load(x->mem, TRR_U8, p + x->stride0),
                             B = trr_conf_load(x->mem, TRR_U8, p + 2 * x->stride0);
                const double expect = clamp_u8(roundf(grey_f32(R, G, B)));
                const double exact = 0.2989 * R + 0.5870 * G + 0.1140 * B;
                const double lo = floor(exact);
                int ok = got == expect;
                if (fabs(exact - lo - 0.5) <= 1e-4) ok = ok || got == clamp_u8(lo) || got == clamp_u8(lo + 1);
                note(&w1, ok ? 0 : fabs(got - expect), r, c, got, expect);
                break;
            }
            case MODE_MAX_REL:
                note(&w1, err / fmax(fabs(want), FLT_MIN), r, c, got, want);
                if (w2.metric) note(&w2, err, r, c, got, want);
                break;
            case MODE_ROW_REL: note(&w1, err / fmax(row_abs, FLT_MIN), r, c, got, want); break;
            case MODE_FROB: err2 += err * err; break;
            case MODE_F16:
                err2 += err * err;
                note(&w2, err / fmax(fabs(want), f16_floor), r, c, got, want);
                break;
            }
        }
    }
    if (mode == MODE_FROB || mode == MODE_F16) {
        w1.value = sqrt(err2) / fmax(sqrt(ref2), FLT_MIN);
        w1.seen = 1;
    }

    int failed = guard_bad;
    if (unwritten) {
        failed = 1;
        append(res->message, sizeof res->message, "%lld of %lld output elements not written (first at %lld,%lld)",
               (long long)unwritten, (long long)(rows * cols), (long long)first_unwritten[0],
               (long long)first_unwritten[1]);
    }
    if (nonfinite) {
        failed = 1;
        append(res->message, sizeof res->message, "%lld non-finite outputs where the reference is finite "
               "(first at %lld,%lld: %g)", (long long)nonfinite, (long long)first_nonfinite[0],
               (long long)first_nonfinite[1], nonfinite_got);
    }
    const worst *ws[2] = {&w1, &w2};
    const worst *top = &w1;
    for (int i = 0; i < 2; i++) {
        const worst *w = ws[i];
        if (!w->metric) continue;
        if (ratio_of(w) > ratio_of(top)) top = w;
        if (fails(w)) {
            failed = 1;
            if (w == &w1 && (mode == MODE_FROB || mode == MODE_F16))
                append(res->message, sizeof res->message, "%s %.3g > %.3g", w->metric, w->value, w->bound);
            else
                append(res->message, sizeof res->message, "%s %.3g > %.3g at (%lld,%lld): got %.9g, want %.9g",
                       w->metric, w->value, w->bound, (long long)w->r, (long long)w->c, w->got, w->want);
        }
    }
    res->metric = top->metric ? top->metric : "";
    res->error = top->value;
    res->bound = top->bound;
    res->ratio = ratio_of(top);
    if (unwritten || nonfinite || guard_bad) res->ratio = INFINITY;
    res->outcome = failed ? TRR_CONF_FAIL : TRR_CONF_PASS;
    return TRR_OK;
}
