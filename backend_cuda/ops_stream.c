/* The memory-bound shape rules: element-wise (copy, add, gelu, silu), planes (rgb_to_grey), rows (softmax) and
 * row-reduce (row_sum). Each takes the op's kernel file (its definition's stem) and entry (its name, or its
 * selecting define ENTRY_<name>), picks the vectorised path when every row start is 16-byte aligned (the kernels
 * mask the tails) and sizes its grid from the SM count. */
#include "trr_cuda.h"

#include "op_table.h"

#include <stdio.h>
#include <string.h>

static int esize(trr_dtype d) { return d == TRR_F32 ? 4 : d == TRR_F16 || d == TRR_BF16 ? 2 : 1; }

/* 1 when operand rows (base and row stride) keep `align`-byte alignment. rows == 1 needs only the base. */
static int rows_aligned(const trr_operand *op, int64_t rows, int64_t stride, unsigned align) {
    if (trr_cuda_operand_ptr(op) % align) return 0;
    return rows == 1 || (stride * esize(op->dtype)) % align == 0;
}

static unsigned min_u64(uint64_t a, uint64_t b) { return (unsigned)(a < b ? a : b); }

/* The launch-path cache key of a kernel (trr_cuda_fast_get): which kernel, then what its variant's -D options
 * hold; each field below 2^12 (kernel below 2^8). */
enum { K_EW_FLAT = 1, K_EW_ROWS, K_SOFTMAX_WARP, K_SOFTMAX_ROWS, K_SOFTMAX_ONLINE, K_ROW_SUM };
static uint64_t fkey(int kernel, int a, int b, int c, int d) {
    return ((uint64_t)kernel << 56) | ((uint64_t)(a & 0xfff) << 36) | ((uint64_t)(b & 0xfff) << 24) |
           ((uint64_t)(c & 0xfff) << 12) | (uint64_t)(d & 0xfff);
}

/* The flat kernel's UNROLL: vectors per thread, block_n / (threads * elements per vector), a power of two in
 * [1, 8] (the variants the NVRTC test compiles). */
static int ew_unroll(int block_n, int threads, int elem_bytes) {
    int per_thread = threads > 0 ? block_n / threads : 0;
    int u = per_thread / (16 / elem_bytes);
    int p = 1;
    while (p * 2 <= u && p < 8) p *= 2;
    return p;
}

int trr_cuda_variant_of(trr_cuda_variant *v, const trr_op_desc *d) {
    char file[64];
    memset(v, 0, sizeof *v);
    if (!d->kernel || snprintf(file, sizeof file, "%s.cu", d->kernel) >= (int)sizeof file) return 0;
    /* the embedded table's name outlives the variant */
    const trr_embedded_file *f = trr_embedded_find(trr_cuda_kernels, trr_cuda_kernels_count, file);
    if (!f) return 0;
    v->file = f->name;
    return 1;
}

int trr_cuda_variant_elementwise(trr_cuda_variant *v, const trr_op_desc *d, int dt, int unroll) {
    if (!trr_cuda_variant_of(v, d)) return 0;
    if (d->bytewise) return trr_cuda_define(v, "-DES=%d -DUNROLL=%d", dt, unroll);
    return trr_cuda_define(v, "-DENTRY_%s -DDT=%d -DUNROLL=%d", d->name, dt, unroll);
}

/* dt: the element size for an op that moves bytes, else the dtype code */
static trr_status ew_function(trr_context *ctx, int kernel, const trr_op_desc *d, int dt, int unroll,
                              CUfunction *out_fn) {
    trr_cuda_dev *dev = ctx->dev;
    uint64_t key = fkey(kernel, (int)d->op, dt, unroll, 0);
    if ((*out_fn = trr_cuda_fast_get(dev, key)) != NULL) return TRR_OK;
    trr_cuda_variant v;
    if (!trr_cuda_variant_elementwise(&v, d, dt, unroll))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda %s: no kernel file %s.cu", d->name,
                         d->kernel ? d->kernel : "-");
    TRR_TRY(trr_cuda_get_function(ctx, &v, kernel == K_EW_FLAT ? "ew_flat" : "ew_rows", out_fn));
    trr_cuda_fast_put(dev, key, *out_fn);
    return TRR_OK;
}

trr_status trr_cuda_run_elementwise(trr_context *ctx, const trr_call *call) {
    trr_cuda_dev *dev = ctx->dev;
    const trr_op_desc *d = trr_op_desc_get(call->op);
    if (d->converts) return trr_cuda_run_convert(ctx, call); /* cast: a kernel per dtype pair (ops_cast.c) */
    int es = esize(call->x.dtype);
    unsigned threads = (unsigned)call->config.threads;
    int unroll = ew_unroll(call->config.block_n, (int)threads, es);
    /* a byte move: ES, the element size; else DT: 0 f32, 1 f16, 2 bf16 */
    int dt = d->bytewise ? es : (int)call->x.dtype;
    /* the second input where the op has one; else x stands in, never read */
    const trr_operand *y = d->n_inputs == 2 ? &call->y : &call->x;
    CUdeviceptr px = trr_cuda_operand_ptr(&call->x), py = trr_cuda_operand_ptr(y), pz = trr_cuda_operand_ptr(&call->z);
    int vec = rows_aligned(&call->x, call->rows, call->x.stride0, 16) && rows_aligned(y, call->rows, y->stride0, 16) &&
              rows_aligned(&call->z, call->rows, call->z.stride0, 16);
    unsigned per_vec = 16u / (unsigned)es;
    CUfunction fn;
    if (call->rows == 1) {
        if (d->bytewise) {
            /* A packed byte move is the driver's device-to-device copy (any alignment): the bandwidth ceiling
             * itself. */
            return trr_cuda_copy(ctx, (void *)(uintptr_t)pz, 0, (void *)(uintptr_t)px, 0,
                                 (size_t)call->cols * (size_t)es);
        }
        TRR_TRY(ew_function(ctx, K_EW_FLAT, d, dt, unroll, &fn));
        long long n = call->cols;
        /* one chunk of threads * unroll vectors (or of as many vectors' worth of elements) per block */
        uint64_t chunk = (uint64_t)threads * (uint64_t)unroll;
        uint64_t units = vec ? (uint64_t)n / per_vec : ((uint64_t)n + per_vec - 1) / per_vec;
        uint64_t grid = (units + chunk - 1) / chunk;
        if (!grid) grid = 1;
        if (grid > 0x7fffffffu)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda element-wise op: %lld elements need more than 2^31 - 1 blocks", n);
        /* a single block can tell the host it is done (wait.c); more would need a count of finished blocks */
        uint32_t seq = 0;
        CUdeviceptr flag = grid == 1 ? trr_cuda_flag_for_kernel(dev, &seq) : 0;
        void *args[] = {&px, &py, &pz, &n, &vec, &flag, &seq};
        TRR_TRY(trr_cuda_launch(ctx, fn, (unsigned)grid, 1, threads, args));
        if (flag) trr_cuda_flag_kernel_enqueued(dev, seq);
        return TRR_OK;
    }
    TRR_TRY(ew_function(ctx, K_EW_ROWS, d, dt, unroll, &fn));
    long long sx = call->x.stride0, sy = y->stride0, sz = call->z.stride0;
    int rows = (int)call->rows, cols = (int)call->cols;
    /* One wave of resident blocks (2048 threads per SM) at most across a row; the kernel loops over the rest. */
    uint64_t wave = (uint64_t)dev->sm_count * (2048u / threads);
    uint64_t per_row = vec ? ((uint64_t)cols / per_vec + 1) : (uint64_t)cols;
    unsigned gx = min_u64((per_row + threads - 1) / threads, wave);
    unsigned gy = min_u64((uint64_t)rows, 65535u);
    if (gx < 1) gx = 1;
    void *args[] = {&px, &sx, &py, &sy, &pz, &sz, &rows, &cols, &vec};
    return trr_cuda_launch(ctx, fn, gx, gy, threads, args);
}

trr_status trr_cuda_run_rgb_to_grey(trr_context *ctx, const trr_call *call) {
    trr_cuda_dev *dev = ctx->dev;
    const trr_op_desc *d = trr_op_desc_get(call->op);
    trr_cuda_variant v;
    trr_cuda_variant_of(&v, d); /* trr_cuda_supports found the file */
    int out_f32 = call->z.dtype == TRR_F32;
    trr_cuda_define(&v, "-DOUT_F32=%d", out_f32);
    CUfunction fn;
    TRR_TRY(trr_cuda_get_function(ctx, &v, d->name, &fn));
    CUdeviceptr img = trr_cuda_operand_ptr(&call->x), out = trr_cuda_operand_ptr(&call->z);
    long long plane = call->x.stride0, in_rs = call->x.stride1, out_rs = call->z.stride0;
    int rows = (int)call->rows, cols = (int)call->cols;
    unsigned out_align = out_f32 ? 16u : 4u;
    int vec = img % 4 == 0 && plane % 4 == 0 && (rows == 1 || in_rs % 4 == 0) && out % out_align == 0 &&
              (rows == 1 || (out_rs * (out_f32 ? 4 : 1)) % out_align == 0);
    unsigned threads = (unsigned)call->config.threads;
    uint64_t per_row = vec ? (uint64_t)cols / 4 + 1 : (uint64_t)cols;
    uint64_t wave = (uint64_t)dev->sm_count * (2048u / threads);
    unsigned gx = min_u64((per_row + threads - 1) / threads, wave);
    unsigned gy = min_u64((uint64_t)rows, 65535u);
    void *args[] = {&img, &plane, &in_rs, &out, &out_rs, &rows, &cols, &vec};
    return trr_cuda_launch(ctx, fn, gx ? gx : 1, gy, threads, args);
}

const char *const trr_cuda_rows_kinds[TRR_CUDA_ROWS_KINDS] = {"_warp", "_rows", "_online"};

trr_status trr_cuda_run_softmax(trr_context *ctx, const trr_call *call) {
    const trr_op_desc *d = trr_op_desc_get(call->op);
    int threads = call->config.threads;
    /* subgroup: a warp per row of up to 32 * items columns, threads / 32 rows per block; else a block per row */
    int warp = call->config.variant == TRR_VARIANT_SUBGROUP;
    int items = call->config.block_n / (warp ? 32 : threads);
    int fits = call->cols <= (int64_t)call->config.block_n;
    int kernel = warp ? K_SOFTMAX_WARP : fits ? K_SOFTMAX_ROWS : K_SOFTMAX_ONLINE;
    uint64_t key = fkey(kernel, (int)call->x.dtype, threads, items, (int)call->op);
    CUfunction fn = trr_cuda_fast_get(ctx->dev, key);
    if (!fn) {
        trr_cuda_variant v;
        trr_cuda_variant_rows(&v, d, call->x.dtype, threads, items);
        char entry[64]; /* the op's name and the kernel's kind (trr_cuda_rows_kinds) */
        snprintf(entry, sizeof entry, "%s%s", d->name, trr_cuda_rows_kinds[kernel - K_SOFTMAX_WARP]);
        TRR_TRY(trr_cuda_get_function(ctx, &v, entry, &fn));
        trr_cuda_fast_put(ctx->dev, key, fn);
    }
    CUdeviceptr x = trr_cuda_operand_ptr(&call->x), y = trr_cuda_operand_ptr(&call->z);
    long long sx = call->x.stride0, sy = call->z.stride0;
    int rows = (int)call->rows, n = (int)call->cols;
    int vec = rows_aligned(&call->x, call->rows, sx, 16) && rows_aligned(&call->z, call->rows, sy, 16);
    void *args[] = {&x, &sx, &y, &sy, &rows, &n, &vec};
    unsigned grid = warp ? (unsigned)((call->rows + threads / 32 - 1) / (threads / 32)) : (unsigned)rows;
    return trr_cuda_launch(ctx, fn, grid, 1, (unsigned)threads, args);
}

/* row_sum's LOADS: vectors per thread in flight, block_n / (threads * elements per vector), a power of two in
 * [1, 16] (the variants the NVRTC test compiles). */
static int row_sum_loads(int block_n, int threads, int elem_bytes) {
    int u = threads > 0 ? block_n / threads / (16 / elem_bytes) : 0;
    int p = 1;
    while (p * 2 <= u && p < 16) p *= 2;
    return p;
}

int trr_cuda_variant_rows(trr_cuda_variant *v, const trr_op_desc *d, trr_dtype dt, int threads, int items) {
    if (!trr_cuda_variant_of(v, d)) return 0;
    return trr_cuda_define(v, "-DDT=%d -DTHREADS=%d -DITEMS=%d", (int)dt /* 0 f32, 1 f16, 2 bf16 */, threads, items);
}

int trr_cuda_variant_row_reduce(trr_cuda_variant *v, const trr_op_desc *d, trr_dtype dt, int loads, int kind) {
    if (!trr_cuda_variant_of(v, d)) return 0;
    return trr_cuda_define(v, "-DDT=%d -DLOADS=%d -DLOAD_KIND=%d", (int)dt /* 0 f32, 1 f16, 2 bf16 */, loads, kind);
}

trr_status trr_cuda_run_row_sum(trr_context *ctx, const trr_call *call) {
    const trr_op_desc *d = trr_op_desc_get(call->op);
    const trr_config *c = &call->config;
    int kind = c->block_k > 0 ? c->block_k - 1 : 0; /* row_sum.cu's LOAD_KIND (config.c numbers them from 1) */
    int loads = kind == 3 ? 1 : row_sum_loads(c->block_n, c->threads, esize(call->x.dtype)); /* bulk: no LOADS */
    uint64_t key = fkey(K_ROW_SUM, (int)call->x.dtype, loads, kind, (int)call->op);
    CUfunction fn = trr_cuda_fast_get(ctx->dev, key);
    if (!fn) {
        trr_cuda_variant v;
        trr_cuda_variant_row_reduce(&v, d, call->x.dtype, loads, kind);
        TRR_TRY(trr_cuda_get_function(ctx, &v, d->name, &fn));
        trr_cuda_fast_put(ctx->dev, key, fn);
    }
    CUdeviceptr x = trr_cuda_operand_ptr(&call->x), y = trr_cuda_operand_ptr(&call->z);
    long long sx = call->x.stride0, sy = call->z.stride0;
    int rows = (int)call->rows, n = (int)call->cols;
    int vec = rows_aligned(&call->x, call->rows, sx, 16);
    void *args[] = {&x, &sx, &y, &sy, &rows, &n, &vec};
    return trr_cuda_launch(ctx, fn, (unsigned)rows, 1, (unsigned)c->threads, args);
}
