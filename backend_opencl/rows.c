/* The rows rule (softmax) and the row-reduce rule (row_sum): one work-group per row, or per `per_group` rows for
 * short softmax rows on GPUs. Each runs the file of the op's stem (kernels/opencl/softmax.cl, row_sum.cl) by the
 * op's name: the rows rule's kernels are <name>_regs and <name>_online. */
#include "opencl.h"

#include "op_table.h"

#include <stdio.h>

const char *const trr_cl_rows_kinds[TRR_CL_ROWS_KINDS] = {"_regs", "_online"};

#define ARG(i, v) TRR_TRY(trr_cl_set_arg(ctx, k, (cl_uint)(i), sizeof(v), &(v)))

static trr_status launch_rows(trr_context *ctx, cl_kernel k, const trr_call *call, int per_group) {
    const trr_operand *x = &call->x, *z = &call->z;
    cl_mem xm = x->mem, zm = z->mem;
    cl_long xo = x->offset, zo = z->offset;
    cl_int xs = (cl_int)x->stride0, zs = (cl_int)z->stride0, n = (cl_int)call->cols;
    ARG(0, xm);
    ARG(1, xo);
    ARG(2, xs);
    ARG(3, zm);
    ARG(4, zo);
    ARG(5, zs);
    ARG(6, n);
    size_t g = (size_t)per_group;
    size_t local = (size_t)call->config.threads * g;
    size_t global = ((size_t)call->rows + g - 1) / g * local;
    return trr_cl_launch(ctx, k, 1, &global, &local);
}

trr_status trr_cl_run_softmax(trr_context *ctx, const trr_call *call) {
    int threads = call->config.threads, per = call->config.block_n / threads;
    /* vector_width 4: whole 4-element vectors where every row starts on a 4-element boundary (rows.cl: VEC) */
    const trr_operand *x = &call->x, *z = &call->z;
    int vec = call->config.vector_width == 4 && per % 4 == 0 && x->stride0 % 4 == 0 && x->offset % 4 == 0 &&
              z->stride0 % 4 == 0 && z->offset % 4 == 0;
    int regs = call->cols <= call->config.block_n;
    /* On GPUs a work-group of at least 256 work-items: rows of 64 work-items each made 4096 work-groups of 64 at
     * N = 256, whose dispatch, not bandwidth, set the time. */
    int per_group = regs && ((const trr_cl_dev *)ctx->dev)->info.is_gpu && threads < 256 ? 256 / threads : 1;
    const trr_op_desc *d = trr_op_desc_get(call->op);
    char options[192] = "-cl-std=CL1.2", file[64], entry[64];
    trr_cl_opt(options, sizeof options, " -DTHREADS=%d -DPER=%d -DVEC=%d -DROWS=%d -DX_DT=%d -DZ_DT=%d", threads, per,
               vec, per_group, trr_cl_dtype_code(call->x.dtype), trr_cl_dtype_code(call->z.dtype));
    snprintf(file, sizeof file, "%s.cl", d->kernel);
    snprintf(entry, sizeof entry, "%s%s", d->name, trr_cl_rows_kinds[regs ? 0 : 1]);
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, file, options, entry, &k));
    if (regs) {
        cl_int rows = (cl_int)call->rows;
        ARG(7, rows);
    }
    return launch_rows(ctx, k, call, per_group);
}

trr_status trr_cl_run_row_sum(trr_context *ctx, const trr_call *call) {
    const trr_op_desc *d = trr_op_desc_get(call->op);
    char options[128] = "-cl-std=CL1.2", file[64];
    trr_cl_opt(options, sizeof options, " -DTHREADS=%d -DX_DT=%d", call->config.threads,
               trr_cl_dtype_code(call->x.dtype));
    snprintf(file, sizeof file, "%s.cl", d->kernel);
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, file, options, d->name, &k));
    return launch_rows(ctx, k, call, 1);
}
