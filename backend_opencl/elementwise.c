/* The element-wise shape rule (copy, add, gelu, silu: flat vectorised or 2-D strided) and the planes rule
 * (rgb_to_grey). The op reaches the kernel through its definition: its stem's file, and ENTRY_<name> or, for an op
 * that moves bytes, the element type to move (COPY_T). */
#include "opencl.h"

#include "op_table.h"

#include <stdio.h>
#include <string.h>

#define ARG(i, v) TRR_TRY(trr_cl_set_arg(ctx, k, (cl_uint)(i), sizeof(v), &(v)))

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

static const char *copy_type(trr_dtype dtype) {
    switch (dtype) {
    case TRR_F32: return "uint";
    case TRR_F16:
    case TRR_BF16: return "ushort";
    default: return "uchar";
    }
}

/* The kernel file of d's stem. */
static void stem_file(const trr_op_desc *d, char *file, size_t cap) {
    snprintf(file, cap, "%s.cl", d->kernel ? d->kernel : "");
}

trr_status trr_cl_run_elementwise(trr_context *ctx, const trr_call *call) {
    const trr_op_desc *d = trr_op_desc_get(call->op);
    if (d->converts) return trr_cl_convert_launch(ctx, call); /* cast: its dtypes are arguments (convert.c) */
    const int binary = d->n_inputs == 2;
    const trr_operand *x = &call->x, *z = &call->z;
    const trr_operand *y = binary ? &call->y : &call->x; /* unused by one-input ops, but must be a valid arg */
    int flat = call->rows == 1;
    int vec = call->config.vector_width;
    int aligned = x->offset % vec == 0 && y->offset % vec == 0 && z->offset % vec == 0;

    char options[256] = "-cl-std=CL1.2", file[64];
    trr_cl_opt(options, sizeof options, " -DVEC=%d -DALIGNED=%d", flat ? vec : 1, flat && aligned);
    if (d->bytewise)
        trr_cl_opt(options, sizeof options, " -DCOPY_T=%s", copy_type(x->dtype));
    else if (binary)
        trr_cl_opt(options, sizeof options, " -DENTRY_%s -DX_DT=%d -DY_DT=%d -DZ_DT=%d", d->name,
                   trr_cl_dtype_code(x->dtype), trr_cl_dtype_code(y->dtype), trr_cl_dtype_code(z->dtype));
    else
        trr_cl_opt(options, sizeof options, " -DENTRY_%s -DX_DT=%d -DZ_DT=%d", d->name, trr_cl_dtype_code(x->dtype),
                   trr_cl_dtype_code(z->dtype));
    stem_file(d, file, sizeof file);

    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, file, options, flat ? "flat" : "strided", &k));
    cl_mem xm = x->mem, ym = y->mem, zm = z->mem;
    cl_long xo = x->offset, yo = y->offset, zo = z->offset;
    size_t threads = (size_t)call->config.threads;
    if (flat) {
        cl_int n = (cl_int)call->cols;
        ARG(0, xm);
        ARG(1, xo);
        ARG(2, ym);
        ARG(3, yo);
        ARG(4, zm);
        ARG(5, zo);
        ARG(6, n);
        size_t global = round_up(((size_t)n + (size_t)vec - 1) / (size_t)vec, threads);
        return trr_cl_launch(ctx, k, 1, &global, &threads);
    }
    cl_int xs = (cl_int)x->stride0, ys = (cl_int)y->stride0, zs = (cl_int)z->stride0;
    cl_int rows = (cl_int)call->rows, cols = (cl_int)call->cols;
    ARG(0, xm);
    ARG(1, xo);
    ARG(2, xs);
    ARG(3, ym);
    ARG(4, yo);
    ARG(5, ys);
    ARG(6, zm);
    ARG(7, zo);
    ARG(8, zs);
    ARG(9, rows);
    ARG(10, cols);
    size_t global[2] = {round_up((size_t)cols, threads), (size_t)rows};
    size_t local[2] = {threads, 1};
    return trr_cl_launch(ctx, k, 2, global, local);
}

trr_status trr_cl_run_rgb_to_grey(trr_context *ctx, const trr_call *call) {
    const trr_op_desc *d = trr_op_desc_get(call->op);
    const trr_operand *x = &call->x, *z = &call->z;
    char options[128] = "-cl-std=CL1.2", file[64];
    trr_cl_opt(options, sizeof options, " -DZ_DT=%d", trr_cl_dtype_code(z->dtype));
    stem_file(d, file, sizeof file);
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, file, options, d->name, &k));
    cl_mem xm = x->mem, zm = z->mem;
    cl_long xo = x->offset, zo = z->offset;
    cl_int plane = (cl_int)x->stride0, xs = (cl_int)x->stride1, zs = (cl_int)z->stride0;
    cl_int rows = (cl_int)call->rows, cols = (cl_int)call->cols;
    ARG(0, xm);
    ARG(1, xo);
    ARG(2, plane);
    ARG(3, xs);
    ARG(4, zm);
    ARG(5, zo);
    ARG(6, zs);
    ARG(7, rows);
    ARG(8, cols);
    size_t threads = (size_t)call->config.threads;
    size_t global[2] = {round_up((size_t)cols, threads), (size_t)rows};
    size_t local[2] = {threads, 1};
    return trr_cl_launch(ctx, k, 2, global, local);
}
