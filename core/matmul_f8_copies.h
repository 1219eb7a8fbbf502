/* The K-major copies of 8-bit float matmul operands that FP8 tensor cores cannot read as stored (they read both
 * operands along K, in rows of 16-byte multiples): the layout the copies take, and where they lie in one
 * scratch buffer. Each backend decides which operands it copies and runs its own copy kernel
 * (backend_cuda/matmul_pack.c, backend_opencl/matmul_pack.c, kernels/<api>/matmul_pack.*). */
#ifndef TRR_MATMUL_F8_COPIES_H
#define TRR_MATMUL_F8_COPIES_H

#include "backend.h"

enum { TRR_F8_COPY_A = 1, TRR_F8_COPY_B = 2 };

/* K rounded up to whole 16-byte rows */
static inline int64_t trr_f8_copy_k(const trr_call *call) { return (call->k + 15) / 16 * 16; }

/* The matrices an operand holds: one per product of the batch, or one shared by all (batch stride 0). */
static inline int64_t trr_f8_copy_matrices(const trr_call *call, const trr_operand *o) {
    return call->batch > 1 && o->batch_stride != 0 ? call->batch : 1;
}

/* The copy of operand o of `rows` rows: kp-byte rows from offset 0, one matrix per matrix o holds; mem NULL until
 * the copies are made. */
static inline trr_operand trr_f8_copy_operand(const trr_call *call, const trr_operand *o, int64_t rows) {
    trr_operand p = *o;
    const int64_t kp = trr_f8_copy_k(call);
    p.mem = NULL;
    p.offset = 0;
    p.stride0 = kp;
    p.batch_stride = trr_f8_copy_matrices(call, o) > 1 ? rows * kp : 0;
    return p;
}

/* call as the tensor cores run it with the operands in `copies` (TRR_F8_COPY_A, _B) replaced by their copies:
 * A [M,K] and B stored [N,K]. */
static inline trr_call trr_f8_copy_view(const trr_call *call, int copies) {
    trr_call v = *call;
    if (copies & TRR_F8_COPY_A) {
        v.x = trr_f8_copy_operand(call, &call->x, call->rows);
        v.trans_a = 0;
    }
    if (copies & TRR_F8_COPY_B) {
        v.y = trr_f8_copy_operand(call, &call->y, call->cols);
        v.trans_b = 1;
    }
    return v;
}

/* The scratch the copies take: A's from byte 0, B's from *b_at (256-byte aligned); the total in bytes (at least
 * 16, so an empty plan still allocates). */
static inline int64_t trr_f8_copy_bytes(const trr_call *call, int copies, int64_t *b_at) {
    const int64_t kp = trr_f8_copy_k(call);
    const int64_t a = copies & TRR_F8_COPY_A ? trr_f8_copy_matrices(call, &call->x) * call->rows * kp : 0;
    const int64_t b = copies & TRR_F8_COPY_B ? trr_f8_copy_matrices(call, &call->y) * call->cols * kp : 0;
    *b_at = (a + 255) / 256 * 256;
    return *b_at + b > 16 ? *b_at + b : 16;
}

/* Where element (r, k) of operand `which` (0 A, its rows M's; 1 B, its rows N's) lies in each of its matrices:
 * r * rs + k * ks elements on. */
static inline void trr_f8_copy_source(const trr_call *call, int which, int64_t *rs, int64_t *ks) {
    const trr_operand *o = which ? &call->y : &call->x;
    const int k_major = which ? call->trans_b : !call->trans_a;
    *rs = k_major ? o->stride0 : 1;
    *ks = k_major ? 1 : o->stride0;
}

#endif
