/* The row-norm shape rule (rms_norm, layer_norm, and any later op of the rule) through one path: the op table
 * names the kernel file (its `kernel` stem: kernels/cuda/<stem>.cu) and the entry point (the op's name), the
 * config picks the kernel kind and the vectors each thread holds, and every op of the rule takes the same
 * arguments (x, w, the third input where the op has one, y, eps). Nothing here tells one op from another. */
#include "trr_cuda.h"

#include "op_table.h"

#include <stdio.h>
#include <string.h>

static int esize(trr_dtype d) { return d == TRR_F32 ? 4 : 2; } /* the norms take f32, f16 and bf16 */

int trr_cuda_variant_rule(trr_cuda_variant *v, const char *stem, trr_dtype dt, int kind, int vpt) {
    char file[64];
    memset(v, 0, sizeof *v);
    if (!stem || snprintf(file, sizeof file, "%s.cu", stem) >= (int)sizeof file) return 0;
    /* the embedded table's name outlives the variant */
    const trr_embedded_file *f = trr_embedded_find(trr_cuda_kernels, trr_cuda_kernels_count, file);
    if (!f) return 0;
    v->file = f->name;
    return trr_cuda_define(v, "-DDT=%d -DKIND=%d -DVPT=%d", (int)dt /* 0 f32, 1 f16, 2 bf16 */, kind, vpt);
}

int trr_cuda_norm_plan(const trr_call *call, int *out_kind, int *out_vpt, char *why, size_t cap) {
    const trr_config *c = &call->config;
    const int vec = 16 / esize(call->x.dtype);
    const char *no = NULL;
    int kind = TRR_CUDA_NORM_BLOCK, vpt = 0;
    if (c->vector_width != vec) {
        if (why) snprintf(why, cap, "vector_width must be %d (16-byte vectors; got %d)", vec, c->vector_width);
        return 0;
    }
    if (c->block_n <= 0 || c->block_n % vec) {
        no = "block_n must be a positive multiple of vector_width";
    } else if (c->block_n <= TRR_CUDA_NORM_WARP_MAX_COLS) {
        kind = TRR_CUDA_NORM_WARP;
        vpt = c->block_n / vec / 32;
        if ((c->block_n / vec) % 32)
            no = "a warp per row (block_n <= 1024): block_n / vector_width must be a multiple of 32";
        else if (call->cols > c->block_n) no = "a warp per row holds rows of at most block_n columns";
    } else {
        vpt = c->block_n / vec / (c->threads > 0 ? c->threads : 1);
        if ((c->block_n / vec) % (c->threads > 0 ? c->threads : 1))
            no = "a block per row (block_n > 1024): block_n must be threads x vector_width x vectors a thread";
        else if (call->cols > c->block_n) {
            kind = TRR_CUDA_NORM_LOOP;
            if (vpt != TRR_CUDA_NORM_LOOP_VPT)
                no = "rows longer than block_n loop over chunks of threads x vector_width x 4 columns (block_n)";
        }
    }
    if (!no && (vpt < 1 || vpt > TRR_CUDA_NORM_MAX_VPT)) no = "each thread holds 1 to 8 vectors of block_n";
    if (!no && call->cols > 0x7fffffff - (int64_t)c->block_n) no = "the kernels index columns in 32 bits";
    if (no) {
        if (why) snprintf(why, cap, "%s (block_n %d, threads %d)", no, c->block_n, c->threads);
        return 0;
    }
    *out_kind = kind;
    *out_vpt = vpt;
    return 1;
}

/* 1 when an operand's rows (base and row stride) keep 16-byte alignment; rows == 1 needs only the base. */
static int rows_aligned(const trr_operand *op, int64_t rows, int64_t stride) {
    if (trr_cuda_operand_ptr(op) % 16) return 0;
    return rows == 1 || (stride * esize(op->dtype)) % 16 == 0;
}

/* A per-column vector read 16 bytes at a time: contiguous and aligned. */
static int vector_contiguous(const trr_operand *op) { return op->stride0 == 1 && trr_cuda_operand_ptr(op) % 16 == 0; }

/* The launch-path cache key: a high byte of its own (ops_stream.c's keys use 1 to 6 there), then the op, which
 * names the entry point, and what the variant's -D options hold. */
static uint64_t norm_key(trr_op op, int dt, int kind, int vpt) {
    return ((uint64_t)0x40 << 56) | ((uint64_t)(op & 0xffff) << 24) | ((uint64_t)(dt & 0xff) << 16) |
           ((uint64_t)(kind & 0xff) << 8) | (uint64_t)(vpt & 0xff);
}

trr_status trr_cuda_run_row_norm(trr_context *ctx, const trr_call *call) {
    trr_cuda_dev *dev = ctx->dev;
    const trr_op_desc *d = trr_op_desc_get(call->op);
    int kind = 0, vpt = 0;
    char why[200];
    if (!trr_cuda_norm_plan(call, &kind, &vpt, why, sizeof why))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda %s: %s", d->name, why);
    const uint64_t key = norm_key(call->op, (int)call->x.dtype, kind, vpt);
    CUfunction fn = trr_cuda_fast_get(dev, key);
    if (!fn) {
        trr_cuda_variant v;
        if (!trr_cuda_variant_rule(&v, d->kernel, call->x.dtype, kind, vpt))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda %s: no kernel file %s.cu", d->name,
                             d->kernel ? d->kernel : "(none)");
        TRR_TRY(trr_cuda_get_function(ctx, &v, d->name, &fn));
        trr_cuda_fast_put(dev, key, fn);
    }
    /* the third input where the op has one (layer_norm's b); else x stands in, never read */
    const int has_u = d->operand[TRR_SLOT_U].name != NULL;
    const trr_operand *u = has_u ? &call->u : &call->x;
    CUdeviceptr x = trr_cuda_operand_ptr(&call->x), w = trr_cuda_operand_ptr(&call->y), b = trr_cuda_operand_ptr(u),
                y = trr_cuda_operand_ptr(&call->z);
    long long sx = call->x.stride0, sw = call->y.stride0, sb = has_u ? call->u.stride0 : 1, sy = call->z.stride0;
    long long rows = call->rows;
    int n = (int)call->cols;
    float eps = (float)call->params[TRR_NORM_PARAM_EPS];
    /* whole 16-byte vectors everywhere, or the kernels' element-by-element path */
    int vec = rows_aligned(&call->x, rows, sx) && rows_aligned(&call->z, rows, sy) &&
                    vector_contiguous(&call->y) && (!has_u || vector_contiguous(&call->u)) &&
                    n % (16 / esize(call->x.dtype)) == 0;
    const unsigned threads = (unsigned)call->config.threads;
    /* a warp per row: threads / 32 rows a block; else a block per row. The kernels step over rows past the grid. */
    const int64_t per_block = kind == TRR_CUDA_NORM_WARP ? (int64_t)threads / 32 : 1;
    int64_t grid = (rows + per_block - 1) / per_block;
    if (grid > 0x7fffffff) grid = 0x7fffffff;
    void *args[] = {&x, &sx, &w, &sw, &b, &sb, &y, &sy, &rows, &n, &eps, &vec};
    return trr_cuda_launch(ctx, fn, (unsigned)grid, 1, threads, args);
}
