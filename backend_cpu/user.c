/* The CPU backend's user path (core/user_op.h): the definition's C function, given the call's operands as host
 * addresses (docs/custom-ops.md, the CPU's convention), on the thread pool: a call of several rows (and any row
 * op's call) in pieces of whole rows, one row of an element-wise op (a packed call) in pieces of columns. Each piece is a view of its own, so the function
 * sees nothing but a smaller call. */
#include "cpu.h"

#include "user_op.h"

/* columns a piece of one row takes: enough that waking a thread costs little against it */
#define PIECE_COLS 16384

typedef struct user_job {
    const trr_user_op *u;
    trr_op_cpu_args whole;         /* an element-wise op's */
    trr_op_cpu_row_args whole_row; /* a row op's */
    size_t es[TRR_MAX_ROW_OPERANDS];
    int n;
    int by_rows;
} user_job;

static void user_task(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    const user_job *job = arg;
    if (job->u->row_op) { /* whole rows; its vectors the same for every row */
        trr_op_cpu_row_args a = job->whole_row;
        for (int i = 0; i < job->n; i++)
            if (!job->u->vector[i])
                a.operands[i] = (unsigned char *)a.operands[i] + (size_t)(begin * a.strides[i]) * job->es[i];
        a.rows = end - begin;
        job->u->row_cpu(&a);
        return;
    }
    trr_op_cpu_args a = job->whole;
    if (job->by_rows) {
        for (int i = 0; i < job->n; i++)
            a.operands[i] = (unsigned char *)a.operands[i] + (size_t)(begin * a.row_strides[i]) * job->es[i];
        a.rows = end - begin;
    } else {
        const int64_t c0 = begin * PIECE_COLS, c1 = end * PIECE_COLS < a.cols ? end * PIECE_COLS : a.cols;
        for (int i = 0; i < job->n; i++) a.operands[i] = (unsigned char *)a.operands[i] + (size_t)c0 * job->es[i];
        a.cols = c1 - c0;
    }
    job->u->def.cpu(&a);
}

trr_status trr_cpu_user(trr_context *ctx, const trr_call *call) {
    const trr_user_op *u = trr_op_desc_get(call->op)->user;
    if (!u->def.cpu && !u->row_cpu)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cpu: %s has no kernel here: its definition gives no C function",
                         u->name);
    const trr_operand *ops[TRR_MAX_ROW_OPERANDS];
    user_job job = {.u = u, .n = trr_user_operands(u, call, ops), .by_rows = call->rows > 1 || u->row_op};
    int tiles[TRR_MAX_TILE_PARAMS];
    trr_user_tiles(u, &call->config, tiles);
    job.whole = (trr_op_cpu_args){{0}, {0}, call->rows, call->cols, call->z.dtype, call->params, tiles, u->def.user};
    job.whole_row = (trr_op_cpu_row_args){{0}, {0}, job.n, call->rows, call->cols, call->z.dtype, call->params,
                                          tiles, u->def.user};
    for (int i = 0; i < job.n; i++) {
        trr_dtype_size(ops[i]->dtype, &job.es[i]);
        void *at0 = (unsigned char *)ops[i]->mem + (size_t)ops[i]->offset * job.es[i];
        job.whole_row.operands[i] = at0;
        job.whole_row.strides[i] = ops[i]->stride0;
        if (u->row_op) continue; /* an element-wise op has at most TRR_MAX_USER_OPERANDS */
        job.whole.operands[i] = at0;
        job.whole.row_strides[i] = ops[i]->stride0;
    }
    const int64_t units = job.by_rows ? call->rows : (call->cols + PIECE_COLS - 1) / PIECE_COLS;
    /* rows: as many as make a piece of about PIECE_COLS elements */
    int64_t grain = job.by_rows ? PIECE_COLS / (call->cols > 0 ? call->cols : 1) : 1;
    if (grain < 1) grain = 1;
    trr_cpu_parallel_for(trr_cpu_ctx_pool(ctx), units, grain, user_task, &job);
    return TRR_OK;
}
