/*
 * Calls past the 32-bit index (validate.h: trr_call_check_parts, trr_call_run_parts). Kernels index a view from
 * its offset with 32-bit integers, which is faster where it matters; the front-end keeps that true by cutting a
 * call whose operands span 2^31 elements or more into parts that each span fewer, along what the op's shape rule
 * lets it cut without changing any result: element ranges (element-wise), ranges of rows (every rule with rows),
 * ranges of columns (element-wise rows, rgb_to_grey, matmul's B and C) and of a batch's matrices (matmul). Each
 * part is the same call at offsets further into the buffers; offsets are 64-bit everywhere. What no cut brings
 * under the limit (one row of 2^31 elements for a row-wise op, one column of matmul's B as stored) stays
 * TRR_ERR_OVERFLOW, with the reason. attention cuts along its own axes (attention_parts.c).
 */
#include "validate.h"

#include <stdio.h>

static int64_t part_limit = (int64_t)1 << 31;

void trr_call_part_limit_set(int64_t elements) { part_limit = elements > 0 ? elements : (int64_t)1 << 31; }

int64_t trr_call_part_limit(void) { return part_limit; }

/* The axes a part may be cut along. */
enum { AXIS_BATCH = 0, AXIS_ROWS, AXIS_COLS, AXES };

/* The elements operand o of call c spans from its offset when the call has the sizes n[] (batch, rows, cols);
 * 0 where the op has no such operand. */
static int64_t span(const trr_call *c, const trr_op_desc *d, int slot, const int64_t n[AXES]) {
    const int64_t rows = n[AXIS_ROWS], cols = n[AXIS_COLS];
    if (!d->operand[slot].name) return 0;
    const trr_operand *const os[TRR_SLOTS] = {&c->x, &c->y, &c->z, &c->u, &c->w};
    const trr_operand *o = os[slot];
    switch (d->shape) {
    case TRR_SHAPE_PLANES:
        if (slot == TRR_SLOT_X) return 2 * o->stride0 + (rows - 1) * o->stride1 + cols;
        return (rows - 1) * o->stride0 + cols;
    case TRR_SHAPE_ROW_REDUCE:
        if (slot == TRR_SLOT_Z) return (rows - 1) * o->stride0 + 1;
        return (rows - 1) * o->stride0 + cols;
    case TRR_SHAPE_ROW_NORM:
        if (d->operand[slot].vector) return (cols - 1) * o->stride0 + 1; /* w, b: [N] */
        return (rows - 1) * o->stride0 + cols;
    case TRR_SHAPE_MATMUL: {
        int64_t one;
        if (slot == TRR_SLOT_X) one = c->trans_a ? (c->k - 1) * o->stride0 + rows : (rows - 1) * o->stride0 + c->k;
        else if (slot == TRR_SLOT_Y) one = c->trans_b ? (cols - 1) * o->stride0 + c->k : (c->k - 1) * o->stride0 + cols;
        else one = (rows - 1) * o->stride0 + cols;
        if (c->k == 0 && slot != TRR_SLOT_Z) one = 0;
        return one + (n[AXIS_BATCH] - 1) * o->batch_stride;
    }
    default: return (rows - 1) * o->stride0 + cols; /* element-wise and rows: rows x cols */
    }
}

/* Whether parts of the shape rule may be cut along an axis. */
static int cuttable(const trr_op_desc *d, int axis) {
    switch (axis) {
    case AXIS_BATCH: return d->shape == TRR_SHAPE_MATMUL;
    case AXIS_ROWS: return 1;
    default:
        return d->shape == TRR_SHAPE_ELEMENTWISE || d->shape == TRR_SHAPE_PLANES || d->shape == TRR_SHAPE_MATMUL;
    }
}

/* The first operand that does not fit at sizes n[], or -1. */
static int too_large(const trr_call *c, const trr_op_desc *d, const int64_t n[AXES], int64_t *out_span) {
    for (int s = 0; s < TRR_SLOTS; s++) {
        const int64_t e = span(c, d, s, n);
        if (e >= part_limit) {
            *out_span = e;
            return s;
        }
    }
    return -1;
}

/* Columns a part takes: whole multiples of 1024 elements where that many fit, so every part but the last
 * starts where the whole call's vectors would (the kernels' aligned paths). */
static int64_t round_cols(int64_t n) { return n >= 2048 ? n / 1024 * 1024 : n; }

/* The part sizes (batch, rows, cols) the call runs in: the call's own where it fits, else cut in halves along
 * the first axis that makes a part smaller where it is too large. 0 when no cut gets there (why says which
 * operand and why). */
static int part_sizes(const trr_call *c, int64_t n[AXES], char *why, size_t cap) {
    const trr_op_desc *d = trr_op_desc_get(c->op);
    n[AXIS_BATCH] = c->batch > 1 ? c->batch : 1;
    n[AXIS_ROWS] = c->rows;
    n[AXIS_COLS] = c->cols;
    for (;;) {
        int64_t e = 0;
        const int slot = too_large(c, d, n, &e);
        if (slot < 0) return 1;
        int cut = 0;
        for (int a = 0; a < AXES && !cut; a++) {
            if (!cuttable(d, a) || n[a] <= 1) continue;
            int64_t m[AXES] = {n[0], n[1], n[2]};
            m[a] = (n[a] + 1) / 2;
            if (a == AXIS_COLS) m[a] = round_cols(m[a]);
            if (span(c, d, slot, m) < e) {
                n[a] = m[a];
                cut = 1;
            }
        }
        if (!cut) {
            snprintf(why, cap,
                     "%s: %s spans %lld elements from its offset even in the smallest part the op can be cut into "
                     "(%s), over the 2^31 a kernel indexes",
                     d->name, d->operand[slot].name, (long long)e,
                     d->shape == TRR_SHAPE_MATMUL ? "a column of B, a row of A or C"
                     : cuttable(d, AXIS_COLS)     ? "one element of each operand"
                                                  : "one row");
            return 0;
        }
    }
}

trr_status trr_call_check_parts(trr_context *ctx, const trr_call *call) {
    if (trr_op_desc_get(call->op)->shape == TRR_SHAPE_ATTENTION) return trr_attention_check_parts(ctx, call);
    int64_t n[AXES];
    char why[320];
    if (!part_sizes(call, n, why, sizeof why)) return trr_error(ctx, TRR_ERR_OVERFLOW, "%s", why);
    return TRR_OK;
}

static void advance(trr_operand *o, int64_t elements) { o->offset += elements; }

trr_status trr_call_run_parts(trr_context *ctx, const trr_call *call,
                              trr_status (*run)(trr_context *ctx, const trr_call *part)) {
    if (trr_op_desc_get(call->op)->shape == TRR_SHAPE_ATTENTION) return trr_attention_run_parts(ctx, call, run);
    int64_t n[AXES];
    char why[320];
    if (!part_sizes(call, n, why, sizeof why)) return trr_error(ctx, TRR_ERR_OVERFLOW, "%s", why);
    const trr_op_desc *d = trr_op_desc_get(call->op);
    const int64_t batch = call->batch > 1 ? call->batch : 1;
    if (n[AXIS_BATCH] == batch && n[AXIS_ROWS] == call->rows && n[AXIS_COLS] == call->cols) return run(ctx, call);
    for (int64_t b0 = 0; b0 < batch; b0 += n[AXIS_BATCH])
        for (int64_t r0 = 0; r0 < call->rows; r0 += n[AXIS_ROWS])
            for (int64_t c0 = 0; c0 < call->cols; c0 += n[AXIS_COLS]) {
                trr_call p = *call;
                if (d->shape == TRR_SHAPE_MATMUL) {
                    p.batch = batch - b0 < n[AXIS_BATCH] ? batch - b0 : n[AXIS_BATCH];
                    advance(&p.x, b0 * call->x.batch_stride + (call->trans_a ? r0 : r0 * call->x.stride0));
                    advance(&p.y, b0 * call->y.batch_stride + (call->trans_b ? c0 * call->y.stride0 : c0));
                    advance(&p.z, b0 * call->z.batch_stride + r0 * call->z.stride0 + c0);
                    if (p.batch <= 1) p.x.batch_stride = p.y.batch_stride = p.z.batch_stride = 0;
                } else if (d->shape == TRR_SHAPE_PLANES) {
                    advance(&p.x, r0 * call->x.stride1 + c0);
                    advance(&p.z, r0 * call->z.stride0 + c0);
                } else {
                    /* rows of x, y and z; row-reduce's z one element a row; the row norms' [M,N] operands by
                     * rows, their vectors (w, b) whole */
                    advance(&p.x, r0 * call->x.stride0 + c0);
                    if (d->shape == TRR_SHAPE_ELEMENTWISE && d->operand[TRR_SLOT_Y].name)
                        advance(&p.y, r0 * call->y.stride0 + c0);
                    advance(&p.z, r0 * call->z.stride0 + (d->shape == TRR_SHAPE_ROW_REDUCE ? 0 : c0));
                    if (d->shape == TRR_SHAPE_ROW_NORM) {
                        trr_operand *more[3] = {&p.y, &p.u, &p.w};
                        const int slots[3] = {TRR_SLOT_Y, TRR_SLOT_U, TRR_SLOT_W};
                        for (int m = 0; m < 3; m++)
                            if (d->operand[slots[m]].name && !d->operand[slots[m]].vector)
                                advance(more[m], r0 * more[m]->stride0);
                    }
                }
                p.rows = call->rows - r0 < n[AXIS_ROWS] ? call->rows - r0 : n[AXIS_ROWS];
                p.cols = call->cols - c0 < n[AXIS_COLS] ? call->cols - c0 : n[AXIS_COLS];
                TRR_TRY(run(ctx, &p));
            }
    return TRR_OK;
}
