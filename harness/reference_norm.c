/*
 * The float64 reference of the row norms (docs/ops.md): rms_norm and layer_norm over each row of x [M,N], with
 * the weight w [N] (call->y) and layer_norm's bias b [N] (call->u) at their element strides, eps from
 * call->params[TRR_NORM_PARAM_EPS]. Kept apart from reference.c's other ops so each file stays small.
 *
 * What it returns, where the definition leaves a choice:
 *  - layer_norm subtracts a shift (the row's first element) from every element before summing, exactly as the
 *    kernels do: x - x0 is exact in double for f32 / f16 / bf16 inputs, so a constant row has x - mean exactly
 *    0 and gives exactly b (and N = 1 gives b), while the mean and variance are those of the row.
 *  - eps = 0 with a constant row (layer_norm) or an all-zero row (rms_norm) is 0/0: NaN across that row (w and
 *    b do not change it). These are the reference's values; docs/ops.md, Special values.
 */
#include "reference.h"
#include "half.h"
#include "op_table.h"

#include <math.h>

static double load(const trr_operand *o, int64_t idx) { return trr_dtype_load_f32(o->mem, o->dtype, idx); }

/* layer: layer_norm (the mean subtracted, the bias b added), else rms_norm */
static trr_status norm(const trr_call *c, double *out, int layer) {
    if (trr_op_desc_get(c->op)->shape != TRR_SHAPE_ROW_NORM)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "trr_reference_norm: op %d is not a row norm", (int)c->op);
    if (!c->x.mem || !c->y.mem || (layer && !c->u.mem))
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "trr_reference_norm: an input's host copy is NULL");
    const double eps = c->params[TRR_NORM_PARAM_EPS];
    const int64_t n = c->cols;
    for (int64_t r = 0; r < c->rows; r++) {
        const int64_t base = c->x.offset + r * c->x.stride0;
        double *y = out + r * n;
        if (layer) {
            const double shift = load(&c->x, base);
            double s = 0.0;
            for (int64_t j = 0; j < n; j++) {
                y[j] = load(&c->x, base + j) - shift; /* exact */
                s += y[j];
            }
            const double mean = s / (double)n;
            double v = 0.0;
            for (int64_t j = 0; j < n; j++) {
                y[j] -= mean;
                v += y[j] * y[j];
            }
            const double rstd = 1.0 / sqrt(v / (double)n + eps);
            for (int64_t j = 0; j < n; j++) {
                const double w = load(&c->y, c->y.offset + j * c->y.stride0);
                const double b = load(&c->u, c->u.offset + j * c->u.stride0);
                /* a zero deviation times an infinite rstd (eps = 0, constant row) is NaN, as 0/0 is */
                y[j] = y[j] * rstd * w + b;
            }
        } else {
            double ss = 0.0;
            for (int64_t j = 0; j < n; j++) {
                y[j] = load(&c->x, base + j);
                ss += y[j] * y[j];
            }
            const double rstd = 1.0 / sqrt(ss / (double)n + eps);
            for (int64_t j = 0; j < n; j++) y[j] = y[j] * rstd * load(&c->y, c->y.offset + j * c->y.stride0);
        }
    }
    return TRR_OK;
}

trr_status trr_reference_rms_norm(const trr_call *call, double *out) { return norm(call, out, 0); }
trr_status trr_reference_layer_norm(const trr_call *call, double *out) { return norm(call, out, 1); }
