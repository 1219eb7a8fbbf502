/* 8-bit float products on the wgmma kernel whose operands it cannot read as stored: A stored [K,M], B stored
 * [K,N], rows, offsets or batch strides off multiples of 16 elements. wgmma reads 8-bit operands along K only and
 * matmul_wgmma.cl copies 16-byte chunks, so such an operand is first copied into K-major rows of 16-byte
 * multiples (kernels/opencl/matmul_pack.cl, into dev->matmul_pack) and the product runs on the copy, as the CUDA
 * backend does (backend_cuda/matmul_pack.c). The copy costs a read and a write of the operand: a few percent of a
 * large product's time, against the mma kernel's widening to f16 at a third of wgmma's rate. */
#include "opencl.h"

#include "half.h"

#include "matmul_variant.h"

#define ARG(i, v) TRR_TRY(trr_cl_set_arg(ctx, k, (cl_uint)(i), sizeof(v), &(v)))

/* K padded to whole 16-byte rows */
static int64_t padded_k(const trr_call *call) { return (call->k + 15) / 16 * 16; }

static int64_t matrices(const trr_call *call, const trr_operand *o) {
    return call->batch > 1 && o->batch_stride != 0 ? call->batch : 1;
}

int trr_cl_f8_copies(const trr_call *call) {
    if (call->op != TRR_OP_MATMUL || !trr_dtype_is_f8(call->x.dtype) || !trr_dtype_is_f8(call->y.dtype)) return 0;
    const int a = call->trans_a || !trr_cl_rows_aligned(&call->x, 16, call->batch);
    const int b = !call->trans_b || !trr_cl_rows_aligned(&call->y, 16, call->batch);
    return a | b << 1;
}

/* The copy of an operand of `rows` rows: kp-byte rows from offset 0 (trr_cl_f8_pack sets mem and offset), one
 * matrix per matrix of the batch that has its own (a shared input, batch stride 0, stays one). */
static trr_operand packed(const trr_operand *o, int64_t rows, int64_t kp, int64_t batch) {
    trr_operand p = *o;
    p.mem = NULL;
    p.offset = 0;
    p.stride0 = kp;
    p.batch_stride = batch > 1 && o->batch_stride != 0 ? rows * kp : 0;
    return p;
}

int trr_cl_f8_view(const trr_call *call, trr_call *out_view) {
    const int copies = trr_cl_f8_copies(call);
    if (!copies) return 0;
    *out_view = *call;
    const int64_t kp = padded_k(call);
    if (copies & 1) {
        out_view->x = packed(&call->x, call->rows, kp, call->batch);
        out_view->trans_a = 0;
    }
    if (copies & 2) {
        out_view->y = packed(&call->y, call->cols, kp, call->batch);
        out_view->trans_b = 1;
    }
    return 1;
}

/* Enqueues the copy of one operand: `rows` rows of K elements, element (r, k) at r * rs + k * ks of each
 * matrix, into dst from byte dof. A source that holds its rows contiguous on 16-byte lines takes the word kernel,
 * any other the byte kernel. */
static trr_status pack_one(trr_context *ctx, const trr_call *call, const trr_operand *o, int64_t rows, cl_long rs,
                           cl_long ks, cl_mem dst, cl_long dof) {
    cl_mem src = o->mem;
    cl_long so = o->offset, sbs = o->batch_stride, kp = padded_k(call), r = rows, kdim = call->k;
    const int64_t n = matrices(call, o);
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
    const int64_t kp = padded_k(call);
    const int64_t a_bytes = copies & 1 ? matrices(call, &call->x) * call->rows * kp : 0;
    const int64_t b_at = (a_bytes + 255) / 256 * 256;
    const int64_t b_bytes = copies & 2 ? matrices(call, &call->y) * call->cols * kp : 0;
    cl_mem base;
    TRR_TRY(trr_cl_scratch_get(ctx, &dev->matmul_pack, (size_t)(b_at + b_bytes > 0 ? b_at + b_bytes : 16),
                               "the copies of an 8-bit float matmul's operands", &base));
    if (copies & 1) {
        /* A [M,K]: row m at m * lda; stored [K,M] (trans_a): row m is column m */
        const cl_long lda = call->x.stride0;
        TRR_TRY(pack_one(ctx, call, &call->x, call->rows, call->trans_a ? 1 : lda, call->trans_a ? lda : 1, base, 0));
        view->x.mem = base;
        view->x.offset = 0;
    }
    if (copies & 2) {
        /* B's rows are N's: stored [N,K] (trans_b) row n at n * ldb; stored [K,N] row n is column n */
        const cl_long ldb = call->y.stride0;
        TRR_TRY(pack_one(ctx, call, &call->y, call->cols, call->trans_b ? ldb : 1, call->trans_b ? 1 : ldb, base,
                         (cl_long)b_at));
        view->y.mem = base;
        view->y.offset = b_at;
    }
    return TRR_OK;
}
