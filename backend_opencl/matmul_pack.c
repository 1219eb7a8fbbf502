/* 8-bit float products on the wgmma kernel whose operands it cannot read as stored: A stored [K,M], B stored
 * [K,N], rows, offsets or batch strides off multiples of 16 elements. wgmma reads 8-bit operands along K only and
 * matmul_wgmma.cl copies 16-byte chunks, so such an operand is first copied into K-major rows of 16-byte
 * multiples (kernels/opencl/matmul_pack.cl, into dev->matmul_pack) and the product runs on the copy, as the CUDA
 * backend does (backend_cuda/matmul_pack.c). The copy costs a read and a write of the operand: a few percent of a
 * large product's time, against the mma kernel's widening to f16 at a third of wgmma's rate. */
#include "opencl.h"

#include "half.h"
#include "matmul_copies.h"
#include "matmul_variant.h"

#define ARG(i, v) TRR_TRY(trr_cl_set_arg(ctx, k, (cl_uint)(i), sizeof(v), &(v)))

int trr_cl_f8_copies(const trr_call *call) {
    if (call->op != TRR_OP_MATMUL || !trr_dtype_is_f8(call->x.dtype) || !trr_dtype_is_f8(call->y.dtype)) return 0;
    const int a = call->trans_a || !trr_cl_rows_aligned(&call->x, 16, call->batch);
    const int b = !call->trans_b || !trr_cl_rows_aligned(&call->y, 16, call->batch);
    return (a ? TRR_MATMUL_COPY_A : 0) | (b ? TRR_MATMUL_COPY_B : 0);
}

int trr_cl_f8_view(const trr_call *call, trr_call *out_view) {
    const int copies = trr_cl_f8_copies(call);
    if (!copies) return 0;
    *out_view = trr_matmul_copy_view(call, copies);
    return 1;
}

/* Enqueues the copy of operand `which` (0 A, 1 B) into dst from byte dof. A source that holds its rows contiguous
 * on 16-byte lines takes the word kernel, any other the byte kernel. */
static trr_status pack_one(trr_context *ctx, const trr_call *call, int which, cl_mem dst, cl_long dof) {
    const trr_operand *o = which ? &call->y : &call->x;
    const int64_t rows = which ? call->cols : call->rows;
    int64_t rs64, ks64;
    trr_matmul_copy_source(call, which, &rs64, &ks64);
    cl_mem src = o->mem;
    cl_long so = o->offset, rs = rs64, ks = ks64, sbs = o->batch_stride, kp = trr_matmul_copy_k(call), r = rows;
    cl_long kdim = call->k;
    const int64_t n = trr_matmul_copy_matrices(call, o);
    cl_long dbs = n > 1 ? r * kp : 0;
    const int words = rs == 1 && so % 16 == 0 && ks % 16 == 0 && sbs % 16 == 0;
    const int64_t tile = words ? 128 : 64, row_tiles = (rows + tile - 1) / tile, k_tiles = (kp + tile - 1) / tile;
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, "matmul_pack.cl", "-cl-std=CL1.2", words ? "matmul_pack_words" : "matmul_pack",
                              &k));
    int i = 0;
    ARG(i++, src);
    ARG(i++, so);
    if (!words) ARG(i++, rs);
    ARG(i++, ks);
    ARG(i++, sbs);
    ARG(i++, dst);
    ARG(i++, dof);
    ARG(i++, dbs);
    ARG(i++, r);
    ARG(i++, kdim);
    ARG(i++, kp);
    const size_t local[3] = {256, 1, 1};
    const size_t global[3] = {(size_t)row_tiles * 256, (size_t)(k_tiles < 65535 ? k_tiles : 65535), (size_t)n};
    return trr_cl_launch(ctx, k, 3, global, local);
}

trr_status trr_cl_f8_pack(trr_context *ctx, const trr_call *call, trr_call *view) {
    trr_cl_dev *dev = ctx->dev;
    const int copies = trr_cl_f8_copies(call);
    int64_t b_at = 0;
    const int64_t bytes = trr_matmul_copy_bytes(call, copies, &b_at);
    cl_mem base;
    TRR_TRY(trr_cl_scratch_get(ctx, &dev->matmul_pack, (size_t)bytes, "the copies of an 8-bit float matmul's operands",
                               &base));
    if (copies & TRR_MATMUL_COPY_A) {
        TRR_TRY(pack_one(ctx, call, 0, base, 0));
        view->x.mem = base;
        view->x.offset = 0;
    }
    if (copies & TRR_MATMUL_COPY_B) {
        TRR_TRY(pack_one(ctx, call, 1, base, (cl_long)b_at));
        view->y.mem = base;
        view->y.offset = b_at;
    }
    return TRR_OK;
}
