/* A packed, row-major matmul call (no buffers) for the CUDA backend's host-side config tests: what the heuristic
 * and check_config read of a call, nothing a kernel needs. */
#ifndef TRR_TEST_CUDA_MATMUL_CALL_H
#define TRR_TEST_CUDA_MATMUL_CALL_H

#include <string.h>

#include "trr_cuda.h"

static inline trr_call cuda_matmul_call(trr_dtype dtype, int64_t m, int64_t n, int64_t k, int64_t batch) {
    trr_call c;
    memset(&c, 0, sizeof c);
    c.op = TRR_OP_MATMUL;
    c.x.dtype = c.y.dtype = c.z.dtype = dtype;
    c.x.stride0 = k;
    c.y.stride0 = n;
    c.z.stride0 = n;
    c.rows = m;
    c.cols = n;
    c.k = k;
    c.batch = batch;
    return c;
}

#endif
