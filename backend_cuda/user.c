/* The CUDA backend's user path (core/user_op.h): the definition's CUDA C, compiled by NVRTC with its tile
 * parameters as defines and called with docs/custom-ops.md's arguments: the operands' base pointers, their
 * offsets in elements (long long), rows and cols (int), their row strides (int), then the parameters (float or
 * int). The entry must be extern "C". */
#include "trr_cuda.h"

#include "user_op.h"

#include <stdio.h>
#include <string.h>

trr_status trr_cuda_user_prepare(trr_context *ctx, const trr_call *call, int64_t groups[3], int *threads) {
    const int most = ctx->info.max_threads_per_block > 0 ? ctx->info.max_threads_per_block : 1024;
    return trr_user_prepare(ctx, trr_op_desc_get(call->op)->user, call, TRR_USER_CUDA, "cuda", most, groups,
                            threads);
}

trr_status trr_cuda_run_user(trr_context *ctx, const trr_call *call) {
    const trr_user_op *u = trr_op_desc_get(call->op)->user;
    int64_t groups[3];
    int threads = 0;
    TRR_TRY(trr_cuda_user_prepare(ctx, call, groups, &threads));
    if (groups[1] > 65535 || groups[2] > 65535)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda: %s: %lld x %lld blocks along y and z, at most 65535 each",
                         u->name, (long long)groups[1], (long long)groups[2]);
    char file[32];
    snprintf(file, sizeof file, "user#%d", (int)call->op);
    trr_cuda_variant v = {.file = file, .text = u->source[TRR_USER_CUDA]};
    trr_user_defines(u, call, threads, v.defines, sizeof v.defines);
    CUfunction fn;
    TRR_TRY(trr_cuda_get_function(ctx, &v, u->entry[TRR_USER_CUDA], &fn));

    const trr_operand *ops[TRR_MAX_ROW_OPERANDS];
    const int n = trr_user_operands(u, call, ops);
    CUdeviceptr base[TRR_MAX_ROW_OPERANDS];
    long long offs[TRR_MAX_ROW_OPERANDS];
    int strides[TRR_MAX_ROW_OPERANDS];
    for (int i = 0; i < n; i++) {
        trr_operand at0 = *ops[i];
        at0.offset = 0;
        base[i] = trr_cuda_operand_ptr(&at0);
        offs[i] = (long long)ops[i]->offset;
        strides[i] = (int)ops[i]->stride0;
    }
    int rows = (int)call->rows, cols = (int)call->cols;
    union { float f; int i; } params[TRR_MAX_OP_PARAMS];
    void *args[3 * TRR_MAX_ROW_OPERANDS + 2 + TRR_MAX_OP_PARAMS];
    int a = 0;
    for (int i = 0; i < n; i++) args[a++] = &base[i];
    for (int i = 0; i < n; i++) args[a++] = &offs[i];
    args[a++] = &rows;
    args[a++] = &cols;
    for (int i = 0; i < n; i++) args[a++] = &strides[i];
    for (int i = 0; i < u->desc.n_params; i++) {
        if (trr_user_param_is_float(u, i)) params[i].f = (float)call->params[i];
        else params[i].i = (int)call->params[i];
        args[a++] = &params[i];
    }
    /* the built-in element-wise ops' launch (small kernels batched into a graph while the stream is busy) */
    if (groups[2] == 1)
        return trr_cuda_launch(ctx, fn, (unsigned)groups[0], (unsigned)groups[1], (unsigned)threads, args);
    return trr_cuda_launch_3d(ctx, fn, (unsigned)groups[0], (unsigned)groups[1], (unsigned)groups[2],
                              (unsigned)threads, 0, args);
}
