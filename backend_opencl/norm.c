/* The row-norm shape rule: kernels/opencl/<stem>.cl of the op's definition, built with the rule's options,
 * entered by the op's name; the op itself reaches the kernel as data (rules.c runs it).
 *
 * The rule (kernels/opencl/norm.cl) reads its config as:
 *   threads       work-items per row (a power of two: the reduction is a tree)
 *   vector_width  elements a work-item moves at a time where the operands' alignment allows, else 1
 *   block_n       the longest row held in private memory, threads x (elements per work-item, at most 64);
 *                 longer rows take the two-sweep kernel. */
#include "opencl.h"

#include "config_fields.h"
#include "op_table.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define MAX_PER_ITEM 64   /* elements of a row one work-item holds in private memory */
#define GPU_PER_ITEM 32   /* what the GPU heuristic holds: with 1024 work-items a row that still fits the
                             64 registers a work-item may have at that work-group size */
#define CPU_THREADS 16    /* few distinct programs on CPU devices, whose compiles take seconds */
#define CPU_PER_ITEM 16   /* what CPU devices hold: their compile time grows with the unrolled loads */
#define SWEEP_STEPS 4096  /* a bound on a work-item's loop trips per sweep of the two-sweep kernel */

/* ---- the row-norm rule ---- */

static int has_bias(const trr_call *call) {
    return trr_op_desc_get(call->op)->operand[TRR_SLOT_U].name != NULL;
}

/* The vector width the operands allow: v where rows of x and y, w and b start on v-element boundaries and w
 * and b are contiguous, else 1. */
static int norm_vector_width(const trr_call *call, int v) {
    if (v <= 1) return 1;
    const trr_operand *rows[2] = {&call->x, &call->z};
    for (int i = 0; i < 2; i++)
        if (rows[i]->offset % v || rows[i]->stride0 % v) return 1;
    const trr_operand *vecs[2] = {&call->y, &call->u};
    for (int i = 0; i < 1 + has_bias(call); i++)
        if (vecs[i]->offset % v || vecs[i]->stride0 != 1) return 1;
    return v;
}

/* Rows per work-group: short rows share one, up to `target` work-items (a power of two over threads). */
static int norm_rows_per_group(const trr_cl_dev *dev, const trr_call *call) {
    const int threads = call->config.threads;
    if (call->cols > call->config.block_n) return 1;
    size_t target = dev->info.is_gpu ? 256 : 64;
    if (target > dev->max_work_group) target = dev->max_work_group;
    const int rows = (int)(target / (size_t)threads);
    return rows > 1 ? rows : 1;
}

/* 1 when the subgroup variant's shuffles fit the call's shape: rows held in registers (the two-sweep kernel
 * keeps its local-memory reduction) and work-groups of whole 32-lane warps. */
static int shuffles_fit(const trr_cl_dev *dev, const trr_call *call) {
    const int threads = call->config.threads;
    if (threads <= 0 || call->cols > call->config.block_n) return 0;
    return ((int64_t)threads * norm_rows_per_group(dev, call)) % 32 == 0;
}

void trr_cl_choose_row_norm(trr_context *ctx, trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    trr_config *c = &call->config;
    const int64_t n = call->cols;
    const int max_threads = dev->max_work_group < 1024 ? (int)dev->max_work_group : 1024;
    if (dev->info.is_gpu) {
        /* 16-byte loads; rows held in registers up to max_threads x GPU_PER_ITEM, with the fewest work-items
         * that hold them (several rows to a work-group below 256) */
        trr_cl_set_if_zero(&c->vector_width, call->x.dtype == TRR_F32 ? 4 : 8);
        int threads = trr_cl_pow2_at_least((n + GPU_PER_ITEM - 1) / GPU_PER_ITEM);
        trr_cl_set_if_zero(&c->threads, threads < max_threads ? threads : max_threads);
        int64_t per = (n + c->threads - 1) / c->threads;
        per = (per + c->vector_width - 1) / c->vector_width * c->vector_width;
        trr_cl_set_if_zero(&c->block_n, per <= GPU_PER_ITEM ? trr_config_product(per, c->threads)
                                                             : trr_config_product(c->threads, c->vector_width));
        /* rows held in registers reduce by warp shuffles where NVIDIA's compiler takes the inline PTX (the mma
         * probe's verdict) and the work-group is whole warps */
        if (!c->variant)
            c->variant = dev->mma.ok && shuffles_fit(dev, call) ? TRR_VARIANT_SUBGROUP : TRR_VARIANT_SIMT;
    } else {
        /* one work-group size for rows held in private memory; the two-sweep kernel takes more work-items
         * as rows grow, so a work-item's loops stay short whatever the row (SWEEP_STEPS). Scalar work-items:
         * CPU drivers vectorise across work-items themselves, and each vector width would be one more
         * program to compile. */
        trr_cl_set_if_zero(&c->vector_width, 1);
        const int64_t held = (int64_t)CPU_THREADS * CPU_PER_ITEM;
        int threads = n <= held ? CPU_THREADS : trr_cl_pow2_at_least((n + SWEEP_STEPS - 1) / SWEEP_STEPS);
        if (threads < CPU_THREADS) threads = CPU_THREADS;
        trr_cl_set_if_zero(&c->threads, threads < max_threads ? threads : max_threads);
        const int64_t fits = (int64_t)c->threads * CPU_PER_ITEM;
        trr_cl_set_if_zero(&c->block_n, n <= fits && CPU_PER_ITEM % c->vector_width == 0
                                            ? trr_config_product(c->threads, CPU_PER_ITEM)
                                            : trr_config_product(c->threads, c->vector_width));
    }
}

static trr_status bad(trr_context *ctx, const char *what) {
    return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: config rejected: %s", what);
}

trr_status trr_cl_check_row_norm(trr_context *ctx, const trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    const trr_config *c = &call->config;
    if (c->variant == TRR_VARIANT_SUBGROUP) {
        /* the common check knows one family; the subgroup one is this rule's own */
        trr_call plain = *call;
        plain.config.variant = TRR_VARIANT_SIMT;
        TRR_TRY(trr_cl_check_common(ctx, &plain));
        if (!dev->mma.ok)
            return bad(ctx, "row norm variant subgroup shuffles through NVIDIA's inline PTX, which this device's "
                            "compiler does not take (simt)");
    } else {
        TRR_TRY(trr_cl_check_common(ctx, call));
    }
    if (!trr_cl_is_pow2(c->threads)) return bad(ctx, "row norm threads must be a power of two (tree reduction)");
    if (c->vector_width != 1 && c->vector_width != 2 && c->vector_width != 4 && c->vector_width != 8)
        return bad(ctx, "row norm vector_width must be 1, 2, 4 or 8");
    if (c->block_n % c->threads || c->block_n / c->threads > MAX_PER_ITEM ||
        (c->block_n / c->threads) % c->vector_width)
        return bad(ctx, "row norm block_n must be threads x (a multiple of vector_width, at most 64) elements");
    /* column indices are ints in the kernels, and stay clear of overflow one sweep step past the row */
    if (call->cols > INT_MAX / 2) return bad(ctx, "row norm rows are at most 2^30 elements");
    if (c->variant == TRR_VARIANT_SUBGROUP && (!trr_cl_is_pow2(c->threads) || !shuffles_fit(dev, call)))
        return bad(ctx, "row norm variant subgroup needs rows held in registers (block_n at least the row) and "
                        "work-groups of whole 32-lane warps");
    const uint64_t local = (uint64_t)norm_rows_per_group(dev, call) * (uint64_t)c->threads * 2u * 8u;
    if (local > dev->local_memory) return bad(ctx, "row norm reductions exceed local memory");
    return TRR_OK;
}

#define ARG(i, v) TRR_TRY(trr_cl_set_arg(ctx, k, (cl_uint)(i), sizeof(v), &(v)))

trr_status trr_cl_run_row_norm(trr_context *ctx, const trr_call *call) {
    const trr_op_desc *d = trr_op_desc_get(call->op);
    const trr_cl_dev *dev = ctx->dev;
    const trr_config *cfg = &call->config;
    const int vw = norm_vector_width(call, cfg->vector_width);
    const int held = call->cols <= cfg->block_n;
    const int per = held ? cfg->block_n / cfg->threads / vw : 0; /* vectors a work-item holds; 0: two sweeps */
    const int rows_per_group = norm_rows_per_group(dev, call);
    char file[48], options[192] = "-cl-std=CL1.2";
    snprintf(file, sizeof file, "%s.cl", d->kernel);
    trr_cl_opt(options, sizeof options, " -DTHREADS=%d -DROWS=%d -DPER=%d -DVW=%d -DX_DT=%d -DZ_DT=%d -DSHFL=%d",
               cfg->threads, rows_per_group, per, vw, trr_cl_dtype_code(call->x.dtype),
               trr_cl_dtype_code(call->z.dtype), cfg->variant == TRR_VARIANT_SUBGROUP ? 1 : 0);
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, file, options, d->name, &k));
    /* the public convention for row ops (docs/custom-ops.md): buffers, offsets, rows and cols, strides, eps; b
     * only for an op that has one */
    const int bias = has_bias(call);
    const trr_operand *ops[3] = {&call->x, &call->y, &call->u};
    const int n_in = 2 + bias;
    cl_uint a = 0;
    for (int i = 0; i < n_in; i++) TRR_TRY(trr_cl_set_arg(ctx, k, a++, sizeof(cl_mem), &ops[i]->mem));
    TRR_TRY(trr_cl_set_arg(ctx, k, a++, sizeof(cl_mem), &call->z.mem));
    for (int i = 0; i < n_in; i++) {
        const cl_long off = ops[i]->offset;
        TRR_TRY(trr_cl_set_arg(ctx, k, a++, sizeof off, &off));
    }
    const cl_long zo = call->z.offset;
    ARG(a++, zo);
    cl_int n = (cl_int)call->cols, rows = (cl_int)call->rows;
    ARG(a++, rows);
    ARG(a++, n);
    for (int i = 0; i < n_in; i++) {
        const cl_int s = (cl_int)ops[i]->stride0;
        TRR_TRY(trr_cl_set_arg(ctx, k, a++, sizeof s, &s));
    }
    const cl_int zs = (cl_int)call->z.stride0;
    ARG(a++, zs);
    cl_float eps = (cl_float)call->params[TRR_NORM_PARAM_EPS];
    ARG(a++, eps);
    const size_t local = (size_t)cfg->threads * (size_t)rows_per_group;
    const size_t global = ((size_t)call->rows + (size_t)rows_per_group - 1) / (size_t)rows_per_group * local;
    return trr_cl_launch(ctx, k, 1, &global, &local);
}
