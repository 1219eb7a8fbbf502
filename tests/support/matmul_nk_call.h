/* A packed matmul call of M x N x K (no buffers) with A stored [M,K] and B stored [N,K], both read along K (the
 * layout FP8 tensor cores read), C bf16: what the backends' host-side rules read of a call, nothing a kernel needs. */
#ifndef TRR_TEST_MATMUL_NK_CALL_H
#define TRR_TEST_MATMUL_NK_CALL_H

#include <string.h>

#include "backend.h"

static inline trr_call nk_call(trr_dtype a, trr_dtype b, int64_t m, int64_t n, int64_t k) {
    trr_call c;
    memset(&c, 0, sizeof c);
    c.op = TRR_OP_MATMUL;
    c.x.dtype = a;
    c.y.dtype = b;
    c.z.dtype = TRR_BF16;
    c.x.stride0 = k;
    c.y.stride0 = k;
    c.z.stride0 = n;
    c.trans_b = 1;
    c.rows = m;
    c.cols = n;
    c.k = k;
    c.batch = 1;
    return c;
}

#endif
