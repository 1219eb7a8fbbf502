/* Operand layout of a case (layout.h), from the op table's operand rules. */
#include "layout.h"

#include "backend.h"
#include "op_params.h"
#include "op_table.h"
#include "validate.h"

#include <string.h>

/* Elements of padding: odd counts, so a padded row never lands back on a vector boundary. */
#define ROW_PAD_IN 5
#define ROW_PAD_OUT 3
#define PLANE_PAD 11
static const int64_t view_offsets[TRR_CASE_SLOTS] = {3, 5, 7, 9, 11}; /* x, y, z, u, w in the non-packed layouts */

static int64_t dim_value(const trr_case *c, int dim) {
    int64_t d[3];
    trr_case_dims(c, d);
    switch (dim) {
    case TRR_DIM_ROWS: return d[0];
    case TRR_DIM_COLS: return d[1];
    case TRR_DIM_K: return d[2];
    default: return 1;
    }
}

/* A batched matmul operand: rank 3, batch = planes. The batch stride steps over one matrix (padded in the
 * strided layout); a broadcast input is 2-D (a batch of one) when packed and has batch stride 0 otherwise. */
static trr_status batch_view(const trr_case *c, int i, int strided, trr_stored_view *v) {
    const int bcast = (i == 0 && c->bcast_a) || (i == 1 && c->bcast_b);
    if (bcast && c->layout == TRR_LAYOUT_PACKED) {
        v->ndim = 2;
        return TRR_OK;
    }
    int64_t span;
    v->ndim = 3;
    v->planes = c->batch;
    v->plane_stride = bcast ? 0 : v->rows * v->row_stride + (strided ? PLANE_PAD : 0);
    if (__builtin_mul_overflow(v->plane_stride, c->batch, &span) || span > INT64_MAX / 4)
        return trr_error(NULL, TRR_ERR_OVERFLOW, "matmul: a batch of %lld matrices of %lld elements overflows 64-bit "
                         "sizes", (long long)c->batch, (long long)v->plane_stride);
    return TRR_OK;
}

/* attention's operands (cases.h): q, k, v, o as [B,H,S,D] or stored [B,S,H,D] (bshd), rows of D padded in the
 * strided layout; lse [B,H,S], at element stride 2 in the strided layout. */
static trr_status attention_views(const trr_case *c, trr_case_views *out) {
    const int strided = c->layout == TRR_LAYOUT_STRIDED;
    for (int i = 0; i < TRR_CASE_SLOTS; i++) {
        if (i == TRR_W && !c->attn.lse) continue;
        out->has[i] = 1;
        trr_stored_view *v = &out->v[i];
        const int kv = i == TRR_SLOT_Y || i == TRR_SLOT_U;
        const int64_t H = kv ? c->attn.hkv : c->attn.hq, S = kv ? c->attn.skv : c->attn.sq, B = c->attn.b;
        v->dtype = i == TRR_W ? TRR_F32 : trr_case_slot_is_output(i) ? c->out_dtype : c->in_dtype;
        v->heads = H;
        v->planes = B * H;
        v->rows = S;
        v->offset = c->layout == TRR_LAYOUT_PACKED ? 0 : view_offsets[i];
        if (i == TRR_W) { /* lse: [B,H,S] in that order always */
            v->cols = 1;
            v->ndim = 3;
            v->row_stride = strided ? 2 : 1;
            v->plane_stride = S * v->row_stride + (strided ? PLANE_PAD : 0);
            v->batch_stride = H * v->plane_stride;
            continue;
        }
        v->cols = c->attn.d;
        v->ndim = 4;
        const int64_t row = c->attn.d + (strided ? (i == TRR_OUT ? ROW_PAD_OUT : ROW_PAD_IN) : 0);
        if (c->attn.bshd) { /* element (b, h, s, d) at b * S*H*row + s * H*row + h * row + d */
            v->plane_stride = row;
            v->row_stride = H * row;
            v->batch_stride = S * H * row;
        } else {
            v->row_stride = row;
            v->plane_stride = S * row + (strided ? PLANE_PAD : 0);
            v->batch_stride = H * v->plane_stride;
        }
        if (B < 0 || H < 0 || S < 0 || (double)v->batch_stride * (double)(B > 0 ? B : 1) > 1e18)
            return trr_error(NULL, TRR_ERR_OVERFLOW, "attention: operand %d of [%lld,%lld,%lld,%lld] overflows 64-bit "
                             "sizes", i, (long long)B, (long long)H, (long long)S, (long long)c->attn.d);
    }
    return TRR_OK;
}

int trr_case_has_slot(const trr_case *c, int slot) {
    const trr_op_desc *d = trr_op_desc_get(c->op);
    if (!d || slot < 0 || slot >= TRR_CASE_SLOTS || !d->operand[slot].name) return 0;
    return slot != TRR_W || d->shape != TRR_SHAPE_ATTENTION || c->attn.lse; /* a row op's second output too */
}

trr_status trr_case_views_make(const trr_case *c, trr_case_views *out) {
    const trr_op_desc *d = c ? trr_op_desc_get(c->op) : NULL;
    if (!out || !d) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "layout: no such op or NULL argument");
    memset(out, 0, sizeof *out);
    out->n_inputs = d->n_inputs;
    if (d->shape == TRR_SHAPE_ATTENTION) return attention_views(c, out);
    for (int i = 0; i < TRR_CASE_SLOTS; i++) {
        const trr_operand_rule *rule = &d->operand[i];
        if (!rule->name) continue;
        out->has[i] = 1;
        trr_stored_view *v = &out->v[i];
        const int is_out = i == TRR_OUT;
        v->dtype = trr_case_dtype(c, i);
        v->transposed = (rule->transposable == 1 && c->trans_a) || (rule->transposable == 2 && c->trans_b);
        int64_t rows = dim_value(c, rule->rows), cols = dim_value(c, rule->cols);
        v->planes = rule->planes;
        v->rows = v->transposed ? cols : rows;
        v->cols = v->transposed ? rows : cols;
        const int strided = c->layout == TRR_LAYOUT_STRIDED && !rule->vector;
        v->row_stride = v->cols + (strided ? (is_out ? ROW_PAD_OUT : ROW_PAD_IN) : 0);
        /* sizes come from users (trireme run): an extent that overflows is an error, never a wrapped number */
        int64_t span;
        if (rows < 0 || cols < 0 || __builtin_mul_overflow(v->rows, v->row_stride, &span) ||
            __builtin_mul_overflow(span, (int64_t)v->planes, &span) || span > INT64_MAX / 4)
            return trr_error(NULL, TRR_ERR_OVERFLOW, "%s: %s of %lld x %lld elements overflows 64-bit sizes", d->name,
                             rule->name, (long long)v->rows, (long long)v->cols);
        v->plane_stride = v->rows * v->row_stride + (strided && v->planes > 1 ? PLANE_PAD : 0);
        v->offset = c->layout == TRR_LAYOUT_PACKED ? 0 : view_offsets[i];
        if (d->shape == TRR_SHAPE_MATMUL && c->batch > 0) {
            TRR_TRY(batch_view(c, i, strided, v));
            continue;
        }
        if (rule->planes > 1) v->ndim = 3;
        else if (rule->vector || (d->shape == TRR_SHAPE_ELEMENTWISE && rows == 1)) v->ndim = 1;
        else v->ndim = 2;
    }
    return TRR_OK;
}

int64_t trr_stored_extent(const trr_stored_view *v) {
    if (v->planes == 0 || v->rows == 0 || v->cols == 0) return v->offset;
    return trr_stored_index(v, v->planes - 1, v->rows - 1, v->cols - 1) + 1;
}

int64_t trr_stored_index(const trr_stored_view *v, int64_t p, int64_t r, int64_t c) {
    if (v->heads > 0) return v->offset + (p / v->heads) * v->batch_stride + (p % v->heads) * v->plane_stride + r * v->row_stride + c;
    return v->offset + p * v->plane_stride + r * v->row_stride + c;
}

trr_status trr_stored_tensor(const trr_stored_view *v, trr_buffer *buf, trr_tensor *out) {
    size_t es = 0;
    TRR_TRY(trr_dtype_size(v->dtype, &es));
    const size_t byte_offset = (size_t)v->offset * es;
    if (v->heads > 0) { /* attention: [B,H,S,D], or lse's [B,H,S] */
        const int64_t shape[4] = {v->planes / v->heads, v->heads, v->rows, v->cols};
        const int64_t strides[4] = {v->batch_stride, v->plane_stride, v->row_stride, 1};
        return trr_tensor_nd(buf, byte_offset, v->dtype, v->ndim, shape, strides, out); /* ndim 3: the first three */
    }
    if (v->ndim == 1) return trr_tensor_1d(buf, byte_offset, v->dtype, v->cols, out);
    if (v->ndim == 3) {
        trr_tensor t = {.buffer = buf, .offset = byte_offset, .dtype = v->dtype, .ndim = 3,
                        .shape = {v->planes, v->rows, v->cols}, .strides = {v->plane_stride, v->row_stride, 1}};
        if (v->transposed) { /* a batch of transposed matrices: each the transpose of its stored [rows, cols] */
            t.shape[1] = v->cols, t.shape[2] = v->rows;
            t.strides[1] = 1, t.strides[2] = v->row_stride;
        }
        *out = t;
        return TRR_OK;
    }
    trr_tensor t;
    TRR_TRY(trr_tensor_2d(buf, byte_offset, v->dtype, v->rows, v->cols, v->row_stride, &t));
    if (v->transposed) return trr_tensor_transpose(&t, out);
    *out = t;
    return TRR_OK;
}

trr_status trr_case_call(trr_context *ctx, const trr_case *c, const trr_tensor t[TRR_CASE_SLOTS], unsigned flags) {
    const trr_op_desc *d = trr_op_desc_get(c->op);
    if (!d) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "unknown op %d", (int)c->op);
    const trr_tensor *operands[TRR_CASE_SLOTS] = {NULL};
    for (int i = 0; i < d->n_inputs + trr_op_outputs(d) && i < TRR_CASE_SLOTS; i++) {
        const int slot = trr_slot_of_operand(d->n_inputs, i);
        operands[i] = trr_case_has_slot(c, slot) ? &t[slot] : NULL;
    }
    if (d->shape == TRR_SHAPE_MATMUL && !c->params.count)
        return trr_matmul(ctx, operands[0], operands[1], operands[2], c->epilogue, c->alpha, flags);
    if (d->shape == TRR_SHAPE_MATMUL) { /* the case's scales besides its epilogue: the named parameters */
        trr_op_params p = c->params;
        TRR_TRY(trr_op_params_set(&p, "epilogue", (double)c->epilogue));
        TRR_TRY(trr_op_params_set(&p, "allow_tf32", (flags & TRR_MATMUL_ALLOW_TF32) ? 1.0 : 0.0));
        if (c->epilogue == TRR_EPI_LEAKY_RELU) TRR_TRY(trr_op_params_set(&p, "alpha", (double)c->alpha));
        return trr_op_run(ctx, c->op, operands, &p);
    }
    return trr_op_run(ctx, c->op, operands, c->params.count ? &c->params : NULL);
}

trr_status trr_case_call_build(trr_context *ctx, const trr_case *c, const trr_tensor t[TRR_CASE_SLOTS],
                               unsigned flags, trr_call *out_call, int *out_empty) {
    const trr_op_desc *d = trr_op_desc_get(c->op);
    if (!d) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "unknown op %d", (int)c->op);
    const trr_tensor *slots[TRR_SLOTS] = {NULL};
    for (int i = 0; i < TRR_SLOTS; i++)
        if (trr_case_has_slot(c, i)) slots[i] = &t[i];
    double values[TRR_MAX_OP_PARAMS] = {0};
    const int mm = d->shape == TRR_SHAPE_MATMUL;
    TRR_TRY(trr_op_params_resolve(ctx, d, c->params.count ? &c->params : NULL, values));
    TRR_TRY(trr_call_build_slots(ctx, c->op, slots, c->epilogue, c->alpha, flags, out_call, out_empty));
    if (mm) { /* matmul's parameters are the case's epilogue and alpha */
        values[TRR_MATMUL_PARAM_EPILOGUE] = (double)c->epilogue;
        values[TRR_MATMUL_PARAM_ALPHA] = (double)c->alpha;
        values[TRR_MATMUL_PARAM_ALLOW_TF32] = (flags & TRR_MATMUL_ALLOW_TF32) ? 1.0 : 0.0;
    }
    trr_call_set_params(out_call, values);
    return TRR_OK;
}

void trr_case_call_host(trr_call *call, void *const hosts[TRR_CASE_SLOTS]) {
    call->x.mem = hosts[TRR_SLOT_X];
    call->y.mem = hosts[TRR_SLOT_Y];
    call->z.mem = hosts[TRR_SLOT_Z];
    call->u.mem = hosts[TRR_SLOT_U];
    call->w.mem = hosts[TRR_SLOT_W];
}

trr_status trr_case_views_check_size(trr_context *ctx, const trr_case_views *views) {
    uint64_t total = 0;
    for (int i = 0; i < TRR_CASE_SLOTS; i++) {
        if (!views->has[i]) continue;
        const trr_stored_view *v = &views->v[i];
        int64_t n, bytes;
        size_t es = 1;
        trr_dtype_size(v->dtype, &es);
        if (__builtin_mul_overflow(v->planes, v->rows, &n) || __builtin_mul_overflow(n, v->cols, &n) ||
            __builtin_mul_overflow(n, (int64_t)es, &bytes) || __builtin_add_overflow(total, (uint64_t)bytes, &total))
            return trr_error(ctx, TRR_ERR_OVERFLOW, "operand %d of %lld x %lld x %lld elements overflows 64 bits", i,
                             (long long)v->planes, (long long)v->rows, (long long)v->cols);
    }
    trr_device_info info;
    if (ctx && trr_context_device(ctx, &info) == TRR_OK && info.global_memory && total > info.global_memory)
        return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY,
                         "the operands take %.3g GiB, more than the device's memory (%s: %.3g GiB)",
                         (double)total / (1u << 30), info.spec, (double)info.global_memory / (1u << 30));
    return TRR_OK;
}

/* Bytes of the packed case's operands in slots [from, to). */
static double slot_bytes(const trr_case *c, int from, int to) {
    trr_case packed = *c;
    packed.layout = TRR_LAYOUT_PACKED;
    trr_case_views views;
    if (trr_case_views_make(&packed, &views) != TRR_OK) return 0.0;
    double bytes = 0.0;
    for (int i = from; i < to; i++) {
        const trr_stored_view *v = &views.v[i];
        size_t es = 0;
        if (v->planes == 0 || trr_dtype_size(v->dtype, &es) != TRR_OK) continue;
        bytes += (double)v->planes * (double)v->rows * (double)v->cols * (double)es;
    }
    return bytes;
}

double trr_case_bytes(const trr_case *c) { return slot_bytes(c, 0, TRR_CASE_SLOTS); }

double trr_case_output_bytes(const trr_case *c) { return slot_bytes(c, TRR_SLOT_Z, TRR_SLOT_Z + 1); }

trr_status trr_case_packed_call(const trr_case *c, trr_call *out_call) {
    trr_case packed = *c;
    packed.layout = TRR_LAYOUT_PACKED;
    trr_case_views views;
    TRR_TRY(trr_case_views_make(&packed, &views));
    const trr_op_desc *d = trr_op_desc_get(c->op);
    int64_t dims[3];
    trr_case_dims(c, dims);
    trr_call call;
    memset(&call, 0, sizeof call);
    call.op = c->op;
    call.rows = dims[0];
    call.cols = dims[1];
    call.k = d->shape == TRR_SHAPE_MATMUL ? dims[2] : 0;
    call.trans_a = c->trans_a, call.trans_b = c->trans_b;
    call.epilogue = c->epilogue;
    call.alpha = c->alpha;
    call.slices = 1;
    call.slice_count = 1;
    trr_operand *ops[TRR_CASE_SLOTS] = {&call.x, &call.y, &call.z, &call.u, &call.w};
    if (d->shape == TRR_SHAPE_ATTENTION) { /* as core/attention.c normalises it */
        for (int i = 0; i < TRR_CASE_SLOTS; i++) {
            const trr_stored_view *v = &views.v[i];
            ops[i]->dtype = v->dtype;
            if (!views.has[i]) continue;
            ops[i]->batch_stride = v->batch_stride, ops[i]->stride1 = v->plane_stride, ops[i]->stride0 = v->row_stride;
        }
        if (!views.has[TRR_W]) call.w.dtype = TRR_F32;
        call.k = c->attn.skv;
        call.batch = c->attn.b;
        call.attn = (trr_attention_shape){.batch = c->attn.b, .heads_q = c->attn.hq, .heads_kv = c->attn.hkv,
                                          .seq_q = c->attn.sq, .seq_kv = c->attn.skv, .head_dim = c->attn.d,
                                          .has_lse = c->attn.lse};
        double values[TRR_MAX_OP_PARAMS] = {0};
        TRR_TRY(trr_op_params_resolve(NULL, d, c->params.count ? &c->params : NULL, values));
        trr_call_set_params(&call, values);
        *out_call = call;
        return TRR_OK;
    }
    for (int i = 0; i < TRR_CASE_SLOTS; i++) {
        const trr_stored_view *v = &views.v[i];
        ops[i]->dtype = trr_case_dtype(c, i);
        if (!d->operand[i].name) continue;
        if (d->shape == TRR_SHAPE_MATMUL) {
            ops[i]->stride0 = v->row_stride;
            ops[i]->batch_stride = v->ndim == 3 && c->batch > 1 ? v->plane_stride : 0;
            continue;
        }
        ops[i]->stride0 = v->ndim == 3 ? v->plane_stride : d->operand[i].vector ? 1 : v->row_stride;
        ops[i]->stride1 = v->ndim == 3 ? v->row_stride : 0;
    }
    call.batch = trr_case_batch(c);
    double values[TRR_MAX_OP_PARAMS] = {0};
    TRR_TRY(trr_op_params_resolve(NULL, d, c->params.count ? &c->params : NULL, values));
    if (d->shape == TRR_SHAPE_MATMUL) { /* matmul's parameters are the case's epilogue and alpha, and its scales */
        values[TRR_MATMUL_PARAM_EPILOGUE] = (double)c->epilogue;
        values[TRR_MATMUL_PARAM_ALPHA] = (double)c->alpha;
    }
    for (int i = 0; i < TRR_MAX_OP_PARAMS; i++) call.params[i] = values[i];
    *out_call = call;
    return TRR_OK;
}
