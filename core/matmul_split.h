/* Split-K as separate partial products: K cut into slices, each slice's product summed in f32 into a scratch
 * matrix of its own, then one pass adds the slices' matrices in order and applies the epilogue and the output's
 * rounding. A backend runs the slices as a batch of the one kernel (the batch strides stepping along K) where a
 * grid of output tiles would leave most of the device idle; a shorter chain of f32 sums per output also errs less
 * (tensor cores truncate each step's sum rather than round it). */
#ifndef TRR_MATMUL_SPLIT_H
#define TRR_MATMUL_SPLIT_H

#include "backend.h"

#include <stdint.h>

/* The most slices a call may ask for (config split_k). */
#define TRR_MATMUL_MAX_SPLIT 32

/* A split of K: `full` slices of `depth` (a multiple of the alignment asked for), then one of `rest` (0: none). */
typedef struct trr_matmul_k_split {
    int64_t depth, full, rest;
} trr_matmul_k_split;

/* K cut into at most `split` slices of equal depth, rounded up to a multiple of `align`, the last one shorter:
 * slices stay on whole words of the operands, so a kernel's vector loads still apply to every slice. */
static inline trr_matmul_k_split trr_matmul_k_slices(int64_t k, int split, int64_t align) {
    trr_matmul_k_split s;
    if (split < 1) split = 1;
    if (align < 1) align = 1;
    s.depth = (k + split - 1) / split;
    s.depth = (s.depth + align - 1) / align * align;
    if (s.depth < 1) s.depth = 1;
    s.full = k / s.depth;
    s.rest = k - s.full * s.depth;
    return s;
}

/* The slices a split makes (1: the call runs whole). */
static inline int64_t trr_matmul_k_slice_count(trr_matmul_k_split s) { return s.full + (s.rest > 0); }

/* Each slice keeps at least this much of K: a shorter one spends more on its partial's store and the pass
 * that adds them than on multiplying. */
#define TRR_MATMUL_SPLIT_MIN_DEPTH 512

/* A heuristic's `wanted` slices of a K within what K allows: each slice at least TRR_MATMUL_SPLIT_MIN_DEPTH
 * deep, at most TRR_MATMUL_MAX_SPLIT of them; 1 where that leaves fewer than two. */
static inline int trr_matmul_split_within_k(int64_t wanted, int64_t k) {
    const int64_t by_depth = k / TRR_MATMUL_SPLIT_MIN_DEPTH;
    if (wanted > by_depth) wanted = by_depth;
    if (wanted > TRR_MATMUL_MAX_SPLIT) wanted = TRR_MATMUL_MAX_SPLIT;
    return wanted < 2 ? 1 : (int)wanted;
}

/* The heuristic's split for a grid of `tiles` output tiles on `units` compute units (0: unknown, no split):
 * enough slices to give each unit a tile, where the grid covers at most half of them, within what K allows
 * (trr_matmul_split_within_k); 1 otherwise. */
static inline int trr_matmul_split_for_grid(int64_t tiles, int units, int64_t k) {
    if (units <= 0 || tiles <= 0 || tiles * 2 > units) return 1;
    return trr_matmul_split_within_k(units / tiles, k);
}

/* The heuristic's split for call under c's tiles on a GPU of `units` compute units: trr_matmul_split_for_grid
 * over its output tiles; 1 for a batch of matrices, which a split runs matrix by matrix. */
static inline int trr_matmul_split_for_call(const trr_call *call, const trr_config *c, int units) {
    if (call->batch > 1 || c->block_m <= 0 || c->block_n <= 0) return 1;
    const int64_t tiles = ((call->rows + c->block_m - 1) / c->block_m) * ((call->cols + c->block_n - 1) / c->block_n);
    return trr_matmul_split_for_grid(tiles, units, call->k);
}

/* A call's slices: its config's split_k on whole block_k steps, at least 16 elements, so every slice starts on
 * the kernels' 16-byte words. */
static inline trr_matmul_k_split trr_matmul_call_slices(const trr_call *c) {
    return trr_matmul_k_slices(c->k, c->config.split_k, c->config.block_k > 16 ? c->config.block_k : 16);
}

/* Matrix b of a batched call as a call of its own (batch 1). */
static inline trr_call trr_matmul_batch_entry(const trr_call *c, int64_t b) {
    trr_call one = *c;
    one.batch = 1;
    one.x.offset += b * c->x.batch_stride;
    one.y.offset += b * c->y.batch_stride;
    one.z.offset += b * c->z.batch_stride;
    one.x.batch_stride = one.y.batch_stride = one.z.batch_stride = 0;
    return one;
}

/* The calls that compute the slices of an unbatched call c into `partials` (a backend buffer of f32, the slices'
 * M x N products one after another from element 0): *full, the ks.full slices of ks.depth as a batch whose batch
 * strides step along K; *rest (when ks.rest > 0), the last slice, one matrix. Both with split_k 1, no epilogue
 * and an f32 output; the input scales stay, since they are linear. */
static inline void trr_matmul_slice_calls(const trr_call *c, trr_matmul_k_split ks, void *partials, trr_call *full,
                                          trr_call *rest) {
    const int64_t mn = c->rows * c->cols;
    trr_call p = *c;
    p.config.split_k = 1;
    p.epilogue = TRR_EPI_NONE;
    p.z = (trr_operand){.mem = partials, .stride0 = c->cols, .batch_stride = mn, .dtype = TRR_F32};
    p.k = ks.depth;
    p.batch = ks.full;
    p.x.batch_stride = c->trans_a ? ks.depth * c->x.stride0 : ks.depth;
    p.y.batch_stride = c->trans_b ? ks.depth : ks.depth * c->y.stride0;
    *full = p;
    p.x.offset += ks.full * p.x.batch_stride;
    p.y.offset += ks.full * p.y.batch_stride;
    p.z.offset = ks.full * mn;
    p.k = ks.rest;
    p.batch = 1;
    p.x.batch_stride = p.y.batch_stride = p.z.batch_stride = 0;
    *rest = p;
}

/* How a backend runs split-K (trr_matmul_run_split): one product with split_k 1, its scratch for the slices' f32
 * products, and the pass that adds them into C. */
typedef struct trr_matmul_split_ops {
    trr_status (*run)(trr_context *ctx, const trr_call *c);
    /* the backend buffer (a trr_operand's mem) of at least `bytes`, kept by the device between calls */
    trr_status (*partials)(trr_context *ctx, size_t bytes, void **out_mem);
    /* C = act(sum of the `slices` M x N f32 products in partials, in order), rounded once to C's dtype */
    trr_status (*add)(trr_context *ctx, const trr_call *c, void *partials, int64_t slices);
} trr_matmul_split_ops;

/* A call with split_k >= 2: its slices (trr_matmul_call_slices) computed by ops->run into ops->partials as a batch
 * along K (trr_matmul_slice_calls), then ops->add. A call whose K makes one slice runs whole; a batch of
 * matrices runs matrix by matrix (its batch is the slices' grid). */
trr_status trr_matmul_run_split(trr_context *ctx, const trr_call *c, const trr_matmul_split_ops *ops);

#endif
