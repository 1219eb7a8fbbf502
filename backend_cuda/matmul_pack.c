/* 8-bit float products whose operands the FP8 tensor cores cannot read as stored: A stored [K,M], B stored
 * [K,N], rows not whole 16-byte lines, bases or matrices off 16-byte boundaries. mma.sync and wgmma read 8-bit
 * operands along K only, so such an operand is first copied into K-major rows of 16-byte multiples
 * (kernels/cuda/matmul_pack.cu, into dev->matmul_pack) and the product runs on the copy. The heuristic, the
 * check and the launch all see the product as it will run (trr_cuda_f8_view), so each chooses for the copy's
 * layout, not the caller's. The copy costs a read and a write of the operand: a few percent of a large product's
 * time. */
#include "trr_cuda.h"

#include "half.h"
#include "matmul_f8_copies.h"

/* Whether A (B) is already what the tensor cores read: K-major, 16-byte rows and matrices, a 16-byte base. */
static int a_reads(const trr_call *call) {
    return !call->trans_a && call->x.stride0 % 16 == 0 && call->x.batch_stride % 16 == 0 &&
           trr_cuda_operand_ptr(&call->x) % 16 == 0;
}
static int b_reads(const trr_call *call) {
    return call->trans_b && call->y.stride0 % 16 == 0 && call->y.batch_stride % 16 == 0 &&
           trr_cuda_operand_ptr(&call->y) % 16 == 0;
}

static int copies_of(const trr_call *call) {
    return (a_reads(call) ? 0 : TRR_F8_COPY_A) | (b_reads(call) ? 0 : TRR_F8_COPY_B);
}

int trr_cuda_f8_view(const trr_cuda_dev *dev, const trr_call *call, trr_call *out_view) {
    if (!trr_dtype_is_f8(call->x.dtype) || call->op != TRR_OP_MATMUL) return 0;
    if (dev && (dev->cc_major < 8 || (dev->cc_major == 8 && dev->cc_minor < 9))) return 0; /* no FP8 tensor cores */
    const int copies = copies_of(call);
    if (!copies) return 0;
    *out_view = trr_f8_copy_view(call, copies);
    return 1;
}

/* Launches the copy of operand `which` (0 A, 1 B) into dst. A source that holds its rows contiguous on 16-byte
 * lines takes the word kernel, any other the byte kernel. */
static trr_status pack_one(trr_context *ctx, const trr_call *call, int which, CUdeviceptr dst) {
    const trr_operand *o = which ? &call->y : &call->x;
    const int64_t rows = which ? call->cols : call->rows;
    int64_t rs64, ks64;
    trr_f8_copy_source(call, which, &rs64, &ks64);
    CUdeviceptr src = trr_cuda_operand_ptr(o);
    long long rs = rs64, ks = ks64, sbs = o->batch_stride, kp = trr_f8_copy_k(call), r = rows, kdim = call->k;
    const int64_t n = trr_f8_copy_matrices(call, o);
    long long dbs = n > 1 ? r * kp : 0;
    const int words = rs == 1 && src % 16 == 0 && ks % 16 == 0 && sbs % 16 == 0;
    const int64_t tile = words ? 128 : 64, row_tiles = (rows + tile - 1) / tile, k_tiles = (kp + tile - 1) / tile;
    if (row_tiles > 0x7fffffff || n > 65535)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda 8-bit float matmul: %lld rows in %lld matrices are past the "
                         "operand copy's grid", (long long)rows, (long long)n);
    trr_cuda_variant v;
    trr_cuda_variant_matmul_pack(&v);
    CUfunction fn;
    TRR_TRY(trr_cuda_get_function(ctx, &v, words ? "matmul_pack_words" : "matmul_pack", &fn));
    const unsigned gy = (unsigned)(k_tiles < 65535 ? k_tiles : 65535);
    if (words) {
        void *args[] = {&src, &ks, &sbs, &dst, &dbs, &r, &kdim, &kp};
        return trr_cuda_launch_3d(ctx, fn, (unsigned)row_tiles, gy, (unsigned)n, 256, 0, args);
    }
    void *args[] = {&src, &rs, &ks, &sbs, &dst, &dbs, &r, &kdim, &kp};
    return trr_cuda_launch_3d(ctx, fn, (unsigned)row_tiles, gy, (unsigned)n, 256, 0, args);
}

trr_status trr_cuda_f8_pack(trr_context *ctx, const trr_call *call, trr_call *view) {
    trr_cuda_dev *dev = ctx->dev;
    const int copies = copies_of(call);
    int64_t b_at = 0;
    const int64_t bytes = trr_f8_copy_bytes(call, copies, &b_at);
    CUdeviceptr base = 0;
    TRR_TRY(trr_cuda_scratch_get(ctx, &dev->matmul_pack, (size_t)bytes,
                                 "the copies of an 8-bit float matmul's operands", &base));
    if (copies & TRR_F8_COPY_A) {
        TRR_TRY(pack_one(ctx, call, 0, base));
        view->x.mem = (void *)(uintptr_t)base;
    }
    if (copies & TRR_F8_COPY_B) {
        TRR_TRY(pack_one(ctx, call, 1, base + (CUdeviceptr)b_at));
        view->y.mem = (void *)(uintptr_t)(base + (CUdeviceptr)b_at);
    }
    return TRR_OK;
}
