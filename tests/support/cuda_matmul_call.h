/* A packed, row-major matmul call (no buffers) for the CUDA backend's host-side config tests, and an NVIDIA H200
 * as those rules read one. */
#ifndef TRR_TEST_CUDA_MATMUL_CALL_H
#define TRR_TEST_CUDA_MATMUL_CALL_H

#include <string.h>

#include "matmul_call.h"
#include "trr_cuda.h"

static inline trr_call cuda_matmul_call(trr_dtype dtype, int64_t m, int64_t n, int64_t k, int64_t batch) {
    return packed_matmul_call(dtype, dtype, dtype, m, n, k, batch, 0);
}

/* An NVIDIA H200 as the heuristic and the check read one (132 SMs, sm_90a, Hopper's opt-in shared memory), with a
 * tensor-map encoder that accepts every map, so the wgmma rules run without a driver; cuda_fake_h200_done puts the
 * encoder back. */
static inline CUresult cuda_fake_encode(void *map, int dt, unsigned rank, void *base, const uint64_t *dims,
                                        const uint64_t *strides, const unsigned *box, const unsigned *es, int il, int sw,
                                        int l2, int oob) {
    (void)map, (void)dt, (void)rank, (void)base, (void)dims, (void)strides, (void)box, (void)es, (void)il, (void)sw,
        (void)l2, (void)oob;
    return TRR_CUDA_SUCCESS;
}

static inline trr_cuda_dev cuda_fake_h200(void) {
    trr_cuda_dev d;
    memset(&d, 0, sizeof d);
    d.cc_major = 9;
    d.cc_minor = 0;
    strcpy(d.arch, "sm_90a");
    d.sm_count = 132;
    d.smem_optin = 232448;
    d.max_threads = 1024;
    trr_cu.TensorMapEncodeTiled = cuda_fake_encode;
    return d;
}

static inline void cuda_fake_h200_done(void) { trr_cu.TensorMapEncodeTiled = NULL; }

#endif
