/*
 * The float64 reference: the definition of every op (docs/ops.md), evaluated in double on the host from the
 * same (already rounded) inputs a backend sees. An op declared by a trr_op_def (user ops, and the built-ins
 * core/op_table.c declares so) is its definition's reference function, point by point or row by row; the others'
 * are here. It favours being obviously right over speed, but for one
 * thing: matmul converts its operands to double before the multiply-adds (the same sums in the same order).
 *
 * What it returns, where docs/ops.md leaves a choice:
 *  - rgb_to_grey with u8 output gives the un-rounded double 0.2989 R + 0.5870 G + 0.1140 B; the conformance
 *    check applies (and tolerates) the rounding itself, since a value a hair from .5 may round either way.
 *  - f16 outputs get the exact double result; the comparison bounds account for the f16 rounding.
 */
#include "reference.h"

#include "user_op.h"
#include "half.h"
#include "op_table.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static double load(const trr_operand *o, int64_t idx) {
    switch (o->dtype) {
    case TRR_F32:
    case TRR_F16:
    case TRR_BF16:
    case TRR_U8:
    case TRR_F8E4M3:
    case TRR_F8E5M2: return trr_dtype_load_f32(o->mem, o->dtype, idx);
    default: return NAN;
    }
}

/* copy's value: x (the element-wise ops of a definition are the definition's reference) */
typedef double (*point_fn)(double x, double y);
static double point_copy(double x, double y) { return (void)y, x; }

static double epilogue(double v, trr_epilogue epi, double alpha) {
    switch (epi) {
    case TRR_EPI_RELU: return v <= 0.0 ? 0.0 : v; /* a NaN stays NaN, as torch.relu keeps it */
    case TRR_EPI_LEAKY_RELU: return v >= 0.0 ? v : alpha * v;
    case TRR_EPI_GELU: return trr_gelu_reference(v);
    default: return v;
    }
}

static void elementwise(const trr_call *c, double *out, point_fn f) {
    const int two = trr_op_desc_get(c->op)->n_inputs == 2;
    for (int64_t r = 0; r < c->rows; r++)
        for (int64_t j = 0; j < c->cols; j++) {
            double x = load(&c->x, c->x.offset + r * c->x.stride0 + j);
            double y = two ? load(&c->y, c->y.offset + r * c->y.stride0 + j) : 0.0;
            out[r * c->cols + j] = f(x, y);
        }
}

/* cast: x's value rounded once to y's dtype by the host's conversion (core/half.c), which docs/ops.md's rules are
 * written from. Every input value is exact in f32, so rounding from the f32 is rounding from the exact value. The
 * result (an infinity, a NaN, a saturated or rounded value) is exact in double. */
static void cast(const trr_call *c, double *out) {
    for (int64_t r = 0; r < c->rows; r++)
        for (int64_t j = 0; j < c->cols; j++) {
            const float x = (float)load(&c->x, c->x.offset + r * c->x.stride0 + j);
            uint8_t cell[4];
            trr_dtype_store_f32(cell, c->z.dtype, 0, x);
            out[r * c->cols + j] = trr_dtype_load_f32(cell, c->z.dtype, 0);
        }
}

static void rgb_to_grey(const trr_call *c, double *out) {
    for (int64_t r = 0; r < c->rows; r++)
        for (int64_t j = 0; j < c->cols; j++) {
            int64_t i = c->x.offset + r * c->x.stride1 + j;
            double R = load(&c->x, i), G = load(&c->x, i + c->x.stride0), B = load(&c->x, i + 2 * c->x.stride0);
            out[r * c->cols + j] = 0.2989 * R + 0.5870 * G + 0.1140 * B;
        }
}

static void softmax(const trr_call *c, double *out) {
    for (int64_t r = 0; r < c->rows; r++) {
        double *y = out + r * c->cols;
        int64_t base = c->x.offset + r * c->x.stride0;
        double mx = -INFINITY;
        for (int64_t j = 0; j < c->cols; j++) {
            y[j] = load(&c->x, base + j);
            if (y[j] > mx) mx = y[j];
        }
        double sum = 0.0;
        for (int64_t j = 0; j < c->cols; j++) {
            y[j] = exp(y[j] - mx);
            sum += y[j];
        }
        for (int64_t j = 0; j < c->cols; j++) y[j] /= sum;
    }
}

static void row_sum(const trr_call *c, double *out) {
    for (int64_t r = 0; r < c->rows; r++) {
        double s = 0.0;
        for (int64_t j = 0; j < c->cols; j++) s += load(&c->x, c->x.offset + r * c->x.stride0 + j);
        out[r] = s;
    }
}

/* C row by row: out row i accumulates A[i,k] * B[k,:] in double, k in order, so each output is the same sum in
 * the same order however the operands are stored. A batch is one matrix after another in out (batch·M x N),
 * each reading its operands at their batch strides. Each batch's operands are first converted to double, B as
 * a packed K x N matrix (read along its rows whatever its layout), so the inner loop is a plain multiply-add
 * over contiguous doubles; where that copy does not fit in memory, B is converted one row at a time instead
 * (the same values, the same order of operations, more slowly). */
static trr_status matmul(const trr_call *c, double *out) {
    int64_t M = c->rows, N = c->cols, K = c->k;
    const int64_t batch = c->batch > 1 ? c->batch : 1;
    /* 8-bit float inputs: the per-tensor scales multiply the sum before the epilogue (other dtypes have none) */
    const double scale = trr_dtype_is_f8(c->x.dtype)
                             ? c->params[TRR_MATMUL_PARAM_SCALE_A] * c->params[TRR_MATMUL_PARAM_SCALE_B]
                             : 1.0;
    double *arow = malloc((size_t)(K > 0 ? K : 1) * sizeof *arow);
    double *bmat = (double)K * (double)N <= (double)(SIZE_MAX / sizeof(double) / 2)
                       ? malloc((size_t)(K > 0 ? K : 1) * (size_t)N * sizeof *bmat)
                       : NULL;
    double *brow = bmat ? NULL : malloc((size_t)N * sizeof *brow);
    if (!arow || (!bmat && !brow)) {
        free(arow), free(bmat), free(brow);
        return trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "reference matmul: %lld doubles", (long long)(K + N));
    }
    for (int64_t bi = 0; bi < batch; bi++) {
        const trr_operand *A = &c->x, *B = &c->y;
        const int64_t a0 = A->offset + bi * A->batch_stride, b0 = B->offset + bi * B->batch_stride;
        if (bmat)
            for (int64_t k = 0; k < K; k++)
                for (int64_t j = 0; j < N; j++)
                    bmat[k * N + j] = load(B, b0 + (c->trans_b ? j * B->stride0 + k : k * B->stride0 + j));
        for (int64_t i = 0; i < M; i++) {
            double *y = out + (bi * M + i) * N;
            for (int64_t k = 0; k < K; k++)
                arow[k] = load(A, a0 + (c->trans_a ? k * A->stride0 + i : i * A->stride0 + k));
            for (int64_t j = 0; j < N; j++) y[j] = 0.0;
            for (int64_t k = 0; k < K; k++) {
                const double a = arow[k];
                const double *b = bmat ? bmat + k * N : brow;
                if (!bmat)
                    for (int64_t j = 0; j < N; j++)
                        brow[j] = load(B, b0 + (c->trans_b ? j * B->stride0 + k : k * B->stride0 + j));
                for (int64_t j = 0; j < N; j++) y[j] += a * b[j];
            }
            for (int64_t j = 0; j < N; j++) y[j] = epilogue(y[j] * scale, c->epilogue, (double)c->alpha);
        }
    }
    free(arow), free(bmat), free(brow);
    return TRR_OK;
}

/* The definition of every op not declared by a trr_op_def, one row per op: its values per point (copy, through
 * elementwise()) or its whole computation. Adding such an op adds its row here. */
typedef struct reference_row {
    point_fn point;
    trr_status (*run)(const trr_call *c, double *out);
} reference_row;

static trr_status run_rgb_to_grey(const trr_call *c, double *out) { return rgb_to_grey(c, out), TRR_OK; }
static trr_status run_softmax(const trr_call *c, double *out) { return softmax(c, out), TRR_OK; }
static trr_status run_row_sum(const trr_call *c, double *out) { return row_sum(c, out), TRR_OK; }
/* reference_attention.c: o, then lse */
static trr_status run_attention(const trr_call *c, double *out) {
    const trr_attention_shape *a = &c->attn;
    return trr_reference_attention(c, out, out + a->batch * a->heads_q * a->seq_q * a->head_dim, NULL);
}
static trr_status run_cast(const trr_call *c, double *out) { return cast(c, out), TRR_OK; }

static const reference_row rows[TRR_OP_COUNT] = {
    [TRR_OP_COPY] = {point_copy, NULL},
    [TRR_OP_RGB_TO_GREY] = {NULL, run_rgb_to_grey},
    [TRR_OP_SOFTMAX] = {NULL, run_softmax},
    [TRR_OP_ROW_SUM] = {NULL, run_row_sum},
    [TRR_OP_MATMUL] = {NULL, matmul},
    [TRR_OP_ATTENTION] = {NULL, run_attention},
    [TRR_OP_CAST] = {NULL, run_cast}, /* the output's dtype decides the value: not a point function */
};

/* a row op of a definition: its reference, row by row, on the inputs' rows (a vector: the whole of it); the
 * first output into out, the second (where the op has one) into out2 unless that is NULL */
static trr_status user_rows(const trr_call *c, const trr_user_op *u, double *out, double *out2) {
    const trr_operand *ops[TRR_MAX_ROW_OPERANDS];
    trr_user_operands(u, c, ops);
    const int64_t n = c->cols;
    double *vals = malloc((size_t)(u->n_operands * (n ? n : 1)) * sizeof *vals);
    if (!vals) return trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "trr_reference_run: no host memory");
    const double *in[TRR_MAX_ROW_OPERANDS];
    double *outs[TRR_MAX_ROW_OPERANDS];
    for (int i = 0; i < u->n_inputs; i++) in[i] = vals + i * n;
    for (int j = 0; j + u->n_inputs < u->n_operands; j++) outs[j] = vals + (u->n_inputs + j) * n;
    for (int i = 0; i < u->n_inputs; i++) /* a vector is the same in every row */
        if (u->vector[i])
            for (int64_t k = 0; k < n; k++) vals[i * n + k] = load(ops[i], ops[i]->offset + k * ops[i]->stride0);
    for (int64_t r = 0; r < c->rows; r++) {
        for (int i = 0; i < u->n_inputs; i++)
            if (!u->vector[i])
                for (int64_t k = 0; k < n; k++) vals[i * n + k] = load(ops[i], ops[i]->offset + r * ops[i]->stride0 + k);
        outs[0] = out + r * n; /* the first output straight into its row */
        u->row_reference(in, outs, n, c->params, u->def.user);
        if (out2 && u->n_operands - u->n_inputs > 1) memcpy(out2 + r * n, outs[1], (size_t)n * sizeof *out2);
    }
    free(vals);
    return TRR_OK;
}

/* an element-wise op of a definition (core/user_op.h): its reference, point by point */
static void user_points(const trr_call *c, const trr_user_op *u, double *out) {
    const int two = u->n_operands == 3;
    for (int64_t r = 0; r < c->rows; r++)
        for (int64_t j = 0; j < c->cols; j++) {
            double in[2] = {load(&c->x, c->x.offset + r * c->x.stride0 + j),
                            two ? load(&c->y, c->y.offset + r * c->y.stride0 + j) : 0.0};
            out[r * c->cols + j] = u->def.reference(in, c->params, u->def.user);
        }
}

trr_status trr_reference_run(const trr_call *call, double *out) { return trr_reference_run_outputs(call, out, NULL); }

trr_status trr_reference_run_outputs(const trr_call *call, double *out, double *out2) {
    if (call && out && trr_op_desc_get(call->op) && trr_op_desc_get(call->op)->defined) {
        const trr_user_op *u = trr_op_desc_get(call->op)->defined;
        if (call->rows < 0 || call->cols < 0)
            return trr_error(NULL, TRR_ERR_SHAPE, "trr_reference_run: negative dimension");
        if (u->row_op) return call->rows && call->cols ? user_rows(call, u, out, out2) : TRR_OK;
        user_points(call, u, out);
        return TRR_OK;
    }
    if (!call || !out) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "trr_reference_run: null argument");
    const trr_op_desc *d = trr_op_desc_get(call->op);
    const reference_row *row = d ? &rows[call->op] : NULL;
    if (!row || (!row->point && !row->run))
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "trr_reference_run: no reference for op %d", (int)call->op);
    if (call->rows < 0 || call->cols < 0 || (d->shape == TRR_SHAPE_MATMUL && call->k < 0))
        return trr_error(NULL, TRR_ERR_SHAPE, "trr_reference_run: negative dimension");
    /* an empty reduction (row_sum over N = 0, matmul with K = 0) still has rows of output: its loops give 0 */
    if (call->rows == 0 || (call->cols == 0 && d->shape != TRR_SHAPE_ROW_REDUCE)) return TRR_OK;
    if (row->point) {
        elementwise(call, out, row->point);
        return TRR_OK;
    }
    return row->run(call, out);
}
