/* 8-bit float products whose operands the FP8 tensor cores cannot read as stored: A stored [K,M], B stored
 * [K,N], rows not whole 16-byte lines, bases or matrices off 16-byte boundaries. mma.sync and wgmma read 8-bit
 * operands along K only, so such an operand is first copied into K-major rows of 16-byte multiples
 * (kernels/cuda/matmul_pack.cu, into dev->matmul_pack) and the product runs on the copy. The heuristic, the
 * check and the launch all see the product as it will run (trr_cuda_f8_view), so each chooses for the copy's
 * layout, not the caller's. The copy costs a read and a write of the operand: a few percent of a large product's
 * time. */
#include "trr_cuda.h"

#include "half.h"

/* K padded to whole 16-byte rows */
static int64_t padded_k(const trr_call *call) { return (call->k + 15) / 16 * 16; }

/* Whether A (B) is already what the tensor cores read: K-major, 16-byte rows and matrices, a 16-byte base. */
static int a_reads(const trr_call *call) {
    return !call->trans_a && call->x.stride0 % 16 == 0 && call->x.batch_stride % 16 == 0 &&
           trr_cuda_operand_ptr(&call->x) % 16 == 0;
}
static int b_reads(const trr_call *call) {
    return call->trans_b && call->y.stride0 % 16 == 0 && call->y.batch_stride % 16 == 0 &&
           trr_cuda_operand_ptr(&call->y) % 16 == 0;
}

/* The packed copy of an operand of `rows` rows: kp-byte rows, one matrix per matrix of the batch that has its own
 * (a shared input, batch stride 0, stays one). mem is the copy's address (0 until the launch packs it). */
static trr_operand packed(const trr_operand *o, int64_t rows, int64_t kp, int64_t batch, CUdeviceptr mem) {
    trr_operand p = *o;
    p.mem = (void *)(uintptr_t)mem;
    p.offset = 0;
    p.stride0 = kp;
    p.batch_stride = batch > 1 && o->batch_stride != 0 ? rows * kp : 0;
    return p;
}

static int64_t matrices(const trr_call *call, const trr_operand *o) {
    return call->batch > 1 && o->batch_stride != 0 ? call->batch : 1;
}

int trr_cuda_f8_view(const trr_cuda_dev *dev, const trr_call *call, trr_call *out_view) {
    if (!trr_dtype_is_f8(call->x.dtype) || call->op != TRR_OP_MATMUL) return 0;
    if (dev && (dev->cc_major < 8 || (dev->cc_major == 8 && dev->cc_minor < 9))) return 0; /* no FP8 tensor cores */
    const int pack_a = !a_reads(call), pack_b = !b_reads(call);
    if (!pack_a && !pack_b) return 0;
    *out_view = *call;
    const int64_t kp = padded_k(call);
    if (pack_a) {
        out_view->x = packed(&call->x, call->rows, kp, call->batch, 0);
        out_view->trans_a = 0;
    }
    if (pack_b) {
        out_view->y = packed(&call->y, call->cols, kp, call->batch, 0);
        out_view->trans_b = 1;
    }
    return 1;
}

/* Launches the copy of one operand: `rows` rows of K elements, element (r, k) at r * rs + k * ks of each matrix.
 * A source that holds its rows contiguous on 16-byte lines takes the word kernel, any other the byte kernel. */
static trr_status pack_one(trr_context *ctx, const trr_call *call, const trr_operand *o, int64_t rows, long long rs,
                           long long ks, CUdeviceptr dst) {
    CUdeviceptr src = trr_cuda_operand_ptr(o);
    long long sbs = o->batch_stride, kp = padded_k(call), r = rows, kdim = call->k;
    const int64_t n = matrices(call, o);
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
    const int pack_a = !a_reads(call), pack_b = !b_reads(call);
    const int64_t kp = padded_k(call);
    const int64_t a_bytes = pack_a ? matrices(call, &call->x) * call->rows * kp : 0;
    const int64_t b_at = (a_bytes + 255) / 256 * 256;
    const int64_t b_bytes = pack_b ? matrices(call, &call->y) * call->cols * kp : 0;
    CUdeviceptr base = 0;
    TRR_TRY(trr_cuda_scratch_get(ctx, &dev->matmul_pack, (size_t)(b_at + b_bytes > 0 ? b_at + b_bytes : 16),
                                 "the copies of an 8-bit float matmul's operands", &base));
    if (pack_a) {
        /* A [M,K]: row m at m * lda; stored [K,M] (trans_a): row m is column m */
        const long long lda = call->x.stride0;
        TRR_TRY(pack_one(ctx, call, &call->x, call->rows, call->trans_a ? 1 : lda, call->trans_a ? lda : 1, base));
        view->x.mem = (void *)(uintptr_t)base;
    }
    if (pack_b) {
        /* B's rows are N's: stored [N,K] (trans_b) row n at n * ldb; stored [K,N] row n is column n */
        const long long ldb = call->y.stride0;
        TRR_TRY(pack_one(ctx, call, &call->y, call->cols, call->trans_b ? ldb : 1, call->trans_b ? 1 : ldb,
                         base + (CUdeviceptr)b_at));
        view->y.mem = (void *)(uintptr_t)(base + (CUdeviceptr)b_at);
    }
    return TRR_OK;
}
