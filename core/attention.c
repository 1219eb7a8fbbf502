/*
 * attention's validation and normalisation (validate.h; backend.h's attention form; docs/ops.md, attention).
 *
 * The checks run in validate.c's order (arguments, dtypes, shapes, strides, alignment, overflow, bounds,
 * overlap), each class with its own status. Rank-4 views with any positive strides on B, H and S are accepted
 * (torch's [B,S,H,D] is a permuted view); D must be contiguous. An output's rows must not overlap one another:
 * sorted by stride, each dimension must step past everything inside it.
 *
 * What reaches a backend always has B, Hq, Hkv, Sq, Skv >= 1 and 1 <= D <= TRR_ATTN_MAX_HEAD_DIM. A call whose
 * outputs are empty does nothing; one with Skv = 0 (no key at all) is written here: o = 0 and lse = -inf, what
 * every row that sees no key gives.
 */
#include "validate.h"

#include "op_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { Q = TRR_SLOT_X, K = TRR_SLOT_Y, O = TRR_SLOT_Z, V = TRR_SLOT_U, LSE = TRR_SLOT_W };

static const char *dtype_name(trr_dtype dt) {
    const char *n = "?";
    trr_dtype_name(dt, &n);
    return n;
}

static trr_status check_rank(trr_context *ctx, const trr_tensor *t, const char *name, int rank, const char *form) {
    if (t->ndim == rank) return TRR_OK;
    char got[96];
    trr_shape_text(t, got, sizeof got);
    return trr_error(ctx, TRR_ERR_SHAPE, "attention: %s must be %d-D %s, got %s", name, rank, form, got);
}

/* dimension i of t must equal want (named what) */
static trr_status check_dim(trr_context *ctx, const trr_tensor *t, const char *name, int i, int64_t want,
                            const char *what) {
    if (t->shape[i] == want) return TRR_OK;
    char got[96];
    trr_shape_text(t, got, sizeof got);
    return trr_error(ctx, TRR_ERR_SHAPE, "attention: %s is %s but its %s must be %lld", name, got, what,
                     (long long)want);
}

/* Positive strides; the last (D) contiguous when inner_unit. */
static trr_status check_strides(trr_context *ctx, const trr_tensor *t, const char *name, int inner_unit) {
    for (int i = 0; i < t->ndim; i++)
        if (t->strides[i] < 1)
            return trr_error(ctx, TRR_ERR_STRIDE, "attention: %s's stride %d is %lld; strides must be positive", name,
                             i, (long long)t->strides[i]);
    if (inner_unit && t->strides[t->ndim - 1] != 1)
        return trr_error(ctx, TRR_ERR_STRIDE, "attention: %s's D stride is %lld; D must be contiguous (stride 1)",
                         name, (long long)t->strides[t->ndim - 1]);
    return TRR_OK;
}

/* An output's rows (runs of `inner` contiguous elements at the outer dims) must not overlap: with the outer
 * dimensions of more than one element sorted by stride, each stride must reach past the span inside it. */
static trr_status check_rows_apart(trr_context *ctx, const trr_tensor *t, const char *name, int outer,
                                   int64_t inner) {
    int idx[TRR_MAX_DIMS], n = 0;
    for (int i = 0; i < outer; i++)
        if (t->shape[i] > 1) idx[n++] = i;
    for (int a = 1; a < n; a++) /* insertion sort by stride */
        for (int b = a; b > 0 && t->strides[idx[b]] < t->strides[idx[b - 1]]; b--) {
            const int s = idx[b];
            idx[b] = idx[b - 1];
            idx[b - 1] = s;
        }
    int64_t span = inner;
    for (int j = 0; j < n; j++) {
        const int i = idx[j];
        if (t->strides[i] < span)
            return trr_error(ctx, TRR_ERR_OVERLAP,
                             "attention: %s's dimension %d (stride %lld) steps inside the %lld elements before it, "
                             "so its elements overlap",
                             name, i, (long long)t->strides[i], (long long)span);
        int64_t s;
        if (__builtin_mul_overflow(t->strides[i], t->shape[i] - 1, &s) || __builtin_add_overflow(s, span, &span))
            return trr_error(ctx, TRR_ERR_OVERFLOW, "attention: %s's extent overflows 64 bits", name);
    }
    return TRR_OK;
}

/* A rank-4 (or lse's rank-3) view: B, H, S strides into batch_stride, stride1, stride0. */
static trr_operand operand_of(const trr_tensor *t) {
    size_t es = 1;
    trr_dtype_size(t->dtype, &es);
    trr_operand o;
    memset(&o, 0, sizeof o);
    o.mem = t->buffer->mem;
    o.offset = (int64_t)(t->offset / es);
    o.dtype = t->dtype;
    o.batch_stride = t->strides[0];
    o.stride1 = t->strides[1];
    o.stride0 = t->strides[2];
    return o;
}

trr_status trr_attention_call_build(trr_context *ctx, const trr_tensor *const slots[TRR_SLOTS], trr_call *out_call,
                                    int *out_empty) {
    static const char *names[TRR_SLOTS] = {"q", "k", "o", "v", "lse"};
    const trr_tensor *q = slots[Q], *k = slots[K], *v = slots[V], *o = slots[O], *lse = slots[LSE];

    /* 1. arguments: every input and o; lse only when given */
    for (int s = 0; s < TRR_SLOTS; s++)
        if (s != LSE || lse) TRR_TRY(trr_validate_tensor(ctx, slots[s], names[s]));

    /* 2. dtypes: q, k, v and o alike (the op table's signatures), lse f32 */
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return trr_error(ctx, TRR_ERR_DTYPE, "attention: inputs disagree (q is %s, k is %s, v is %s)",
                         dtype_name(q->dtype), dtype_name(k->dtype), dtype_name(v->dtype));
    if (!trr_op_allows(TRR_OP_ATTENTION, q->dtype, o->dtype))
        return trr_error(ctx, TRR_ERR_DTYPE, "attention does not take %s -> %s (o has the inputs' dtype: f32, f16 or "
                         "bf16)", dtype_name(q->dtype), dtype_name(o->dtype));
    if (lse && lse->dtype != TRR_F32)
        return trr_error(ctx, TRR_ERR_DTYPE, "attention: lse must be f32, got %s", dtype_name(lse->dtype));

    /* 3. shapes */
    TRR_TRY(check_rank(ctx, q, "q", 4, "[B,Hq,Sq,D]"));
    TRR_TRY(check_rank(ctx, k, "k", 4, "[B,Hkv,Skv,D]"));
    TRR_TRY(check_rank(ctx, v, "v", 4, "[B,Hkv,Skv,D]"));
    TRR_TRY(check_rank(ctx, o, "o", 4, "[B,Hq,Sq,D]"));
    if (lse) TRR_TRY(check_rank(ctx, lse, "lse", 3, "[B,Hq,Sq]"));
    const int64_t B = q->shape[0], Hq = q->shape[1], Sq = q->shape[2], D = q->shape[3];
    const int64_t Hkv = k->shape[1], Skv = k->shape[2];
    TRR_TRY(check_dim(ctx, k, "k", 0, B, "batch (q's B)"));
    TRR_TRY(check_dim(ctx, k, "k", 3, D, "head dimension (q's D)"));
    for (int i = 0; i < 4; i++)
        TRR_TRY(check_dim(ctx, v, "v", i, k->shape[i], i == 3 ? "head dimension (k's D)" : "size (k's)"));
    for (int i = 0; i < 4; i++) TRR_TRY(check_dim(ctx, o, "o", i, q->shape[i], "size (q's)"));
    if (lse)
        for (int i = 0; i < 3; i++) TRR_TRY(check_dim(ctx, lse, "lse", i, q->shape[i], "size ([B,Hq,Sq] of q)"));
    if (D < 1 || D > TRR_ATTN_MAX_HEAD_DIM)
        return trr_error(ctx, TRR_ERR_SHAPE, "attention: head dimension D = %lld; the op takes 1 to %d",
                         (long long)D, TRR_ATTN_MAX_HEAD_DIM);
    if (Hq > 0 && (Hkv < 1 || Hq % Hkv != 0))
        return trr_error(ctx, TRR_ERR_SHAPE,
                         "attention: q has %lld heads and k, v %lld; Hq must be a multiple of Hkv (grouped-query "
                         "attention)", (long long)Hq, (long long)Hkv);

    /* 4. strides: positive, D contiguous; the outputs' rows apart */
    for (int s = 0; s < TRR_SLOTS; s++)
        if (slots[s]) TRR_TRY(check_strides(ctx, slots[s], names[s], s != LSE));
    TRR_TRY(check_rows_apart(ctx, o, "o", 3, D));
    if (lse) TRR_TRY(check_rows_apart(ctx, lse, "lse", 3, 1));

    /* 5-7. alignment, overflow, bounds */
    size_t begin[TRR_SLOTS] = {0}, end[TRR_SLOTS] = {0};
    for (int s = 0; s < TRR_SLOTS; s++)
        if (slots[s]) TRR_TRY(trr_validate_extent(ctx, slots[s], names[s], &begin[s], &end[s]));

    /* 8. overlap: neither output may share bytes with an input or with the other output */
    const int outs[2] = {O, LSE};
    for (int a = 0; a < 2; a++) {
        const int w = outs[a];
        if (!slots[w] || begin[w] == end[w]) continue;
        for (int s = 0; s < TRR_SLOTS; s++) {
            if (s == w || !slots[s] || (s == O && w == LSE)) continue; /* o against lse: checked once, from o */
            if (slots[s]->buffer == slots[w]->buffer && begin[s] < end[w] && begin[w] < end[s])
                return trr_error(ctx, TRR_ERR_OVERLAP,
                                 "attention: output %s overlaps %s (bytes [%zu,%zu) and [%zu,%zu))", names[w], names[s],
                                 begin[w], end[w], begin[s], end[s]);
        }
    }

    /* normalise */
    trr_call call;
    memset(&call, 0, sizeof call);
    call.op = TRR_OP_ATTENTION;
    call.epilogue = TRR_EPI_NONE;
    call.slices = 1;
    call.slice_count = 1;
    call.x = operand_of(q);
    call.y = operand_of(k);
    call.u = operand_of(v);
    call.z = operand_of(o);
    if (lse) call.w = operand_of(lse);
    else call.w.dtype = TRR_F32;
    call.attn = (trr_attention_shape){.batch = B, .heads_q = Hq, .heads_kv = Hkv, .seq_q = Sq, .seq_kv = Skv,
                                      .head_dim = D, .has_lse = lse != NULL};
    call.rows = Sq;
    call.cols = D;
    call.k = Skv;
    call.batch = B;
    trr_attention_set_params(&call);

    int empty = TRR_CALL_RUNS;
    if (B == 0 || Hq == 0 || Sq == 0) empty = TRR_CALL_NOTHING; /* both outputs empty */
    else if (Skv == 0) empty = TRR_CALL_IDENTITY;                /* no key: o = 0, lse = -inf */
    /* views past 2^31 elements run in parts each kernel can index (attention_parts.c), refused if none can */
    if (empty == TRR_CALL_RUNS) TRR_TRY(trr_call_check_parts(ctx, &call));
    *out_call = call;
    *out_empty = empty;
    return TRR_OK;
}

void trr_attention_set_params(trr_call *call) {
    const double scale = call->params[TRR_ATTN_PARAM_SCALE];
    const double d = (double)(call->attn.head_dim > 0 ? call->attn.head_dim : 1);
    call->attn.scale = scale != 0.0 ? (float)scale : (float)(1.0 / sqrt(d));
    call->attn.causal = call->params[TRR_ATTN_PARAM_CAUSAL] != 0.0;
}

/* Calls fn on every contiguous run of an operand's rows: outer dims (B, H, S) with sizes n[] and strides st[],
 * rows of `inner` contiguous elements; neighbouring dims merge where they are contiguous. */
typedef trr_status (*run_fn)(trr_context *ctx, const trr_operand *op, int64_t at, int64_t count);

static trr_status for_each_run(trr_context *ctx, const trr_operand *op, const int64_t n[3], int64_t inner,
                               run_fn fn) {
    const int64_t st[3] = {op->batch_stride, op->stride1, op->stride0};
    /* the innermost dims that continue the run */
    int64_t run = inner;
    int split = 3; /* dims [0, split) are looped over; [split, 3) are inside one run */
    while (split > 0 && (n[split - 1] == 1 || st[split - 1] == run)) {
        run *= n[split - 1];
        split--;
    }
    int64_t idx[3] = {0, 0, 0};
    for (;;) {
        int64_t at = op->offset;
        for (int i = 0; i < split; i++) at += idx[i] * st[i];
        TRR_TRY(fn(ctx, op, at, run));
        int i = split - 1;
        while (i >= 0 && ++idx[i] == n[i]) idx[i--] = 0;
        if (i < 0) return TRR_OK;
    }
}

static trr_status zero_run(trr_context *ctx, const trr_operand *op, int64_t at, int64_t count) {
    size_t es = 1;
    TRR_TRY(trr_dtype_size(op->dtype, &es));
    return ctx->backend->fill(ctx, op->mem, (size_t)at * es, (size_t)count * es, 0);
}

static trr_status minus_inf_run(trr_context *ctx, const trr_operand *op, int64_t at, int64_t count) {
    enum { CHUNK = 4096 };
    float buf[CHUNK];
    const int64_t first = count < CHUNK ? count : CHUNK;
    for (int64_t i = 0; i < first; i++) buf[i] = -INFINITY;
    for (int64_t done = 0; done < count; done += CHUNK) {
        const int64_t m = count - done < CHUNK ? count - done : CHUNK;
        TRR_TRY(ctx->backend->write(ctx, op->mem, (size_t)(at + done) * 4, buf, (size_t)m * 4));
    }
    return TRR_OK;
}

trr_status trr_attention_write_empty(trr_context *ctx, const trr_call *call) {
    const trr_attention_shape *a = &call->attn;
    const int64_t n[3] = {a->batch, a->heads_q, a->seq_q};
    TRR_TRY(for_each_run(ctx, &call->z, n, a->head_dim, zero_run));
    if (a->has_lse) TRR_TRY(for_each_run(ctx, &call->w, n, 1, minus_inf_run));
    return TRR_OK;
}
