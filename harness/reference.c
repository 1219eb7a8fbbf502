/*
 * The float64 reference: the definition of every op (docs/ops.md), evaluated in double on the host from the
 * same (already rounded) inputs a backend sees. It favours being obviously right over speed, but for one
 * thing: matmul converts its operands to double before the multiply-adds (the same sums in the same order).
 *
 * What it returns, where docs/ops.md leaves a choice:
 *  - rgb_to_grey with u8 output gives the un-rounded double 0.2989 R + 0.5870 G + 0.1140 B; the conformance
 *    check applies (and tolerates) the rounding itself, since a value a hair from .5 may round either way.
 *  - gelu is evaluated as x / (1 + exp(-2u)), algebraically identical to 0.5 x (1 + tanh u) but free of the
 *    cancellation in 1 + tanh(u) for negative x, so the reference stays accurate in the tail.
 *  - f16 outputs get the exact double result; the comparison bounds account for the f16 rounding.
 */
#include "reference.h"
#include "half.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static double load(const trr_operand *o, int64_t idx) {
    switch (o->dtype) {
    case TRR_F32:
    case TRR_F16:
    case TRR_BF16:
    case TRR_U8: return trr_dtype_load_f32(o->mem, o->dtype, idx);
    default: return NAN;
    }
}

static double gelu(double x) {
    double u = 0.7978845608 * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

static double silu(double x) { return x / (1.0 + exp(-x)); }

static double epilogue(double v, trr_epilogue epi, double alpha) {
    switch (epi) {
    case TRR_EPI_RELU: return v <= 0.0 ? 0.0 : v; /* a NaN stays NaN, as torch.relu keeps it */
    case TRR_EPI_LEAKY_RELU: return v >= 0.0 ? v : alpha * v;
    case TRR_EPI_GELU: return gelu(v);
    default: return v;
    }
}

static void elementwise(const trr_call *c, double *out) {
    for (int64_t r = 0; r < c->rows; r++)
        for (int64_t j = 0; j < c->cols; j++) {
            double x = load(&c->x, c->x.offset + r * c->x.stride0 + j);
            double v = x;
            if (c->op == TRR_OP_ADD) v = x + load(&c->y, c->y.offset + r * c->y.stride0 + j);
            else if (c->op == TRR_OP_GELU) v = gelu(x);
            else if (c->op == TRR_OP_SILU) v = silu(x);
            out[r * c->cols + j] = v;
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
            for (int64_t j = 0; j < N; j++) y[j] = epilogue(y[j], c->epilogue, (double)c->alpha);
        }
    }
    free(arow), free(bmat), free(brow);
    return TRR_OK;
}

trr_status trr_reference_run(const trr_call *call, double *out) {
    if (!call || !out) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "trr_reference_run: null argument");
    if (call->rows < 0 || call->cols < 0 || (call->op == TRR_OP_MATMUL && call->k < 0))
        return trr_error(NULL, TRR_ERR_SHAPE, "trr_reference_run: negative dimension");
    /* an empty reduction (row_sum over N = 0, matmul with K = 0) still has rows of output: its loops give 0 */
    if (call->rows == 0 || (call->cols == 0 && call->op != TRR_OP_ROW_SUM)) return TRR_OK;
    switch (call->op) {
    case TRR_OP_COPY:
    case TRR_OP_ADD:
    case TRR_OP_GELU:
    case TRR_OP_SILU: elementwise(call, out); return TRR_OK;
    case TRR_OP_RGB_TO_GREY: rgb_to_grey(call, out); return TRR_OK;
    case TRR_OP_SOFTMAX: softmax(call, out); return TRR_OK;
    case TRR_OP_ROW_SUM: row_sum(call, out); return TRR_OK;
    case TRR_OP_MATMUL: return matmul(call, out);
    case TRR_OP_RMS_NORM:
    case TRR_OP_LAYER_NORM: return trr_reference_norm(call, out); /* reference_norm.c */
    case TRR_OP_ATTENTION: { /* reference_attention.c: o, then lse */
        const trr_attention_shape *a = &call->attn;
        return trr_reference_attention(call, out, out + a->batch * a->heads_q * a->seq_q * a->head_dim, NULL);
    }
    default: return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "trr_reference_run: unknown op %d", (int)call->op);
    }
}
