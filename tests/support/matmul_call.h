/* Packed matmul calls with no buffers: what the backends' host-side rules (heuristics, checks, copy plans) read of
 * a call, nothing a kernel needs. */
#ifndef TRR_TEST_MATMUL_CALL_H
#define TRR_TEST_MATMUL_CALL_H

#include <string.h>

#include "backend.h"

/* M x N x K of a batch of `batch` matrices: A [M,K], B [K,N] (or stored [N,K] where trans_b), C [M,N], each
 * packed (leading strides K, N or K, N). */
static inline trr_call packed_matmul_call(trr_dtype a, trr_dtype b, trr_dtype out, int64_t m, int64_t n, int64_t k,
                                          int64_t batch, int trans_b) {
    trr_call c;
    memset(&c, 0, sizeof c);
    c.op = TRR_OP_MATMUL;
    c.x.dtype = a;
    c.y.dtype = b;
    c.z.dtype = out;
    c.x.stride0 = k;
    c.y.stride0 = trans_b ? k : n;
    c.z.stride0 = n;
    c.trans_b = trans_b;
    c.rows = m;
    c.cols = n;
    c.k = k;
    c.batch = batch;
    return c;
}

/* A stored [M,K] and B stored [N,K], both read along K (the layout FP8 tensor cores read), C bf16. */
static inline trr_call nk_call(trr_dtype a, trr_dtype b, int64_t m, int64_t n, int64_t k) {
    return packed_matmul_call(a, b, TRR_BF16, m, n, k, 1, 1);
}

#endif
