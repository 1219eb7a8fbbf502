/* The element-wise rule's converting ops (trr_op_desc.converts: cast, kernels/opencl/cast.cl, found by the
 * op's stem): heuristic, limits and launch, which the rule's own (config.c, elementwise.c) hand them to. */
#include "opencl.h"

#include "config_fields.h"
#include "op_table.h"

#include <stdio.h>

#define ARG(i, v) TRR_TRY(trr_cl_set_arg(ctx, k, (cl_uint)(i), sizeof(v), &(v)))

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* 256 work-items a group (the device's limit if lower); on a GPU 4 elements a work-item, on a CPU driver 1 (it
 * vectorises across work-items itself). */
void trr_cl_convert_choose(trr_context *ctx, trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    trr_config *c = &call->config;
    const int max_threads = dev->max_work_group < 256 ? (int)dev->max_work_group : 256;
    if (!c->threads) c->threads = max_threads;
    if (!c->vector_width) c->vector_width = dev->info.is_gpu ? 4 : 1;
    if (!c->block_n) c->block_n = trr_config_product(c->threads, c->vector_width);
}

trr_status trr_cl_convert_check(trr_context *ctx, const trr_call *call) {
    const trr_config *c = &call->config;
    if (c->vector_width < 1 || c->vector_width > 16)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: config rejected: vector_width must be 1 to 16 (got %d)",
                         c->vector_width);
    return TRR_OK;
}

trr_status trr_cl_convert_launch(trr_context *ctx, const trr_call *call) {
    const trr_op_desc *d = trr_op_desc_get(call->op);
    const trr_operand *x = &call->x, *z = &call->z;
    const int flat = call->rows == 1, vec = flat ? call->config.vector_width : 1;
    char file[48], options[160] = "-cl-std=CL1.2";
    snprintf(file, sizeof file, "%s.cl", d->kernel);
    /* the dtypes are arguments (cast.cl): one program a vector width */
    trr_cl_opt(options, sizeof options, " -DENTRY_%s -DVEC=%d", d->name, vec);
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, file, options, flat ? "flat" : "strided", &k));
    cl_mem xm = x->mem, zm = z->mem;
    cl_long xo = x->offset, zo = z->offset;
    cl_int xdt = trr_cl_dtype_code(x->dtype), zdt = trr_cl_dtype_code(z->dtype);
    const size_t threads = (size_t)call->config.threads;
    if (flat) {
        cl_int n = (cl_int)call->cols;
        ARG(0, xm);
        ARG(1, xo);
        ARG(2, zm);
        ARG(3, zo);
        ARG(4, n);
        ARG(5, xdt);
        ARG(6, zdt);
        size_t global = round_up(((size_t)n + (size_t)vec - 1) / (size_t)vec, threads);
        return trr_cl_launch(ctx, k, 1, &global, &threads);
    }
    cl_int xs = (cl_int)x->stride0, zs = (cl_int)z->stride0, rows = (cl_int)call->rows, cols = (cl_int)call->cols;
    ARG(0, xm);
    ARG(1, xo);
    ARG(2, xs);
    ARG(3, zm);
    ARG(4, zo);
    ARG(5, zs);
    ARG(6, rows);
    ARG(7, cols);
    ARG(8, xdt);
    ARG(9, zdt);
    size_t global[2] = {round_up((size_t)cols, threads), (size_t)rows};
    size_t local[2] = {threads, 1};
    return trr_cl_launch(ctx, k, 2, global, local);
}
