/* The element-wise rule's ops whose input and output dtypes differ, found by the op table's kernel stem (cast:
 * kernels/cuda/cast.cu). One module holds a kernel pair per dtype pair, <entry>_flat_<in>_<out> and
 * <entry>_rows_<in>_<out>, with elementwise.cu's arguments; the grid is one wave of resident blocks at most, each
 * thread looping over 16-byte vectors (or elements where a row start is not 16-byte aligned). */
#include "trr_cuda.h"

#include "op_table.h"

#include <stdio.h>
#include <string.h>

int trr_cuda_variant_convert(trr_cuda_variant *v, const char *stem, const char *entry) {
    char file[64];
    memset(v, 0, sizeof *v);
    if (!stem || !entry || snprintf(file, sizeof file, "%s.cu", stem) >= (int)sizeof file) return 0;
    /* the embedded table's name outlives the variant */
    const trr_embedded_file *f = trr_embedded_find(trr_cuda_kernels, trr_cuda_kernels_count, file);
    if (!f) return 0;
    v->file = f->name;
    return trr_cuda_define(v, "-DENTRY_%s", entry);
}

static size_t esize(trr_dtype d) {
    size_t es = 1;
    trr_dtype_size(d, &es);
    return es;
}

/* 1 when every row start of the operand (its base and, over several rows, its row stride) is 16-byte aligned. */
static int rows_aligned(const trr_operand *o, int64_t rows) {
    const size_t es = esize(o->dtype);
    return trr_cuda_operand_ptr(o) % 16 == 0 && (rows == 1 || (o->stride0 * (int64_t)es) % 16 == 0);
}

/* The launch-path cache key: this file's kernels (0x41), flat or rows, the op and both dtypes. */
static uint64_t convert_key(int rows_kernel, trr_op op, trr_dtype in, trr_dtype out) {
    return ((uint64_t)0x41 << 56) | ((uint64_t)rows_kernel << 48) | ((uint64_t)(op & 0xffff) << 16) |
           ((uint64_t)(in & 0xff) << 8) | (uint64_t)(out & 0xff);
}

trr_status trr_cuda_run_convert(trr_context *ctx, const trr_call *call) {
    trr_cuda_dev *dev = ctx->dev;
    const trr_op_desc *d = trr_op_desc_get(call->op);
    const int flat = call->rows == 1;
    const uint64_t key = convert_key(!flat, call->op, call->x.dtype, call->z.dtype);
    CUfunction fn = trr_cuda_fast_get(dev, key);
    if (!fn) {
        trr_cuda_variant v;
        if (!trr_cuda_variant_convert(&v, d->kernel, d->name))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda %s: no kernel file %s.cu", d->name, d->kernel);
        char name[64];
        snprintf(name, sizeof name, "%s_%s_%d_%d", d->name, flat ? "flat" : "rows", (int)call->x.dtype,
                 (int)call->z.dtype);
        TRR_TRY(trr_cuda_get_function(ctx, &v, name, &fn));
        trr_cuda_fast_put(dev, key, fn);
    }
    const unsigned threads = (unsigned)call->config.threads;
    const size_t narrow = esize(call->x.dtype) < esize(call->z.dtype) ? esize(call->x.dtype) : esize(call->z.dtype);
    const uint64_t per_vec = 16u / narrow;
    int vec = rows_aligned(&call->x, call->rows) && rows_aligned(&call->z, call->rows);
    const uint64_t wave = (uint64_t)dev->sm_count * (2048u / threads);
    CUdeviceptr px = trr_cuda_operand_ptr(&call->x), pz = trr_cuda_operand_ptr(&call->z);
    const uint64_t cols = (uint64_t)call->cols, units = vec ? cols / per_vec + cols % per_vec : cols;
    uint64_t gx = (units + threads - 1) / threads;
    if (gx > wave) gx = wave;
    if (gx < 1) gx = 1;
    if (flat) {
        long long n = call->cols;
        CUdeviceptr flag = 0; /* the host's done flag (wait.c) is for the hand-picked kernels' single blocks */
        unsigned seq = 0;
        void *args[] = {&px, &px, &pz, &n, &vec, &flag, &seq};
        return trr_cuda_launch(ctx, fn, (unsigned)gx, 1, threads, args);
    }
    long long sx = call->x.stride0, sz = call->z.stride0;
    int rows = (int)call->rows, ncols = (int)call->cols;
    const unsigned gy = call->rows < 65535 ? (unsigned)call->rows : 65535u;
    void *args[] = {&px, &sx, &px, &sx, &pz, &sz, &rows, &ncols, &vec};
    return trr_cuda_launch(ctx, fn, (unsigned)gx, gy, threads, args);
}
