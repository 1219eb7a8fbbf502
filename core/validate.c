/* Validation and normalisation of op calls (see validate.h). Checks run in a fixed order (arguments, dtypes,
 * shapes, strides, alignment, overflow, bounds, overlap) so each bad-input class reports its own status. */
#include "validate.h"
#include "op_table.h"

#include <math.h>
#include <stdio.h>
#include <string.h>


/* The elements a view spans: 1 + sum (shape[i]-1) * stride[i]; 0 for an empty view. -1 on overflow. */
static int64_t view_extent(const trr_tensor *t) {
    int64_t ext = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] == 0) return 0;
        int64_t span;
        if (__builtin_mul_overflow(t->shape[i] - 1, t->strides[i], &span)) return -1;
        if (__builtin_add_overflow(ext, span, &ext)) return -1;
    }
    return ext;
}

void trr_shape_text(const trr_tensor *t, char *out, size_t cap) {
    size_t n = (size_t)snprintf(out, cap, "[");
    for (int i = 0; i < t->ndim && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%lld", i ? "," : "", (long long)t->shape[i]);
    if (n < cap) snprintf(out + n, cap - n, "]");
}

static trr_status check_tensor(trr_context *ctx, const trr_tensor *t, const char *name) {
    if (!t) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s: tensor is NULL", name);
    if (!t->buffer) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s: tensor has no buffer", name);
    if (t->buffer->ctx != ctx)
        return trr_error(ctx, TRR_ERR_WRONG_CONTEXT, "%s: buffer belongs to another context", name);
    if ((unsigned)t->dtype >= TRR_DTYPE_COUNT) return trr_error(ctx, TRR_ERR_DTYPE, "%s: unknown dtype %d", name, (int)t->dtype);
    if (t->ndim < 1 || t->ndim > TRR_MAX_DIMS)
        return trr_error(ctx, TRR_ERR_SHAPE, "%s: rank %d outside [1, %d]", name, t->ndim, TRR_MAX_DIMS);
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0)
            return trr_error(ctx, TRR_ERR_SHAPE, "%s: dimension %d is negative (%lld)", name, i, (long long)t->shape[i]);
    }
    return TRR_OK;
}

static trr_status check_strides(trr_context *ctx, const trr_tensor *t, const char *name, int inner_any) {
    for (int i = 0; i < t->ndim; i++)
        if (t->strides[i] < 1)
            return trr_error(ctx, TRR_ERR_STRIDE, "%s: stride %d is %lld; strides must be positive", name, i,
                             (long long)t->strides[i]);
    if (!inner_any && t->strides[t->ndim - 1] != 1)
        return trr_error(ctx, TRR_ERR_STRIDE, "%s: innermost stride is %lld; this op needs 1", name,
                         (long long)t->strides[t->ndim - 1]);
    /* each outer stride must step past the whole inner block, so elements of one view never alias */
    if (!inner_any)
        for (int i = 0; i + 1 < t->ndim; i++) {
            if (t->shape[i] <= 1 || t->shape[i + 1] == 0) continue;
            int64_t inner;
            if (__builtin_mul_overflow(t->shape[i + 1], t->strides[i + 1], &inner))
                return trr_error(ctx, TRR_ERR_OVERFLOW,
                                 "%s: dimension %d spans %lld elements of stride %lld, which overflows 64 bits", name,
                                 i + 1, (long long)t->shape[i + 1], (long long)t->strides[i + 1]);
            if (t->strides[i] < inner)
                return trr_error(ctx, TRR_ERR_STRIDE, "%s: stride %d (%lld) is shorter than the row it steps over (%lld)",
                                 name, i, (long long)t->strides[i], (long long)inner);
        }
    return TRR_OK;
}

/* Alignment, overflow and bounds of one view; returns its byte range [begin, end). */
static trr_status check_extent(trr_context *ctx, const trr_tensor *t, const char *name, size_t *out_begin,
                               size_t *out_end) {
    size_t es;
    trr_dtype_size(t->dtype, &es);
    if (t->offset % es != 0)
        return trr_error(ctx, TRR_ERR_MISALIGNED, "%s: byte offset %zu is not a multiple of the %zu-byte element", name,
                         t->offset, es);
    int64_t count = 1;
    for (int i = 0; i < t->ndim; i++)
        if (__builtin_mul_overflow(count, t->shape[i], &count))
            return trr_error(ctx, TRR_ERR_OVERFLOW, "%s: element count overflows 64 bits", name);
    /* past 2^31 elements the front-end runs the call in parts (parts.c); here only 64 bits must hold it */
    int64_t ext = view_extent(t), bytes64;
    if (ext < 0 || __builtin_mul_overflow(ext, (int64_t)es, &bytes64))
        return trr_error(ctx, TRR_ERR_OVERFLOW, "%s: the view's extent in bytes overflows 64 bits", name);
    size_t bytes = (size_t)bytes64;
    if (t->offset > t->buffer->size || bytes > t->buffer->size - t->offset)
        return trr_error(ctx, TRR_ERR_OUT_OF_BOUNDS, "%s: view [%zu, %zu + %zu) reaches past the buffer's %zu bytes", name,
                         t->offset, t->offset, bytes, t->buffer->size);
    *out_begin = t->offset;
    *out_end = t->offset + bytes;
    return TRR_OK;
}

static int same_view(const trr_tensor *a, const trr_tensor *b) {
    if (a->buffer != b->buffer || a->offset != b->offset || a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i] || a->strides[i] != b->strides[i]) return 0;
    return 1;
}

static int same_shape(const trr_tensor *a, const trr_tensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

static int has_zero_dim(const trr_tensor *t) {
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] == 0) return 1;
    return 0;
}

static trr_operand operand_of(const trr_tensor *t) {
    size_t es;
    trr_dtype_size(t->dtype, &es);
    trr_operand o;
    memset(&o, 0, sizeof o);
    o.mem = t->buffer->mem;
    o.offset = (int64_t)(t->offset / es);
    o.dtype = t->dtype;
    return o;
}

/* Folds the common shape of n elementwise views into rows x cols, plus up to two outer slice dimensions when the
 * view does not fold that far: size-1 dimensions are dropped, and neighbours merge where every view is
 * contiguous across them. */
static void normalise_elementwise(trr_call *call, const trr_tensor *const *views, trr_operand *const *ops, int n) {
    /* one more than TRR_MAX_DIMS: a unit column may be appended below */
    int64_t shape[TRR_MAX_DIMS + 1], strides[3][TRR_MAX_DIMS + 1];
    int nd = 0;
    for (int d = 0; d < views[0]->ndim; d++) {
        if (views[0]->shape[d] == 1) continue;
        shape[nd] = views[0]->shape[d];
        for (int v = 0; v < n; v++) strides[v][nd] = views[v]->strides[d];
        nd++;
    }
    /* A dropped size-1 innermost dimension can leave a kept one with a stride other than 1 ([8,1] with strides
     * [4,1]); backends read columns contiguously, so such views become rows of one column. */
    int unit_inner = 1;
    for (int v = 0; v < n; v++)
        if (nd > 0 && strides[v][nd - 1] != 1) unit_inner = 0;
    if (!unit_inner) {
        shape[nd] = 1;
        for (int v = 0; v < n; v++) strides[v][nd] = 1;
        nd++;
    }
    for (int d = nd - 2; d >= 0; d--) {
        int fold = 1;
        for (int v = 0; v < n; v++)
            if (strides[v][d] != shape[d + 1] * strides[v][d + 1]) fold = 0;
        if (!fold) continue;
        shape[d] *= shape[d + 1];
        for (int v = 0; v < n; v++) strides[v][d] = strides[v][d + 1];
        for (int e = d + 1; e + 1 < nd; e++) {
            shape[e] = shape[e + 1];
            for (int v = 0; v < n; v++) strides[v][e] = strides[v][e + 1];
        }
        nd--;
    }
    if (nd == 0) { /* a single element */
        shape[0] = 1;
        for (int v = 0; v < n; v++) strides[v][0] = 1;
        nd = 1;
    }
    /* What is left beyond rows x cols are slices: at most two dimensions, since a rank-4 view with a unit column
     * appended has at most 4 dimensions that are not 1 (the appended column is 1 only where one was dropped). */
    const int outer = nd > 2 ? nd - 2 : 0;
    call->cols = shape[nd - 1];
    call->rows = nd >= 2 ? shape[nd - 2] : 1;
    call->slice_count = outer >= 1 ? shape[outer - 1] : 1;
    call->slices = call->slice_count * (outer == 2 ? shape[0] : 1);
    for (int v = 0; v < n; v++) {
        ops[v]->stride0 = nd >= 2 ? strides[v][nd - 2] : call->cols;
        ops[v]->slice_stride = outer >= 1 ? strides[v][outer - 1] : 0;
        ops[v]->outer_slice_stride = outer == 2 ? strides[v][0] : 0;
    }
}

trr_status trr_call_write_identity(trr_context *ctx, const trr_call *call) {
    const trr_op_desc *d = trr_op_desc_get(call->op);
    if (d->shape == TRR_SHAPE_ATTENTION) return trr_attention_write_empty(ctx, call);
    size_t es = 0;
    TRR_TRY(trr_dtype_size(call->z.dtype, &es));
    /* zero bytes are +0 in every dtype; one fill when the rows are contiguous, else one per row */
    const int64_t width = d->shape == TRR_SHAPE_ROW_REDUCE ? 1 : call->cols;
    const int64_t rows = call->rows, stride = call->z.stride0;
    void *mem = call->z.mem;
    const int64_t batch = call->batch > 1 ? call->batch : 1;
    for (int64_t b = 0; b < batch; b++) {
        const int64_t base = call->z.offset + b * call->z.batch_stride;
        if (stride == width || rows == 1) {
            TRR_TRY(ctx->backend->fill(ctx, mem, (size_t)base * es, (size_t)(rows * width) * es, 0));
            continue;
        }
        for (int64_t r = 0; r < rows; r++)
            TRR_TRY(ctx->backend->fill(ctx, mem, (size_t)(base + r * stride) * es, (size_t)width * es, 0));
    }
    return TRR_OK;
}

static void slice_operand(trr_operand *o, int64_t group, int64_t within) {
    o->offset += group * o->outer_slice_stride + within * o->slice_stride;
}

trr_call trr_call_slice(const trr_call *call, int64_t s) {
    trr_call c = *call;
    const int64_t count = call->slice_count > 0 ? call->slice_count : 1;
    slice_operand(&c.x, s / count, s % count);
    slice_operand(&c.y, s / count, s % count);
    slice_operand(&c.z, s / count, s % count);
    c.slices = 1;
    c.slice_count = 1;
    return c;
}

static trr_status check_matmul_operand(trr_context *ctx, const trr_tensor *t, const char *name, int *out_trans,
                                       int64_t *out_ld) {
    if (t->ndim != 2) return trr_error(ctx, TRR_ERR_SHAPE, "%s: matmul operands are 2-D, got %d-D", name, t->ndim);
    for (int i = 0; i < 2; i++)
        if (t->strides[i] < 1)
            return trr_error(ctx, TRR_ERR_STRIDE, "%s: stride %d is %lld; strides must be positive", name, i,
                             (long long)t->strides[i]);
    if (t->strides[1] == 1 && t->strides[0] >= t->shape[1]) {
        *out_trans = 0;
        *out_ld = t->strides[0];
    } else if (t->strides[0] == 1 && t->strides[1] >= t->shape[0]) {
        *out_trans = 1;
        *out_ld = t->strides[1];
    } else {
        return trr_error(ctx, TRR_ERR_STRIDE,
                         "%s: strides (%lld, %lld) are neither row-major (inner 1, leading >= %lld) nor transposed "
                         "(outer 1, leading >= %lld)",
                         name, (long long)t->strides[0], (long long)t->strides[1], (long long)t->shape[1],
                         (long long)t->shape[0]);
    }
    return TRR_OK;
}

/* The per-batch 2-D views of matmul's operands, each operand's batch count (1 for 2-D) and batch stride.
 * Batch strides may be 0 for inputs (one matrix shared by every batch); rank and sign are checked here. */
static trr_status matmul_batch_views(trr_context *ctx, const trr_tensor *const views[3], trr_tensor mats[3],
                                     int64_t batch[3], int64_t bstride[3]) {
    static const char *names[3] = {"A", "B", "C"};
    for (int v = 0; v < 3; v++) {
        const trr_tensor *t = views[v];
        if (t->ndim != 2 && t->ndim != 3)
            return trr_error(ctx, TRR_ERR_SHAPE, "matmul: %s must be 2-D [rows,cols] or 3-D [batch,rows,cols], got %d-D",
                             names[v], t->ndim);
        mats[v] = *t;
        batch[v] = 1;
        bstride[v] = 0;
        if (t->ndim == 3) {
            batch[v] = t->shape[0];
            bstride[v] = t->strides[0];
            if (bstride[v] < 0)
                return trr_error(ctx, TRR_ERR_STRIDE, "matmul: %s's batch stride is %lld; it must not be negative",
                                 names[v], (long long)bstride[v]);
            mats[v].ndim = 2;
            for (int i = 0; i < 2; i++) {
                mats[v].shape[i] = t->shape[i + 1];
                mats[v].strides[i] = t->strides[i + 1];
            }
        }
    }
    /* C's batch is the call's: a 3-D input must match it; a 2-D input (or a batch of one) broadcasts */
    for (int v = 0; v < 2; v++)
        if (batch[v] != batch[2] && batch[v] != 1)
            return trr_error(ctx, TRR_ERR_SHAPE, "matmul: %s has a batch of %lld but C has %lld (an input's batch must "
                             "equal C's, or be 1 to be shared)", names[v], (long long)batch[v], (long long)batch[2]);
    return TRR_OK;
}

/* C's matrices must not overlap (each is written by its own batch), and batch x stride must fit 64 bits. */
static trr_status check_matmul_batch(trr_context *ctx, trr_call *call, int64_t ldc, const int64_t batch[3],
                                     const int64_t bstride[3]) {
    static const char *names[3] = {"A", "B", "C"};
    call->batch = batch[2];
    for (int v = 0; v < 3; v++) {
        int64_t span;
        if (batch[v] > 1 && __builtin_mul_overflow(batch[v] - 1, bstride[v], &span))
            return trr_error(ctx, TRR_ERR_OVERFLOW, "matmul: %s's batch of %lld at batch stride %lld overflows 64 bits",
                             names[v], (long long)batch[v], (long long)bstride[v]);
    }
    if (batch[2] <= 1 || call->rows == 0 || call->cols == 0) return TRR_OK;
    if (bstride[2] == 0)
        return trr_error(ctx, TRR_ERR_STRIDE, "matmul: C's batch stride is 0 with a batch of %lld; every batch needs "
                         "its own output", (long long)batch[2]);
    /* one row-major C matrix spans (rows - 1) * ldc + cols elements */
    int64_t one;
    if (__builtin_mul_overflow(call->rows - 1, ldc, &one) || __builtin_add_overflow(one, call->cols, &one))
        return trr_error(ctx, TRR_ERR_OVERFLOW, "matmul: one C matrix of [%lld,%lld] at row stride %lld overflows 64 bits",
                         (long long)call->rows, (long long)call->cols, (long long)ldc);
    if (bstride[2] < one)
        return trr_error(ctx, TRR_ERR_OVERLAP, "matmul: C's batch stride %lld is shorter than one C matrix (%lld "
                         "elements), so its batches overlap", (long long)bstride[2], (long long)one);
    return TRR_OK;
}

trr_status trr_call_build(trr_context *ctx, trr_op op, const trr_tensor *x, const trr_tensor *y,
                          const trr_tensor *z, trr_epilogue epilogue, float alpha, unsigned flags,
                          trr_call *out_call, int *out_empty) {
    const trr_tensor *const slots[TRR_SLOTS] = {x, y, z, NULL};
    return trr_call_build_slots(ctx, op, slots, epilogue, alpha, flags, out_call, out_empty);
}

trr_status trr_call_build_slots(trr_context *ctx, trr_op op, const trr_tensor *const slots[TRR_SLOTS],
                                trr_epilogue epilogue, float alpha, unsigned flags, trr_call *out_call,
                                int *out_empty) {
    const trr_op_desc *desc = trr_op_desc_get(op);
    if (!desc) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "unknown op %d", (int)op);
    if (desc->shape == TRR_SHAPE_ATTENTION) return trr_attention_call_build(ctx, slots, out_call, out_empty);
    const trr_tensor *x = slots[TRR_SLOT_X], *y = slots[TRR_SLOT_Y], *z = slots[TRR_SLOT_Z], *u = slots[TRR_SLOT_U];
    /* the views of the slots the op has; NULL elsewhere */
    const trr_tensor *views[TRR_SLOTS];
    for (int v = 0; v < TRR_SLOTS; v++) views[v] = desc->operand[v].name ? slots[v] : NULL;
    const char *opn = desc->name;

    /* 1. arguments */
    /* every operand the op takes must be there: a NULL second input of add or matmul is an argument error */
    for (int v = 0; v < TRR_SLOTS; v++)
        if (desc->operand[v].name) TRR_TRY(check_tensor(ctx, views[v], desc->operand[v].name));
    if (desc->n_inputs == 1 && y)
        return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s takes one input; y must be NULL", opn);
    if (desc->n_inputs < 3 && u)
        return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s takes %d inputs; a third must be NULL", opn,
                         desc->n_inputs);
    if (desc->shape == TRR_SHAPE_MATMUL) {
        if ((unsigned)epilogue >= TRR_EPI_COUNT)
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "matmul: unknown epilogue %d", (int)epilogue);
        /* only leaky_relu reads alpha; the others ignore it, whatever it holds */
        if (epilogue == TRR_EPI_LEAKY_RELU && !isfinite(alpha))
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "matmul: leaky_relu alpha is not finite (%g)", (double)alpha);
        if (flags & ~TRR_MATMUL_ALLOW_TF32)
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "matmul: unknown flags 0x%x", flags & ~TRR_MATMUL_ALLOW_TF32);
    }

    /* 2. dtypes: the inputs agree, except the second where a signature pairs two (matmul's 8-bit floats) */
    const trr_dtype y_dtype = views[TRR_SLOT_Y] ? y->dtype : x->dtype;
    int y_paired = 0; /* some signature takes x's dtype with y's */
    for (int i = 0; i < desc->n_signatures; i++)
        y_paired |= desc->signatures[i].in == x->dtype && trr_signature_input(&desc->signatures[i], TRR_SLOT_Y) == y_dtype;
    for (int v = 0; v < TRR_SLOTS; v++) {
        if (v == TRR_SLOT_X || v == TRR_SLOT_Z || !views[v] || views[v]->dtype == x->dtype) continue;
        if (v == TRR_SLOT_Y && y_paired) continue;
        const char *xn = "?", *vn = "?";
        trr_dtype_name(x->dtype, &xn);
        trr_dtype_name(views[v]->dtype, &vn);
        return trr_error(ctx, TRR_ERR_DTYPE, "%s: inputs disagree (%s is %s, %s is %s)", opn, desc->operand[0].name, xn,
                         desc->operand[v].name, vn);
    }
    if (!trr_op_allows_inputs(op, x->dtype, y_dtype, z->dtype)) {
        const char *in_name = "?", *y_name = "?", *out_name = "?";
        trr_dtype_name(x->dtype, &in_name);
        trr_dtype_name(y_dtype, &y_name);
        trr_dtype_name(z->dtype, &out_name);
        if (y_dtype != x->dtype)
            return trr_error(ctx, TRR_ERR_DTYPE, "%s does not take %s x %s -> %s", opn, in_name, y_name, out_name);
        return trr_error(ctx, TRR_ERR_DTYPE, "%s does not take %s -> %s", opn, in_name, out_name);
    }

    /* 3. shapes and 4. strides, per op */
    trr_call call;
    memset(&call, 0, sizeof call);
    call.op = op;
    call.epilogue = TRR_EPI_NONE;
    call.slices = 1;
    call.slice_count = 1;
    call.batch = 1;
    switch (desc->shape) {
    case TRR_SHAPE_ATTENTION: /* built by attention.c, above */
        break;
    case TRR_SHAPE_ELEMENTWISE:
        for (int v = 0; v < TRR_SLOTS; v++)
            if (views[v] && !same_shape(views[v], x))
                return trr_error(ctx, TRR_ERR_SHAPE, "%s: %s's shape differs from %s's", opn, desc->operand[v].name,
                                 desc->operand[TRR_SLOT_X].name);
        for (int v = 0; v < TRR_SLOTS; v++)
            if (views[v]) TRR_TRY(check_strides(ctx, views[v], desc->operand[v].name, 0));
        break;
    case TRR_SHAPE_ROW_NORM: {
        /* by the operand rules: [M,N] operands of x's shape (x and the outputs among them), [N] vectors */
        if (x->ndim != 2) {
            char got[96];
            trr_shape_text(x, got, sizeof got);
            return trr_error(ctx, TRR_ERR_SHAPE, "%s: %s must be 2-D [M,N], got %s", opn, desc->operand[TRR_SLOT_X].name,
                             got);
        }
        for (int v = 0; v < TRR_SLOTS; v++) {
            if (!views[v] || v == TRR_SLOT_X) continue;
            if (!desc->operand[v].vector) {
                if (!same_shape(views[v], x))
                    return trr_error(ctx, TRR_ERR_SHAPE, "%s: %s and %s must be 2-D [M,N] of the same shape", opn,
                                     desc->operand[TRR_SLOT_X].name, desc->operand[v].name);
                continue;
            }
            if (views[v]->ndim != 1 || views[v]->shape[0] != x->shape[1])
                return trr_error(ctx, TRR_ERR_SHAPE, "%s: %s must be 1-D [N] = [%lld]", opn, desc->operand[v].name,
                                 (long long)x->shape[1]);
            if (views[v]->strides[0] < 1)
                return trr_error(ctx, TRR_ERR_STRIDE, "%s: %s's stride must be positive", opn, desc->operand[v].name);
        }
        for (int v = 0; v < TRR_SLOTS; v++)
            if (views[v] && !desc->operand[v].vector) TRR_TRY(check_strides(ctx, views[v], desc->operand[v].name, 0));
        call.rows = x->shape[0];
        call.cols = x->shape[1];
        break;
    }
    case TRR_SHAPE_PLANES:
        if (x->ndim != 3 || x->shape[0] != 3) {
            char got[96];
            trr_shape_text(x, got, sizeof got);
            return trr_error(ctx, TRR_ERR_SHAPE, "rgb_to_grey: img must be [3,H,W] (planar), got %s", got);
        }
        if (z->ndim != 2 || z->shape[0] != x->shape[1] || z->shape[1] != x->shape[2])
            return trr_error(ctx, TRR_ERR_SHAPE, "rgb_to_grey: grey must be [H,W] = [%lld,%lld]", (long long)x->shape[1],
                             (long long)x->shape[2]);
        TRR_TRY(check_strides(ctx, x, "img", 0));
        TRR_TRY(check_strides(ctx, z, "grey", 0));
        call.rows = x->shape[1];
        call.cols = x->shape[2];
        break;
    case TRR_SHAPE_ROWS:
        if (x->ndim != 2 || !same_shape(x, z))
            return trr_error(ctx, TRR_ERR_SHAPE, "softmax: x and y must be 2-D [M,N] of the same shape");
        TRR_TRY(check_strides(ctx, x, "x", 0));
        TRR_TRY(check_strides(ctx, z, "y", 0));
        call.rows = x->shape[0];
        call.cols = x->shape[1];
        break;
    case TRR_SHAPE_ROW_REDUCE:
        if (x->ndim != 2) return trr_error(ctx, TRR_ERR_SHAPE, "row_sum: x must be 2-D [M,N], got rank %d", x->ndim);
        if (z->ndim != 1 || z->shape[0] != x->shape[0])
            return trr_error(ctx, TRR_ERR_SHAPE, "row_sum: y must be 1-D [M] = [%lld]", (long long)x->shape[0]);
        TRR_TRY(check_strides(ctx, x, "x", 0));
        if (z->strides[0] < 1) return trr_error(ctx, TRR_ERR_STRIDE, "row_sum: y's stride must be positive");
        call.rows = x->shape[0];
        call.cols = x->shape[1];
        break;
    case TRR_SHAPE_MATMUL: {
        /* rank 3 is a batch [B, rows, cols]; a 2-D operand is a batch of one. mats[] are the per-batch 2-D views */
        trr_tensor mats[3];
        int64_t batch[3], bstride[3];
        TRR_TRY(matmul_batch_views(ctx, views, mats, batch, bstride));
        const trr_tensor *x2 = &mats[0], *y2 = &mats[1], *z2 = &mats[2];
        if (y2->shape[0] != x2->shape[1])
            return trr_error(ctx, TRR_ERR_SHAPE, "matmul: A is [%lld,%lld] but B has %lld rows", (long long)x2->shape[0],
                             (long long)x2->shape[1], (long long)y2->shape[0]);
        if (z2->shape[0] != x2->shape[0] || z2->shape[1] != y2->shape[1])
            return trr_error(ctx, TRR_ERR_SHAPE, "matmul: C must be [%lld,%lld]", (long long)x2->shape[0],
                             (long long)y2->shape[1]);
        int64_t lda, ldb, ldc;
        int trans_c;
        TRR_TRY(check_matmul_operand(ctx, x2, "A", &call.trans_a, &lda));
        TRR_TRY(check_matmul_operand(ctx, y2, "B", &call.trans_b, &ldb));
        TRR_TRY(check_matmul_operand(ctx, z2, "C", &trans_c, &ldc));
        /* C is written row-major: a "transposed" C is the same thing only with one column, or with one row whose
         * elements are adjacent ([1,N] with strides (1, 2) is not) */
        if (trans_c) {
            if (z2->shape[1] <= 1)
                ldc = z2->strides[0];
            else if (z2->shape[0] <= 1 && z2->strides[1] == 1)
                ldc = z2->shape[1];
            else
                return trr_error(ctx, TRR_ERR_STRIDE, "matmul: C must be row-major (inner stride 1), got strides (%lld, %lld)",
                                 (long long)z2->strides[0], (long long)z2->strides[1]);
        }
        call.rows = x2->shape[0];
        call.cols = y2->shape[1];
        call.k = x2->shape[1];
        TRR_TRY(check_matmul_batch(ctx, &call, ldc, batch, bstride));
        call.epilogue = epilogue;
        call.alpha = epilogue == TRR_EPI_LEAKY_RELU ? alpha : 0.0f; /* no NaN reaches a kernel that ignores it */
        call.allow_tf32 = (flags & TRR_MATMUL_ALLOW_TF32) != 0;
        call.x = operand_of(x);
        call.y = operand_of(y);
        call.z = operand_of(z);
        call.x.stride0 = lda;
        call.y.stride0 = ldb;
        call.z.stride0 = ldc;
        /* a batch of one reads one matrix: its stride is never used, so no kernel multiplies by it */
        call.x.batch_stride = batch[0] > 1 ? bstride[0] : 0;
        call.y.batch_stride = batch[1] > 1 ? bstride[1] : 0;
        call.z.batch_stride = call.batch > 1 ? bstride[2] : 0;
        break;
    }
    }

    /* 5-7. alignment, overflow, bounds */
    size_t begin[TRR_SLOTS] = {0}, end[TRR_SLOTS] = {0};
    for (int v = 0; v < TRR_SLOTS; v++)
        if (views[v]) TRR_TRY(check_extent(ctx, views[v], desc->operand[v].name, &begin[v], &end[v]));

    /* 8. overlap: exact aliasing is allowed where each element is read before it is written at the same place;
     * a second output (a row op's) overlaps nothing else */
    const int alias_ok = desc->alias_ok;
    for (int o = TRR_SLOT_Z; o < TRR_SLOTS; o += TRR_SLOT_W - TRR_SLOT_Z) {
        if (!views[o]) continue;
        for (int v = 0; v < TRR_SLOTS; v++) {
            if (v == o || !views[v] || views[v]->buffer != views[o]->buffer || (o == TRR_SLOT_W && v == TRR_SLOT_Z))
                continue;
            if (begin[v] < end[o] && begin[o] < end[v] && !(alias_ok && o == TRR_SLOT_Z && same_view(views[v], z)))
                return trr_error(ctx, TRR_ERR_OVERLAP, "%s: output %s overlaps %s %s (bytes [%zu,%zu) and [%zu,%zu))",
                                 opn, o == TRR_SLOT_Z ? "z" : desc->operand[o].name,
                                 trr_slot_is_output(v) ? "output" : "input", desc->operand[v].name, begin[o], end[o],
                                 begin[v], end[v]);
        }
    }

    int empty = TRR_CALL_RUNS;
    for (int v = 0; v < TRR_SLOTS; v++)
        if (views[v] && has_zero_dim(views[v])) empty = TRR_CALL_NOTHING;
    if (empty && !has_zero_dim(z)) empty = TRR_CALL_IDENTITY;

    /* normalise */
    switch (desc->shape) {
    case TRR_SHAPE_ELEMENTWISE: {
        call.x = operand_of(x);
        call.z = operand_of(z);
        if (views[1]) call.y = operand_of(y);
        const trr_tensor *vs[3];
        trr_operand *os[3];
        int n = 0;
        vs[n] = x, os[n++] = &call.x;
        if (views[1]) vs[n] = y, os[n++] = &call.y;
        vs[n] = z, os[n++] = &call.z;
        if (!empty) normalise_elementwise(&call, vs, os, n);
        break;
    }
    case TRR_SHAPE_PLANES:
        call.x = operand_of(x);
        call.z = operand_of(z);
        call.x.stride0 = x->strides[0];
        call.x.stride1 = x->strides[1];
        call.z.stride0 = z->strides[0];
        break;
    case TRR_SHAPE_ROWS:
    case TRR_SHAPE_ROW_REDUCE:
        call.x = operand_of(x);
        call.z = operand_of(z);
        call.x.stride0 = x->strides[0];
        call.z.stride0 = z->strides[0];
        break;
    case TRR_SHAPE_MATMUL:
    case TRR_SHAPE_ATTENTION: /* attention.c */
        break;
    case TRR_SHAPE_ROW_NORM: {
        /* [M,N] operands by their row strides; the per-column vectors by their element strides */
        trr_operand *os[TRR_SLOTS] = {&call.x, &call.y, &call.z, &call.u, &call.w};
        for (int v = 0; v < TRR_SLOTS; v++) {
            if (!views[v]) continue;
            *os[v] = operand_of(views[v]);
            os[v]->stride0 = views[v]->strides[0];
        }
        break;
    }
    }
    /* views past 2^31 elements run in parts each kernel can index (parts.c): refused here if none can be cut;
     * every slice of a sliced call spans what the first does */
    if (!empty) {
        const trr_call first = call.slices > 1 ? trr_call_slice(&call, 0) : call;
        TRR_TRY(trr_call_check_parts(ctx, &first));
    }
    *out_call = call;
    *out_empty = empty;
    return TRR_OK;
}

void trr_call_set_params(trr_call *call, const double params[TRR_MAX_OP_PARAMS]) {
    for (int i = 0; i < TRR_MAX_OP_PARAMS; i++) call->params[i] = params[i];
    if (trr_op_desc_get(call->op)->shape == TRR_SHAPE_ATTENTION) trr_attention_set_params(call);
}

trr_status trr_validate_tensor(trr_context *ctx, const trr_tensor *t, const char *name) {
    return check_tensor(ctx, t, name);
}

trr_status trr_validate_extent(trr_context *ctx, const trr_tensor *t, const char *name, size_t *out_begin,
                               size_t *out_end) {
    return check_extent(ctx, t, name, out_begin, out_end);
}
