/* The K-major copies of matmul operands that a backend's tensor-core kernels cannot read as stored: FP8 tensor
 * cores read both operands along K, in rows of 16-byte multiples; 16-bit tensor-core kernels read A along K and
 * every operand from 16-byte rows and bases. This header gives the layout the copies take and where they lie in
 * one scratch buffer. Each backend decides which operands it copies and runs its own copy kernel
 * (backend_cuda/matmul_pack.c, backend_opencl/matmul_pack.c, kernels/<api>/matmul_pack.*). */
#ifndef TRR_MATMUL_COPIES_H
#define TRR_MATMUL_COPIES_H

#include "backend.h"

enum { TRR_MATMUL_COPY_A = 1, TRR_MATMUL_COPY_B = 2 };

/* Bytes an input element takes (both inputs are as wide: 8-bit floats, or the same 16-bit type) */
static inline int64_t trr_matmul_copy_es(const trr_call *call) {
    size_t es = 1;
    trr_dtype_size(call->x.dtype, &es);
    return (int64_t)es;
}

/* K rounded up to whole 16-byte rows, in elements */
static inline int64_t trr_matmul_copy_k(const trr_call *call) {
    const int64_t per_row = 16 / trr_matmul_copy_es(call);
    return (call->k + per_row - 1) / per_row * per_row;
}

/* The matrices an operand holds: one per product of the batch, or one shared by all (batch stride 0). */
static inline int64_t trr_matmul_copy_matrices(const trr_call *call, const trr_operand *o) {
    return call->batch > 1 && o->batch_stride != 0 ? call->batch : 1;
}

/* The copy of operand o of `rows` rows: rows of kp elements from offset 0, one matrix per matrix o holds; mem NULL
 * until the copies are made. */
static inline trr_operand trr_matmul_copy_operand(const trr_call *call, const trr_operand *o, int64_t rows) {
    trr_operand p = *o;
    const int64_t kp = trr_matmul_copy_k(call);
    p.mem = NULL;
    p.offset = 0;
    p.stride0 = kp;
    p.batch_stride = trr_matmul_copy_matrices(call, o) > 1 ? rows * kp : 0;
    return p;
}

/* call as the tensor cores run it with the operands in `copies` (TRR_MATMUL_COPY_A, _B) replaced by their copies:
 * A [M,K] and B stored [N,K]. */
static inline trr_call trr_matmul_copy_view(const trr_call *call, int copies) {
    trr_call v = *call;
    if (copies & TRR_MATMUL_COPY_A) {
        v.x = trr_matmul_copy_operand(call, &call->x, call->rows);
        v.trans_a = 0;
    }
    if (copies & TRR_MATMUL_COPY_B) {
        v.y = trr_matmul_copy_operand(call, &call->y, call->cols);
        v.trans_b = 1;
    }
    return v;
}

/* The scratch the copies take: A's from byte 0, B's from byte *b_at (256-byte aligned); the total in bytes (at
 * least 16, so an empty plan still allocates). */
static inline int64_t trr_matmul_copy_bytes(const trr_call *call, int copies, int64_t *b_at) {
    const int64_t kp = trr_matmul_copy_k(call), es = trr_matmul_copy_es(call);
    const int64_t a = copies & TRR_MATMUL_COPY_A ? trr_matmul_copy_matrices(call, &call->x) * call->rows * kp * es : 0;
    const int64_t b = copies & TRR_MATMUL_COPY_B ? trr_matmul_copy_matrices(call, &call->y) * call->cols * kp * es : 0;
    *b_at = (a + 255) / 256 * 256;
    return *b_at + b > 16 ? *b_at + b : 16;
}

/* Where element (r, k) of operand `which` (0 A, its rows M's; 1 B, its rows N's) lies in each of its matrices:
 * r * rs + k * ks elements on. */
static inline void trr_matmul_copy_source(const trr_call *call, int which, int64_t *rs, int64_t *ks) {
    const trr_operand *o = which ? &call->y : &call->x;
    const int k_major = which ? call->trans_b : !call->trans_a;
    *rs = k_major ? o->stride0 : 1;
    *ks = k_major ? 1 : o->stride0;
}

#endif
