/* Split-K as separate partial products: K cut into slices, each slice's product summed in f32 into a scratch
 * matrix of its own, then one pass adds the slices' matrices in order and applies the epilogue and the output's
 * rounding. A backend runs the slices as a batch of the one kernel (the batch strides stepping along K) where a
 * grid of output tiles would leave most of the device idle; a shorter chain of f32 sums per output also errs less
 * (tensor cores truncate each step's sum rather than round it). */
#ifndef TRR_MATMUL_SPLIT_H
#define TRR_MATMUL_SPLIT_H

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

/* The heuristic's split for a grid of `tiles` output tiles on `units` compute units (0: unknown, no split):
 * enough slices to give each unit a tile, where the grid covers at most half of them, each slice at least
 * TRR_MATMUL_SPLIT_MIN_DEPTH deep; 1 otherwise. */
static inline int trr_matmul_split_for_grid(int64_t tiles, int units, int64_t k) {
    if (units <= 0 || tiles <= 0 || tiles * 2 > units) return 1;
    int64_t split = units / tiles;
    const int64_t by_depth = k / TRR_MATMUL_SPLIT_MIN_DEPTH;
    if (split > by_depth) split = by_depth;
    if (split > TRR_MATMUL_MAX_SPLIT) split = TRR_MATMUL_MAX_SPLIT;
    return split < 2 ? 1 : (int)split;
}

#endif
