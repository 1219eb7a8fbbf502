/* The OpenCL backend's user path (core/user_op.h): the definition's OpenCL C, built with its tile parameters as
 * defines, called with docs/custom-ops.md's arguments: the operands' buffers, their offsets (long), rows and cols
 * (int), their row strides (int), then the parameters (float or int). */
#include "opencl.h"

#include "user_op.h"

#include <stdio.h>
#include <string.h>

trr_status trr_cl_run_user(trr_context *ctx, const trr_call *call) {
    const trr_user_op *u = trr_op_desc_get(call->op)->user;
    int64_t groups[3];
    int threads = 0;
    TRR_TRY(trr_user_prepare(ctx, u, call, TRR_USER_OPENCL, "opencl", ctx->info.max_threads_per_block, groups,
                             &threads));
    char options[512] = "-cl-std=CL1.2 ", file[32];
    trr_user_defines(u, call, threads, options + strlen(options), sizeof options - strlen(options));
    snprintf(file, sizeof file, "user#%d", (int)call->op);
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel_text(ctx, file, u->source[TRR_USER_OPENCL], options, u->entry[TRR_USER_OPENCL], &k));

    const trr_operand *ops[TRR_MAX_ROW_OPERANDS];
    const int n = trr_user_operands(u, call, ops);
    cl_uint arg = 0;
    for (int i = 0; i < n; i++) {
        cl_mem m = ops[i]->mem;
        TRR_TRY(trr_cl_set_arg(ctx, k, arg++, sizeof m, &m));
    }
    for (int i = 0; i < n; i++) {
        cl_long off = (cl_long)ops[i]->offset;
        TRR_TRY(trr_cl_set_arg(ctx, k, arg++, sizeof off, &off));
    }
    cl_int rows = (cl_int)call->rows, cols = (cl_int)call->cols;
    TRR_TRY(trr_cl_set_arg(ctx, k, arg++, sizeof rows, &rows));
    TRR_TRY(trr_cl_set_arg(ctx, k, arg++, sizeof cols, &cols));
    for (int i = 0; i < n; i++) {
        cl_int s = (cl_int)ops[i]->stride0;
        TRR_TRY(trr_cl_set_arg(ctx, k, arg++, sizeof s, &s));
    }
    for (int i = 0; i < u->desc.n_params; i++) {
        if (trr_user_param_is_float(u, i)) {
            cl_float f = (cl_float)call->params[i];
            TRR_TRY(trr_cl_set_arg(ctx, k, arg++, sizeof f, &f));
        } else {
            cl_int v = (cl_int)call->params[i];
            TRR_TRY(trr_cl_set_arg(ctx, k, arg++, sizeof v, &v));
        }
    }
    size_t global[3], local[3] = {(size_t)threads, 1, 1};
    for (int a = 0; a < 3; a++) global[a] = (size_t)groups[a] * local[a];
    return trr_cl_launch(ctx, k, 3, global, local);
}
