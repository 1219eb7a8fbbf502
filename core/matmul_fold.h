/* Long-K matmuls with an f32 output: a kernel that keeps one running f32 sum per output over all of K drifts
 * past the 1e-5 Frobenius bound (docs/ops.md, Correctness bounds) near K = 2^17 on the SIMT kernels,
 * so past some depth the kernels add their accumulators into a second set every 512 elements of K and restart
 * them. The second set costs registers, so each kernel starts folding only where it must (its from_k). f16 and
 * bf16 outputs stay inside their wider bounds without it. */
#ifndef TRR_MATMUL_FOLD_H
#define TRR_MATMUL_FOLD_H

#include "backend.h"

#include <stdint.h>

/* Where the SIMT kernels (OpenCL matmul.cl, Vulkan matmul.comp) start folding: past the deepest benchmark size
 * (8192, docs/ops.md, Benchmarks), so the benched products keep their registers; at 16384 one running sum stays near a third of the bound. */
#define TRR_MATMUL_SIMT_FOLD_FROM_K 16384

/* Whether this call folds: an f32 output deeper than from_k (heuristics ask before block_k is chosen). */
static inline int trr_matmul_folds(const trr_call *c, int64_t from_k) {
    return c->z.dtype == TRR_F32 && c->k > from_k;
}

/* The K tiles (config.block_k deep) between folds for this call, 0 for none. */
static inline uint32_t trr_matmul_fold_tiles(const trr_call *c, int64_t from_k) {
    if (!trr_matmul_folds(c, from_k)) return 0;
    int per = 512 / c->config.block_k;
    return (uint32_t)(per > 0 ? per : 1);
}

#endif
