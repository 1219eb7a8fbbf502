/* Products whose operands the tensor cores cannot read as stored run on K-major copies of those operands
 * (kernels/cuda/matmul_pack.cu, into dev->matmul_pack). 8-bit floats: mma.sync and wgmma read them along K only,
 * from 16-byte rows, so A stored [K,M], B stored [K,N], rows not whole 16-byte lines, bases or matrices off 16-byte
 * boundaries are copied. f16 and bf16: the tensor-core kernels read both operands from 16-byte rows and bases, and
 * mma.sync reads A along K only, so any operand off those boundaries is copied, and A stored [K,M] unless wgmma
 * reads it as stored (M-major), unless the call asks for the CUDA-core kernel (variant simt), which reads any
 * layout. The heuristic, the check and the launch all see the product as it will run (trr_cuda_matmul_view), so
 * each chooses for the copy's layout, not the caller's. The copy costs a read and a write of the operand: a few
 * percent of a large product's time, where the CUDA-core kernel runs 16-bit inputs at a small fraction of the
 * tensor cores' rate. */
#include "trr_cuda.h"

#include "half.h"
#include "matmul_copies.h"

/* Whether an operand sits on `align`-element rows and matrices from a 16-byte base. */
static int rows_on(const trr_operand *o, int64_t align) {
    return o->stride0 % align == 0 && o->batch_stride % align == 0 && trr_cuda_operand_ptr(o) % 16 == 0;
}

/* The operands to copy: 8-bit floats unless K-major on 16-byte rows; 16-bit floats on the tensor cores unless
 * both sit on 16-byte rows (B either way round) and A is row-major or read M-major by wgmma. */
static int copies_of(const trr_cuda_dev *dev, const trr_call *call) {
    if (call->op != TRR_OP_MATMUL) return 0;
    if (dev && dev->cc_major < 8) return 0; /* no tensor-core kernels: the CUDA-core kernel reads any layout */
    if (trr_dtype_is_f8(call->x.dtype)) {
        if (dev && dev->cc_major == 8 && dev->cc_minor < 9) return 0; /* no FP8 tensor cores: the check says so */
        return (!call->trans_a && rows_on(&call->x, 16) ? 0 : TRR_MATMUL_COPY_A) |
               (call->trans_b && rows_on(&call->y, 16) ? 0 : TRR_MATMUL_COPY_B);
    }
    const int half = call->x.dtype == TRR_F16 || call->x.dtype == TRR_BF16;
    if (!half || call->y.dtype != call->x.dtype || call->config.variant == TRR_VARIANT_SIMT) return 0;
    const int b = rows_on(&call->y, 8) ? 0 : TRR_MATMUL_COPY_B;
    if (!rows_on(&call->x, 8)) return TRR_MATMUL_COPY_A | b;
    if (!call->trans_a) return b;
    /* whether wgmma reads A as stored is asked of the product with B's copy in place, if B is copied */
    const trr_call with_b = trr_matmul_copy_view(call, b);
    return (trr_cuda_matmul_reads_a_mn_major(dev, &with_b) ? 0 : TRR_MATMUL_COPY_A) | b;
}

int trr_cuda_matmul_view(const trr_cuda_dev *dev, const trr_call *call, trr_call *out_view) {
    const int copies = copies_of(dev, call);
    if (!copies) return 0;
    *out_view = trr_matmul_copy_view(call, copies);
    return 1;
}

/* Launches the copy of operand `which` (0 A, 1 B) into dst. A source that holds its rows contiguous on 16-byte
 * lines takes its element size's word kernel, any other its element-wise one. */
static trr_status pack_one(trr_context *ctx, const trr_call *call, int which, CUdeviceptr dst) {
    const trr_operand *o = which ? &call->y : &call->x;
    const int64_t rows = which ? call->cols : call->rows;
    int64_t rs64, ks64;
    trr_matmul_copy_source(call, which, &rs64, &ks64);
    CUdeviceptr src = trr_cuda_operand_ptr(o);
    long long rs = rs64, ks = ks64, sbs = o->batch_stride, kp = trr_matmul_copy_k(call), r = rows, kdim = call->k;
    const int64_t n = trr_matmul_copy_matrices(call, o);
    long long dbs = n > 1 ? r * kp : 0;
    const int wide = trr_matmul_copy_es(call) == 2, per_word = wide ? 8 : 16;
    const int words = rs == 1 && src % 16 == 0 && ks % per_word == 0 && sbs % per_word == 0;
    const int64_t row_tile = words ? (wide ? 256 : 128) : 64, k_tile = words && !wide ? 128 : 64;
    const int64_t row_tiles = (rows + row_tile - 1) / row_tile, k_tiles = (kp + k_tile - 1) / k_tile;
    if (row_tiles > 0x7fffffff || n > 65535)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda matmul: %lld rows in %lld matrices are past the operand "
                         "copy's grid", (long long)rows, (long long)n);
    trr_cuda_variant v;
    trr_cuda_variant_matmul_pack(&v);
    CUfunction fn;
    const char *kernel = wide ? (words ? "matmul_pack16_words" : "matmul_pack16")
                              : (words ? "matmul_pack_words" : "matmul_pack");
    TRR_TRY(trr_cuda_get_function(ctx, &v, kernel, &fn));
    const unsigned gy = (unsigned)(k_tiles < 65535 ? k_tiles : 65535);
    if (words) {
        void *args[] = {&src, &ks, &sbs, &dst, &dbs, &r, &kdim, &kp};
        return trr_cuda_launch_3d(ctx, fn, (unsigned)row_tiles, gy, (unsigned)n, 256, 0, args);
    }
    void *args[] = {&src, &rs, &ks, &sbs, &dst, &dbs, &r, &kdim, &kp};
    return trr_cuda_launch_3d(ctx, fn, (unsigned)row_tiles, gy, (unsigned)n, 256, 0, args);
}

trr_status trr_cuda_matmul_pack(trr_context *ctx, const trr_call *call, trr_call *view) {
    trr_cuda_dev *dev = ctx->dev;
    const int copies = copies_of(dev, call);
    int64_t b_at = 0;
    const int64_t bytes = trr_matmul_copy_bytes(call, copies, &b_at);
    CUdeviceptr base = 0;
    TRR_TRY(trr_cuda_scratch_get(ctx, &dev->matmul_pack, (size_t)bytes, "the copies of a matmul's operands", &base));
    if (copies & TRR_MATMUL_COPY_A) {
        TRR_TRY(pack_one(ctx, call, 0, base));
        view->x.mem = (void *)(uintptr_t)base;
    }
    if (copies & TRR_MATMUL_COPY_B) {
        TRR_TRY(pack_one(ctx, call, 1, base + (CUdeviceptr)b_at));
        view->y.mem = (void *)(uintptr_t)(base + (CUdeviceptr)b_at);
    }
    return TRR_OK;
}
