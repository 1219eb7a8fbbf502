/* The memory-bound ops: copy, add, gelu, silu, rgb_to_grey, softmax, row_sum. Each picks the vectorised path when
 * every row start is 16-byte aligned (the kernels mask the tails) and sizes its grid from the SM count. */
#include "trr_cuda.h"

#include <string.h>

static int esize(trr_dtype d) { return d == TRR_F32 ? 4 : d == TRR_F16 || d == TRR_BF16 ? 2 : 1; }

/* 1 when operand rows (base and row stride) keep `align`-byte alignment. rows == 1 needs only the base. */
static int rows_aligned(const trr_operand *op, int64_t rows, int64_t stride, unsigned align) {
    if (trr_cuda_operand_ptr(op) % align) return 0;
    return rows == 1 || (stride * esize(op->dtype)) % align == 0;
}

static unsigned min_u64(uint64_t a, uint64_t b) { return (unsigned)(a < b ? a : b); }

trr_status trr_cuda_run_elementwise(trr_context *ctx, const trr_call *call) {
    trr_cuda_dev *dev = ctx->dev;
    trr_cuda_variant v;
    memset(&v, 0, sizeof v);
    v.file = "elementwise.cu";
    int es = esize(call->x.dtype);
    if (call->op == TRR_OP_COPY) {
        trr_cuda_define(&v, "-DOP=0 -DES=%d", es);
    } else {
        int op = call->op == TRR_OP_ADD ? 1 : call->op == TRR_OP_GELU ? 2 : 3; /* elementwise.cu's OP */
        trr_cuda_define(&v, "-DOP=%d -DDT=%d", op, (int)call->x.dtype /* 0 f32, 1 f16, 2 bf16 */);
    }
    const trr_operand *y = call->op == TRR_OP_ADD ? &call->y : &call->x;
    CUdeviceptr px = trr_cuda_operand_ptr(&call->x), py = trr_cuda_operand_ptr(y), pz = trr_cuda_operand_ptr(&call->z);
    int vec = rows_aligned(&call->x, call->rows, call->x.stride0, 16) && rows_aligned(y, call->rows, y->stride0, 16) &&
              rows_aligned(&call->z, call->rows, call->z.stride0, 16);
    unsigned threads = (unsigned)call->config.threads;
    unsigned per_vec = 16u / (unsigned)es;
    /* One wave of resident blocks (2048 threads per SM); the kernels loop over the rest. */
    uint64_t wave = (uint64_t)dev->sm_count * (2048u / threads);
    CUfunction fn;
    if (call->rows == 1) {
        if (call->op == TRR_OP_COPY) {
            /* A packed copy is the driver's device-to-device copy (any alignment): the bandwidth ceiling itself. */
            TRR_CU_CHECK(ctx, trr_cu.MemcpyDtoDAsync(pz, px, (size_t)call->cols * (size_t)es, dev->stream),
                         "cuMemcpyDtoDAsync");
            return TRR_OK;
        }
        TRR_TRY(trr_cuda_get_function(ctx, &v, "ew_flat", &fn));
        long long n = call->cols;
        uint64_t work = vec ? ((uint64_t)n / per_vec + 3) / 4 : (uint64_t)n;
        unsigned grid = min_u64((work + threads - 1) / threads, wave);
        if (!grid) grid = 1;
        void *args[] = {&px, &py, &pz, &n, &vec};
        return trr_cuda_launch(ctx, fn, grid, 1, threads, 0, args);
    }
    TRR_TRY(trr_cuda_get_function(ctx, &v, "ew_rows", &fn));
    long long sx = call->x.stride0, sy = y->stride0, sz = call->z.stride0;
    int rows = (int)call->rows, cols = (int)call->cols;
    uint64_t per_row = vec ? ((uint64_t)cols / per_vec + 1) : (uint64_t)cols;
    unsigned gx = min_u64((per_row + threads - 1) / threads, wave);
    unsigned gy = min_u64((uint64_t)rows, 65535u);
    if (gx < 1) gx = 1;
    void *args[] = {&px, &sx, &py, &sy, &pz, &sz, &rows, &cols, &vec};
    return trr_cuda_launch(ctx, fn, gx, gy, threads, 0, args);
}

trr_status trr_cuda_run_rgb_to_grey(trr_context *ctx, const trr_call *call) {
    trr_cuda_dev *dev = ctx->dev;
    trr_cuda_variant v;
    memset(&v, 0, sizeof v);
    v.file = "rgb_to_grey.cu";
    int out_f32 = call->z.dtype == TRR_F32;
    trr_cuda_define(&v, "-DOUT_F32=%d", out_f32);
    CUfunction fn;
    TRR_TRY(trr_cuda_get_function(ctx, &v, "rgb_to_grey", &fn));
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
    return trr_cuda_launch(ctx, fn, gx ? gx : 1, gy, threads, 0, args);
}

trr_status trr_cuda_run_softmax(trr_context *ctx, const trr_call *call) {
    trr_cuda_variant v;
    memset(&v, 0, sizeof v);
    v.file = "softmax.cu";
    int threads = call->config.threads, items = call->config.block_n / threads;
    trr_cuda_define(&v, "-DDT=%d -DTHREADS=%d -DITEMS=%d", (int)call->x.dtype /* 0 f32, 1 f16, 2 bf16 */, threads, items);
    int fits = call->cols <= (int64_t)call->config.block_n;
    CUfunction fn;
    TRR_TRY(trr_cuda_get_function(ctx, &v, fits ? "softmax_rows" : "softmax_online", &fn));
    CUdeviceptr x = trr_cuda_operand_ptr(&call->x), y = trr_cuda_operand_ptr(&call->z);
    long long sx = call->x.stride0, sy = call->z.stride0;
    int rows = (int)call->rows, n = (int)call->cols;
    int vec = rows_aligned(&call->x, call->rows, sx, 16) && rows_aligned(&call->z, call->rows, sy, 16);
    void *args[] = {&x, &sx, &y, &sy, &rows, &n, &vec};
    return trr_cuda_launch(ctx, fn, (unsigned)rows, 1, (unsigned)threads, 0, args);
}

trr_status trr_cuda_run_row_sum(trr_context *ctx, const trr_call *call) {
    trr_cuda_variant v;
    memset(&v, 0, sizeof v);
    v.file = "row_sum.cu";
    trr_cuda_define(&v, "-DDT=%d", (int)call->x.dtype /* 0 f32, 1 f16, 2 bf16 */);
    CUfunction fn;
    TRR_TRY(trr_cuda_get_function(ctx, &v, "row_sum", &fn));
    CUdeviceptr x = trr_cuda_operand_ptr(&call->x), y = trr_cuda_operand_ptr(&call->z);
    long long sx = call->x.stride0, sy = call->z.stride0;
    int rows = (int)call->rows, n = (int)call->cols;
    int vec = rows_aligned(&call->x, call->rows, sx, 16);
    void *args[] = {&x, &sx, &y, &sy, &rows, &n, &vec};
    return trr_cuda_launch(ctx, fn, (unsigned)rows, 1, (unsigned)call->config.threads, 0, args);
}
